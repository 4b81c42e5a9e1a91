package io.sluice.storage.dedup;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;

import static io.sluice.storage.dedup.ProducerTable.Verdict.DUPLICATE;
import static io.sluice.storage.dedup.ProducerTable.Verdict.NEW;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The producer checkpoint's epoch floors, and the files of earlier format versions. */
class ProducerCheckpointTest {
    private static final long NAMED = 0x1234_5678_9ABC_DEF0L;

    @TempDir
    Path dir;

    private static ProducerTable reopened(Path dir) throws Exception {
        ProducerTable copy = new ProducerTable(2, 3_600_000, 100);
        ProducerCheckpoint.read(dir).restoreInto(copy);
        return copy;
    }

    @Test
    void theEpochsOfForgottenProducersSurviveACheckpoint() throws Exception {
        ProducerTable table = new ProducerTable(2, 3_600_000, 100);
        table.register(NAMED, -1, 0);
        table.register(NAMED, -1, 0);
        table.stored(1, 0, 1, 0);
        table.stored(2, 0, 1, 0); // evicts the named producer
        assertEquals(0, table.epoch(NAMED));
        ProducerCheckpoint.write(dir, ProducerCheckpoint.encode(table, 42));

        ProducerTable copy = reopened(dir);
        assertEquals(-1, copy.register(NAMED, 1, 0), "the older instance stays fenced after a restart");
        assertEquals(3, copy.register(NAMED, -1, 0), "a new instance is above every epoch granted before the restart");
    }

    @Test
    void aCheckpointOfVersionOneStillReads() throws Exception {
        Path fixture = Path.of(ProducerCheckpointTest.class.getResource("/producer-checkpoint-v1/" + ProducerCheckpoint.FILE).toURI());
        Files.copy(fixture, ProducerCheckpoint.file(dir));
        assertEquals(42, ProducerCheckpoint.coveredThrough(dir));

        ProducerTable copy = reopened(dir);
        assertEquals(DUPLICATE, copy.check(7, 0, 2, 1_000));
        assertEquals(NEW, copy.check(7, 0, 3, 1_000), "the gap as it was");
        assertEquals(1, copy.lastStoredSequence(NAMED));
        assertEquals(3, copy.epoch(NAMED));
        assertEquals(-1, copy.register(NAMED, 2, 2_000));
        assertEquals(4, copy.register(NAMED, -1, 2_000), "version 1 kept no floor: the highest epoch it holds is one");
        assertTrue(copy.epochMarksLost(), "version 1 kept no marks: those read are the highest epoch it holds, no more");
    }

    @Test
    void aCheckpointOfVersionTwoStillReads() throws Exception {
        Path fixture = Path.of(ProducerCheckpointTest.class.getResource("/producer-checkpoint-v2/" + ProducerCheckpoint.FILE).toURI());
        Files.copy(fixture, ProducerCheckpoint.file(dir));
        assertEquals(42, ProducerCheckpoint.coveredThrough(dir));

        ProducerTable copy = new ProducerTable(3, 3_600_000, 100); // as the table it was written from
        ProducerCheckpoint.read(dir).restoreInto(copy);
        assertEquals(3, copy.tracked());
        assertEquals(DUPLICATE, copy.check(8, 0, 4, 3_000));
        assertEquals(NEW, copy.check(8, 0, 2, 3_000), "the gap as it was");
        assertEquals(1, copy.lastStoredSequence(NAMED));
        assertEquals(3, copy.epoch(NAMED));
        assertEquals(-1, copy.register(NAMED, 2, 3_000), "the older instance stays fenced");
        assertEquals(5, copy.register(NAMED, -1, 3_000), "a new instance is above the highest epoch granted, 4");
        assertFalse(copy.epochMarksLost());
    }

    /**
     * A table whose epoch marks were lost (its checkpoint set aside as damaged) says so in every checkpoint from then on:
     * nothing later tells which epochs were granted before. A table whose marks are known says nothing.
     */
    @Test
    void lostEpochMarksStayLostAcrossCheckpoints() throws Exception {
        ProducerTable table = new ProducerTable(2, 3_600_000, 100);
        table.register(NAMED, -1, 0);
        ProducerCheckpoint.write(dir, ProducerCheckpoint.encode(table, 42));
        assertFalse(ProducerCheckpoint.read(dir).epochMarksLost());
        assertFalse(reopened(dir).epochMarksLost());

        table.loseEpochMarks();
        ProducerCheckpoint.write(dir, ProducerCheckpoint.encode(table, 43));
        assertTrue(ProducerCheckpoint.read(dir).epochMarksLost());
        ProducerTable copy = reopened(dir);
        assertTrue(copy.epochMarksLost());
        ProducerCheckpoint.write(dir, ProducerCheckpoint.encode(copy, 44));
        assertTrue(reopened(dir).epochMarksLost(), "and in the next checkpoint of the table read back");
        assertEquals(1, reopened(dir).epoch(NAMED), "the rest reads as before");
    }

    /**
     * A header whose covered id was damaged (a bit flip, a torn write), its magic intact, does not read, and covers
     * nothing: reclaim (rule R6) and the owner's replay both start from that id. Both used to take it as it read.
     */
    @Test
    void aCheckpointWhoseCoveredIdIsDamagedCoversNothing() throws Exception {
        ProducerTable table = new ProducerTable(2, 3_600_000, 100);
        table.stored(1, 0, 1, 0);
        ProducerCheckpoint.write(dir, ProducerCheckpoint.encode(table, 42));
        assertEquals(42, ProducerCheckpoint.coveredThrough(dir));
        try (RandomAccessFile file = new RandomAccessFile(ProducerCheckpoint.file(dir).toFile(), "rw")) {
            file.seek(8);
            file.writeLong(42 | 1L << 40);
        }

        assertEquals(-1, ProducerCheckpoint.coveredThrough(dir));
        CorruptProducerStateException e = assertThrows(CorruptProducerStateException.class, () -> ProducerCheckpoint.read(dir));
        assertEquals("producer state file " + ProducerCheckpoint.file(dir) + " is corrupt: the CRC32C of its header and body"
                + " does not match the one it holds", e.getMessage());
    }
}
