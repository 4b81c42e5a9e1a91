package io.sluice.storage.ack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sluice.storage.OpenFiles;
import io.sluice.storage.durability.FileForcer;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The journal file on its own: reuse across generations, the first format version, and a creation that fails. */
class AckJournalTest {
    private static final int ACK_RANGE_BYTES = AckJournal.RecordType.ACK_RANGE.recordBytes;

    @TempDir
    Path dir;

    @Test
    void reusedJournalNeverReplaysThePreviousGenerationsRecords() throws IOException {
        Path file = dir.resolve(AckFiles.JOURNAL);
        try (AckJournal journal = AckJournal.create(file, 1, 4096)) {
            for (long id = 0; id < 10; id++) {
                journal.appendAckRange(id * 100, id * 100 + 9);
            }
            journal.reuse(2);
            journal.appendAckRange(5000, 5009);
            journal.appendAckRange(6000, 6009);
        }
        byte[] bytes = Files.readAllBytes(file);
        int thirdRecord = AckJournal.HEADER_BYTES + 2 * ACK_RANGE_BYTES;
        assertEquals(0, bytes[thirdRecord], "an append ends the generation's records with a zero type byte");
        assertEquals(List.of("5000..5009", "6000..6009"), ackRanges(file, 2));

        // A machine crash can leave the page with that zero byte unwritten while the next records of
        // generation 1 are still in the file: put generation 1's third record back, byte for byte.
        bytes[thirdRecord] = AckJournal.RecordType.ACK_RANGE.code;
        Files.write(file, bytes);
        AckJournal.Replay replay = AckJournal.replay(file, 2, new Recorder() {
            @Override
            public void ackRange(long fromId, long toIdInclusive) {
            }
        });
        assertEquals(2, replay.records());
        assertEquals(thirdRecord, replay.stopOffset());
        assertTrue(replay.stopReason().contains("CRC32C"), replay.stopReason());
        assertEquals(List.of("5000..5009", "6000..6009"), ackRanges(file, 2));
    }

    /**
     * A creation whose force of the directory fails (after the new journal was renamed into place and mapped) throws, and
     * leaves no mapping of the journal behind: the caller never gets the journal to close, so its mapping, and with it the
     * file's blocks after a later delete, was held until the JVM collected it.
     */
    @Test
    void aCreationWhoseDirectoryForceFailsReleasesTheJournalsMapping() throws IOException {
        Path file = dir.resolve(AckFiles.JOURNAL);
        FileForcer failingDirectory = new FileForcer() {
            @Override
            public void force(FileChannel channel, Path forced) throws IOException {
                channel.force(false);
            }

            @Override
            public void forceDirectory(FileChannel channel, Path directory) throws IOException {
                throw new IOException("Input/output error forcing " + directory);
            }
        };

        IOException failed = assertThrows(IOException.class, () -> AckJournal.create(file, 1, 4096, 4096, failingDirectory));
        assertEquals("Input/output error forcing " + dir.toAbsolutePath(), failed.getMessage());
        assertEquals(List.of(), OpenFiles.mappingsUnder(dir), "the journal is not left mapped");
        assertEquals(List.of(), OpenFiles.descriptorsUnder(dir), "nor open");
    }

    @Test
    void recordsAfterTheEndMarkerAreNotReadEvenWithTheRightGeneration() throws IOException {
        Path file = dir.resolve(AckFiles.JOURNAL);
        try (AckJournal journal = AckJournal.create(file, 4, 4096)) {
            journal.appendDeliveredRange(10, 19, 1);
            journal.appendDelivered(12, 2);
        }
        List<String> seen = new ArrayList<>();
        AckJournal.Replay replay = AckJournal.replay(file, 4, new Recorder() {
            @Override
            public void deliveredRange(long fromId, long toIdInclusive, int deliveryCount) {
                seen.add("delivered " + fromId + ".." + toIdInclusive + " x" + deliveryCount);
            }

            @Override
            public void delivered(long id, int deliveryCount) {
                seen.add("delivered " + id + " x" + deliveryCount);
            }
        });
        assertEquals(List.of("delivered 10..19 x1", "delivered 12 x2"), seen);
        assertEquals("end of written records", replay.stopReason());
    }

    @Test
    void readsAVersionOneJournal() throws IOException {
        // Version 1: the same header, records whose CRC32C covers only type and payload.
        ByteBuffer file = ByteBuffer.allocate(4096);
        file.putInt(AckJournal.MAGIC).putInt(1).putLong(3).position(AckJournal.HEADER_BYTES);
        for (long from : new long[] {40, 70}) {
            int start = file.position();
            file.put(AckJournal.RecordType.ACK_RANGE.code).putLong(from).putLong(from + 4);
            CRC32C crc = new CRC32C();
            crc.update(file.array(), start, file.position() - start);
            file.putInt((int) crc.getValue());
        }
        Path path = dir.resolve(AckFiles.JOURNAL);
        Files.write(path, file.array());
        assertEquals(List.of("40..44", "70..74"), ackRanges(path, 3));
    }

    /**
     * Rule "the records name their generation": a header whose generation differs from the checkpoint's is believed only
     * when no record of the checkpoint's generation follows it; one of another generation, none, or a file cut to its
     * header leaves the journal unreplayed, as before.
     */
    @Test
    void aHeaderGenerationIsBelievedUnlessARecordOfTheExpectedOneFollows() throws IOException {
        Path file = dir.resolve(AckFiles.JOURNAL);
        try (AckJournal journal = AckJournal.create(file, 6, 4096)) {
            journal.appendAckRange(10, 19);
        }
        byte[] written = Files.readAllBytes(file);
        byte[] damaged = written.clone();
        damaged[15] ^= 0x02; // generation 6 reads as 4
        Files.write(file, damaged);
        assertEquals(List.of("10..19"), ackRanges(file, 6), "its record is of generation 6: the header is damaged");
        assertTrue(AckJournal.replay(file, 6, new Recorder() {
            @Override
            public void ackRange(long fromId, long toIdInclusive) {
            }
        }).headerDamage().contains("header says generation 4"));
        assertEquals(List.of(), ackRanges(file, 7), "a journal of generation 6 behind checkpoint 7 is not replayed");

        Files.write(file, java.util.Arrays.copyOf(damaged, AckJournal.HEADER_BYTES));
        AckJournal.Replay cut = AckJournal.replay(file, 6, new Recorder());
        assertEquals(false, cut.applied(), "nothing after the header to tell its generation by");
    }

    private static List<String> ackRanges(Path file, long generation) throws IOException {
        List<String> ranges = new ArrayList<>();
        AckJournal.replay(file, generation, new Recorder() {
            @Override
            public void ackRange(long fromId, long toIdInclusive) {
                ranges.add(fromId + ".." + toIdInclusive);
            }
        });
        return ranges;
    }

    /** Fails the test on any record type the test did not expect. */
    private static class Recorder implements AckJournal.Visitor {
        @Override
        public void ackRange(long fromId, long toIdInclusive) {
            throw new AssertionError("unexpected ACK_RANGE " + fromId + ".." + toIdInclusive);
        }

        @Override
        public void delivered(long id, int deliveryCount) {
            throw new AssertionError("unexpected DELIVERED " + id);
        }

        @Override
        public void relocated(long originalId, long newId) {
            throw new AssertionError("unexpected RELOCATED " + originalId);
        }

        @Override
        public void segmentReclaimed(int segment) {
            throw new AssertionError("unexpected SEGMENT_RECLAIMED " + segment);
        }

        @Override
        public void deliveredRange(long fromId, long toIdInclusive, int deliveryCount) {
            throw new AssertionError("unexpected DELIVERED_RANGE " + fromId);
        }
    }
}
