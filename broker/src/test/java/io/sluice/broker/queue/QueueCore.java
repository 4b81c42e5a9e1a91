package io.sluice.broker.queue;

import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.DefaultEventLoopGroup;
import io.netty.channel.EventLoopGroup;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.config.ConfigLoader;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.storage.MessageStore;
import io.sluice.storage.durability.FileForcer;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The queue core with no sockets: a real message store in a temporary directory, a real
 * {@link QueueManager} on one event loop, and {@link FakeConnection}s in place of clients. Tests
 * drive queues through the same calls the connection's session makes; the tests of the network edge
 * (io.sluice.broker.net) put a real session in front of it.
 */
public final class QueueCore implements AutoCloseable {
    public final BrokerConfig config;
    public final EventLoopGroup loop = new DefaultEventLoopGroup(1);
    public final MessageStore store;
    public final QueueManager queues;

    /** {@code overrides}: configuration keys as on the command line, e.g. {@code storage.segment-bytes}. */
    public QueueCore(Path dir, Map<String, String> overrides) {
        this(dir, overrides, FileForcer.FSYNC);
    }

    /** As above, forcing segment files with {@code forcer}: the point to inject a failing force. */
    public QueueCore(Path dir, Map<String, String> overrides, FileForcer forcer) {
        Map<String, String> all = new HashMap<>();
        all.put("storage.reserved-disk-bytes", Long.toString(64L << 20));
        all.putAll(overrides);
        config = new ConfigLoader().load(null, all);
        store = MessageStore.open(dir, config.storeConfig(), forcer);
        queues = new QueueManager(store, loop, config.queues, config.broker.publishWindowMessages,
                config.broker.publishWindowBytes, QueueManager.Role.SINGLE_BROKER);
    }

    /** Publishes one frame of messages of {@code producerId} with sequences {@code firstSequence..} on the queue's executor. */
    void publish(BrokerQueue queue, FakeConnection from, long producerId, long firstSequence, byte[]... payloads) {
        PublishFrameBuilder builder = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, queue.name());
        for (int i = 0; i < payloads.length; i++) {
            builder.add(producerId, firstSequence + i, List.of(), payloads[i]);
        }
        queue.publish(from, builder.build());
    }

    /**
     * Queue "q", drop-oldest at a hard quota of 5 messages, dead-lettering what it drops, with a dead-letter queue that
     * cannot be created (max-queues 1): {@code producer} (id 7) published sequences 1..6, and the sixth's drop of message
     * 0 failed to move it. Message 0 is still in the queue, no consumer ever had it, and its move's retry is waiting.
     */
    BrokerQueue dropOldestQueueWithAFailedMove(FakeConnection producer) throws Exception {
        BrokerQueue q = queues.declare("q", io.sluice.protocol.QueueSettings.builder().quotaMessages(0, 5)
                .overflowPolicy("drop-oldest").set(QueueOptions.DEAD_LETTER_DROPPED, true).build());
        queues.limitQueues(1);
        for (int i = 1; i <= 6; i++) {
            publish(q, producer, 7, i, new byte[] {(byte) i});
        }
        awaitOnLoop(q, q::deadLetterFailures, 1L);
        return q;
    }

    /**
     * Writes {@code messages} messages of one byte into queue {@code queue} of the store in {@code dir}, through the store
     * before any broker serves it: faster than publishes would.
     */
    static void writeBacklog(Path dir, String queue, int messages) {
        try (MessageStore written = MessageStore.open(dir, new ConfigLoader().load(null, Map.of(
                "storage.durability", "never", "storage.reserved-disk-bytes", Long.toString(64L << 20))).storeConfig())) {
            io.sluice.storage.QueueStore q = written.createQueue(queue);
            byte[] payload = {1};
            for (int i = 0; i < messages; i++) {
                q.append(null, payload);
            }
        }
    }

    /** A connection bound no test reaches. */
    static ConnectionCredit unbounded() {
        return new ConnectionCredit(Long.MAX_VALUE / 4, () -> { });
    }

    static AckFrame ack(int tag, long... ids) {
        return new AckFrame(tag, java.util.Arrays.stream(ids).mapToObj(IdRange::single).toList());
    }

    static AckFrame ackRange(int tag, long from, long to) {
        return new AckFrame(tag, List.of(new IdRange(from, to)));
    }

    /** Runs {@code task} on the queue's executor and waits for it: everything handed over before has run. */
    public static <T> T onLoop(BrokerQueue queue, java.util.concurrent.Callable<T> task) throws Exception {
        return queue.executor().submit(task).get(30, TimeUnit.SECONDS);
    }

    /**
     * Reads of message {@code failing} by id ({@link BrokerQueue#readsThrough}) throw as a failing store's do, until
     * {@link #readsAgain}; the others read the store. For tests outside this package too.
     */
    public static void failReadsOf(BrokerQueue queue, long failing) throws Exception {
        onLoop(queue, () -> {
            queue.readsThrough(id -> {
                if (id == failing) {
                    throw new io.sluice.storage.StorageFailedException("a read of queue '" + queue.name()
                            + "' faulted (injected)", null);
                }
                return queue.store().read(id);
            });
            return null;
        });
    }

    /** Ends {@link #failReadsOf}: the queue reads the store again. */
    public static void readsAgain(BrokerQueue queue) throws Exception {
        onLoop(queue, () -> {
            queue.readsThrough(queue.store()::read);
            return null;
        });
    }

    /** Waits until {@code figure}, read on the queue's executor, is {@code expected}. */
    static <T> void awaitOnLoop(BrokerQueue queue, java.util.concurrent.Callable<T> figure, T expected) throws Exception {
        io.sluice.broker.TestAwait.until(queue.name() + ": " + expected, () -> expected.equals(onLoopUnchecked(queue, figure)));
    }

    private static <T> T onLoopUnchecked(BrokerQueue queue, java.util.concurrent.Callable<T> task) {
        try {
            return onLoop(queue, task);
        } catch (Exception e) {
            throw new AssertionError("reading a figure on queue " + queue.name() + " failed", e);
        }
    }

    @Override
    public void close() {
        queues.close();
        boolean stopped = loop.shutdownGracefully(0, 5, TimeUnit.SECONDS).awaitUninterruptibly(15, TimeUnit.SECONDS);
        if (!stopped) {
            throw new AssertionError("the queues' event loop did not stop within 15 s: a task never ends on it");
        }
        store.close();
    }
}
