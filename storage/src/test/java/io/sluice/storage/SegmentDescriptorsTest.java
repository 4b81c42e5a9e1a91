package io.sluice.storage;

import io.sluice.storage.files.FileDescriptors;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static io.sluice.storage.Await.until;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The descriptors a queue holds on its segment directory (links in {@code /proc/self/fd}) stay those of
 * the segment being written however many segments it rolls through, in every durability mode, and a
 * reclaimed segment is not held open (a deleted file's blocks come back only once nothing has it
 * open). Under {@code never} nothing forces, and the channels opened for a segment's forces were
 * closed only by a force: every segment written stayed open, reclaimed ones included.
 */
class SegmentDescriptorsTest {
    private static final int SEGMENTS = 20;

    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(DurabilityMode.class)
    void aQueueRollingThroughSegmentsHoldsOnlyTheWriteSegmentsDescriptors(DurabilityMode mode) throws Exception {
        try (MessageStore store = MessageStore.open(dir, StoreConfig.builder().durability(mode).syncIntervalMs(20)
                .segmentBytes(StoreConfig.MIN_SEGMENT_BYTES).maxMessageBytes(64 << 10).build())) {
            rollThroughSegments(store.createQueue("q"));
        }
    }

    /**
     * A relocation forces in every mode (rule R4), so under {@code never} too the syncer then holds the
     * channel of the segment the copy went to: it must let it go once that segment is sealed, not at a next
     * force that under {@code never} only another relocation would bring.
     */
    @ParameterizedTest
    @EnumSource(DurabilityMode.class)
    void theSegmentARelocationForcedIsNotHeldOpenOnceReclaimed(DurabilityMode mode) throws Exception {
        try (MessageStore store = MessageStore.open(dir, StoreConfig.builder().durability(mode).syncIntervalMs(20)
                .segmentBytes(StoreConfig.MIN_SEGMENT_BYTES).maxMessageBytes(64 << 10).relocateAfterMs(0).build())) {
            QueueStore q = store.createQueue("q");
            long straggler = q.append(null, new byte[100]);
            while (q.segmentNumbers().size() < 2) {
                q.ack(q.append(null, new byte[1000]));
            }
            until("the straggler relocated", () -> q.stats().relocatedMessages() == 1);
            q.ack(straggler);
            rollThroughSegments(q);
        }
    }

    /**
     * The figure the open-file-limit warning counts per queue being written ({@link FileDescriptors}) is
     * what such a queue holds, in every mode, once its first force (under {@code interval}, the interval's)
     * has run: under {@code never} that force never comes, and the channels it would need stay open. A
     * declared queue holds none until it is written (rule "Chronicle opens at first use").
     */
    @ParameterizedTest
    @EnumSource(DurabilityMode.class)
    void aQueueBeingWrittenHoldsTheDescriptorsTheFileLimitWarningCounts(DurabilityMode mode) throws Exception {
        int queues = 4;
        try (MessageStore store = MessageStore.open(dir, StoreConfig.builder().durability(mode).syncIntervalMs(20).build())) {
            Path queuesDirectory = dir.resolve("queues");
            List<QueueStore> created = new ArrayList<>();
            for (int i = 0; i < queues; i++) {
                created.add(store.createQueue("q" + i));
            }
            assertEquals(queues * FileDescriptors.PER_IDLE_QUEUE, descriptorsOn(queuesDirectory).size(),
                    "declared queues: " + descriptorsOn(queuesDirectory));
            for (QueueStore q : created) {
                q.whenDurable(q.append(null, new byte[100])).get(10, TimeUnit.SECONDS);
            }
            int expected = queues * FileDescriptors.perActiveQueue(mode);
            try {
                until(mode + ": the queues hold what the warning counts", () -> descriptorsOn(queuesDirectory).size() == expected,
                        5, TimeUnit.SECONDS);
            } catch (AssertionError e) {
                throw new AssertionError(e.getMessage() + ": " + expected + " expected, open now " + descriptorsOn(queuesDirectory), e);
            }
        }
    }

    private static void rollThroughSegments(QueueStore q) throws Exception {
        Path segments = q.segmentDirectory();
        byte[] payload = new byte[64 << 10];
        List<Integer> before = q.segmentNumbers();
        int until = (before.isEmpty() ? 0 : before.get(before.size() - 1)) + SEGMENTS;
        long last = -1;
        while (q.segmentNumbers().size() < 2 || q.segmentNumbers().get(q.segmentNumbers().size() - 1) < until) {
            last = q.append(null, payload);
            q.ack(last);
        }
        q.whenDurable(last).get(10, TimeUnit.SECONDS);
        until("every sealed segment reclaimed", () -> q.segmentNumbers().size() == 1);

        try {
            // The releaser thread closes what it is handed asynchronously.
            until("no descriptor left on a reclaimed segment", () -> deleted(descriptorsOn(segments)) == 0, 5, TimeUnit.SECONDS);
        } catch (AssertionError timedOut) {
            throw new AssertionError(timedOut.getMessage() + "; open now: " + descriptorsOn(segments), timedOut);
        }
        List<String> open = descriptorsOn(segments);
        long segmentFiles = open.stream().filter(target -> target.endsWith(".cq4")).distinct().count();
        assertTrue(segmentFiles <= 1, "only the write segment's file is open after " + SEGMENTS + " segments: " + open);
        assertTrue(open.size() <= 6, "a handful of descriptors, not some per segment written: " + open);
    }

    /** What the process's descriptors on files in {@code directory} (or on it) point at. */
    private static List<String> descriptorsOn(Path directory) {
        List<String> targets = new ArrayList<>();
        try (Stream<Path> links = Files.list(Path.of("/proc/self/fd"))) {
            for (Path link : (Iterable<Path>) links::iterator) {
                try {
                    String target = Files.readSymbolicLink(link).toString();
                    if (target.startsWith(directory.toString())) {
                        targets.add(target);
                    }
                } catch (IOException closedMeanwhile) {
                    // the descriptor was closed between the listing and the read
                }
            }
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return targets;
    }

    private static long deleted(List<String> targets) {
        return targets.stream().filter(t -> t.endsWith("(deleted)") || t.endsWith(".deleting")).count();
    }
}
