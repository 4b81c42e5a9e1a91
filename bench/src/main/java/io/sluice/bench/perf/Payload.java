package io.sluice.bench.perf;

/**
 * The layout of a perf message's payload, written by the producer and read by the consumer
 * (docs/performance.md, "The workloads").
 *
 * <pre>
 *  0               8              10                16                size
 *  +---------------+---------------+-----------------+-----------------+
 *  | int64 sendNanos | uint16 producer | uint48 sequence |  zero filler    |
 *  +---------------+---------------+-----------------+-----------------+
 *  sendNanos: System.nanoTime() of the producer just before sendAsync (producers and consumers share a JVM)
 *  producer:  index of the sending producer, 0-based
 *  sequence:  the producer's own count, 0-based, contiguous
 * </pre>
 *
 * Bytes 8..15 read as one big-endian int64 are the "sequence number" of docs/performance.md's workloads, unique
 * across producers.
 */
final class Payload {
    static final int MIN_BYTES = 16;
    static final int MAX_PRODUCERS = 1 << 16;
    static final long MAX_SEQUENCE = (1L << 48) - 1;

    private Payload() {
    }

    static byte[] create(int sizeBytes, int producer, long sequence, long sendNanos) {
        byte[] payload = new byte[sizeBytes];
        putLong(payload, 0, sendNanos);
        putLong(payload, 8, ((long) producer << 48) | sequence);
        return payload;
    }

    static long sendNanos(byte[] payload) {
        return getLong(payload, 0);
    }

    static int producer(byte[] payload) {
        return (int) (getLong(payload, 8) >>> 48);
    }

    static long sequence(byte[] payload) {
        return getLong(payload, 8) & MAX_SEQUENCE;
    }

    private static void putLong(byte[] bytes, int offset, long value) {
        for (int i = 7; i >= 0; i--) {
            bytes[offset + i] = (byte) value;
            value >>>= 8;
        }
    }

    private static long getLong(byte[] bytes, int offset) {
        long value = 0;
        for (int i = 0; i < 8; i++) {
            value = (value << 8) | (bytes[offset + i] & 0xFF);
        }
        return value;
    }
}
