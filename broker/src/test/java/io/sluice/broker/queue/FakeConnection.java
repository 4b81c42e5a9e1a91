package io.sluice.broker.queue;

import io.sluice.protocol.DeliverCursor;
import io.sluice.protocol.DeliverFrame;
import io.sluice.protocol.Frame;
import io.sluice.protocol.MessageHeader;
import io.sluice.protocol.PublishCreditFrame;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

/**
 * A client connection with no socket, for tests of the queue core: it keeps every call of a queue
 * as the frame the connection would write ({@link FrameLink}; a DELIVER frame as the messages it
 * carried, its buffer released at once), lets the test wait for one, and counts the publish window
 * handed back.
 */
final class FakeConnection extends FrameLink {
    /** A message of a DELIVER frame. */
    record Delivery(int consumerTag, long id, int deliveryCount, List<MessageHeader> headers, byte[] payload) {
        String header(String key) {
            return headers.stream().filter(h -> h.key().equals(key)).map(h -> new String(h.value(), StandardCharsets.UTF_8))
                    .findFirst().orElse(null);
        }
    }

    private final String id;
    private final List<Object> written = new ArrayList<>();
    private long publishCreditMessages;
    /** The headers and payload the queues said their settled messages held (rule W2 of {@link ProducerLink}). */
    private long heldBytesReturned;
    private volatile boolean active = true;
    private volatile boolean writable = true;
    /** Run on the writing thread once this many deliveries were written (see {@link #onDeliveries}); null when done. */
    private Runnable atDeliveries;
    private int atDeliveriesCount;

    /** A client granted WINDOW_COUNTS_HEADERS, as every client of this version is. */
    @Override
    public int windowBytes(int headersLength, int payloadLength) {
        return headersLength + payloadLength;
    }

    FakeConnection(String id) {
        this.id = id;
    }

    /** Keeps the frame (a DELIVER frame as its messages, its buffer released); counts the window a PUBLISH_CREDIT gives back. */
    @Override
    protected synchronized void write(Frame frame) {
        if (frame instanceof DeliverFrame deliver) {
            try {
                DeliverCursor cursor = deliver.cursor();
                while (cursor.next()) {
                    byte[] payload = new byte[cursor.payloadLength()];
                    cursor.payload().getBytes(cursor.payload().readerIndex(), payload);
                    written.add(new Delivery(deliver.consumerTag(), cursor.messageId(), cursor.deliveryCount(),
                            cursor.headers(), payload));
                }
            } finally {
                deliver.release();
            }
        } else if (frame instanceof PublishCreditFrame credit) {
            publishCreditMessages += credit.messages();
        } else {
            written.add(frame);
        }
        if (atDeliveries != null && deliveries().size() >= atDeliveriesCount) {
            Runnable action = atDeliveries;
            atDeliveries = null;
            action.run();
        }
        notifyAll();
    }

    /**
     * Runs {@code action} on the thread that writes the {@code count}-th delivery (the queue's event loop,
     * inside the dispatch that sends it), so what the test does then comes before any timer of the queue
     * due later, however late the test's own thread would run on a loaded machine.
     */
    synchronized void onDeliveries(int count, Runnable action) {
        atDeliveriesCount = count;
        atDeliveries = action;
    }

    @Override
    public void flush() {
    }

    @Override
    public String describe() {
        return "fake connection " + id;
    }

    @Override
    public String id() {
        return id;
    }

    @Override
    public boolean isActive() {
        return active;
    }

    void close() {
        active = false;
    }

    /** Keeps the ERROR and the CLOSE a real connection would write; stays active, as a real one does until they are written. */
    @Override
    public void closeFor(io.sluice.protocol.ErrorCode code, String sentence) {
        write(new io.sluice.protocol.ErrorFrame(0, code, sentence));
        write(new io.sluice.protocol.CloseFrame(code, sentence));
    }

    @Override
    public int maxFrameBytes() {
        return 8 << 20;
    }

    @Override
    public boolean isWritable() {
        return writable;
    }

    /** As a connection whose outbound buffer is above (false) or back below (true) its high water mark. */
    void writable(boolean value) {
        writable = value;
    }

    synchronized long publishCreditReturned() {
        return publishCreditMessages;
    }

    @Override
    public synchronized void publishCredit(int messages, long windowBytes, long heldBytes) {
        heldBytesReturned += heldBytes;
        super.publishCredit(messages, windowBytes, heldBytes);
    }

    synchronized long heldBytesReturned() {
        return heldBytesReturned;
    }

    /** Everything written so far of that type, in order. */
    synchronized <T> List<T> all(Class<T> type) {
        List<T> out = new ArrayList<>();
        for (Object o : written) {
            if (type.isInstance(o)) {
                out.add(type.cast(o));
            }
        }
        return out;
    }

    synchronized List<Delivery> deliveries() {
        return all(Delivery.class);
    }

    /** Waits until {@code count} frames of that type were written; returns them. Fails after the timeout. */
    synchronized <T> List<T> await(Class<T> type, int count, Duration timeout) throws InterruptedException {
        return await(type, list -> list.size() >= count, timeout, "at least " + count);
    }

    synchronized <T> List<T> await(Class<T> type, Predicate<List<T>> done, Duration timeout, String what)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            List<T> now = all(type);
            if (done.test(now)) {
                return now;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new AssertionError("waited " + timeout + " for " + what + " " + type.getSimpleName()
                        + " on " + id + "; got " + now);
            }
            wait(Math.max(1, left / 1_000_000));
        }
    }
}
