package io.sluice.storage.crash;

import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueReader;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoredMessage;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.durability.FileForcer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.LongStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Records a killed process appended but never forced are in the page cache: the next open reads them
 * there and counts them as durable (a resend of one is answered DUPLICATE at once), so they must be on
 * disk before the queue is served, or a machine crash after the restart loses what that answer
 * confirmed (docs/storage.md, "Recovery"). The disk of that machine crash is built from exactly what
 * was forced: by the killed process ({@link CrashingWriter}'s unforced-tail mode writes its image), then
 * by the store that reopened its files ({@link ForcedDiskImage#overlay}).
 */
class UnforcedTailMachineCrashTest {
    private static final int TOTAL = CrashingWriter.TAIL_FORCED_MESSAGES + CrashingWriter.TAIL_UNFORCED_MESSAGES;

    @TempDir
    Path temp;

    @Test
    void recordsAKilledProcessLeftUnforcedSurviveAMachineCrashAfterTheRestart() throws Exception {
        Path data = temp.resolve("data");
        try (ChildWriter child = new ChildWriter(data, "unforced-tail", 0, temp.resolve("child.log"))) {
            child.awaitReport("written ");
            child.kill();
            assertEquals(CrashingWriter.TAIL_FORCED_MESSAGES - 1, child.confirmed);
            assertEquals(TOTAL - 1, child.written);
        }
        Path image = CrashingWriter.forcedImage(data);
        List<Long> everything = LongStream.range(0, TOTAL).boxed().toList();
        try (MessageStore crashedImage = MessageStore.open(copyOf(image), CrashingWriter.config("unforced-tail"))) {
            // The test's premise: had the machine crashed at the kill, the tail would be gone.
            assertEquals(CrashingWriter.TAIL_FORCED_MESSAGES, sequences(crashedImage.queue(CrashingWriter.QUEUE)).size());
        }

        ForcedDiskImage reopened = new ForcedDiskImage(data);
        try (MessageStore store = MessageStore.open(data, CrashingWriter.config("unforced-tail"), reopened)) {
            QueueStore q = store.queue(CrashingWriter.QUEUE);
            assertTrue(q.segmentNumbers().size() >= 2, "the unforced tail spans a roll: " + q.segmentNumbers());
            assertSequences(everything, sequences(q), "the page cache kept every record");
            assertTrue(q.whenDurable(q.writtenIndex()).isDone(), "the reopened store counts them all as durable");
            reopened.overlay(image); // the machine crashes now, before anything else is appended or forced
        }
        try (MessageStore afterMachineCrash = MessageStore.open(image, CrashingWriter.config("unforced-tail"))) {
            assertSequences(everything, sequences(afterMachineCrash.queue(CrashingWriter.QUEUE)),
                    "what the restarted store counted as durable was on disk");
        }
    }

    @Test
    void onlyAnOpenAfterAnUncleanStopForcesTheSegments() throws Exception {
        Path data = temp.resolve("clean");
        StoreConfig config = CrashingWriter.config("unforced-tail");
        try (MessageStore store = MessageStore.open(data, config)) {
            QueueStore q = store.createQueue("q");
            long last = -1;
            for (int seq = 0; seq < 100; seq++) {
                last = q.append(null, CrashingWriter.tailPayload(seq));
            }
            q.whenDurable(last).get();
            assertFalse(Files.exists(data.resolve("clean-shutdown")), "no clean mark while the store is open");
        }
        assertTrue(Files.exists(data.resolve("clean-shutdown")), "a clean close leaves its mark");

        SegmentForces afterClean = new SegmentForces();
        try (MessageStore reopened = MessageStore.open(data, config, afterClean)) {
            assertEquals(0, afterClean.count.get(), "after a clean close every segment was forced already");
        }

        Files.delete(data.resolve("clean-shutdown")); // what a process crash leaves: no mark
        SegmentForces afterCrash = new SegmentForces();
        try (MessageStore reopened = MessageStore.open(data, config, afterCrash)) {
            assertEquals(1, afterCrash.count.get(), "after an unclean stop the queue's one segment is forced at open");
        }
    }

    /** Counts forces of segment files. */
    private static final class SegmentForces implements FileForcer {
        final AtomicInteger count = new AtomicInteger();

        @Override
        public void force(FileChannel channel, Path file) throws java.io.IOException {
            if (file.getFileName().toString().endsWith(".cq4")) {
                count.incrementAndGet();
            }
            channel.force(false);
        }
    }

    private Path copyOf(Path image) throws java.io.IOException {
        Path copy = temp.resolve("image-copy");
        try (var files = Files.walk(image)) {
            for (Path file : (Iterable<Path>) files::iterator) {
                Path target = copy.resolve(image.relativize(file).toString());
                if (Files.isDirectory(file)) {
                    Files.createDirectories(target);
                } else {
                    Files.copy(file, target);
                }
            }
        }
        return copy;
    }

    /** Fails with how many and which sequences differ, rather than two lists of thousands. */
    private static void assertSequences(List<Long> expected, List<Long> read, String what) {
        if (!expected.equals(read)) {
            List<Long> missing = new ArrayList<>(expected);
            missing.removeAll(read);
            throw new AssertionError(what + ": read " + read.size() + " of " + expected.size() + " sequences; missing "
                    + missing.size() + (missing.isEmpty() ? "" : " (" + missing.get(0) + " to " + missing.get(missing.size() - 1) + ")"));
        }
    }

    /** The sequences (first 8 bytes) of the queue's unacknowledged messages, in id order. */
    private static List<Long> sequences(QueueStore q) {
        List<Long> read = new ArrayList<>();
        try (QueueReader reader = q.openReader()) {
            for (StoredMessage m = reader.next(); m != null; m = reader.next()) {
                read.add(CrashingWriter.seqOf(m.payloadBytes()));
            }
        }
        return read;
    }
}
