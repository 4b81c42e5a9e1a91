package io.sluice.storage;

import io.sluice.storage.ack.AckFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A queue's written pages do not stay in the broker's resident memory: the flusher drops the pages of
 * the segment and of the ack journal that lie wholly behind their append positions from the
 * process's mappings, once per sync interval (docs/storage.md, "Resident memory"). Issue 14, section
 * 3: with 1,000 slow queues, every page a queue had written stayed resident in its 16 MiB mapping
 * chunk, and RSS rose by about 3 MB a second. Measured in {@code /proc/self/smaps}; what was written
 * must still read back intact, and be durable.
 */
class WrittenPagesTest {
    private static final long RESIDENT_LIMIT_BYTES = 64 << 10;
    /** Two fault-around windows of 64 KiB, a first page and a page being written would fit; an eighth of what the test writes. */
    private static final long FORCED_RESIDENT_LIMIT_BYTES = 256 << 10;
    /** Two pages: an eighth of the kernel's fault-around window of 16. */
    private static final long FEW_PAGES_BYTES = 8 << 10;

    @TempDir
    Path dir;

    @Test
    void theFlusherDropsWrittenSegmentAndJournalPagesFromResidentMemory() throws Exception {
        try (MessageStore store = openDroppingEvery20Ms()) {
            QueueStore queue = store.createQueue("slow");
            byte[] payload = new byte[256];
            List<Long> ids = new ArrayList<>();
            for (int i = 0; i < 8_000; i++) { // about 2.4 MB of records, inside one 16 MiB mapping chunk
                payload[0] = (byte) i;
                payload[1] = (byte) (i >> 8);
                ids.add(queue.append(null, payload));
            }
            long last = ids.get(ids.size() - 1);
            queue.whenDurable(last).get(10, TimeUnit.SECONDS);
            for (int i = 0; i < ids.size(); i += 2) {
                queue.ack(ids.get(i)); // about 84 KB of journal records
            }
            Path segment = queue.segmentDirectory().resolve("19700101-000000.cq4");
            Path journal = queue.directory().resolve("acks").resolve(AckFiles.JOURNAL);
            Await.until("the segment's written pages are dropped from resident memory (now "
                    + residentBytes(segment) + " bytes)", () -> residentBytes(segment) < RESIDENT_LIMIT_BYTES, 10, TimeUnit.SECONDS);
            Await.until("the journal's written pages are dropped from resident memory (now "
                    + residentBytes(journal) + " bytes)", () -> residentBytes(journal) < RESIDENT_LIMIT_BYTES, 10, TimeUnit.SECONDS);

            try (QueueReader reader = queue.openReader()) {
                for (int i = 1; i < ids.size(); i += 2) {
                    StoredMessage m = reader.next();
                    assertNotNull(m, "message " + i);
                    assertEquals(ids.get(i), m.id());
                    payload[0] = (byte) i;
                    payload[1] = (byte) (i >> 8);
                    assertArrayEquals(payload, m.payloadBytes(), "message " + i + " reads back intact");
                }
            }
            long more = queue.append(null, "after".getBytes(StandardCharsets.UTF_8));
            assertEquals(more, (long) queue.whenDurable(more).get(10, TimeUnit.SECONDS), "appends and forces go on");
        }
        assertEquals(4_001, unackedAfterReopen(), "the acks and the records survive a reopen");
    }

    /**
     * Rule "a force finds no written page mapped" (docs/storage.md, "Written pages and the cost of a force"): before
     * each force the flusher drops the pages written since the last one, so that writeback does not write-protect
     * them one by one, each an interrupt to every other CPU. With a sync interval of a minute the once-per-interval
     * pass does not run during the test: what is dropped here is dropped by the forces, and the pages are gone from
     * the mapping as soon as the force that made the last append durable has returned.
     */
    @Test
    void eachForceFindsThePagesWrittenBeforeItDroppedFromTheMapping() throws Exception {
        try (MessageStore store = MessageStore.open(dir, StoreConfig.builder().syncIntervalMs(60_000).build())) {
            QueueStore queue = store.createQueue("slow");
            byte[] payload = new byte[256];
            long last = -1;
            for (int round = 0; round < 20; round++) { // 20 forces of about 100 KB each
                for (int i = 0; i < 400; i++) {
                    payload[0] = (byte) i;
                    last = queue.append(null, payload);
                }
                assertEquals(last, (long) queue.whenDurable(last).get(10, TimeUnit.SECONDS));
            }
            Path segment = queue.segmentDirectory().resolve("19700101-000000.cq4");
            long resident = residentBytes(segment);
            // What stays mapped: the first page, the page being written, and the index pages appends read and write,
            // with the kernel's fault-around window (16 pages) around them; without the drop, all 2.1 MB.
            assertTrue(resident < FORCED_RESIDENT_LIMIT_BYTES, "the segment's written pages after 20 forces of 2.1 MB: "
                    + resident + " bytes resident");
        }
        assertEquals(8_000, unackedAfterReopen(), "every record survives a reopen");
    }

    /**
     * The same across mapping chunks and segments: with 1 MiB segments the appender moves to a new chunk (and a new
     * file) every few forces, while a range taken before a force may still hold the chunk it left (the range's
     * reservation keeps it mapped until its pages are dropped). Every record reads back intact, in order, and survives
     * a reopen.
     */
    @Test
    void droppingBeforeForcesAcrossChunksAndSegmentsKeepsEveryRecord() throws Exception {
        int records = 16_000; // about 4.4 MB: four or five segments of 1 MiB
        try (MessageStore store = MessageStore.open(dir, StoreConfig.builder().syncIntervalMs(60_000).segmentBytes(1 << 20)
                .maxMessageBytes(64 << 10).build())) {
            QueueStore queue = store.createQueue("slow");
            byte[] payload = new byte[256];
            long last = -1;
            for (int i = 0; i < records; i++) {
                payload[0] = (byte) i;
                payload[1] = (byte) (i >> 8);
                last = queue.append(null, payload);
                if (i % 300 == 299) {
                    queue.whenDurable(last).get(10, TimeUnit.SECONDS);
                }
            }
            assertEquals(last, (long) queue.whenDurable(last).get(10, TimeUnit.SECONDS));
            assertTrue(queue.segmentNumbers().size() >= 4, "segments: " + queue.segmentNumbers());
            try (QueueReader reader = queue.openReader()) {
                for (int i = 0; i < records; i++) {
                    StoredMessage m = reader.next();
                    assertNotNull(m, "message " + i);
                    payload[0] = (byte) i;
                    payload[1] = (byte) (i >> 8);
                    assertArrayEquals(payload, m.payloadBytes(), "message " + i + " reads back intact");
                }
            }
        }
        assertEquals(records, unackedAfterReopen(), "every record survives a reopen");
    }

    /**
     * Rule "the first page stays mapped" (docs/storage.md, "Resident memory"): Chronicle's metadata file
     * has several pages, of which Chronicle uses the first (its table: the write lock, the last cycle),
     * read on every append. Its other pages are zeros that read-ahead brought into the page cache, and
     * the kernel's fault-around mapped them with the first page's fault, a window per queue. The
     * flusher drops all but the first page, and since the first stays mapped, appends fault none back.
     */
    @Test
    void onlyTheFirstPageOfTheMetadataFileStaysResident() throws Exception {
        try (MessageStore store = openDroppingEvery20Ms()) {
            QueueStore queue = store.createQueue("slow");
            byte[] payload = new byte[256];
            long last = queue.append(null, payload);
            Path metadata = queue.segmentDirectory().resolve("metadata.cq4t");
            Await.until("metadata.cq4t resident in a page or two (now " + residentBytes(metadata) + " bytes)",
                    () -> residentBytes(metadata) <= FEW_PAGES_BYTES, 10, TimeUnit.SECONDS);
            for (int i = 0; i < 1_000; i++) {
                last = queue.append(null, payload);
            }
            assertEquals(last, (long) queue.whenDurable(last).get(10, TimeUnit.SECONDS), "appends and forces go on");
            long resident = residentBytes(metadata);
            assertTrue(resident <= FEW_PAGES_BYTES, "metadata.cq4t resident after 1,000 more appends: " + resident + " bytes");
        }
        assertEquals(1_001, unackedAfterReopen(), "every record survives a reopen");
    }

    private MessageStore openDroppingEvery20Ms() {
        return MessageStore.open(dir, StoreConfig.builder().syncIntervalMs(20).build());
    }

    private long unackedAfterReopen() {
        try (MessageStore store = MessageStore.open(dir, StoreConfig.builder().build())) {
            return store.queue("slow").unackedMessages();
        }
    }

    /** Resident bytes of every mapping of {@code file} in this process. */
    static long residentBytes(Path file) {
        String name = file.toAbsolutePath().toString();
        long kib = 0;
        boolean inFile = false;
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/smaps"))) {
                if (line.matches("^[0-9a-f]+-[0-9a-f]+ .*")) { // a mapping's first line: address range ... path
                    inFile = line.endsWith(name) || line.endsWith(name + " (deleted)");
                } else if (inFile && line.startsWith("Rss:")) {
                    kib += Long.parseLong(line.replaceAll("[^0-9]", ""));
                }
            }
        } catch (IOException e) {
            throw new AssertionError("cannot read /proc/self/smaps", e);
        }
        return kib << 10;
    }
}
