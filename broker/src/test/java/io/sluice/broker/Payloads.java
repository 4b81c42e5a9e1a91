package io.sluice.broker;

import java.nio.ByteBuffer;

/** Test payloads that carry a sequence number, so a consumer can check what arrived and in which order. */
final class Payloads {
    private Payloads() {
    }

    static byte[] of(long sequence) {
        return ByteBuffer.allocate(Long.BYTES + 8).putLong(sequence).putLong(~sequence).array();
    }

    static long sequence(byte[] payload) {
        ByteBuffer b = ByteBuffer.wrap(payload);
        long sequence = b.getLong();
        if (payload.length != 16 || b.getLong() != ~sequence) {
            throw new AssertionError("not a test payload: " + payload.length + " bytes");
        }
        return sequence;
    }
}
