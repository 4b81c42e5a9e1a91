package io.sluice.storage;

import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * A fingerprint of the messages a queue holds, for comparing the copies of one queue on the nodes of a
 * cluster (docs/replication.md, rule R6): two stores with the same unacknowledged messages, under the same
 * ids, from the same producers with the same sequences and the same payloads, have the same digest, and a
 * store that holds one message more, less, twice, under another id or with another byte has another one.
 *
 * <p>The SHA-256 runs over each unacknowledged message in id order, each contributing:
 * <pre>
 * +-------------+------------------+------------------------+---------------------+------------------+
 * | int64 id    | int64 producerId | int64 producerSequence | int32 payloadLength | payload bytes    |
 * +-------------+------------------+------------------------+---------------------+------------------+
 * </pre>
 * (big-endian). Headers and timestamps are left out: the timestamp is each node's own clock.
 * Acknowledged messages are left out too: what a node has reclaimed from disk differs between nodes.
 *
 * @param messages the unacknowledged messages digested
 * @param firstId  the id of the first of them, -1 if none
 * @param lastId   the id of the last of them, -1 if none
 * @param sha256   the digest, in lower-case hex
 */
public record QueueDigest(long messages, long firstId, long lastId, String sha256) {

    /**
     * Reads every unacknowledged message of {@code store}; any thread (each read takes the store's lock
     * briefly, so appends and acks may run between them: digest a queue that is not changing).
     */
    public static QueueDigest of(QueueStore store) {
        MessageDigest sha = newSha256();
        ByteBuffer fields = ByteBuffer.allocate(3 * Long.BYTES + Integer.BYTES);
        long[] counts = {0, -1, -1}; // messages, first id, last id
        store.forEachUnacked(id -> {
            StoredMessage message = store.read(id);
            if (message == null) {
                return; // acknowledged since the id was listed
            }
            fields.clear();
            fields.putLong(message.id()).putLong(message.producerId()).putLong(message.producerSequence())
                    .putInt(message.payloadLength());
            sha.update(fields.array());
            sha.update(message.payload());
            counts[0]++;
            counts[1] = counts[1] < 0 ? message.id() : counts[1];
            counts[2] = message.id();
        });
        return new QueueDigest(counts[0], counts[1], counts[2], HexFormat.of().formatHex(sha.digest()));
    }

    private static MessageDigest newSha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("this JVM has no SHA-256, which every Java platform must have", e);
        }
    }
}
