package io.sluice.storage;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * {@code maxMessageBytes} is a promise: a message of exactly that many bytes (headers plus payload) is stored, and a
 * forwarded copy of it with up to {@link QueueStore#HEADER_HEADROOM_BYTES} of added headers too, at the defaults and at
 * the largest limit a small segment accepts; one byte more is a {@link MessageTooLargeException}.
 */
class MaxMessageBytesStoredTest {
    private static final int HEADERS = 100;

    @TempDir
    Path dir;

    @Test
    void aMessageAtTheLimitAndItsForwardedCopyAreStoredAtTheDefaults() {
        check(StoreConfig.builder().build());
    }

    @Test
    void aMessageAtTheLimitAndItsForwardedCopyAreStoredAtTheLargestLimitOfASmallSegment() {
        check(StoreConfig.builder().segmentBytes(StoreConfig.MIN_SEGMENT_BYTES).maxMessageBytes((int) (StoreConfig.MIN_SEGMENT_BYTES / 4))
                .reservedDiskBytes(64L << 20).build());
    }

    private void check(StoreConfig config) {
        int max = config.maxMessageBytes();
        byte[] headers = bytes(HEADERS, 1);
        byte[] payload = bytes(max - HEADERS, 7);
        byte[] forwardedHeaders = bytes(HEADERS + QueueStore.HEADER_HEADROOM_BYTES, 3);
        try (MessageStore store = MessageStore.open(dir, config)) {
            QueueStore queue = store.createQueue("orders");
            long id = queue.append(7, 1, ByteBuffer.wrap(headers), ByteBuffer.wrap(payload));
            long copy = queue.appendForwarded(7, 1, ByteBuffer.wrap(forwardedHeaders), ByteBuffer.wrap(payload));
            MessageTooLargeException over = assertThrows(MessageTooLargeException.class,
                    () -> queue.append(7, 2, ByteBuffer.wrap(headers), ByteBuffer.wrap(bytes(max - HEADERS + 1, 7))));
            assertEquals("message of " + (max + 1) + " bytes (headers plus payload) for queue 'orders' exceeds the limit of "
                    + max + " bytes (storage.max-message-bytes)", over.getMessage());
            assertThrows(MessageTooLargeException.class, () -> queue.appendForwarded(7, 3,
                    ByteBuffer.wrap(bytes(HEADERS + QueueStore.HEADER_HEADROOM_BYTES + 1, 3)), ByteBuffer.wrap(payload)));
            assertEquals(copy, queue.writtenIndex(), "nothing written by the refusals");

            StoredMessage read = queue.read(id);
            assertArrayEquals(headers, read.headersBytes());
            assertArrayEquals(payload, read.payloadBytes());
            StoredMessage readCopy = queue.read(copy);
            assertArrayEquals(forwardedHeaders, readCopy.headersBytes());
            assertArrayEquals(payload, readCopy.payloadBytes());
            // The queue's storage is not failed: it still takes a small message.
            long after = queue.append(7, 4, ByteBuffer.allocate(0), ByteBuffer.wrap(bytes(10, 9)));
            assertArrayEquals(bytes(10, 9), queue.read(after).payloadBytes());
        }
    }

    @Test
    void aLimitAboveAQuarterOfTheSegmentIsRefusedWithTheReason() {
        IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, () -> StoreConfig.builder()
                .segmentBytes(StoreConfig.MIN_SEGMENT_BYTES).maxMessageBytes((int) (StoreConfig.MIN_SEGMENT_BYTES / 4) + 1)
                .reservedDiskBytes(64L << 20).build());
        assertEquals("invalid storage configuration: maxMessageBytes 262145 is outside 1..segmentBytes/4 (262144): a message "
                + "takes at most a quarter of a segment", refused.getMessage());
    }

    private static byte[] bytes(int length, int seed) {
        byte[] bytes = new byte[length];
        for (int i = 0; i < length; i++) {
            bytes[i] = (byte) (i * 31 + seed);
        }
        return bytes;
    }
}
