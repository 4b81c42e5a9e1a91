package io.sluice.storage;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link StoreConfig#storableMessageBytes} is the store's own limit, Chronicle's, not a setting: a committed message
 * ({@link QueueStore#appendReplicated}, {@link QueueStore#appendCommittedCopy}) is stored up to it whatever
 * {@code maxMessageBytes} says, and one byte more is what Chronicle itself refuses.
 */
class StorableMessageBytesTest {
    @TempDir
    Path dir;

    @Test
    void theLimitIsAQuarterOfChroniclesBlockLessTheRecordHeader() {
        assertEquals((4 << 20) - 48, StoreConfig.builder().segmentBytes(64L << 20).build().storableMessageBytes());
        assertEquals((4 << 20) - 48, StoreConfig.builder().segmentBytes(1L << 30).maxMessageBytes(200 << 20).build()
                .storableMessageBytes());
        assertEquals((256 << 10) - 48, StoreConfig.builder().segmentBytes(1L << 20).maxMessageBytes(1024).build()
                .storableMessageBytes());
    }

    @Test
    void aCommittedMessageIsStoredUpToTheLimitWhateverMaxMessageBytes() {
        for (long segmentBytes : new long[] {1L << 20, 64L << 20}) {
            StoreConfig config = StoreConfig.builder().segmentBytes(segmentBytes).maxMessageBytes(1024).build();
            int limit = config.storableMessageBytes();
            try (MessageStore store = MessageStore.open(dir.resolve("s" + segmentBytes), config)) {
                QueueStore queue = store.createQueue("orders");
                ByteBuffer atLimit = ByteBuffer.allocate(limit - 10);
                long id = queue.appendReplicated(5, 7, 1, ByteBuffer.allocate(limit), 0, 10, 10, limit - 10);
                assertEquals(limit - 10, queue.read(id).payloadBytes().length);
                long copy = queue.appendCommittedCopy(7, 2, ByteBuffer.allocate(10), atLimit);
                assertEquals(limit - 10, queue.read(copy).payloadBytes().length);

                MessageTooLargeException over = assertThrows(MessageTooLargeException.class,
                        () -> queue.appendReplicated(6, 7, 3, ByteBuffer.allocate(limit + 1), 0, 0, 0, limit + 1));
                assertTrue(over.getMessage().contains("exceeds the " + limit + " bytes a record of this store can hold"),
                        over.getMessage());
                assertThrows(MessageTooLargeException.class,
                        () -> queue.appendCommittedCopy(7, 4, ByteBuffer.allocate(0), ByteBuffer.allocate(limit + 1)));
                assertThrows(MessageTooLargeException.class, () -> queue.append(7, 5, null, ByteBuffer.allocate(1025)),
                        "a client's message is still admitted under maxMessageBytes");
                assertEquals(copy, queue.writtenIndex(), "nothing written by the refusals");
            }
        }
    }

    /** Without the check, Chronicle itself refuses one byte more: the limit is exactly the engine's. */
    @Test
    void oneByteOverTheLimitIsWhatChronicleRefuses() {
        StoreConfig config = StoreConfig.builder().segmentBytes(1L << 20).maxMessageBytes(256 << 10).build();
        int limit = config.storableMessageBytes();
        try (MessageStore store = MessageStore.open(dir, config)) {
            QueueStore queue = store.createQueue("orders");
            // A forwarded copy may pass maxMessageBytes by HEADER_HEADROOM_BYTES, so this one reaches Chronicle.
            StorageException refused = assertThrows(StorageException.class,
                    () -> queue.appendForwarded(7, 1, ByteBuffer.allocate(0), ByteBuffer.allocate(limit + 1)));
            assertFalse(refused instanceof MessageTooLargeException, refused.toString());
            assertInstanceOf(RuntimeException.class, refused.getCause());
            long id = queue.appendForwarded(7, 2, ByteBuffer.allocate(0), ByteBuffer.allocate(limit));
            assertEquals(limit, queue.read(id).payloadBytes().length);
        }
    }
}
