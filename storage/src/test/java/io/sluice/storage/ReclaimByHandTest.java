package io.sluice.storage;

import io.sluice.storage.durability.FileForcer;
import io.sluice.storage.files.FileDescriptors;
import io.sluice.storage.segment.SegmentFiles;
import io.sluice.storage.segment.FileReleaser;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.FileSystemException;
import java.nio.file.StandardOpenOption;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;

import static io.sluice.storage.Await.until;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Reclaim passes run by the test on a queue without a flusher thread, with the file releaser's thread
 * held back: what the flusher no longer does itself, when relocation starts, and which events ask for a pass
 * (passes one millisecond apart are well within the periodic pass's interval, so only a pass asked for runs).
 */
class ReclaimByHandTest {
    private static final long SECOND = 1_000_000_000L;
    private static final long A_MILLISECOND = 1_000_000L;

    @TempDir
    Path dir;
    private final CountDownLatch releaserHeld = new CountDownLatch(1);
    private ExecutorService releaserThread;
    private FileReleaser releaser;
    private QueueStore queue;

    @BeforeEach
    void open() throws Exception {
        releaserThread = Executors.newSingleThreadExecutor();
        releaserThread.execute(() -> {
            try {
                releaserHeld.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        releaser = new FileReleaser(releaserThread);
        queue = QueueStore.open("q", dir, StoreConfig.builder()
                        .segmentBytes(StoreConfig.MIN_SEGMENT_BYTES)
                        .maxMessageBytes(64 << 10)
                        .durability(DurabilityMode.NEVER)
                        .build(),
                new DiskSpaceGuard(dir, 0), System::currentTimeMillis, () -> { }, null, releaser, FileForcer.FSYNC, false);
    }

    @AfterEach
    void close() {
        releaserHeld.countDown();
        queue.close();
        releaser.close();
    }

    private List<Long> appendSegments(int segments) {
        List<Long> ids = new ArrayList<>();
        while (queue.segmentNumbers().size() <= segments) {
            ids.add(queue.append(null, new byte[1000]));
        }
        return ids;
    }

    private List<String> files(String suffix) throws IOException {
        try (Stream<Path> list = Files.list(queue.segmentDirectory())) {
            return list.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(suffix)).sorted().toList();
        }
    }

    @Test
    void shouldLeaveTheUnlinkOfAReclaimedSegmentToTheReleaserThread() throws Exception {
        List<Long> ids = appendSegments(2);
        int first = queue.segmentNumbers().get(0);
        long[] all = ids.stream().mapToLong(Long::longValue).toArray();
        queue.ackAll(all, all.length);

        assertTrue(queue.reclaim(System.nanoTime()), "the pass reclaims the sealed segments");
        assertFalse(queue.segmentNumbers().contains(first));
        List<String> waiting = files(".cq4.deleting");
        assertEquals(2, waiting.size(), "renamed out of Chronicle's sight, not unlinked by the pass: " + waiting);

        releaserHeld.countDown();
        until("the releaser unlinks them", () -> {
            try {
                return files(".cq4.deleting").isEmpty();
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        assertEquals(1, files(".cq4").size(), "the segment being written stays");
    }

    @Test
    void shouldRelocateStragglersOnlyOnceTheirSegmentHasBeenSealedForASecond() {
        List<Long> ids = appendSegments(1);
        long straggler = ids.get(5);
        int segment = (int) (straggler >>> 32);
        long[] others = ids.stream().mapToLong(Long::longValue).filter(id -> id != straggler).toArray();
        queue.ackAll(others, others.length);
        long now = System.nanoTime();

        queue.reclaim(now);
        assertEquals(0, queue.stats().relocatedMessages(), "a straggler of a just-sealed segment may be an ack in flight");
        assertTrue(queue.segmentNumbers().contains(segment));

        queue.reclaim(now + SECOND + 1);
        assertEquals(1, queue.stats().relocatedMessages(), "sealed for over a second: the straggler is moved");
        queue.reclaim(now + SECOND + 200_000_000L);
        assertFalse(queue.segmentNumbers().contains(segment), "and its segment reclaimed");
        assertEquals(straggler, queue.read(straggler).id());
    }

    @Test
    void theOldestUnackedMessageIsARelocatedStragglerByItsOriginalIdAndTheWalkEnds() {
        List<Long> ids = appendSegments(1);
        long straggler = ids.get(5);
        long[] others = ids.stream().mapToLong(Long::longValue).filter(id -> id != straggler).toArray();
        queue.ackAll(others, others.length);
        long newer = queue.append(null, new byte[1000]);
        long now = System.nanoTime();
        queue.reclaim(now + SECOND + 1);
        assertEquals(1, queue.stats().relocatedMessages());

        assertEquals(straggler, queue.oldestUnacked(id -> false, 0), "the copy sits after newer messages, yet it is the oldest");
        List<Long> asked = new ArrayList<>();
        assertEquals(newer, queue.oldestUnacked(id -> asked.add(id) && id == straggler, 10));
        assertEquals(List.of(newer, straggler), asked, "each message asked about once");
        assertEquals(-1, queue.oldestUnacked(id -> true, 100), "every message rejected: the walk ends");
    }

    @Test
    void aStagedStragglerKeepsItsFlagAndTransactionWhenRelocatedAndTheOpeningPassFindsItByItsOriginalId() {
        long staged = queue.appendStaged(77, ByteBuffer.wrap(new byte[1000]), 0, 0, 0, 1000);
        List<Long> ids = appendSegments(1);
        long[] others = ids.stream().mapToLong(Long::longValue).toArray();
        queue.ackAll(others, others.length);
        queue.reclaim(System.nanoTime() + SECOND + 1);
        assertEquals(1, queue.stats().relocatedMessages());

        StoredMessage copy = queue.read(staged);
        assertTrue(copy.relocated());
        assertTrue(copy.transactional(), "a relocated copy is still pending for the broker: " + copy);
        assertEquals(77, copy.producerId());
        List<String> found = new ArrayList<>();
        long bytes = queue.unackedMessageBytes((id, transaction, commitRecord, messageBytes) -> found.add(id + "/" + transaction + "/" + messageBytes));
        assertEquals(List.of(staged + "/77/1000"), found);
        assertEquals(1000, bytes, "only the staged message is unacknowledged");
    }

    private static long[] inSegment(List<Long> ids, int segment) {
        return ids.stream().mapToLong(Long::longValue).filter(id -> (int) (id >>> 32) == segment).toArray();
    }

    /**
     * Rule "what held a segment back asks for a pass when it lets go": R6's keep-from mark moving on after a producer
     * checkpoint is durable (on the owner's writer thread, often after the acks' own pass found the segments held).
     */
    @Test
    void aProducerCheckpointMovingTheKeepFromMarkAsksForAPass() {
        queue.producerStateCoveredThrough(-1); // an owner replaying: every segment kept (R6)
        List<Long> ids = appendSegments(2);
        long[] all = ids.stream().mapToLong(Long::longValue).toArray();
        queue.ackAll(all, all.length);
        List<Integer> segments = queue.segmentNumbers();
        long now = System.nanoTime();

        assertFalse(queue.reclaim(now), "the mark holds the acknowledged segments");
        assertEquals(segments, queue.segmentNumbers());

        queue.producerStateCoveredThrough(ids.get(ids.size() - 1)); // a checkpoint through the last record is durable
        assertTrue(queue.reclaim(now + A_MILLISECOND), "the mark's move asked for a pass, which reclaims the sealed segments");
        assertEquals(List.of(segments.get(segments.size() - 1)), queue.segmentNumbers(), "only the segment being written stays");
    }

    /** The same rule for R1: the last reader in a fully acknowledged segment moving on. */
    @Test
    void aReaderLeavingAnAcknowledgedSegmentAsksForAPass() {
        List<Long> ids = appendSegments(2);
        int first = queue.segmentNumbers().get(0);
        try (QueueReader reader = queue.openReader()) {
            long[] firstSegment = inSegment(ids, first);
            queue.ackAll(firstSegment, firstSegment.length);
            long now = System.nanoTime();

            assertFalse(queue.reclaim(now), "the reader in it holds the acknowledged segment (R1)");
            assertTrue(queue.segmentNumbers().contains(first));

            StoredMessage next = reader.next(); // skips the acknowledged records: the reader leaves the segment
            assertEquals(inSegment(ids, first + 1)[0], next.id());
            assertTrue(queue.reclaim(now + A_MILLISECOND), "the reader's move asked for a pass, which reclaims the segment");
            assertFalse(queue.segmentNumbers().contains(first));
        }
    }

    /**
     * The same rule for a relocated source whose copies' force was refused for want of file descriptors (rule "a source
     * waits for its copies' forces"): the store freeing a descriptor asks the waiting queue for a pass. A channel the
     * store's releaser closes (a sealed segment's, in the store) frees one.
     */
    @Test
    void aDescriptorTheStoreFreesAsksForAPassOfAQueueWhoseCopiesWaitForOne() throws Exception {
        AtomicBoolean refusing = new AtomicBoolean();
        FileForcer outOfDescriptors = (channel, file) -> { // a segment's force, the first a relocation's force makes
            if (refusing.get()) {
                throw FileDescriptors.exhaustedError("cannot open " + file, new FileSystemException(file.toString(), null,
                        "Too many open files"));
            }
            channel.force(false);
        };
        Path otherDirectory = Files.createDirectories(dir.resolve("other"));
        QueueStore other = QueueStore.open("other", otherDirectory, StoreConfig.builder()
                        .segmentBytes(StoreConfig.MIN_SEGMENT_BYTES).maxMessageBytes(64 << 10).durability(DurabilityMode.NEVER).build(),
                new DiskSpaceGuard(otherDirectory, 0), System::currentTimeMillis, () -> { }, null, releaser, outOfDescriptors, false);
        try {
            List<Long> ids = new ArrayList<>();
            while (other.segmentNumbers().size() <= 1) {
                ids.add(other.append(null, new byte[1000]));
            }
            int first = other.segmentNumbers().get(0);
            long straggler = ids.get(5);
            long[] others = ids.stream().mapToLong(Long::longValue).filter(id -> id != straggler).toArray();
            other.ackAll(others, others.length);
            refusing.set(true);
            long now = System.nanoTime() + SECOND + 1;

            other.reclaim(now);
            assertEquals(1, other.stats().relocatedMessages(), "the straggler is copied");
            assertTrue(other.segmentNumbers().contains(first), "its source waits for the copy's force, refused");

            refusing.set(false);
            releaserHeld.countDown();
            FileChannel released = FileChannel.open(Files.createFile(dir.resolve("a-channel")), StandardOpenOption.WRITE);
            releaser.close(released); // the store frees a descriptor
            until("the releaser closed the channel", () -> !released.isOpen());
            assertTrue(other.reclaim(now + A_MILLISECOND), "the freed descriptor asked for a pass, which forces the copy");
            assertFalse(other.segmentNumbers().contains(first), "and deletes its source");
            assertEquals(straggler, other.read(straggler).id());
        } finally {
            other.close();
        }
    }

    /**
     * The same rule for a damaged record found by a read by id (a redelivery): discarded, it is acknowledged, and it
     * may have been the last unacknowledged message of its sealed segment, which no reader holds.
     */
    @Test
    void aDamagedRecordDiscardedByAReadByIdAsksForAPass() throws Exception {
        byte[] marker = "a record to damage".getBytes(StandardCharsets.US_ASCII);
        long damaged = queue.append(null, marker);
        List<Long> ids = appendSegments(2);
        int first = (int) (damaged >>> 32);
        long[] others = inSegment(ids, first);
        queue.ackAll(others, others.length);
        long now = System.nanoTime();

        assertFalse(queue.reclaim(now), "the record not acknowledged holds its segment");
        flipAByteOf(marker, queue.segmentDirectory().resolve(SegmentFiles.fileName(first)));
        assertThrows(CorruptRecordException.class, () -> queue.read(damaged), "found damaged, and discarded");
        assertTrue(queue.reclaim(now + A_MILLISECOND), "the discard asked for a pass, which reclaims the segment");
        assertFalse(queue.segmentNumbers().contains(first));
    }

    /** Flips a byte of {@code marker} where it is in {@code file}, through the page cache the queue's mapping shares. */
    private static void flipAByteOf(byte[] marker, Path file) throws IOException {
        byte[] content = Files.readAllBytes(file);
        for (int at = 0; at + marker.length <= content.length; at++) {
            if (Arrays.equals(content, at, at + marker.length, marker, 0, marker.length)) {
                try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
                    channel.write(ByteBuffer.wrap(new byte[] {(byte) (content[at] ^ 0x20)}), at);
                }
                return;
            }
        }
        throw new AssertionError("the marker is not in " + file);
    }
}
