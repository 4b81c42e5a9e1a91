package io.sluice.broker.queue;

import io.sluice.storage.QueueNames;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoredMessage;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * Moves a queue's messages to its dead-letter queue through that queue's own publish path: its
 * quotas may refuse the copy, its backlog counts it, and the source lets go of the message only once
 * the copy is durable. Until then the message stays stored and tracked in the source, in no ready
 * list and no consumer's hands; if the move fails it is given back to the source, which makes it
 * deliverable again after a delay.
 *
 * <p>Threads: {@link #deadLetter} is called on the source queue's executor; the copy is stored on the
 * dead-letter queue's executor (created, if need be, on the declare thread, within
 * {@code limits.max-queues}); the outcome is handed back to the source's executor.
 *
 * <p>Headers: the copy carries the message's own headers, less any {@code x-dead-letter-*} of an
 * earlier move, plus where it came from, why, how often it was delivered and its original id. The
 * reason is cut to fit, so the added headers stay within {@link QueueStore#HEADER_HEADROOM_BYTES} and a
 * message accepted at {@code max-message-bytes} can always be moved.
 */
final class DeadLetterer {
    static final String HEADER_FROM = "x-dead-letter-from";
    static final String HEADER_REASON = "x-dead-letter-reason";
    static final String HEADER_DELIVERY_COUNT = "x-delivery-count";
    static final String HEADER_ORIGINAL_ID = "x-original-id";
    private static final Set<String> ADDED = Set.of(HEADER_FROM, HEADER_REASON, HEADER_DELIVERY_COUNT, HEADER_ORIGINAL_ID);
    /** Per header: a 2-byte key length and a 4-byte value length. */
    private static final int HEADER_FRAMING_BYTES = 6;
    static final int MAX_REASON_BYTES = QueueStore.HEADER_HEADROOM_BYTES - 4 * HEADER_FRAMING_BYTES
            - ADDED.stream().mapToInt(k -> k.getBytes(StandardCharsets.UTF_8).length).sum()
            - QueueNames.MAX_LENGTH * 3 // a name's characters, at most 3 UTF-8 bytes each for the ones names allow
            - 11 - 20; // a delivery count and an id, in decimal

    /** What the source queue does with the outcome, on its executor. */
    interface Outcome {
        /** The copy is durable in the dead-letter queue: let go of the original. */
        void moved(StoredMessage original);

        /** The move failed: the original is the source's again. */
        void failed(StoredMessage original, String why);
    }

    private final BrokerQueue source;
    private final QueueManager manager;
    private final Outcome outcome;

    DeadLetterer(BrokerQueue source, QueueManager manager, Outcome outcome) {
        this.source = source;
        this.manager = manager;
        this.outcome = outcome;
    }

    /** Starts moving {@code message}; the outcome arrives later, on the source's executor. */
    void deadLetter(StoredMessage message, int deliveries, String reason) {
        String target = source.options().deadLetterQueue();
        ByteBuffer headers = headers(message, source.name(), reason, deliveries);
        ByteBuffer payload = ByteBuffer.wrap(message.array(), message.payloadOffset(), message.payloadLength());
        Replication replication = manager.replication();
        // A cluster replicates the leader's decision (rule R8 of docs/replication.md): a copy stored here alone would
        // shift the ids of the dead-letter queue here, and acks by id would then name other messages elsewhere.
        CompletableFuture<?> moved = replication != null ? replication.deadLetter(source, message, target, headers)
                : manager.deadLetterQueue(target)
                        .thenCompose(dlq -> dlq.acceptForwarded(message.producerId(), message.producerSequence(), headers, payload));
        moved.whenComplete((ignored, error) -> source.executor().execute(() -> {
                    if (error == null) {
                        outcome.moved(message);
                    } else {
                        Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
                        outcome.failed(message, "dead-letter queue '" + target + "': " + cause.getMessage());
                    }
                }));
    }

    /** The copy's headers: the message's own less earlier dead-letter headers, then the four added ones. */
    static ByteBuffer headers(StoredMessage message, String from, String reason, int deliveries) {
        byte[] own = message.array();
        int end = message.headersOffset() + message.headersLength();
        ByteBuffer kept = ByteBuffer.wrap(own, message.headersOffset(), message.headersLength());
        String[] added = {HEADER_FROM, from, HEADER_REASON, cut(reason), HEADER_DELIVERY_COUNT, Integer.toString(deliveries),
                HEADER_ORIGINAL_ID, Long.toString(message.id())};
        int size = message.headersLength();
        for (String s : added) {
            size += 3 + s.getBytes(StandardCharsets.UTF_8).length;
        }
        ByteBuffer out = ByteBuffer.allocate(size);
        while (kept.position() < end) {
            int start = kept.position();
            int keyLength = kept.getShort() & 0xFFFF;
            String key = new String(own, kept.position(), keyLength, StandardCharsets.UTF_8);
            kept.position(kept.position() + keyLength);
            int valueLength = kept.getInt();
            kept.position(kept.position() + valueLength);
            if (!ADDED.contains(key)) {
                out.put(own, start, kept.position() - start);
            }
        }
        for (int i = 0; i < added.length; i += 2) {
            byte[] key = added[i].getBytes(StandardCharsets.UTF_8);
            byte[] value = added[i + 1].getBytes(StandardCharsets.UTF_8);
            out.putShort((short) key.length).put(key).putInt(value.length).put(value);
        }
        return out.flip();
    }

    /** The reason, cut at a character boundary to at most {@link #MAX_REASON_BYTES} UTF-8 bytes. */
    static String cut(String reason) {
        if (reason.getBytes(StandardCharsets.UTF_8).length <= MAX_REASON_BYTES) {
            return reason;
        }
        StringBuilder b = new StringBuilder();
        int bytes = 0;
        for (int i = 0; i < reason.length(); ) {
            int cp = reason.codePointAt(i);
            int n = new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8).length;
            if (bytes + n + 3 > MAX_REASON_BYTES) {
                break;
            }
            b.appendCodePoint(cp);
            bytes += n;
            i += Character.charCount(cp);
        }
        return b.append("...").toString();
    }
}
