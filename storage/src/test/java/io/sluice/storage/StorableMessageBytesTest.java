package io.sluice.storage;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
        // 4 x (4 MiB + 1024 + 48 + 4), rounded up to 17 MiB
        assertEquals((17 << 20) / 4 - 48, StoreConfig.builder().segmentBytes(64L << 20).build().storableMessageBytes());
        assertEquals((17 << 20) / 4 - 48, StoreConfig.builder().segmentBytes(64L << 20).maxMessageBytes(1024).build()
                .storableMessageBytes(), "a node's lower maxMessageBytes never takes the block below the default's");
        assertEquals((801 << 20) / 4 - 48, StoreConfig.builder().segmentBytes(1L << 30).maxMessageBytes(200 << 20)
                .reservedDiskBytes(2L << 30).build().storableMessageBytes());
        // A quarter of the 1 MiB segment, 256 KiB, plus the headroom and headers: a 2 MiB block.
        assertEquals((512 << 10) - 48, StoreConfig.builder().segmentBytes(1L << 20).maxMessageBytes(1024).build()
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

    /** The limit is exactly the engine's: at the store's block, Chronicle takes a record of it and refuses one byte more. */
    @Test
    void oneByteOverTheLimitIsWhatChronicleRefuses() {
        StoreConfig config = StoreConfig.builder().segmentBytes(1L << 20).maxMessageBytes(256 << 10).build();
        int record = config.storableMessageBytes() + io.sluice.storage.segment.RecordCodec.HEADER_BYTES;
        try (net.openhft.chronicle.queue.impl.single.SingleChronicleQueue chronicle =
                     net.openhft.chronicle.queue.impl.single.SingleChronicleQueueBuilder.single(dir.toFile())
                             .blockSize(config.chronicleBlockBytes()).build();
             net.openhft.chronicle.queue.ExcerptAppender appender = chronicle.createAppender()) {
            try (net.openhft.chronicle.wire.DocumentContext dc = appender.writingDocument()) {
                dc.wire().bytes().write(new byte[record]);
            }
            RuntimeException refused = assertThrows(RuntimeException.class, () -> {
                try (net.openhft.chronicle.wire.DocumentContext dc = appender.writingDocument()) {
                    dc.wire().bytes().write(new byte[record + 1]);
                }
            });
            assertTrue(refused.getMessage().contains("write failed"), refused.toString());
        }
    }
}
