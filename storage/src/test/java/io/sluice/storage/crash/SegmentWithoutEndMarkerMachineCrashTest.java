package io.sluice.storage.crash;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.FileTrees;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.ReaderIds;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.segment.SegmentFiles;
import io.sluice.storage.tool.StorageTool;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule "a sealed segment ends in its marker" (docs/storage.md, "Recovery"): a sealed segment that is not the last and
 * lacks Chronicle's end-of-cycle marker, because its records reached the disk and the marker the roll wrote after them
 * did not while the next segment's records did (the OS writes pages back in no order the store chooses: under
 * {@code never} nothing is forced, and under any mode the next segment's pages may be written back before the flusher's
 * force of the sealed one). Chronicle's tailer leaves a segment only at its marker, and Chronicle's appender writes a
 * missing one only in part. Recovery writes it: a reader opened after the restart, before any append, reads every
 * message on the disk, and one appended after the restart too.
 *
 * <p>Chronicle aligns each record's header to an int: records here are of every length modulo four, so the walk that
 * looks for the marker must skip the padding (without it, it takes the padding after the last record for an empty
 * header and writes a marker there, across the segment's real one, which strands the segments after it).
 */
class SegmentWithoutEndMarkerMachineCrashTest {
    @TempDir
    Path temp;

    private static StoreConfig config() {
        return StoreConfig.builder().durability(DurabilityMode.NEVER).syncIntervalMs(60_000)
                .segmentBytes(StoreConfig.MIN_SEGMENT_BYTES).maxMessageBytes(64 << 10).reservedDiskBytes(64L << 20).build();
    }

    /** A payload of {@code 4000 + extra} bytes: {@code extra} sets the record's length modulo four. */
    private static byte[] payload(long n, int extra) {
        return String.format("%0" + (4000 + extra) + "d", n).getBytes(StandardCharsets.US_ASCII);
    }

    /** How many records of this size a segment holds: the append after them rolls. */
    private int recordsPerSegment(int extra) {
        try (MessageStore store = MessageStore.open(temp.resolve("count"), config())) {
            QueueStore q = store.createQueue("q");
            int n = 0;
            while (q.segmentNumbers().size() < 2) {
                q.append(null, payload(n++, extra));
            }
            return n - 1;
        }
    }

    /**
     * Appends {@code segments} segments' worth of records and twenty more, copies the store as it is (what a process
     * crash leaves), and puts back, in the copy, each segment of {@code withoutMarker} as it was written before the
     * roll out of it (no end marker). Returns the ids appended, in order.
     */
    private List<Long> crashImage(Path data, Path image, int extra, int segments, List<Integer> withoutMarker) throws Exception {
        int perSegment = recordsPerSegment(extra);
        List<Long> stored = new ArrayList<>();
        Map<Integer, byte[]> beforeTheirRolls = new HashMap<>();
        try (MessageStore store = MessageStore.open(data, config())) {
            QueueStore q = store.createQueue("q");
            for (int n = 0; n < segments * perSegment + 20; n++) {
                if (n > 0 && n % perSegment == 0 && withoutMarker.contains(n / perSegment - 1)) {
                    int sealed = n / perSegment - 1;
                    beforeTheirRolls.put(sealed, Files.readAllBytes(q.segmentDirectory().resolve(SegmentFiles.fileName(sealed))));
                }
                stored.add(q.append(null, payload(n, extra)));
            }
            assertEquals(segments + 1, q.segmentNumbers().size());
            FileTrees.copy(data, image);
            for (Map.Entry<Integer, byte[]> before : beforeTheirRolls.entrySet()) {
                Path copied = image.resolve("queues/q/segments").resolve(SegmentFiles.fileName(before.getKey()));
                assertFalse(Arrays.equals(before.getValue(), Files.readAllBytes(copied)), "the roll wrote the end marker");
                Files.write(copied, before.getValue());
            }
        }
        return stored;
    }

    @ParameterizedTest(name = "records of length 4 k + {0}")
    @ValueSource(ints = {0, 1, 2, 3})
    void messagesAfterASegmentWithoutItsEndMarkerAreDeliveredAfterAMachineCrash(int extra) throws Exception {
        Path image = temp.resolve("image");
        List<Long> stored = crashImage(temp.resolve("data"), image, extra, 1, List.of(0));
        try (MessageStore store = MessageStore.open(image, config())) {
            QueueStore q = store.queue("q");
            assertEquals(stored, ReaderIds.readAll(q), "a reader opened before any append reads past the first segment");
            stored.add(q.append(null, payload(stored.size(), extra)));
            assertEquals(stored, ReaderIds.readAll(q), "and so does one opened after an append");
        }
    }

    /** Chronicle's appender writes only one missing marker, into the segment it finds itself in at its first append. */
    @Test
    void messagesAfterTwoSegmentsWithoutTheirEndMarkersAreDeliveredAfterAMachineCrash() throws Exception {
        Path image = temp.resolve("image");
        List<Long> stored = crashImage(temp.resolve("data"), image, 1, 3, List.of(0, 1));
        try (MessageStore store = MessageStore.open(image, config())) {
            QueueStore q = store.queue("q");
            assertEquals(stored, ReaderIds.readAll(q), "a reader opened before any append reads every segment");
            stored.add(q.append(null, payload(stored.size(), 1)));
            assertEquals(stored, ReaderIds.readAll(q), "and so does one opened after an append");
        }
    }

    /**
     * The offline tool reads the disk the crash left, before any restart, and cannot write the marker: its scan goes on
     * past the segment, so that dump lists every record and verify checks every one, and says the marker is missing.
     */
    @Test
    void theToolReadsPastASegmentWithoutItsEndMarkerBeforeTheRestart() throws Exception {
        Path image = temp.resolve("image");
        List<Long> stored = crashImage(temp.resolve("data"), image, 1, 2, List.of(0));

        ByteArrayOutputStream dump = new ByteArrayOutputStream();
        assertEquals(StorageTool.EXIT_CLEAN, StorageTool.run(new String[] {"dump", image.toString(), "q"},
                new PrintStream(dump, true, StandardCharsets.UTF_8), System.err));
        List<Long> dumped = dump.toString(StandardCharsets.UTF_8).lines().filter(l -> l.matches("0x[0-9a-f]{16} .*"))
                .map(l -> Long.parseUnsignedLong(l.substring(2, 18), 16)).toList();
        assertEquals(stored, dumped, "dump lists every record on the disk");

        ByteArrayOutputStream verify = new ByteArrayOutputStream();
        assertEquals(StorageTool.EXIT_CLEAN, StorageTool.run(new String[] {"verify", image.toString()},
                new PrintStream(verify, true, StandardCharsets.UTF_8), System.err));
        List<String> notes = verify.toString(StandardCharsets.UTF_8).lines().filter(l -> l.contains("NOTE")).toList();
        assertEquals(1, notes.size(), "verify notes the missing marker and nothing else: " + notes);
        assertTrue(notes.get(0).contains("NOTE segment 0: ") && notes.get(0).contains("has no end marker"), notes.get(0));
        assertTrue(verify.toString(StandardCharsets.UTF_8).contains("total: 3 segment(s), " + stored.size() + " message(s)"),
                "verify read every record:\n" + verify);
    }

    /**
     * A sealed segment whose last counted record is not in the file (cut short) gets no marker: where its records end is
     * not known. The queue still opens, and the segment is left as it is.
     */
    @Test
    void aSealedSegmentCutShortBeforeItsLastRecordIsLeftAsItIs() throws Exception {
        Path image = temp.resolve("image");
        crashImage(temp.resolve("data"), image, 1, 2, List.of(0));
        Path first = image.resolve("queues/q/segments").resolve(SegmentFiles.fileName(0));
        // Within its records, before the last.
        try (FileChannel channel = FileChannel.open(first, StandardOpenOption.WRITE)) {
            channel.truncate(Files.size(first) / 4 * 3 / 2 / 4 * 4);
        }
        byte[] cut = Files.readAllBytes(first);
        try (MessageStore store = MessageStore.open(image, config())) {
            assertEquals(List.of(0, 1, 2), store.queue("q").segmentNumbers());
            byte[] now = Files.readAllBytes(first); // Chronicle's mapping may lengthen the file again, with zeros
            assertArrayEquals(cut, Arrays.copyOf(now, cut.length), "nothing is written into what is left");
            assertTrue(IntStream.range(cut.length, now.length).allMatch(i -> now[i] == 0), "nor after it");
        }
    }

    /** After a process crash every marker a roll wrote is on disk, and recovery changes no sealed segment. */
    @ParameterizedTest(name = "records of length 4 k + {0}")
    @ValueSource(ints = {0, 1, 2, 3})
    void sealedSegmentsThatKeptTheirMarkersAreLeftAsTheyAre(int extra) throws Exception {
        Path image = temp.resolve("image");
        List<Long> stored = crashImage(temp.resolve("data"), image, extra, 2, List.of());
        Path segments = image.resolve("queues/q/segments");
        byte[] first = Files.readAllBytes(segments.resolve(SegmentFiles.fileName(0)));
        byte[] second = Files.readAllBytes(segments.resolve(SegmentFiles.fileName(1)));
        try (MessageStore store = MessageStore.open(image, config())) {
            QueueStore q = store.queue("q");
            assertArrayEquals(first, Files.readAllBytes(segments.resolve(SegmentFiles.fileName(0))), "segment 0 is unchanged");
            assertArrayEquals(second, Files.readAllBytes(segments.resolve(SegmentFiles.fileName(1))), "segment 1 is unchanged");
            assertEquals(stored, ReaderIds.readAll(q));
        }
    }
}
