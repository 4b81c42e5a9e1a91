package io.sluice.storage;

import io.sluice.storage.durability.FileForcer;
import io.sluice.storage.durability.ForcedMark;
import io.sluice.storage.reclaim.RelocationIntent;
import io.sluice.storage.segment.FileReleaser;
import io.sluice.storage.segment.SegmentFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule "the forced mark" (docs/storage.md, "Recovery"): each successful force of a queue's segments leaves the id of
 * the newest record it made durable, with its segment's message bytes and staged records through it, in
 * {@code <queue>/forced.mark}; recovery then checks only the records after it, where a machine crash can have torn
 * something, instead of its whole last segment (up to 64 MiB of records walked on every start), and still knows that
 * segment's figures for the backlog's byte count. A mark that is missing, damaged, or names a record that is not there
 * is not believed.
 */
class ForcedMarkTest {
    private static final int PAYLOAD = 200;

    @TempDir
    Path dir;

    @Test
    void eachForceLeavesAMarkNamingItsNewestRecordWithItsSegmentsFigures() throws Exception {
        long staged;
        try (MessageStore store = open()) {
            QueueStore queue = store.createQueue("q");
            for (int i = 0; i < 100; i++) {
                queue.append(null, payload(i));
            }
            staged = queue.appendStaged(7, ByteBuffer.wrap(payload(100)), 0, 0, 0, PAYLOAD);
            queue.whenDurable(staged).get(10, TimeUnit.SECONDS);
            ForcedMark.Mark mark = awaitMark(staged);
            assertEquals(101L * PAYLOAD, mark.segmentMessageBytes(), "the segment's message bytes through it");
            assertEquals(1, mark.segmentStaged(), "its staged record");
        }
        List<Long> found = new ArrayList<>();
        try (MessageStore store = open()) {
            QueueStore queue = store.queue("q");
            assertEquals(0, queue.recordsVerifiedAtOpen(), "the close's mark names the last record");
            long bytes = queue.unackedMessageBytes((id, transaction, commitRecord, messageBytes) -> found.add(id));
            assertEquals(101L * PAYLOAD, bytes, "the figures from the mark");
            assertEquals(List.of(staged), found, "the segment with a staged record is read for it, as the mark says");
        }
    }

    /** The mark is a hint: a queue whose mark cannot be kept confirms all the same. */
    @Test
    void aMarkThatCannotBeKeptFailsNothing() throws Exception {
        try (MessageStore store = open()) {
            QueueStore queue = store.createQueue("q");
            Files.createDirectories(queueDirectory().resolve(ForcedMark.FILE)); // a directory: the mark's file cannot be opened
            for (int i = 0; i < 3; i++) {
                long id = queue.append(null, payload(i));
                assertEquals(id, queue.whenDurable(id).get(10, TimeUnit.SECONDS), "confirmed despite the mark");
            }
            assertNull(ForcedMark.read(queueDirectory()));
        }
        try (MessageStore store = open()) {
            assertEquals(3, store.queue("q").recordsVerifiedAtOpen(), "without a mark the whole segment is checked");
        }
    }

    @Test
    void afterARollTheMarkCarriesTheNewSegmentsFigures() throws Exception {
        List<Long> ids = fill(6_000); // about 4,300 records of 200 bytes fill a 1 MiB segment
        long last = ids.get(ids.size() - 1);
        long inLastSegment = ids.stream().filter(id -> segmentOf(id) == segmentOf(last)).count();
        assertTrue(inLastSegment < ids.size(), "the records span a roll");
        ForcedMark.Mark mark = ForcedMark.read(queueDirectory());
        assertNotNull(mark);
        assertEquals(last, mark.index());
        assertEquals(inLastSegment * PAYLOAD, mark.segmentMessageBytes(), "the bytes of the last segment's records only");
        try (MessageStore store = open()) {
            QueueStore queue = store.queue("q");
            assertEquals(0, queue.recordsVerifiedAtOpen());
            assertEquals(6_000L * PAYLOAD, queue.unackedMessageBytes(StagedRecordVisitor.NONE));
            assertEquals(0, queue.recordsReadCountingBytes());
        }
    }

    @Test
    void aReopenChecksOnlyTheRecordsAfterTheMarkAndStillCountsTheBacklogExactly() throws Exception {
        List<Long> ids = fill(1_000);
        try (MessageStore store = open()) {
            QueueStore queue = store.queue("q");
            assertEquals(0, queue.recordsVerifiedAtOpen(), "a clean close forced and marked every record");
        }
        // A mark from an earlier force: the last 10 records came after it (a kill -9 leaves them in the page cache).
        writeMark(ids.get(989), 990L * PAYLOAD, 0);
        try (MessageStore store = open()) {
            QueueStore queue = store.queue("q");
            assertEquals(10, queue.recordsVerifiedAtOpen(), "only the records after the mark are checked");
            assertEquals(1_000L * PAYLOAD, queue.unackedMessageBytes(StagedRecordVisitor.NONE));
            assertEquals(0, queue.recordsReadCountingBytes(), "the last segment's figures came from the mark and the check");
            assertEquals(1_000, read(queue).size());
        }
    }

    @Test
    void aMarkThatIsDamagedOrNamesARecordThatIsNotThereIsNotBelieved() throws Exception {
        List<Long> ids = fill(1_000);
        long lastSegmentRecords = ids.stream().filter(id -> segmentOf(id) == segmentOf(ids.get(ids.size() - 1))).count();
        writeMark(ids.get(ids.size() - 1) + 5, 1, 0); // beyond the last record: from another queue's copy, say
        try (MessageStore store = open()) {
            QueueStore queue = store.queue("q");
            assertEquals(lastSegmentRecords, queue.recordsVerifiedAtOpen(), "the whole last segment is checked");
            assertEquals(1_000L * PAYLOAD, queue.unackedMessageBytes(StagedRecordVisitor.NONE));
        }
        writeMark(ids.get(500), 501L * PAYLOAD, 0);
        Path mark = queueDirectory().resolve(ForcedMark.FILE);
        byte[] bytes = Files.readAllBytes(mark);
        bytes[9] ^= 0x01; // the id, one bit off: the checksum no longer holds
        Files.write(mark, bytes);
        assertNull(ForcedMark.read(queueDirectory()));
        try (MessageStore store = open()) {
            QueueStore queue = store.queue("q");
            assertEquals(lastSegmentRecords, queue.recordsVerifiedAtOpen());
            assertEquals(1_000L * PAYLOAD, queue.unackedMessageBytes(StagedRecordVisitor.NONE));
            assertEquals(0, queue.recordsReadCountingBytes(), "the figures learned from the whole segment's check");
        }
    }

    @Test
    void aMarkOfAnEarlierSegmentOrOfAnotherFileIsNotBelieved(@TempDir Path copyRoot) throws Exception {
        List<Long> ids = fill(6_000);
        long last = ids.get(ids.size() - 1);
        long lastSegmentRecords = ids.stream().filter(id -> segmentOf(id) == segmentOf(last)).count();
        long inEarlierSegment = ids.stream().filter(id -> segmentOf(id) < segmentOf(last)).reduce((a, b) -> b).orElseThrow();
        writeMark(inEarlierSegment, 1, 0);
        try (MessageStore store = open()) {
            assertEquals(lastSegmentRecords, store.queue("q").recordsVerifiedAtOpen(), "a mark of the segment before");
        }
        writeMark(last, lastSegmentRecords * PAYLOAD, 0);
        // A copy of the queue's files (a backup restored): the same bytes in other files, whose marks say nothing of them.
        Path copy = copyRoot.resolve("copy");
        try (var files = Files.walk(dir)) {
            for (Path file : files.toList()) {
                Path target = copy.resolve(dir.relativize(file).toString());
                if (Files.isDirectory(file)) {
                    Files.createDirectories(target);
                } else if (!file.getFileName().toString().equals("store.lock")) {
                    Files.copy(file, target);
                }
            }
        }
        try (MessageStore store = MessageStore.open(copy, config())) {
            QueueStore queue = store.queue("q");
            assertEquals(lastSegmentRecords, queue.recordsVerifiedAtOpen(), "the copy's last segment is checked whole");
            assertEquals(6_000L * PAYLOAD, queue.unackedMessageBytes(StagedRecordVisitor.NONE));
        }
        try (MessageStore store = open()) {
            assertEquals(0, store.queue("q").recordsVerifiedAtOpen(), "the original's mark still holds for it");
        }
    }

    /**
     * Rule R5 before the mark: an interrupted relocation's copies are checked from the intent's id, even where a force
     * covered them, because the journal may not have made their RELOCATED records durable.
     */
    @Test
    void anInterruptedRelocationsIntentOverridesTheMark() throws Exception {
        List<Long> ids = fill(1_000);
        long lastSegmentRecords = ids.stream().filter(id -> segmentOf(id) == segmentOf(ids.get(ids.size() - 1))).count();
        new RelocationIntent(queueDirectory()).write(ids.get(900));
        assertNotNull(ForcedMark.read(queueDirectory()), "the mark of the clean close, naming the last record");
        try (MessageStore store = open()) {
            QueueStore queue = store.queue("q");
            assertEquals(lastSegmentRecords, queue.recordsVerifiedAtOpen(), "the intent's segment, from its start");
        }
    }

    @Test
    void theFlushersForceAfterARollMarksTheNewSegment() throws Exception {
        try (MessageStore store = open()) {
            QueueStore queue = store.createQueue("q");
            List<Long> ids = new ArrayList<>();
            for (int i = 0; i < 6_000; i++) {
                ids.add(queue.append(null, payload(i)));
            }
            long last = ids.get(ids.size() - 1);
            queue.whenDurable(last).get(10, TimeUnit.SECONDS);
            long inLastSegment = ids.stream().filter(id -> segmentOf(id) == segmentOf(last)).count();
            assertTrue(inLastSegment < ids.size(), "the records span a roll");
            ForcedMark.Mark mark = awaitMark(last);
            assertEquals(inLastSegment * PAYLOAD, mark.segmentMessageBytes(), "the bytes of the last segment's records only");
            assertEquals(ForcedMark.fileIdentity(queueDirectory().resolve("segments").resolve(
                    SegmentFiles.fileName(segmentOf(last)))), mark.segmentFile());
        }
    }

    /** The flusher writes the mark just after it reports the force; the test's confirm may come first. */
    private ForcedMark.Mark awaitMark(long index) throws InterruptedException {
        Await.until("the mark of record " + Long.toHexString(index), () -> {
            ForcedMark.Mark mark = ForcedMark.read(queueDirectory());
            return mark != null && mark.index() >= index;
        }, 10, TimeUnit.SECONDS);
        ForcedMark.Mark mark = ForcedMark.read(queueDirectory());
        assertNotNull(mark);
        assertEquals(index, mark.index());
        return mark;
    }

    /**
     * The point of the check: a record after the last force may be torn by a machine crash. Here one of them is damaged
     * on disk; the reopen finds it, skips it and serves the others.
     */
    @Test
    void aDamagedRecordAfterTheMarkIsFoundAndSkipped() throws Exception {
        List<Long> ids = fill(1_000);
        writeMark(ids.get(989), 990L * PAYLOAD, 0);
        damagePayloadOf(995);
        try (MessageStore store = open()) {
            QueueStore queue = store.queue("q");
            assertEquals(10, queue.recordsVerifiedAtOpen());
            assertEquals(1, queue.corruptRecords(), "the damaged record after the mark");
            List<Integer> read = read(queue);
            assertEquals(999, read.size());
            assertTrue(!read.contains(995), "the damaged record is not delivered");
        }
    }

    /** A mark names only what a force made durable: a failed force leaves the mark where the last good one put it. */
    @Test
    void aFailedForceLeavesTheMarkAtTheLastForceThatSucceeded() throws Exception {
        AtomicBoolean failing = new AtomicBoolean();
        FileForcer forcer = (channel, file) -> {
            if (failing.get() && file.toString().endsWith(SegmentFiles.SUFFIX)) {
                throw new IOException("Input/output error (injected)");
            }
            FileForcer.FSYNC.force(channel, file);
        };
        try (MessageStore store = MessageStore.open(dir, StoreConfig.builder().segmentBytes(1 << 20).maxMessageBytes(64 << 10).build(),
                System::currentTimeMillis, new FileReleaser(), forcer)) {
            QueueStore queue = store.createQueue("q");
            long forced = queue.append(null, payload(0));
            queue.whenDurable(forced).get(10, TimeUnit.SECONDS);
            awaitMark(forced);
            failing.set(true);
            long unforced = queue.append(null, payload(1));
            ExecutionException failed = assertThrows(ExecutionException.class,
                    () -> queue.whenDurable(unforced).get(10, TimeUnit.SECONDS));
            assertTrue(failed.getCause() instanceof StorageFailedException, failed.toString());
            ForcedMark.Mark mark = ForcedMark.read(queueDirectory());
            assertNotNull(mark);
            assertEquals(forced, mark.index(), "the mark names the last record a force made durable");
            assertEquals(PAYLOAD, mark.segmentMessageBytes());
        }
    }

    private List<Long> fill(int records) throws Exception {
        List<Long> ids = new ArrayList<>();
        try (MessageStore store = open()) {
            QueueStore queue = store.createQueue("q");
            for (int i = 0; i < records; i++) {
                ids.add(queue.append(null, payload(i)));
            }
            queue.whenDurable(ids.get(ids.size() - 1)).get(10, TimeUnit.SECONDS);
        }
        return ids;
    }

    private void writeMark(long index, long messageBytes, long staged) {
        ForcedMark mark = new ForcedMark(queueDirectory(), queueDirectory().resolve("segments"));
        mark.write(new ForcedMark.Written(index, messageBytes, staged));
        mark.close();
        ForcedMark.Mark written = ForcedMark.read(queueDirectory());
        assertNotNull(written);
        assertEquals(index, written.index());
    }

    /** Flips a byte of record {@code i}'s payload in its segment file, where its text is found. */
    private void damagePayloadOf(int i) throws Exception {
        byte[] marker = text(i).getBytes(StandardCharsets.US_ASCII);
        try (var files = Files.list(queueDirectory().resolve("segments"))) {
            for (Path file : files.filter(p -> p.toString().endsWith(".cq4")).toList()) {
                byte[] content = Files.readAllBytes(file);
                int at = ByteArrays.indexOf(content, marker);
                if (at >= 0) {
                    try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
                        channel.write(ByteBuffer.wrap(new byte[] {(byte) (content[at] ^ 0x20)}), at);
                    }
                    return;
                }
            }
        }
        throw new AssertionError("record " + i + " not found on disk");
    }

    private static List<Integer> read(QueueStore queue) {
        List<Integer> read = new ArrayList<>();
        try (QueueReader reader = queue.openReader()) {
            for (StoredMessage m = reader.next(); m != null; m = reader.next()) {
                String text = new String(m.payloadBytes(), StandardCharsets.US_ASCII);
                read.add(Integer.parseInt(text.substring(7, 14)));
            }
        }
        return read;
    }

    private static String text(int i) {
        return String.format("record-%07d-", i);
    }

    private static byte[] payload(int i) {
        byte[] payload = new byte[PAYLOAD];
        byte[] text = text(i).getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(text, 0, payload, 0, text.length);
        return payload;
    }

    private MessageStore open() {
        return MessageStore.open(dir, config());
    }

    private static StoreConfig config() {
        return StoreConfig.builder().segmentBytes(1 << 20).maxMessageBytes(64 << 10).build();
    }

    private Path queueDirectory() {
        return dir.resolve("queues").resolve("q");
    }

    private static int segmentOf(long id) {
        return (int) (id >>> 32);
    }
}
