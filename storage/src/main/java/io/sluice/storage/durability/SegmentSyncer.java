package io.sluice.storage.durability;

import io.sluice.storage.segment.FileReleaser;
import io.sluice.storage.segment.SegmentFiles;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Forces one queue's segment files to disk. On Linux, {@code fsync} of a file also writes back the
 * pages dirtied through a shared mapping of it, so forcing the segment file makes Chronicle's
 * memory-mapped appends durable (measured in shared/notes/chronicle-queue.md). Keeps the channel of
 * the segment being written open between forces; a segment sealed since the last force is forced
 * once more on its own, and after a roll the metadata file and the directory are forced too, so that
 * the new file's existence is durable.
 *
 * <p>Thread-safe (the flusher thread forces; closing a queue forces one last time).
 */
public final class SegmentSyncer implements AutoCloseable {
    private final Path segmentDirectory;
    private final FileReleaser releaser;
    private final FileForcer forcer;
    private FileChannel current;
    private int currentSegment = -1;
    private Path currentFile;
    private final AtomicLong syncs = new AtomicLong();
    private final AtomicLong syncNanos = new AtomicLong();

    /** {@code releaser} closes the channels of sealed segments, whose file reclaim may have unlinked meanwhile. */
    public SegmentSyncer(Path segmentDirectory, FileReleaser releaser, FileForcer forcer) {
        this.segmentDirectory = segmentDirectory;
        this.releaser = releaser;
        this.forcer = forcer;
    }

    /** Forces every segment in {@code sealed}, then {@code segment}, the one holding the newest append. */
    public synchronized void force(List<Integer> sealed, int segment) throws IOException {
        for (int s : sealed) {
            FileChannel ch;
            Path file = SegmentFiles.file(segmentDirectory, s);
            try {
                ch = FileChannel.open(file, StandardOpenOption.WRITE);
            } catch (NoSuchFileException reclaimedAlready) {
                continue; // every message in it was acknowledged and the file deleted: nothing left to force
            }
            try {
                forcer.force(ch, file);
            } finally {
                releaser.close(ch);
            }
        }
        if (segment != currentSegment) {
            if (current != null) {
                releaser.close(current);
            }
            boolean firstSinceOpen = currentSegment < 0;
            currentFile = SegmentFiles.file(segmentDirectory, segment);
            current = FileChannel.open(currentFile, StandardOpenOption.WRITE);
            currentSegment = segment;
            // The new file's directory entry must be durable with its data: after every roll, and for the
            // first segment this syncer forces (a new queue's first, or one created after a restart).
            forceMetadata(firstSinceOpen);
        }
        long started = System.nanoTime();
        forcer.force(current, currentFile);
        syncNanos.addAndGet(System.nanoTime() - started);
        syncs.incrementAndGet();
    }

    /**
     * Forces Chronicle's metadata file and the segment directory; with {@code andParents}, also the
     * queue's directory and the directory of queues, so that a new queue's own entries are durable
     * before its first confirm.
     */
    private void forceMetadata(boolean andParents) throws IOException {
        Path metadata = segmentDirectory.resolve(SingleChronicleQueue.QUEUE_METADATA_FILE);
        if (Files.exists(metadata)) {
            try (FileChannel ch = FileChannel.open(metadata, StandardOpenOption.WRITE)) {
                ch.force(false);
            }
        }
        forceDirectory(segmentDirectory);
        if (andParents) {
            Path queueDirectory = segmentDirectory.getParent();
            forceDirectory(queueDirectory);
            if (queueDirectory.getParent() != null) {
                forceDirectory(queueDirectory.getParent());
            }
        }
    }

    /**
     * Forces what opening a new queue wrote outside its ack directory (which the ack log forces itself):
     * Chronicle's metadata file, the segment directory and the queue's directory, which holds the
     * entries of both subdirectories. The directory of queues is left to the caller, which forces it
     * once for every queue created with this one.
     */
    public void forceNewQueue() throws IOException {
        forceMetadata(false);
        forceDirectory(segmentDirectory.getParent());
    }

    private void forceDirectory(Path directory) throws IOException {
        try (FileChannel dir = FileChannel.open(directory, StandardOpenOption.READ)) {
            forcer.forceDirectory(dir, directory);
        }
    }

    /** Forces of the segment being written since the syncer was made. */
    public long syncs() {
        return syncs.get();
    }

    /** Time spent in those forces, in nanoseconds. */
    public long syncNanos() {
        return syncNanos.get();
    }

    @Override
    public synchronized void close() throws IOException {
        if (current != null) {
            current.close();
            current = null;
        }
    }
}
