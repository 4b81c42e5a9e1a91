package io.sluice.storage.tool;

import io.sluice.storage.Directories;
import io.sluice.storage.StorageException;
import io.sluice.storage.ack.AckStateReader;
import io.sluice.storage.segment.RecordCodec;
import io.sluice.storage.segment.SegmentFiles;
import io.sluice.storage.segment.SegmentRollCycle;
import net.openhft.chronicle.bytes.Bytes;
import net.openhft.chronicle.queue.ExcerptTailer;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueueBuilder;
import net.openhft.chronicle.wire.DocumentContext;

import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NavigableSet;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Consumer;

/**
 * One queue's segment directory opened read-only through Chronicle (same roll cycle as the store,
 * {@code readOnly(true)}), so it can be read while a broker appends to it. Not thread-safe.
 */
final class SegmentScan implements AutoCloseable {
    /** Receives every complete record in store order; {@code problem} is null when the checksum holds. */
    interface RecordVisitor {
        /** Returns false to stop the scan. */
        boolean record(long index, int segment, long sequence, RecordCodec codec, String problem);
    }

    private final Path segmentDirectory;
    private final SingleChronicleQueue chronicle;
    private final RecordCodec codec = new RecordCodec();
    private final Set<Integer> withoutEndMarker = new TreeSet<>();
    /** Per segment whose records Chronicle's index could not count ({@link #indexedCounts}), why, naming the file. */
    private final TreeMap<Integer, String> uncounted = new TreeMap<>();
    /** The segments a scan could not read to their end ({@link #scan}). */
    private final Set<Integer> faulted = new TreeSet<>();
    /** Why the segment directory cannot be read at all, or null. */
    private final String directoryDamage;
    private final SegmentDirectoryCheck files;
    /** The private directory Chronicle reads instead of the queue's own, or null ({@link #view}). */
    private final Path view;

    private SegmentScan(Path segmentDirectory, SingleChronicleQueue chronicle, String directoryDamage,
                        SegmentDirectoryCheck files, Path view) {
        this.segmentDirectory = segmentDirectory;
        this.chronicle = chronicle;
        this.directoryDamage = directoryDamage;
        this.files = files;
        this.view = view;
    }

    /** As {@link #open(Path, Consumer)}, a segment file gone during the open passed over in silence. */
    static SegmentScan open(Path queueDirectory) throws IOException {
        return open(queueDirectory, file -> { });
    }

    /**
     * Opens the segments of the queue in {@code queueDirectory}; a queue with no segment files yet scans as empty, and so
     * does one whose {@code segments} is not a directory, reported as damage by {@link #report}. A segment file listed and
     * gone when it is read goes to {@code vanished} (a broker beside the tool reclaimed it).
     *
     * <p>When a segment file, or Chronicle's metadata file, is one Chronicle cannot read ({@link SegmentDirectoryCheck}),
     * or the metadata file is missing, Chronicle reads a private
     * directory instead of the queue's own, holding links to the segment files it can read and a metadata file of its own
     * ({@link #view}): it sees the rest of the queue as if that file were not there, and the file is reported, not waited
     * for or stopped at.
     */
    static SegmentScan open(Path queueDirectory, Consumer<Path> vanished) throws IOException {
        Path segments = queueDirectory.resolve("segments");
        if (Files.exists(segments) && !Files.isDirectory(segments)) {
            // Listed as no segment at all, it made a CLEAN report; a broker's open fails on it
            return new SegmentScan(segments, null, segments + " is not a directory: the queue's segments cannot be read, and a"
                    + " broker refuses to open the queue", SegmentDirectoryCheck.of(segments, vanished), null);
        }
        SegmentDirectoryCheck files = SegmentDirectoryCheck.of(segments, vanished);
        if (files.readable().isEmpty()) {
            return new SegmentScan(segments, null, null, files, null);
        }
        Path view = files.allReadable() && files.metadataReadable() ? null : view(segments, files.readable());
        try {
            SingleChronicleQueue queue = SingleChronicleQueueBuilder.single((view == null ? segments : view).toFile())
                    .rollCycle(SegmentRollCycle.INSTANCE)
                    .readOnly(true)
                    .checkInterrupts(false)
                    .build();
            return new SegmentScan(segments, queue, null, files, view);
        } catch (RuntimeException | Error e) {
            Directories.deleteRecursively(view);
            throw e;
        }
    }

    /**
     * A temporary directory holding a link to each of {@code segments}' files and a metadata file of its own. Chronicle,
     * opened writable on the directory while it is empty, writes that file; told to list the directory once the links are
     * there, it records their cycles in it (a read-only open takes the range of cycles from there), reading names only:
     * it opens no segment file, so none is written through its link.
     */
    private static Path view(Path segmentDirectory, NavigableSet<Integer> segments) throws IOException {
        Path view = Files.createTempDirectory("sluice-segments-");
        try {
            try (SingleChronicleQueue metadata = SingleChronicleQueueBuilder.single(view.toFile())
                    .rollCycle(SegmentRollCycle.INSTANCE).checkInterrupts(false).build()) {
                for (int segment : segments) {
                    Files.createSymbolicLink(SegmentFiles.file(view, segment),
                            SegmentFiles.file(segmentDirectory, segment).toAbsolutePath());
                }
                metadata.refreshDirectoryListing();
            }
            return view;
        } catch (IOException | RuntimeException | Error e) {
            Directories.deleteRecursively(view);
            throw e;
        }
    }

    /** The segment files found when the scan was opened, and which of them Chronicle can read. */
    SegmentDirectoryCheck files() {
        return files;
    }

    /**
     * What is wrong with the segment directory or a segment file, one sentence each naming the path, into {@code damage}
     * or {@code notes}; {@code acks}, the queue's ack state (null if it could not be read), tells whether a file with no
     * header yet held unacknowledged messages.
     */
    void report(AckStateReader acks, List<String> damage, List<String> notes) {
        if (directoryDamage != null) {
            damage.add(directoryDamage);
        }
        files.report(acks, damage, notes);
        uncounted.forEach((segment, why) -> damage.add("segment " + segment + ": " + why + ": Chronicle cannot count its records"
                + (acks == null ? "" : ", and the ack state counts " + acks.unackedCount(segment) + " unacknowledged messages in it")
                + "; a broker refuses to open the queue"));
    }

    /**
     * The segments whose records cannot all be read: those Chronicle cannot read at all ({@link SegmentDirectoryCheck}),
     * those whose index faulted ({@link #indexedCounts}) and those a scan so far could not read to their end ({@link #scan}:
     * the index of a file cut short counts records whose bytes are gone, or fewer than there were). The ack state keeps
     * them as its checkpoint counts them, or as Chronicle's index does where it counts more.
     */
    NavigableSet<Integer> damagedSegments() {
        NavigableSet<Integer> segments = new TreeSet<>(files.unreadable());
        segments.addAll(uncounted.keySet());
        segments.addAll(faulted);
        return segments;
    }

    /** The segments Chronicle reads: those of the view, else whatever the directory lists now (a broker may add one). */
    private NavigableSet<Integer> segments() {
        return view != null ? files.readable() : segmentFiles(segmentDirectory).navigableKeySet();
    }

    /** Segment number to file size of every {@code *.cq4} in the directory, in segment order. */
    static TreeMap<Integer, Long> segmentFiles(Path segmentDirectory) {
        return segmentFiles(segmentDirectory, file -> { });
    }

    /**
     * As {@link #segmentFiles(Path)}; a file listed but gone when its size is read (a broker beside the tool reclaimed
     * it) is left out and given to {@code vanished}, as is a whole directory gone since it was looked for (a queue being
     * deleted). Any other failure to list or to read a size throws {@link UncheckedIOException} naming the path.
     */
    static TreeMap<Integer, Long> segmentFiles(Path segmentDirectory, Consumer<Path> vanished) {
        TreeMap<Integer, Long> files = new TreeMap<>();
        if (!Files.isDirectory(segmentDirectory)) {
            return files;
        }
        List<Path> listed = new ArrayList<>();
        try (var list = Files.list(segmentDirectory)) {
            list.forEach(listed::add);
        } catch (NoSuchFileException e) {
            vanished.accept(segmentDirectory);
            return files;
        } catch (IOException | UncheckedIOException e) {
            throw new UncheckedIOException("cannot list " + segmentDirectory,
                    e instanceof UncheckedIOException u ? u.getCause() : (IOException) e);
        }
        for (Path file : listed) {
            int segment = SegmentFiles.segmentOf(file.getFileName().toString());
            if (segment < 0) {
                continue;
            }
            try {
                files.put(segment, Files.size(file));
            } catch (NoSuchFileException e) {
                vanished.accept(file);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read the size of " + file, e);
            }
        }
        return files;
    }

    Path segmentDirectory() {
        return segmentDirectory;
    }

    /**
     * Message count per segment from Chronicle's index, as the store's recovery reads it. A segment whose count faults (its
     * file cut short: Chronicle walks from the index's last entry to the records' end) is left out, kept for {@link #report}
     * and {@link #notCounted}, and the others are counted.
     */
    Map<Integer, Long> indexedCounts() {
        TreeMap<Integer, Long> counts = new TreeMap<>();
        if (chronicle == null) {
            return counts;
        }
        for (int segment : segments()) {
            // A tailer per segment: a fault of a mapping may be raised at the JVM's next safepoint, after the read that
            // faulted, so everything Chronicle does for one segment is inside its try.
            try (ExcerptTailer tailer = chronicle.createTailer()) {
                counts.put(segment, tailer.excerptsInCycle(segment));
            } catch (RuntimeException | InternalError e) {
                uncounted.put(segment, SegmentFiles.unreadable(SegmentFiles.file(segmentDirectory, segment), e));
            }
        }
        return counts;
    }

    /**
     * True if the record with id {@code index} is there to read: one positioned read. False where the index counts a record
     * whose bytes are gone (a file cut short faults its mapping; one lengthened again reads zeros, and Chronicle's own
     * assertions, when enabled, trip on the index entry pointing at nothing).
     */
    boolean readable(long index) {
        if (chronicle == null) {
            return false;
        }
        try (ExcerptTailer tailer = chronicle.createTailer()) {
            if (!tailer.moveToIndex(index)) {
                return false;
            }
            try (DocumentContext dc = tailer.readingDocument()) {
                return dc.isPresent() && dc.index() == index;
            }
        } catch (RuntimeException | InternalError | AssertionError e) {
            return false; // IllegalStateException: "Meta data not ready", an index cut short
        }
    }

    /**
     * Visits records from {@code fromIndex} (or the first record after it, if absent; all of them, if negative) in order.
     * A segment whose records cannot be read to their end, or as far as {@code fromIndex} (a read faults: the file cut short,
     * or a record claiming bytes past its end), goes to {@code damage}, one sentence naming the file and the first record
     * not read, and the visit goes on at the first record of the next segment with a tailer of its own (the faulted one's
     * state is not known), as it does past a segment Chronicle cannot read at all: one damaged segment hides no other.
     */
    void scan(long fromIndex, RecordVisitor visitor, Consumer<String> damage) {
        if (chronicle == null) {
            return;
        }
        long[] lastRead = {-1};
        RecordVisitor reading = (index, segment, sequence, codec, problem) -> {
            lastRead[0] = index;
            return visitor.record(index, segment, sequence, codec, problem);
        };
        long from = fromIndex;
        while (true) {
            ExcerptTailer positioned = startAt(from, damage);
            if (positioned == null) {
                return;
            }
            try (ExcerptTailer tailer = positioned) {
                scan(tailer, reading);
                return;
            } catch (SegmentFault fault) {
                long firstNotRead = lastRead[0] >= 0 && SegmentRollCycle.INSTANCE.toCycle(lastRead[0]) == fault.segment
                        ? lastRead[0] + 1 : Math.max(from, SegmentRollCycle.INSTANCE.toIndex(fault.segment, 0));
                damage.accept(notRead(fault.segment, firstNotRead, fault.getCause()));
                // Past the segment the visit started in too, whatever segment the tailer names: each round moves on.
                int started = from < 0 ? -1 : SegmentRollCycle.INSTANCE.toCycle(from);
                Integer next = segments().higher(Math.max(fault.segment, started));
                if (next == null) {
                    return;
                }
                from = SegmentRollCycle.INSTANCE.toIndex(next, 0);
            }
        }
    }

    /** The segments a scan could not read to their end: reported to its {@code damage}, and read on after. */
    Set<Integer> faultedSegments() {
        return faulted;
    }

    /** The sentence for a segment whose records from {@code firstNotRead} on cannot be read; notes it as faulted. */
    private String notRead(int segment, long firstNotRead, Throwable cause) {
        faulted.add(segment);
        return String.format("segment %d: %s; the records from 0x%x on in it are not read, and reading goes on at the next"
                + " segment", segment, SegmentFiles.unreadable(SegmentFiles.file(segmentDirectory, segment), cause), firstNotRead);
    }

    /** A tailer at the start: Chronicle reads the first segment's header to put it there. */
    private ExcerptTailer newTailer() {
        try {
            return chronicle.createTailer();
        } catch (RuntimeException | InternalError e) {
            int first = segments().first();
            throw new StorageException(SegmentFiles.unreadable(segmentDirectory.resolve(SegmentFiles.fileName(first)), e), e);
        }
    }

    private void scan(ExcerptTailer tailer, RecordVisitor visitor) {
        try {
            scanFrom(tailer, visitor);
        } catch (InternalError e) {
            // The fault of a read in compiled code is raised at the next safepoint, which may be this loop's, after the
            // read's own try: it is the tailer's segment that faulted all the same.
            throw new SegmentFault(tailer.cycle(), e);
        }
    }

    private void scanFrom(ExcerptTailer tailer, RecordVisitor visitor) {
        int[] length = new int[1];
        while (true) {
            long index = readNext(tailer, length);
            if (index < 0 && (index = pastMissingEndMarker(tailer, length)) < 0) {
                return;
            }
            String problem = codec.loaded(length[0]);
            int segment = SegmentRollCycle.INSTANCE.toCycle(index);
            long sequence = SegmentRollCycle.INSTANCE.toSequenceNumber(index);
            if (!visitor.record(index, segment, sequence, codec, problem)) {
                return;
            }
        }
    }

    /**
     * Rule "a sealed segment ends in its marker" (docs/storage.md, "Recovery"): Chronicle's tailer leaves a segment only at
     * its end marker, and a machine crash can keep a sealed segment's records and the next segment's but not the marker.
     * The broker writes it at its next start; this scan, read-only, goes past it. Called when the tailer found nothing
     * more: if a later segment file is there, it reads once more (a roll writes the marker before it creates the next
     * file, so a broker beside the tool has written it by then), and if it still finds nothing, the segment is noted as
     * without its marker and the scan goes on at the first record of the next segment that has one. Returns the index of
     * the record read, -1 at the end.
     */
    private long pastMissingEndMarker(ExcerptTailer tailer, int[] length) {
        int stoppedIn = tailer.cycle();
        NavigableSet<Integer> later = segments().tailSet(stoppedIn, false);
        if (later.isEmpty()) {
            return -1;
        }
        long index = readNext(tailer, length);
        if (index >= 0) {
            return index;
        }
        withoutEndMarker.add(stoppedIn);
        for (int next : later) {
            try {
                if (tailer.moveToIndex(SegmentRollCycle.INSTANCE.toIndex(next, 0))) {
                    return readNext(tailer, length);
                }
            } catch (RuntimeException | InternalError e) {
                throw new SegmentFault(next, e);
            }
        }
        return -1;
    }

    /** The segments a scan found without the end marker after their last record, though a later segment follows. */
    Set<Integer> segmentsWithoutEndMarker() {
        return withoutEndMarker;
    }

    /**
     * A new tailer at {@code index} or, if there is no such record (its segment one Chronicle cannot read, or not that
     * long), at the first record of the next segment that has one; at the first record if {@code index} is negative. Null
     * if no record is at or after {@code index}. Nothing before it is read: a segment there that cannot be read to its end
     * (it used to be, from the start, its lines skipped) does not stop a dump that asked for later records. A jump that
     * faults goes to {@code damage} and on to the next segment with a tailer of its own (the faulted one's state is not
     * known).
     */
    private ExcerptTailer startAt(long index, Consumer<String> damage) {
        ExcerptTailer tailer = newTailer();
        if (index < 0) {
            tailer.toStart();
            return tailer;
        }
        int segment = SegmentRollCycle.INSTANCE.toCycle(index);
        long target = index;
        while (true) {
            try {
                if (tailer.moveToIndex(target)) {
                    return tailer;
                }
            } catch (RuntimeException | InternalError e) {
                damage.accept(notRead(segment, target, e));
                tailer.close();
                tailer = newTailer();
            }
            Integer next = segments().higher(segment);
            if (next == null) {
                tailer.close();
                return null;
            }
            segment = next;
            target = SegmentRollCycle.INSTANCE.toIndex(next, 0);
        }
    }

    /** Reads the tailer's next record into the codec; returns its index, -1 at the end. */
    private long readNext(ExcerptTailer tailer, int[] length) {
        try (DocumentContext dc = tailer.readingDocument()) {
            if (!dc.isPresent()) {
                return -1;
            }
            Bytes<?> bytes = dc.wire().bytes();
            length[0] = (int) bytes.readRemaining();
            requireInFile(SegmentRollCycle.INSTANCE.toCycle(dc.index()), bytes.readLimit());
            bytes.read(codec.arrayFor(length[0]), 0, length[0]);
            return dc.index();
        } catch (SegmentFault e) {
            throw e;
        } catch (RuntimeException | InternalError e) {
            throw new SegmentFault(tailer.cycle(), e);
        }
    }

    /**
     * Throws {@link SegmentFault} if a record of {@code segment} ending at byte {@code end} of its file runs past the
     * file's end (cut short, or a damaged header claiming more bytes than there are). Its read would fault, and the JVM may
     * raise that fault only after the copy returned, with the bytes of the record read before in place of the missing
     * ones: a record that is not there would be visited, its checksum even holding where the two records' tails are alike.
     * The size listed at the open is checked first, the file's own size only beyond it (a broker beside the tool may have
     * lengthened the file since).
     */
    private void requireInFile(int segment, long end) {
        Long listed = files.listed().get(segment);
        if (listed != null && end <= listed) {
            return;
        }
        Path file = SegmentFiles.file(segmentDirectory, segment);
        long size;
        try {
            size = Files.size(file);
        } catch (IOException e) {
            throw new SegmentFault(segment, e);
        }
        if (end > size) {
            throw new SegmentFault(segment, new EOFException("a record ends at byte " + end + ", past the file's end at byte "
                    + size));
        }
    }

    /** Chronicle failed reading {@code segment}'s file: {@link #scan} reports it and goes on at the next segment. */
    private static final class SegmentFault extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final int segment;

        SegmentFault(int segment, Throwable cause) {
            super("segment " + segment + " cannot be read", cause, false, false);
            this.segment = segment;
        }
    }

    @Override
    public void close() {
        try {
            if (chronicle != null) {
                chronicle.close();
            }
        } finally {
            Directories.deleteRecursively(view); // the links, not the files they name
        }
    }
}
