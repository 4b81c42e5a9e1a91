package io.sluice.storage.ack;

import io.sluice.storage.durability.FileForcer;
import io.sluice.storage.files.MappedBufferUnmapper;
import io.sluice.storage.memory.ResidentPages;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Append-only, memory-mapped journal of ack-state changes since the last checkpoint. Not thread-safe:
 * the queue's lock guards every call except {@link #force()}, which the storage flusher calls without
 * that lock so that an msync does not hold up appends, acks and dispatch.
 *
 * <p>Rule "nothing under the queue's lock waits for an msync": a force holds {@link #mappingLock} for as
 * long as the msync takes, so the calls made under the queue's lock never wait for that lock.
 * {@link #grow} and {@link #close()} swap the mapping out at once and hand the old one to
 * {@link #unmapWhenFree}, which unmaps it now if the lock is free, else leaves it to the lock's holder
 * (whoever releases the lock unmaps what was retired meanwhile); {@link #dropWrittenPages()} only tries
 * the lock and skips a turn when a force has it. So a force never touches a mapping that was unmapped,
 * and an ack never waits for a force.
 *
 * <p><b>Durability.</b> {@code append*} copies the record into a {@code READ_WRITE} file mapping, i.e.
 * straight into the page cache, with no system call. Once an append returns, a process crash (even
 * kill -9) cannot lose it: the kernel owns the dirty page. A machine crash loses whatever was
 * appended since the last {@link #force()} ({@link MappedByteBuffer#force()}, an msync), which the
 * storage flusher calls on its schedule.
 *
 * <p><b>File layout</b> (big-endian), {@code sizeBytes} long, every byte of it written (zeros when created
 * or grown, not sparse, so that no store into the mapping ever needs a new disk block: on a full disk
 * that store would be a SIGBUS, not an IOException):
 *
 * <pre>
 *  0        4        8                16                       32
 *  +--------+--------+----------------+------------------------+
 *  | magic  |version |   generation   |   reserved (zeros)     |   header, 32 bytes
 *  |"SLAJ"  |   2    |  (long)        |                        |
 *  +--------+--------+----------------+------------------------+
 *  | record | record | ... | record | 0 | older bytes ...      |
 *  +-------------------------------------------------------------+
 *
 *  record:  +------+---------------------+--------------------------------------------+
 *           | type |  payload            | CRC32C(generation + type + payload), int   |
 *           | byte |  (size fixed by type)|  generation as 8 big-endian bytes          |
 *           +------+---------------------+--------------------------------------------+
 *  type 1 ACK_RANGE          fromId long, toIdInclusive long                     21 bytes in all
 *  type 2 DELIVERED          id long, deliveryCount int                           17 bytes
 *  type 3 RELOCATED          originalId long, newId long                          21 bytes
 *  type 4 SEGMENT_RECLAIMED  segment int                                           9 bytes
 *  type 5 DELIVERED_RANGE    fromId long, toIdInclusive long, deliveryCount int   25 bytes
 * </pre>
 *
 * <p>Type 0 never occurs. Each append also writes a zero type byte just after its record, so the
 * records of the current generation end at a zero byte. The generation equals the generation of
 * the checkpoint the journal follows; {@link AckLog} ignores a journal whose generation differs.
 *
 * <p><b>Reuse.</b> A checkpoint does not create a new journal file: {@link #reuse} writes the next
 * generation into the header and appends from the start again, over the previous generation's
 * records. No file is written, fsynced, renamed or mapped, so a checkpoint costs no more than the
 * checkpoint file itself. The previous generation's records stay behind the new ones, and after a
 * machine crash some pages of the file may hold them while others hold new records. They can never
 * pass for records of the current generation because the generation is part of every record's CRC.
 *
 * <p><b>Growth.</b> A journal starts at {@code min(}{@value #INITIAL_BYTES}{@code , maxBytes)} and
 * {@link #grow} doubles it, up to {@code maxBytes}, when a record does not fit; {@link AckLog} decides
 * whether to grow or to checkpoint instead. An idle queue thus keeps a 64 KiB journal, a busy one
 * reaches {@code maxBytes} once and keeps it (reuse never shrinks the file). The steps of a growth
 * from <i>s</i> to <i>2s</i> bytes, and a crash after each:
 * <ol>
 *   <li>write zeros over <i>[s, 2s)</i> with {@code FileChannel.write}: the file system takes (or
 *       reserves) the blocks now, so a full disk is an {@link IOException} here, and the file is cut
 *       back to <i>s</i> to give them back. Crash: the file is somewhere between <i>s</i> and
 *       <i>2s</i> long, its records all in <i>[0, s)</i> and zeros (or a hole) after them; replay
 *       stops at the zero byte after the last record or at the end of the file, so nothing is lost.</li>
 *   <li>map <i>[0, 2s)</i>, swap it in and unmap the old mapping once no force uses it. Crash:
 *       nothing on disk changes here.</li>
 * </ol>
 * No fsync: records appended past <i>s</i> become durable, as all records do, at the next
 * {@link #force()}, an msync of the whole mapping, which Linux carries out as an fdatasync of the
 * range; that writes the pages and commits the metadata needed to read them back (the new size and
 * the blocks). A crash before that force loses those records as it loses any unforced ones: the file
 * may come back <i>s</i> long, and replay stops at its end. (An fsync here cost a W1 queue up to a
 * 4 MiB write-back under the queue's lock at each doubling.)
 *
 * <p><b>Replay</b> reads records in order and stops at the first zero type byte, unknown type, record
 * cut short by the end of the file, or CRC mismatch. After a crash a torn or partly written-back last
 * record is normal, so stopping there is not an error; the writer never appends to a replayed journal
 * (recovery starts a new one), so garbage after the stop point is never mistaken for records.
 * Version 1 journals (no generation in the CRC, no type 5) are still read.
 */
public final class AckJournal implements Closeable {
    static {
        MappedBufferUnmapper.load(); // close() unmaps, maybe when no descriptor is left to read a class file with
    }

    /** Record types; the code byte and payload size are part of the file format. */
    public enum RecordType {
        ACK_RANGE(1, 16),
        DELIVERED(2, 12),
        RELOCATED(3, 16),
        SEGMENT_RECLAIMED(4, 4),
        DELIVERED_RANGE(5, 20);

        final byte code;
        final int recordBytes;

        RecordType(int code, int payloadBytes) {
            this.code = (byte) code;
            this.recordBytes = 1 + payloadBytes + Integer.BYTES;
        }
    }

    /** Receives replayed records in order; a record type a visitor does not override is passed over. */
    public interface Visitor {
        default void ackRange(long fromId, long toIdInclusive) {
        }

        default void delivered(long id, int deliveryCount) {
        }

        default void relocated(long originalId, long newId) {
        }

        default void segmentReclaimed(int segment) {
        }

        /** Every id in the range was delivered for the {@code deliveryCount}-th time. */
        default void deliveredRange(long fromId, long toIdInclusive, int deliveryCount) {
        }

        /** A visitor that only tells {@code reclaimed} each SEGMENT_RECLAIMED record's segment. */
        static Visitor segmentsReclaimed(java.util.function.IntConsumer reclaimed) {
            return new Visitor() {
                @Override
                public void segmentReclaimed(int segment) {
                    reclaimed.accept(segment);
                }
            };
        }
    }

    /**
     * What a replay found: the journal's generation, whether records were applied, how many, and where it stopped; and
     * why its header is damaged, or null (rule "the records name their generation", {@link #replay}).
     */
    public record Replay(long generation, boolean applied, int records, int stopOffset, String stopReason,
                         String headerDamage) {
    }

    public static final int MAGIC = 0x534C_414A; // "SLAJ"
    public static final int VERSION = 2;
    /** The first version: records' CRCs do not include the generation. Still read, never written. */
    static final int VERSION_WITHOUT_GENERATION_IN_CRC = 1;
    public static final int HEADER_BYTES = 32;
    public static final int DEFAULT_CAPACITY_BYTES = 8 << 20;
    /** Size of a new journal (or {@code maxBytes} if smaller): what an idle queue keeps on disk. */
    public static final int INITIAL_BYTES = 64 << 10;
    /** Room for the header and a handful of records; smaller makes every few acks a checkpoint. */
    public static final int MIN_CAPACITY_BYTES = 256;
    private static final int MAX_RECORD_BYTES = 25;

    private static final Logger LOG = LoggerFactory.getLogger(AckJournal.class);

    private final Path file;
    private final int maxBytes;
    /** Current length of the file and of the mapping; changed by {@link #grow} under the queue's lock. */
    private int sizeBytes;
    private long generation;
    private final byte[] scratch = new byte[MAX_RECORD_BYTES];
    private final ByteBuffer scratchBuffer = ByteBuffer.wrap(scratch);
    private final CRC32C crc = new CRC32C();
    private final ByteBuffer generationScratch = ByteBuffer.allocate(Long.BYTES); // big-endian, as in the header
    /** Held while a mapping is used without the queue's lock: by {@link #force()} and {@link #dropWrittenPages()}. */
    private final ReentrantLock mappingLock = new ReentrantLock();
    /** Mappings swapped out while {@link #mappingLock} was held, unmapped by its holder on release. */
    private final ConcurrentLinkedQueue<MappedByteBuffer> retired = new ConcurrentLinkedQueue<>();
    /** Written under the queue's lock; volatile for the force, which reads it under {@link #mappingLock} only. */
    private volatile MappedByteBuffer mapped;
    private int position = HEADER_BYTES;
    /** The position at the last {@link #dropWrittenPages()}; under the queue's lock. */
    private int droppedAtPosition = -1;
    /**
     * Records appended since the journal was made, across rotations; written under the queue's lock
     * after the record's bytes (a release store), read by {@link #force()} without it.
     */
    private final AtomicLong recordsAppended = new AtomicLong();
    /**
     * Of {@link #recordsAppended}, how many are durable: covered by a successful msync ({@link #force()}) or by the
     * checkpoint a {@link #reuse} follows. What a force of the closed journal reports: a close whose checkpoint
     * failed leaves the records after it undurable.
     */
    private final AtomicLong recordsDurable = new AtomicLong();

    private AckJournal(Path file, long generation, int sizeBytes, int maxBytes, MappedByteBuffer mapped) {
        this.file = file;
        this.generation = generation;
        this.sizeBytes = sizeBytes;
        this.maxBytes = maxBytes;
        this.mapped = mapped;
    }

    /**
     * Creates an empty journal at {@code file} of {@code min(INITIAL_BYTES, maxBytes)} bytes that may
     * {@link #grow} to {@code maxBytes}, replacing any journal there. The file is written under a
     * temporary name, fsynced, renamed over {@code file} and the directory fsynced, so {@code file} is
     * at every instant either the old journal or the complete new one. If the directory's fsync fails,
     * the new journal's mapping is released before the failure is thrown.
     */
    public static AckJournal create(Path file, long generation, int maxBytes) throws IOException {
        return create(file, generation, Math.min(INITIAL_BYTES, maxBytes), maxBytes);
    }

    /** As {@link #create(Path, long, int)}, starting at {@code sizeBytes} (at most {@code maxBytes}). */
    public static AckJournal create(Path file, long generation, int sizeBytes, int maxBytes) throws IOException {
        return create(file, generation, sizeBytes, maxBytes, FileForcer.FSYNC);
    }

    /** As {@link #create(Path, long, int, int)}, the directory forced through {@code directoryForcer} (a test's may fail). */
    static AckJournal create(Path file, long generation, int sizeBytes, int maxBytes, FileForcer directoryForcer)
            throws IOException {
        Path temporary = writeTemporary(file, generation, sizeBytes, maxBytes, true);
        AckJournal journal = install(temporary, file, generation, maxBytes);
        Path directory = file.toAbsolutePath().getParent();
        try (FileChannel channel = FileChannel.open(directory, StandardOpenOption.READ)) {
            directoryForcer.forceDirectory(channel, directory);
        } catch (IOException | RuntimeException | Error e) {
            journal.close(); // the caller never gets it: its mapping would be held until the JVM collects it
            throw e;
        }
        return journal;
    }

    /**
     * The first step of a creation in steps (a new queue's, {@link NewAckFiles#prepare}): writes the
     * empty journal of {@code min(INITIAL_BYTES, maxBytes)} bytes under its temporary name, which it
     * returns, without forcing it. The caller forces it, then calls {@link #install}, then forces the
     * directory.
     */
    static Path writeUnforced(Path file, long generation, int maxBytes) throws IOException {
        return writeTemporary(file, generation, Math.min(INITIAL_BYTES, maxBytes), maxBytes, false);
    }

    /** Renames a forced temporary journal over {@code file} and maps it; its entry is durable once the directory is forced. */
    static AckJournal install(Path temporary, Path file, long generation, int maxBytes) throws IOException {
        int sizeBytes = Math.toIntExact(Files.size(temporary));
        Files.move(temporary, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        return new AckJournal(file, generation, sizeBytes, maxBytes, map(file, sizeBytes));
    }

    private static Path writeTemporary(Path file, long generation, int sizeBytes, int maxBytes, boolean force) throws IOException {
        checkCapacity(maxBytes);
        if (sizeBytes < MIN_CAPACITY_BYTES || sizeBytes > maxBytes) {
            throw new IllegalArgumentException("ack journal size " + sizeBytes + " is outside " + MIN_CAPACITY_BYTES
                    + "..maxBytes " + maxBytes);
        }
        Path temporary = AckFiles.temporary(file);
        Files.deleteIfExists(temporary);
        try (FileChannel channel = FileChannel.open(temporary, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ByteBuffer header = ByteBuffer.wrap(header(generation));
            while (header.hasRemaining()) {
                channel.write(header, header.position());
            }
            // Every byte is written, not just the last (see the class javadoc: no holes, no SIGBUS).
            writeZeros(channel, HEADER_BYTES, sizeBytes);
            if (force) {
                channel.force(true);
            }
        } catch (IOException e) {
            // Most likely a full disk: give back the blocks of the half-written file.
            Files.deleteIfExists(temporary);
            throw e;
        }
        return temporary;
    }

    private static MappedByteBuffer map(Path file, int sizeBytes) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            // The mapping stays valid after the channel closes; keeping no channel open saves a descriptor.
            return channel.map(FileChannel.MapMode.READ_WRITE, 0, sizeBytes);
        }
    }

    private static void writeZeros(FileChannel channel, long from, long to) throws IOException {
        ByteBuffer zeros = ByteBuffer.allocate((int) Math.min(Math.max(to - from, 1), 1 << 16));
        for (long offset = from; offset < to; ) {
            zeros.clear().limit((int) Math.min(zeros.capacity(), to - offset));
            offset += channel.write(zeros, offset);
        }
    }

    /**
     * Reads {@code file}; if its generation is {@code expectedGeneration}, passes its intact records
     * to {@code visitor}, otherwise applies nothing.
     *
     * <p>Rule "the records name their generation": the header has no checksum of its own, but each record's CRC32C
     * covers the generation it was written in (version 2). So a header whose generation differs from {@code
     * expectedGeneration} while its first record checks out as one of {@code expectedGeneration} is a damaged header
     * (a bit flip, a torn write of its page), not an older or newer journal: its records are replayed, and the {@link
     * Replay} says why. Taken as it read, a damaged generation below the checkpoint's would make recovery ignore the
     * journal (its acks lost, their messages delivered again) and one above it would refuse the queue. A journal whose first
     * record does not check out under {@code expectedGeneration} (none, torn, another generation's) is judged by its
     * header as before: replaying it under {@code expectedGeneration} would apply nothing anyway.
     *
     * @throws CorruptAckStateException if the header is short, or has a wrong magic or version
     */
    public static Replay replay(Path file, long expectedGeneration, Visitor visitor) throws IOException {
        byte[] bytes = Files.readAllBytes(file);
        ByteBuffer buffer = ByteBuffer.wrap(bytes).order(ByteOrder.BIG_ENDIAN);
        if (bytes.length < HEADER_BYTES) {
            throw new CorruptAckStateException(file, bytes.length, "journal of " + bytes.length
                    + " bytes is shorter than its " + HEADER_BYTES + "-byte header");
        }
        int magic = buffer.getInt(0);
        if (magic != MAGIC) {
            throw new CorruptAckStateException(file, 0, String.format("journal magic 0x%08x, expected 0x%08x", magic, MAGIC));
        }
        int version = buffer.getInt(4);
        if (version != VERSION && version != VERSION_WITHOUT_GENERATION_IN_CRC) {
            throw new CorruptAckStateException(file, 4, "journal format version " + version + ", this broker reads only "
                    + VERSION_WITHOUT_GENERATION_IN_CRC + " and " + VERSION);
        }
        long generation = buffer.getLong(8);
        String headerDamage = null;
        if (generation != expectedGeneration) {
            if (version == VERSION && firstRecordIsOf(bytes, expectedGeneration)) {
                // Rule "the records name their generation": the header is outside every checksum, and its records are not.
                headerDamage = "its header says generation " + generation + ", its records are of generation "
                        + expectedGeneration + ", the checkpoint's: the header is damaged";
                LOG.warn("Ack journal {}: {}; replaying the records of generation {}.", file, headerDamage, expectedGeneration);
                generation = expectedGeneration;
            } else {
                LOG.info("Ignoring ack journal {} of generation {}: the checkpoint is generation {} and already holds its changes.",
                        file, generation, expectedGeneration);
                return new Replay(generation, false, 0, HEADER_BYTES, "generation " + generation + " is not " + expectedGeneration,
                        null);
            }
        }
        byte[] generationBytes = ByteBuffer.allocate(Long.BYTES).putLong(generation).array();
        CRC32C crc = new CRC32C();
        int offset = HEADER_BYTES;
        int records = 0;
        String stopReason;
        while (true) {
            if (offset >= bytes.length) {
                stopReason = "end of file";
                break;
            }
            byte code = bytes[offset];
            RecordType type = typeOf(code);
            if (code == 0) {
                stopReason = "end of written records";
                break;
            }
            if (type == null) {
                stopReason = "unknown record type " + code;
                break;
            }
            if (offset + type.recordBytes > bytes.length) {
                stopReason = type + " record cut short by the end of the file";
                break;
            }
            int crcOffset = offset + type.recordBytes - Integer.BYTES;
            crc.reset();
            if (version == VERSION) {
                crc.update(generationBytes);
            }
            crc.update(bytes, offset, crcOffset - offset);
            if ((int) crc.getValue() != buffer.getInt(crcOffset)) {
                stopReason = type + " record fails its CRC32C (torn write)";
                break;
            }
            int payload = offset + 1;
            switch (type) {
                case ACK_RANGE -> visitor.ackRange(buffer.getLong(payload), buffer.getLong(payload + 8));
                case DELIVERED -> visitor.delivered(buffer.getLong(payload), buffer.getInt(payload + 8));
                case RELOCATED -> visitor.relocated(buffer.getLong(payload), buffer.getLong(payload + 8));
                case SEGMENT_RECLAIMED -> visitor.segmentReclaimed(buffer.getInt(payload));
                case DELIVERED_RANGE -> visitor.deliveredRange(buffer.getLong(payload), buffer.getLong(payload + 8),
                        buffer.getInt(payload + 16));
                default -> throw new IllegalStateException("record type " + type + " has no replay rule");
            }
            records++;
            offset += type.recordBytes;
        }
        LOG.info("Replayed {} ack journal records from {} (generation {}); stopped at offset {}: {}.",
                records, file, generation, offset, stopReason);
        return new Replay(generation, true, records, offset, stopReason, headerDamage);
    }

    /** True if the record at the start of {@code bytes}' records is whole and checks out as one of {@code generation}. */
    private static boolean firstRecordIsOf(byte[] bytes, long generation) {
        RecordType type = bytes.length > HEADER_BYTES ? typeOf(bytes[HEADER_BYTES]) : null;
        if (type == null || HEADER_BYTES + type.recordBytes > bytes.length) {
            return false;
        }
        int crcOffset = HEADER_BYTES + type.recordBytes - Integer.BYTES;
        CRC32C crc = new CRC32C();
        crc.update(ByteBuffer.allocate(Long.BYTES).putLong(generation).array());
        crc.update(bytes, HEADER_BYTES, crcOffset - HEADER_BYTES);
        return (int) crc.getValue() == ByteBuffer.wrap(bytes).getInt(crcOffset);
    }

    public boolean hasRoomFor(RecordType type) {
        return position + type.recordBytes <= sizeBytes;
    }

    /** True when not even the largest record fits: time to grow, or to checkpoint and start a new generation. */
    public boolean isFull() {
        return position + MAX_RECORD_BYTES > sizeBytes;
    }

    /** Bytes the next {@link #grow} adds to the file, 0 once the journal is at {@code maxBytes}. */
    public int growthBytes() {
        return (int) Math.min((long) sizeBytes * 2, maxBytes) - sizeBytes;
    }

    /**
     * Grows the file by {@link #growthBytes()} of written zeros and maps it whole (the steps, and a crash
     * after each, are in the class javadoc). The caller has checked that the disk has room for them
     * above its reserve. On an {@link IOException} the journal is unchanged and still usable.
     *
     * @throws IllegalStateException if the journal is already at {@code maxBytes}
     */
    public void grow() throws IOException {
        checkOpen();
        int growth = growthBytes();
        if (growth == 0) {
            throw new IllegalStateException("ack journal " + file + " is at its maximum of " + maxBytes + " bytes; checkpoint instead");
        }
        int newSize = sizeBytes + growth;
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
            try {
                writeZeros(channel, sizeBytes, newSize);
            } catch (IOException e) {
                // A full disk: give back the blocks taken so far; the records all sit below sizeBytes.
                channel.truncate(sizeBytes);
                throw e;
            }
        }
        MappedByteBuffer bigger = map(file, newSize);
        MappedByteBuffer old = mapped;
        mapped = bigger;
        sizeBytes = newSize;
        unmapWhenFree(old);
    }

    /**
     * Unmaps {@code buffer}, swapped out by the caller, once no force or page drop uses it: now if
     * {@link #mappingLock} is free, else when its holder releases it ({@link #releaseMapping()}). Never
     * waits. A holder that released the lock before this call's failed try sees the buffer queued.
     */
    private void unmapWhenFree(MappedByteBuffer buffer) {
        retired.add(buffer);
        unmapRetired();
    }

    private void unmapRetired() {
        while (!retired.isEmpty() && mappingLock.tryLock()) {
            try {
                MappedByteBuffer buffer;
                while ((buffer = retired.poll()) != null) {
                    MappedBufferUnmapper.unmap(buffer);
                }
            } finally {
                mappingLock.unlock();
            }
        }
    }

    private void releaseMapping() {
        mappingLock.unlock();
        unmapRetired();
    }

    public void appendAckRange(long fromId, long toIdInclusive) {
        begin(RecordType.ACK_RANGE).putLong(fromId).putLong(toIdInclusive);
        finish(RecordType.ACK_RANGE);
    }

    public void appendDelivered(long id, int deliveryCount) {
        begin(RecordType.DELIVERED).putLong(id).putInt(deliveryCount);
        finish(RecordType.DELIVERED);
    }

    public void appendRelocated(long originalId, long newId) {
        begin(RecordType.RELOCATED).putLong(originalId).putLong(newId);
        finish(RecordType.RELOCATED);
    }

    public void appendSegmentReclaimed(int segment) {
        begin(RecordType.SEGMENT_RECLAIMED).putInt(segment);
        finish(RecordType.SEGMENT_RECLAIMED);
    }

    public void appendDeliveredRange(long fromId, long toIdInclusive, int deliveryCount) {
        begin(RecordType.DELIVERED_RANGE).putLong(fromId).putLong(toIdInclusive).putInt(deliveryCount);
        finish(RecordType.DELIVERED_RANGE);
    }

    /**
     * Starts generation {@code nextGeneration} in this file: rewrites the header and appends from the
     * start again (see Reuse in the class javadoc). Call only once checkpoint {@code nextGeneration}
     * is durable: until this header reaches the disk, the file still reads as the older generation,
     * which that checkpoint makes obsolete.
     */
    public void reuse(long nextGeneration) {
        checkOpen();
        if (nextGeneration <= generation) {
            throw new IllegalArgumentException("ack journal " + file + " is at generation " + generation
                    + "; it can only be reused for a later one, not " + nextGeneration);
        }
        mapped.put(0, header(nextGeneration), 0, HEADER_BYTES);
        mapped.put(HEADER_BYTES, (byte) 0);
        generation = nextGeneration;
        position = HEADER_BYTES;
        recordsDurable.accumulateAndGet(recordsAppended.get(), Math::max); // checkpoint nextGeneration holds them all
    }

    /**
     * Flushes the records appended before this call to the device (msync): after this a machine crash
     * cannot lose them. Returns how many records ({@link #recordsAppended()}) the force covers. Any
     * thread, without the queue's lock. Once the journal is closed it forces nothing and returns the records
     * already durable: all of them if the close's checkpoint completed (its {@link #reuse} says so), else only
     * those an earlier force covered: a force that meets a close whose checkpoint failed must not report acks
     * durable that no msync and no checkpoint wrote.
     */
    public long force() {
        mappingLock.lock();
        try {
            // Read before the msync: every record counted here had its bytes stored in the mapping first.
            // A record stored in a mapping grown out of since is covered too: an msync writes back the file's
            // dirty pages in its range, whichever mapping dirtied them.
            long covered = recordsAppended.get();
            MappedByteBuffer buffer = mapped;
            if (buffer == null) {
                return recordsDurable.get(); // closed: nothing to msync, and no more is durable than before
            }
            buffer.force();
            recordsDurable.accumulateAndGet(covered, Math::max);
            return covered;
        } finally {
            releaseMapping();
        }
    }

    /** Records appended since the journal was made, rotations included: the measure of {@link #force()}'s return. */
    public long recordsAppended() {
        return recordsAppended.get();
    }

    /**
     * Drops the journal's pages wholly behind the append position from this process's memory
     * ({@link ResidentPages}): they are written, the next generation only reaches them again after a
     * rotation, and recovery reads the file through a mapping of its own. Under the queue's lock (no
     * append moves the position meanwhile) and the mapping lock (no growth or close unmaps it).
     */
    public void dropWrittenPages() {
        int end = position;
        if (end == droppedAtPosition) {
            return;
        }
        if (!mappingLock.tryLock()) {
            return; // a force has the mapping: drop them at the next turn rather than wait for its msync
        }
        try {
            droppedAtPosition = end;
            MappedByteBuffer buffer = mapped;
            if (buffer != null) {
                ResidentPages.drop(ResidentPages.address(buffer), Math.min(end, buffer.capacity()));
            }
        } finally {
            releaseMapping();
        }
    }

    public long generation() {
        return generation;
    }

    /** Offset where the next record goes. */
    public int position() {
        return position;
    }

    /** Current length of the file; grows up to {@link #maxBytes()}. */
    public int sizeBytes() {
        return sizeBytes;
    }

    public int maxBytes() {
        return maxBytes;
    }

    public Path file() {
        return file;
    }

    /** Releases the mapping without forcing it: the page cache still writes it back (see class javadoc). */
    @Override
    public void close() {
        MappedByteBuffer buffer = mapped;
        if (buffer != null) {
            mapped = null; // no use after unmap: that would crash the JVM
            unmapWhenFree(buffer);
        }
    }

    private ByteBuffer begin(RecordType type) {
        checkOpen();
        if (!hasRoomFor(type)) {
            throw new IllegalStateException("ack journal " + file + " has " + (sizeBytes - position)
                    + " bytes left, a " + type + " record needs " + type.recordBytes + "; checkpoint first");
        }
        scratchBuffer.clear();
        return scratchBuffer.put(type.code);
    }

    private void finish(RecordType type) {
        int crcOffset = type.recordBytes - Integer.BYTES;
        crc.reset();
        crc.update(generationBytes(generation));
        crc.update(scratch, 0, crcOffset);
        scratchBuffer.putInt((int) crc.getValue());
        mapped.put(position, scratch, 0, type.recordBytes);
        position += type.recordBytes;
        if (position < sizeBytes) {
            mapped.put(position, (byte) 0); // the end of this generation's records, until the next append
        }
        recordsAppended.lazySet(recordsAppended.get() + 1); // only the queue's lock holder writes it
    }

    private ByteBuffer generationBytes(long value) {
        return generationScratch.clear().putLong(0, value);
    }

    private static byte[] header(long generation) {
        ByteBuffer header = ByteBuffer.allocate(HEADER_BYTES).order(ByteOrder.BIG_ENDIAN);
        header.putInt(MAGIC).putInt(VERSION).putLong(generation);
        return header.array();
    }

    private void checkOpen() {
        if (mapped == null) {
            throw new IllegalStateException("ack journal " + file + " is closed");
        }
    }

    private static RecordType typeOf(byte code) {
        for (RecordType type : RecordType.values()) {
            if (type.code == code) {
                return type;
            }
        }
        return null;
    }

    static void checkCapacity(int capacityBytes) {
        if (capacityBytes < MIN_CAPACITY_BYTES) {
            throw new IllegalArgumentException("journalCapacityBytes " + capacityBytes + " is below the minimum " + MIN_CAPACITY_BYTES);
        }
    }
}
