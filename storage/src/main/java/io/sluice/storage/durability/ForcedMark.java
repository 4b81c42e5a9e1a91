package io.sluice.storage.durability;

import io.sluice.storage.files.ChecksummedFields;
import io.sluice.storage.files.MappedBufferUnmapper;
import io.sluice.storage.segment.SegmentFiles;
import io.sluice.storage.segment.SegmentRollCycle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.zip.CRC32C;

/**
 * Rule "the forced mark" (docs/storage.md, "Recovery"): the newest record a successful force of a queue's segments made
 * durable, with its segment's message bytes and transaction-staged records through it, kept in
 * {@code <queue>/forced.mark} so that recovery checks only the records after it instead of its whole last segment, and
 * still learns that segment's figures for the backlog's byte count.
 *
 * <p>A hint that can only lag: it is written after the force it names has succeeded, and never forced itself, so
 * whatever a crash leaves of it (the newest mark, an older one, a torn one that fails its checksum, none) names a
 * record that was on disk when the mark was written. It also names the segment file it was made for (its inode), so
 * that a copy of the queue's files (a backup restored) does not carry it to another file. The file's block is
 * allocated by a plain write when it is first opened, and later marks are stores into a mapping of it: no system call
 * per force (one per segment, for its inode). Layout, little-endian: magic {@code "SFMK"}, format version (int, 2), the
 * record's id, the message bytes of its segment through it (-1 if unknown), the staged records through it, the
 * segment file's inode (longs), CRC32C of the bytes before it (int).
 *
 * <p>Best effort throughout: a mark that cannot be kept (no descriptor or no space to open the file, a fault storing
 * into it, a segment file whose inode cannot be read) only means recovery checks the whole last segment, so nothing is
 * thrown; after the first failure the queue keeps no mark until it is opened again. One limit: the JVM may raise a fault
 * of a store into a mapping (an I/O error reading its page back) after the store's method returned; the block is
 * allocated up front, so nothing short of a failing disk can cause one, and then the flusher fails the queue as for a
 * segment's. The inode is what ties the mark to its file: replacing a queue's segment files in place while keeping its
 * mark (a partial restore) may give the new last segment the old inode; restore a queue's directory whole.
 *
 * <p>Threads: {@link #write} on the forcing thread (the flusher; the closing thread for the last force), {@link #close}
 * on the closing thread; both under this object's monitor. {@link #read} is for recovery, before the queue is served.
 */
public final class ForcedMark implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ForcedMark.class);
    public static final String FILE = "forced.mark";
    private static final int MAGIC = 0x4b4d4653; // "SFMK" read little-endian
    private static final int VERSION = 2; // 1: without the segment file's inode, 36 bytes
    static final int BYTES = ChecksummedFields.OVERHEAD_BYTES + 8 + 8 + 8 + 8;

    static {
        MappedBufferUnmapper.load(); // close() unmaps, maybe when no descriptor is left to read a class file with
    }

    /** The newest append and its segment's figures through it, as {@link Durability} publishes them. */
    public record Written(long index, long segmentMessageBytes, long segmentStaged) {
    }

    /** What a mark says: every record of {@code index}'s segment file {@code segmentFile} through {@code index} was forced. */
    public record Mark(long index, long segmentMessageBytes, long segmentStaged, long segmentFile) {
    }

    private final Path file;
    private final Path segmentDirectory;
    private final byte[] scratch = new byte[BYTES];
    private final ByteBuffer scratchBuffer = ByteBuffer.wrap(scratch).order(ByteOrder.LITTLE_ENDIAN);
    private final CRC32C crc = new CRC32C();
    private MappedByteBuffer mapped;
    private boolean closed;
    private boolean failed;
    private int identifiedSegment = -1;
    private long identity = -1;

    /** A mark kept in {@code queueDirectory} for the segments in {@code segmentDirectory}; nothing is opened until the first {@link #write}. */
    public ForcedMark(Path queueDirectory, Path segmentDirectory) {
        this.file = queueDirectory.resolve(FILE);
        this.segmentDirectory = segmentDirectory;
    }

    /** Records that every record through {@code forced}'s index is forced. Never throws (see the class comment). */
    public synchronized void write(Written forced) {
        if (closed || failed || forced.index() < 0) {
            return;
        }
        int segment = SegmentRollCycle.INSTANCE.toCycle(forced.index());
        if (segment != identifiedSegment) {
            Path segmentFile = SegmentFiles.file(segmentDirectory, segment);
            identity = fileIdentity(segmentFile);
            identifiedSegment = segment;
            if (identity < 0) { // no mark for a file that cannot be told apart from a copy of it
                failed = true;
                LOG.info("{} could not be kept (the inode of {} cannot be read); until the queue is opened again a crash "
                        + "makes recovery check its whole last segment.", file, segmentFile);
                unmap();
                return;
            }
        }
        try {
            encode(forced, identity);
            if (mapped == null) {
                mapped = open(); // writes this mark
            } else {
                mapped.put(0, scratch);
            }
        } catch (IOException | RuntimeException | InternalError e) {
            failed = true;
            LOG.info("{} could not be kept ({}); until the queue is opened again a crash makes recovery check its whole last "
                    + "segment.", file, e.toString());
            unmap();
        }
    }

    private void encode(Written forced, long segmentFile) {
        scratchBuffer.clear();
        scratchBuffer.putInt(MAGIC).putInt(VERSION).putLong(forced.index()).putLong(forced.segmentMessageBytes())
                .putLong(forced.segmentStaged()).putLong(segmentFile);
        ChecksummedFields.seal(scratchBuffer, crc);
    }

    /** Writes the encoded mark with a plain write (which allocates the file's block), then maps it. */
    private MappedByteBuffer open() throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE)) {
            ByteBuffer buffer = ByteBuffer.wrap(scratch);
            while (buffer.hasRemaining()) {
                channel.write(buffer, buffer.position());
            }
            if (channel.size() > BYTES) {
                channel.truncate(BYTES);
            }
            return channel.map(FileChannel.MapMode.READ_WRITE, 0, BYTES);
        }
    }

    /** Unmaps the file; later writes do nothing. The file stays for the next open. */
    @Override
    public synchronized void close() {
        closed = true;
        unmap();
    }

    private void unmap() {
        MappedByteBuffer buffer = mapped;
        mapped = null;
        if (buffer != null) {
            MappedBufferUnmapper.unmap(buffer);
        }
    }

    /** The inode of {@code segmentFile}, or -1 if it cannot be read. */
    public static long fileIdentity(Path segmentFile) {
        try {
            return ((Number) Files.getAttribute(segmentFile, "unix:ino")).longValue();
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /**
     * The mark kept in {@code queueDirectory} if it names a record of {@code segment} in that very file,
     * {@code segmentFile} (its inode: not a copy of the queue's files); else null.
     */
    public static Mark readFor(Path queueDirectory, int segment, Path segmentFile) {
        Mark mark = read(queueDirectory);
        if (mark == null || SegmentRollCycle.INSTANCE.toCycle(mark.index()) != segment || mark.segmentFile() != fileIdentity(segmentFile)) {
            return null;
        }
        return mark;
    }

    /** Why the mark kept in {@code queueDirectory} does not check out; null if there is none or it does. */
    public static ChecksummedFields.Problem problem(Path queueDirectory) throws IOException {
        return ChecksummedFields.problem(queueDirectory.resolve(FILE), BYTES, MAGIC, VERSION);
    }

    /** The mark kept in {@code queueDirectory}, or null if there is none, or none that checks out. */
    public static Mark read(Path queueDirectory) {
        ByteBuffer buffer = ChecksummedFields.read(queueDirectory.resolve(FILE), BYTES, MAGIC, VERSION,
                "recovery checks the whole last segment");
        if (buffer == null) {
            return null;
        }
        long index = buffer.getLong(8);
        long messageBytes = buffer.getLong(16);
        long staged = buffer.getLong(24);
        long segmentFile = buffer.getLong(32);
        if (index < 0 || messageBytes < -1 || staged < 0 || segmentFile < 0) {
            return null;
        }
        return new Mark(index, messageBytes, staged, segmentFile);
    }
}
