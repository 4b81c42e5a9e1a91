package io.sluice.storage.tool;

import io.sluice.storage.ByteArrays;
import io.sluice.storage.DurabilityMode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.segment.RecordCodec;
import io.sluice.storage.segment.SegmentFiles;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A data directory whose queue {@code orders} fills three segments with 256-byte records, each payload starting with its
 * message's marker ({@code MSG-000123}), so that a test finds a record's bytes in its file to damage them. Single thread:
 * the test's.
 */
final class MarkedQueue {
    static final int MESSAGES = 7_500;
    static final int PAYLOAD_BYTES = 256;

    private final Path dir;
    /** The id of each message, by its number. */
    final List<Long> ids = new ArrayList<>();

    private MarkedQueue(Path dir) {
        this.dir = dir;
    }

    /** Stores the messages in {@code dir}; the first {@code acknowledged} of them are acknowledged (none if 0). */
    static MarkedQueue fill(Path dir, int acknowledged) {
        MarkedQueue queue = new MarkedQueue(dir);
        try (MessageStore store = MessageStore.open(dir, StoreConfig.builder().durability(DurabilityMode.NEVER)
                .segmentBytes(StoreConfig.MIN_SEGMENT_BYTES).maxMessageBytes(64 << 10).build())) {
            QueueStore orders = store.createQueue("orders");
            for (int i = 0; i < MESSAGES; i++) {
                byte[] payload = new byte[PAYLOAD_BYTES];
                System.arraycopy(marker(i), 0, payload, 0, marker(i).length);
                queue.ids.add(orders.append(7, i, null, ByteBuffer.wrap(payload)));
            }
            if (acknowledged > 0) {
                orders.ackRange(queue.ids.get(0), queue.ids.get(acknowledged - 1));
            }
        }
        assertEquals(2, queue.ids.get(MESSAGES - 1) >>> 32, "three segments");
        return queue;
    }

    static byte[] marker(int message) {
        return String.format("MSG-%06d", message).getBytes(StandardCharsets.US_ASCII);
    }

    Path segmentFile(int segment) {
        return dir.resolve("queues/orders/segments").resolve(SegmentFiles.fileName(segment));
    }

    /** The messages stored in {@code segment}. */
    long messagesIn(int segment) {
        return ids.stream().filter(id -> id >>> 32 == segment).count();
    }

    /** Makes the Chronicle header of the record with id {@code id} claim 4 MiB, past its file's end. */
    void claimPastTheEnd(long id) throws IOException {
        Path file = segmentFile((int) (id >>> 32));
        byte[] bytes = Files.readAllBytes(file);
        int payloadAt = ByteArrays.indexOf(bytes, marker(ids.indexOf(id)));
        assertTrue(payloadAt > 0, "the damaged record's payload is in " + file);
        // Chronicle's 4-byte header precedes the record's own header.
        ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).putInt(payloadAt - RecordCodec.HEADER_BYTES - 4, 4 << 20);
        Files.write(file, bytes);
    }
}
