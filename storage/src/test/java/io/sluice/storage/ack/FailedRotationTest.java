package io.sluice.storage.ack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A rotation whose checkpoint fails. The failure that matters comes after the rename (a failed force of the
 * directory): the file system then holds checkpoint <i>g</i>+1 beside journal <i>g</i>, which recovery ignores as
 * folded into that checkpoint. A journal that took records after such a failure lost them to a restart, kill -9
 * included, although each ack had returned and a force had covered it (so {@code whenAcksDurable} reported it).
 *
 * <p>The journal is sized so that after ten acks it has 24 bytes left: a delivered range (25 bytes) rotates it,
 * an ack (21 bytes) would still fit.
 */
class FailedRotationTest {
    private static final int JOURNAL_BYTES = AckJournal.HEADER_BYTES + 10 * 21 + 24;
    private static final int MESSAGES = 1000;

    @TempDir
    Path dir;
    private AckLog log;
    private AckLog reopened;
    private int failuresToInject;

    @AfterEach
    void close() throws IOException {
        if (reopened != null) {
            reopened.close();
        }
        if (log != null) {
            log.close();
        }
    }

    @Test
    void anAckAfterARotationFailedPastItsRenameSurvivesAProcessCrash() throws IOException {
        log = openFailingAfterRename();
        long generation = log.generation();
        for (long id = 0; id < 20; id += 2) {
            assertEquals(AckResult.NEWLY_ACKED, log.ack(id));
        }
        assertEquals(generation, log.generation(), "ten acks fit the journal");

        failuresToInject = 1;
        assertThrows(IOException.class, () -> log.recordDeliveries(new long[] {100, 101, 102}, new int[] {1, 1, 1}, 3));
        assertEquals(generation + 1, AckCheckpoint.read(dir.resolve(AckFiles.CHECKPOINT)).generation(),
                "the failed rotation's checkpoint is in place");

        assertEquals(AckResult.NEWLY_ACKED, log.ack(50));
        long records = log.journalRecords();
        assertTrue(log.force() >= records, "a force covers the ack: whenAcksDurable would report it durable");

        reopened = open(); // the first is abandoned, as kill -9 leaves it: its writes are in the page cache
        for (long id = 0; id < 20; id += 2) {
            assertTrue(reopened.state().isAcked(id), "ack of " + id + " before the failure");
        }
        assertEquals(1, reopened.state().deliveryCount(101), "the delivery the failed rotation's checkpoint holds");
        assertTrue(reopened.state().isAcked(50), "the ack made after the failed rotation came back unacknowledged");
    }

    @Test
    void aRotationThatFailsAgainFailsTheChangeAndRecoveryStillHoldsWhatReturned() throws IOException {
        log = openFailingAfterRename();
        for (long id = 0; id < 20; id += 2) {
            log.ack(id);
        }
        failuresToInject = 2;
        assertThrows(IOException.class, () -> log.recordDeliveries(new long[] {100, 101, 102}, new int[] {1, 1, 1}, 3));
        assertThrows(IOException.class, () -> log.ack(50), "the journal of the older generation takes no record");
        assertEquals(AckResult.NEWLY_ACKED, log.ack(60), "a rotation that completes ends it");

        reopened = open();
        assertTrue(reopened.state().isAcked(50), "the failed checkpoint held the ack it failed for, once renamed");
        assertTrue(reopened.state().isAcked(60));
    }

    /**
     * A batch of acks whose journaling needs a checkpoint that fails is applied whole in memory, as any change whose
     * call throws (AckLog's class javadoc), with one checkpoint tried. It used to stop at the run after the one that
     * needed it: the rest of the batch stayed unacknowledged, and the broker, handing it again, tried a checkpoint (a
     * rewrite of the whole state, and an fsync) for every two ids of a batch of scattered ones.
     */
    @Test
    void aBatchOfScatteredAcksWhoseCheckpointFailsIsAppliedWholeWithOneTry() throws IOException {
        log = open();
        int[] tried = failEveryCheckpoint(log);
        long[] scattered = new long[MESSAGES / 2];
        for (int i = 0; i < scattered.length; i++) {
            scattered[i] = 2L * i; // none next to another: a journal record each, far more than the journal holds
        }
        try {
            assertThrows(IOException.class, () -> log.ackAll(scattered, scattered.length, physical -> { }));
            assertEquals(1, tried[0], "checkpoints tried");
            for (long id : scattered) {
                assertTrue(log.state().isAcked(id), "ack of " + id + " applied in memory");
            }
        } finally {
            log.checkpointWrite(AckCheckpoint::write); // the disk has room again: the close's checkpoint is written
        }
    }

    /**
     * A purge ({@link AckLog#ackAllExcept}) whose journaling needs a checkpoint that fails is applied whole in memory, with
     * one checkpoint tried, as a batch of acks is. A purge stopped at the gap that needed it would leave part of it
     * acknowledged in the store, which the broker, told the purge failed, would still count in its backlog.
     */
    @Test
    void aPurgeWhoseCheckpointFailsIsAppliedWholeWithOneTry() throws IOException {
        log = open();
        int[] tried = failEveryCheckpoint(log);
        long[] keep = new long[MESSAGES / 2];
        for (int i = 0; i < keep.length; i++) {
            keep[i] = 2L * i + 1; // a gap of one between each two kept: a journal record each
        }
        try {
            assertThrows(IOException.class, () -> log.ackAllExcept(keep));
            assertEquals(1, tried[0], "checkpoints tried");
            assertOnlyOddIdsUnacknowledged(0, MESSAGES);
        } finally {
            log.checkpointWrite(AckCheckpoint::write);
        }
    }

    /** As a purge, the range of a cluster node's purge entry ({@link AckLog#ackRangeExcept}). */
    @Test
    void aRangeExceptTheKeptWhoseCheckpointFailsIsAppliedWholeWithOneTry() throws IOException {
        log = open();
        int[] tried = failEveryCheckpoint(log);
        long[] keep = new long[MESSAGES / 4];
        for (int i = 0; i < keep.length; i++) {
            keep[i] = 2L * i + 1;
        }
        try {
            assertThrows(IOException.class, () -> log.ackRangeExcept(0, MESSAGES / 2 - 1, keep));
            assertEquals(1, tried[0], "checkpoints tried");
            assertOnlyOddIdsUnacknowledged(0, MESSAGES / 2);
            for (long id = MESSAGES / 2; id < MESSAGES; id++) {
                assertFalse(log.state().isAcked(id), "ack of " + id + ", past the range");
            }
        } finally {
            log.checkpointWrite(AckCheckpoint::write);
        }
    }

    /** Deliveries recorded in a batch whose journaling needs a checkpoint that fails: every count is recorded in memory. */
    @Test
    void aBatchOfScatteredDeliveriesWhoseCheckpointFailsIsRecordedWholeWithOneTry() throws IOException {
        log = open();
        int[] tried = failEveryCheckpoint(log);
        long[] scattered = new long[MESSAGES / 2];
        int[] counts = new int[scattered.length];
        for (int i = 0; i < scattered.length; i++) {
            scattered[i] = 2L * i;
            counts[i] = 1 + i % 3;
        }
        try {
            assertThrows(IOException.class, () -> log.recordDeliveries(scattered, counts, scattered.length));
            assertEquals(1, tried[0], "checkpoints tried");
            for (int i = 0; i < scattered.length; i++) {
                assertEquals(counts[i], log.state().deliveryCount(scattered[i]), "delivery count of " + scattered[i]);
            }
        } finally {
            log.checkpointWrite(AckCheckpoint::write);
        }
    }

    /** Makes every checkpoint of {@code target} fail before it writes anything, as a full disk does; counts the tries. */
    private static int[] failEveryCheckpoint(AckLog target) {
        int[] tried = new int[1];
        target.checkpointWrite((file, generation, tracker) -> {
            tried[0]++;
            throw new IOException("no space left on device (injected)");
        });
        return tried;
    }

    /** In {@code [from, to)}, the odd ids and only those are unacknowledged. */
    private void assertOnlyOddIdsUnacknowledged(long from, long to) {
        for (long id = from; id < to; id++) {
            assertEquals(id % 2 == 0, log.state().isAcked(id), "ack of " + id);
        }
    }

    /** A log whose next {@link #failuresToInject} checkpoints fail after their rename, as a failed directory force does. */
    private AckLog openFailingAfterRename() throws IOException {
        AckLog opened = open();
        opened.checkpointWrite((file, generation, tracker) -> {
            AckCheckpoint.write(file, generation, tracker); // written, renamed into place and forced...
            if (failuresToInject > 0) {
                failuresToInject--;
                throw new IOException("forcing the ack directory failed (injected)"); // ...but reported as failed
            }
        });
        return opened;
    }

    private AckLog open() throws IOException {
        AckLog opened = AckLog.open(dir, JOURNAL_BYTES);
        opened.segmentGrew(0, MESSAGES);
        opened.recover();
        return opened;
    }
}
