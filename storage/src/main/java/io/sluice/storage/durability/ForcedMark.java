package io.sluice.storage.durability;

import io.sluice.storage.files.ChecksummedFields;
import io.sluice.storage.files.MappedBufferUnmapper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
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
 * record that was on disk when the mark was written. The file's block is allocated by a plain write when it is
 * first opened, and later marks are stores into a mapping of it: no system call per force, and a full disk cannot
 * fault a store into a page without a block. Layout, little-endian: magic {@code "SFMK"}, format version (int, 1),
 * the record's id, the message bytes of its segment through it (-1 if unknown), the staged records through it
 * (longs), CRC32C of the bytes before it (int).
 *
 * <p>Threads: {@link #write} on the forcing thread (the flusher; the closing thread for the last force), {@link #close}
 * on the closing thread; both under this object's monitor. {@link #read} is for recovery, before the queue is served.
 */
public final class ForcedMark implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ForcedMark.class);
    public static final String FILE = "forced.mark";
    private static final int MAGIC = 0x4b4d4653; // "SFMK" read little-endian
    private static final int VERSION = 1;
    static final int BYTES = ChecksummedFields.OVERHEAD_BYTES + 8 + 8 + 8;

    static {
        MappedBufferUnmapper.load(); // close() unmaps, maybe when no descriptor is left to read a class file with
    }

    /** What a mark says: every record of {@code index}'s segment through {@code index} was forced. */
    public record Mark(long index, long segmentMessageBytes, long segmentStaged) {
    }

    private final Path file;
    private final byte[] scratch = new byte[BYTES];
    private final ByteBuffer scratchBuffer = ByteBuffer.wrap(scratch).order(ByteOrder.LITTLE_ENDIAN);
    private final CRC32C crc = new CRC32C();
    private MappedByteBuffer mapped;
    private boolean closed;
    private boolean openFailureLogged;

    /** A mark kept in {@code queueDirectory}; nothing is opened until the first {@link #write}. */
    public ForcedMark(Path queueDirectory) {
        this.file = queueDirectory.resolve(FILE);
    }

    /**
     * Records that every record through {@code index} is forced. Best effort: a mark that cannot be kept (the file
     * cannot be opened: no descriptor, no space) only means recovery checks the whole last segment, so the failure is
     * logged once, never thrown.
     */
    public synchronized void write(long index, long segmentMessageBytes, long segmentStaged) {
        if (closed || index < 0) {
            return;
        }
        encode(index, segmentMessageBytes, segmentStaged);
        if (mapped == null) {
            mapped = open();
            return; // open() wrote this mark
        }
        mapped.put(0, scratch);
    }

    private void encode(long index, long segmentMessageBytes, long segmentStaged) {
        scratchBuffer.clear();
        scratchBuffer.putInt(MAGIC).putInt(VERSION).putLong(index).putLong(segmentMessageBytes).putLong(segmentStaged);
        ChecksummedFields.seal(scratchBuffer, crc);
    }

    /** Writes the encoded mark with a plain write (which allocates the file's block), then maps it; null if it cannot. */
    private MappedByteBuffer open() {
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
        } catch (IOException | RuntimeException e) {
            if (!openFailureLogged) {
                openFailureLogged = true;
                LOG.info("{} could not be kept ({}); after a crash recovery checks the whole last segment.", file, e.toString());
            }
            return null;
        }
    }

    /** Unmaps the file; later writes do nothing. The file stays for the next open. */
    @Override
    public synchronized void close() {
        closed = true;
        MappedByteBuffer buffer = mapped;
        mapped = null;
        if (buffer != null) {
            MappedBufferUnmapper.unmap(buffer);
        }
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
        if (index < 0 || messageBytes < -1 || staged < 0) {
            return null;
        }
        return new Mark(index, messageBytes, staged);
    }
}
