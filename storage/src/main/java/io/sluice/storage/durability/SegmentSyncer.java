package io.sluice.storage.durability;

import io.sluice.storage.StorageFilesExhaustedException;
import io.sluice.storage.files.FileDescriptors;
import io.sluice.storage.segment.FileReleaser;
import io.sluice.storage.segment.SegmentFiles;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Forces one queue's segment files to disk. On Linux, {@code fsync} of a file also writes back the
 * pages dirtied through a shared mapping of it, so forcing the segment file makes Chronicle's
 * memory-mapped appends durable (measured when Chronicle Queue was chosen). Keeps the channel of the
 * segment being written open between forces; the appending thread opens it ({@link #open(int)}) with
 * the segment's first append, so that a process out of file descriptors refuses that append rather
 * than a later force. A segment sealed since the last force is forced once more, and after a roll
 * the metadata file and the directory are forced too, so that the new file's existence is durable.
 *
 * <p>Thread-safe (the flusher thread forces; closing a queue forces one last time; {@link #open(int)}
 * is called under the queue's lock).
 */
public final class SegmentSyncer implements AutoCloseable {
    /** The name of Chronicle's metadata file in a segment directory. */
    public static final String METADATA_FILE = SingleChronicleQueue.QUEUE_METADATA_FILE;

    private final Path segmentDirectory;
    private final FileReleaser releaser;
    private final FileForcer forcer;
    /** What {@link #open(int)} opened for new segments, until a force takes it over. */
    private final Map<Integer, Opened> opened = new ConcurrentHashMap<>();
    /** The segment {@link #open(int)} last made sure of; only the appending thread, under the queue's lock, uses it. */
    private int openedSegment = -1;
    private FileChannel current;
    private int currentSegment = -1;
    private Path currentFile;
    /**
     * The first force that failed, or null. Rule "a failed force is final" (docs/storage.md): after an EIO Linux
     * reports the error once and marks the pages clean, so a later force of the same file would succeed without
     * writing them. The queue fails with the first failure; this refuses every later force too, also one already
     * waiting for this syncer's monitor when the first failed (a close of the queue racing the flusher). Guarded by
     * this.
     */
    private Throwable failedForce;
    private final AtomicLong syncs = new AtomicLong();
    private final AtomicLong syncNanos = new AtomicLong();

    /**
     * The channels the first force of a segment needs: the segment's own, which stays open while it is
     * written, and those closed after that force (Chronicle's metadata file, the segment directory and,
     * for the first segment since the queue opened, the queue's directory and the directory of queues).
     */
    private record Opened(FileChannel segment, List<Entry> metadata) {
    }

    /** A file or directory to force once, with the first force of a segment. */
    private record Entry(Path path, FileChannel channel, boolean directory) {
    }

    /** {@code releaser} closes the channels of sealed segments, whose file reclaim may have unlinked meanwhile. */
    public SegmentSyncer(Path segmentDirectory, FileReleaser releaser, FileForcer forcer) {
        this.segmentDirectory = segmentDirectory;
        this.releaser = releaser;
        this.forcer = forcer;
    }

    /**
     * Appending thread, under the queue's lock, before each append writes its record (once Chronicle has
     * the segment file open): the first time an append goes to a segment, opens every channel the
     * segment's first force needs (see {@link Opened}). So the append that needs new descriptors is the
     * one refused when the process has none left, before it wrote anything (rule "descriptors are taken
     * by the append", docs/storage.md), and the flusher's forces need none.
     *
     * @throws StorageFilesExhaustedException if the process's open-file limit is reached; nothing is kept open
     * @throws IOException if a file cannot be opened for another reason; nothing is kept open
     */
    public void open(int segment) throws IOException {
        if (segment == openedSegment) {
            return;
        }
        Opened channels = openFor(segment, openedSegment < 0);
        Opened previous = opened.put(segment, channels);
        if (previous != null) {
            closeAll(previous);
        }
        openedSegment = segment;
    }

    private Opened openFor(int segment, boolean andParents) throws IOException {
        List<Entry> metadata = new ArrayList<>(4);
        FileChannel segmentChannel = null;
        try {
            segmentChannel = openChannel(SegmentFiles.file(segmentDirectory, segment), StandardOpenOption.WRITE);
            Path metadataFile = segmentDirectory.resolve(METADATA_FILE);
            if (Files.exists(metadataFile)) {
                metadata.add(new Entry(metadataFile, openChannel(metadataFile, StandardOpenOption.WRITE), false));
            }
            metadata.add(directoryEntry(segmentDirectory));
            Path queueDirectory = segmentDirectory.getParent();
            if (andParents && queueDirectory != null) {
                metadata.add(directoryEntry(queueDirectory));
                if (queueDirectory.getParent() != null) {
                    metadata.add(directoryEntry(queueDirectory.getParent()));
                }
            }
            return new Opened(segmentChannel, metadata);
        } catch (IOException | RuntimeException e) {
            if (segmentChannel != null) {
                segmentChannel.close();
            }
            for (Entry entry : metadata) {
                entry.channel().close();
            }
            throw e;
        }
    }

    /**
     * Forces every segment in {@code sealed}, then {@code segment}, the one holding the newest append.
     *
     * @throws StorageFilesExhaustedException if a file could not be opened for want of descriptors (only
     *         when {@link #open(int)} was not called for the segment): nothing failed to reach the disk, and
     *         the same force can be tried again
     * @throws IOException if a force failed, now or in an earlier call (then every later call throws too)
     */
    public synchronized void force(List<Integer> sealed, int segment) throws IOException {
        if (failedForce != null) {
            throw new IOException("an earlier force of this queue's segments failed (" + failedForce
                    + "); the kernel may have dropped what it could not write, so no later force can vouch for it", failedForce);
        }
        try {
            forceAll(sealed, segment);
        } catch (StorageFilesExhaustedException e) {
            throw e; // nothing was forced: the same force may be tried again
        } catch (IOException | RuntimeException e) {
            failedForce = e;
            throw e;
        }
    }

    private void forceAll(List<Integer> sealed, int segment) throws IOException {
        for (int s : sealed) {
            if (s == currentSegment) {
                forcer.force(current, currentFile); // closed below, once the next segment's channel replaces it
                continue;
            }
            Path file = SegmentFiles.file(segmentDirectory, s);
            Opened channels = opened.remove(s);
            FileChannel ch;
            if (channels != null) {
                // Sealed before it was ever forced: its entries (and, for a queue's first, the parents') too.
                ch = channels.segment();
                try {
                    forceMetadata(channels);
                } catch (IOException | RuntimeException e) {
                    releaser.close(ch);
                    throw e;
                }
            } else {
                try {
                    ch = openChannel(file, StandardOpenOption.WRITE);
                } catch (NoSuchFileException reclaimedAlready) {
                    continue; // every message in it was acknowledged and the file deleted: nothing left to force
                }
            }
            try {
                forcer.force(ch, file);
            } finally {
                releaser.close(ch);
            }
        }
        if (segment != currentSegment) {
            Path nextFile = SegmentFiles.file(segmentDirectory, segment);
            Opened next = opened.remove(segment);
            if (next == null) {
                next = openFor(segment, currentSegment < 0);
            }
            try {
                // The new file's directory entry must be durable with its data: after every roll, and for the
                // first segment this syncer forces (a new queue's first, or one created after a restart).
                forceMetadata(next);
            } catch (IOException | RuntimeException e) {
                releaser.close(next.segment());
                throw e;
            }
            if (current != null) {
                releaser.close(current);
            }
            current = next.segment();
            currentFile = nextFile;
            currentSegment = segment;
        }
        long started = System.nanoTime();
        forcer.force(current, currentFile);
        syncNanos.addAndGet(System.nanoTime() - started);
        syncs.incrementAndGet();
    }

    /**
     * Closes what this syncer holds for the segments before {@code segment} without forcing them: under
     * durability {@code never} nothing forces a sealed segment, and its channels (opened for forces by
     * {@link #open(int)}, or kept from a relocation's force) would otherwise stay open for the queue's
     * life, a reclaimed segment's keeping its deleted file's blocks. Flusher thread, never while a
     * reclaim pass has unforced copies (rule R4 forces those within its pass, on the same thread).
     */
    public synchronized void releaseBefore(int segment) throws IOException {
        for (Integer s : new ArrayList<>(opened.keySet())) {
            if (s < segment) {
                closeAll(opened.remove(s));
            }
        }
        if (current != null && currentSegment < segment) {
            releaser.close(current);
            current = null;
            currentFile = null;
            currentSegment = -1;
        }
    }

    /**
     * Forces Chronicle's metadata file and the segment directory; for the first segment since the
     * queue opened, also the queue's directory and the directory of queues, so that a new queue's own
     * entries are durable before its first confirm. Closes those channels.
     */
    private void forceMetadata(Opened channels) throws IOException {
        try {
            for (Entry entry : channels.metadata()) {
                if (entry.directory()) {
                    forcer.forceDirectory(entry.channel(), entry.path());
                } else {
                    forcer.force(entry.channel(), entry.path());
                }
            }
        } finally {
            closeMetadata(channels);
        }
    }

    private static Entry directoryEntry(Path directory) throws IOException {
        return new Entry(directory, openChannel(directory, StandardOpenOption.READ), true);
    }

    private static void closeMetadata(Opened channels) throws IOException {
        for (Entry entry : channels.metadata()) {
            entry.channel().close();
        }
    }

    private void closeAll(Opened channels) throws IOException {
        closeMetadata(channels);
        releaser.close(channels.segment());
    }

    /** Opens {@code file}; running out of descriptors is told apart from other failures. */
    private static FileChannel openChannel(Path file, StandardOpenOption mode) throws IOException {
        try {
            return FileChannel.open(file, mode);
        } catch (IOException e) {
            if (FileDescriptors.exhausted(e)) {
                throw FileDescriptors.exhaustedError("cannot open " + file, e);
            }
            throw e;
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
        for (Opened channels : opened.values()) {
            closeMetadata(channels);
            channels.segment().close();
        }
        opened.clear();
        if (current != null) {
            current.close();
            current = null;
        }
    }
}
