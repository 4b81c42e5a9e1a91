package io.sluice.storage.dedup;

import org.junit.jupiter.api.Test;

import static io.sluice.storage.dedup.ProducerTable.Verdict.DUPLICATE;
import static io.sluice.storage.dedup.ProducerTable.Verdict.FENCED;
import static io.sluice.storage.dedup.ProducerTable.Verdict.NEW;
import static io.sluice.storage.dedup.ProducerTable.Verdict.OUT_OF_WINDOW;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ProducerTableTest {
    private final ProducerTable table = new ProducerTable(3, 1_000, 100);

    private void store(long producer, long... sequences) {
        for (long s : sequences) {
            assertEquals(NEW, table.check(producer, 0, s, 0), "sequence " + s);
            table.stored(producer, 0, s, 0);
        }
    }

    @Test
    void aStoredSequenceIsADuplicateAndARefusedOneIsNot() {
        store(7, 1, 2, 3);
        // 4 was refused (never stored); 5 and 6 were.
        store(7, 5, 6);
        assertEquals(DUPLICATE, table.check(7, 0, 2, 0));
        assertEquals(DUPLICATE, table.check(7, 0, 6, 0));
        assertEquals(NEW, table.check(7, 0, 4, 0), "a gap below the highest was never stored");
        table.stored(7, 0, 4, 0);
        assertEquals(DUPLICATE, table.check(7, 0, 4, 0));
        assertEquals(6, table.lastStoredSequence(7));
    }

    @Test
    void belowTheFirstStoredSequenceNothingIsKnownSoItIsStored() {
        store(7, 50);
        assertEquals(NEW, table.check(7, 0, 49, 0));
        assertEquals(NEW, table.check(7, 0, 1, 0));
    }

    @Test
    void farBelowTheWindowIsRefusedAndAJumpForwardIsNot() {
        store(7, 1, 500);
        assertEquals(OUT_OF_WINDOW, table.check(7, 0, 400, 0));
        assertEquals(NEW, table.check(7, 0, 450, 0), "a gap inside the window");
        assertEquals(NEW, table.check(7, 0, 1_000_000, 0));
    }

    @Test
    void producerIdZeroAndSequencesBelowOneAreNeverTracked() {
        table.stored(0, 0, 1, 0);
        table.stored(9, 0, 0, 0);
        assertEquals(NEW, table.check(0, 0, 1, 0));
        assertEquals(NEW, table.check(9, 0, 0, 0));
        assertEquals(0, table.tracked());
    }

    @Test
    void aNewInstanceFencesTheOldOneAndTheOldCannotResume() {
        int first = table.register(7, -1, 0);
        assertEquals(FENCED, table.check(7, 0, 1, 0), "an unregistered publisher under a registered id");
        assertEquals(NEW, table.check(7, first, 1, 0));
        table.stored(7, first, 1, 0);
        int second = table.register(7, -1, 0);
        assertEquals(first + 1, second);
        assertEquals(FENCED, table.check(7, first, 2, 0));
        assertEquals(-1, table.register(7, first, 0), "the old instance resuming is fenced");
        assertEquals(second, table.register(7, second, 0), "the new one resumes after a reconnect");
        assertEquals(NEW, table.check(7, second, 2, 0));
    }

    @Test
    void aNewInstanceAfterItsProducerWasForgottenGetsAnEpochAboveEveryEpochGranted() {
        assertEquals(1, table.register(7, -1, 0));
        assertEquals(2, table.register(7, -1, 0));
        store(1, 1);
        store(2, 1);
        store(3, 1); // a fourth producer for a table of three: 7, the least recently seen, is evicted
        assertEquals(1, table.evictions());
        assertEquals(3, table.register(7, -1, 0), "epoch 2 may still be running: the new instance is above it");
        assertEquals(-1, table.register(7, 2, 0), "and the instance of epoch 2 cannot fence it by resuming");

        assertEquals(4, table.register(8, -1, 0), "epochs rise across the queue's producers");
        assertEquals(3, table.expire(1_000), "7, 8 and 3: the table holds three");
        assertEquals(5, table.register(7, -1, 1_000), "after an idle expiry too");
    }

    @Test
    void anOlderInstanceOfAForgottenProducerCannotResumeAndTheNewestCan() {
        assertEquals(1, table.register(7, -1, 0));
        assertEquals(2, table.register(7, -1, 0));
        assertEquals(1, table.expire(1_000));
        store(1, 1);
        store(2, 1);
        assertEquals(-1, table.register(7, 1, 1_000), "epoch 1 may be older than what the table forgot");
        assertEquals(2, table.tracked(), "a fenced registration adds no producer");
        assertEquals(0, table.evictions(), "and evicts none");
        assertEquals(2, table.register(7, 2, 1_000), "the newest instance resumes after its producer was forgotten");
        assertEquals(NEW, table.check(7, 2, 1, 1_000));
    }

    @Test
    void theLeastRecentlySeenIsEvictedAndTheIdleExpire() {
        store(1, 1);
        store(2, 1);
        store(3, 1);
        table.check(1, 0, 2, 0); // 1 seen again: 2 is now the least recently seen
        store(4, 1);
        assertEquals(1, table.evictions());
        assertEquals(0, table.lastStoredSequence(2));
        assertEquals(NEW, table.check(2, 0, 1, 0), "after eviction a resend is stored again");
        assertEquals(1, table.lastStoredSequence(1));

        table.check(4, 0, 2, 900);
        assertEquals(2, table.expire(1_000));
        assertEquals(1, table.tracked());
        assertEquals(2, table.expiries());
    }

    @Test
    void gapsSplitAndShrinkAndOldOnesAreForgotten() {
        store(7, 1, 10);
        assertArrayEquals(new long[]{2, 9}, table.snapshot().get(0).gapRanges());
        table.stored(7, 0, 5, 0);
        assertArrayEquals(new long[]{2, 4, 6, 9}, table.snapshot().get(0).gapRanges());
        table.stored(7, 0, 2, 0);
        table.stored(7, 0, 9, 0);
        assertArrayEquals(new long[]{3, 4, 6, 8}, table.snapshot().get(0).gapRanges());
        table.stored(7, 0, 106, 0);
        assertArrayEquals(new long[]{7, 8, 11, 105}, table.snapshot().get(0).gapRanges());
    }

    @Test
    void aCheckpointReadsBackAsItWasWritten(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        store(1, 1, 2, 5);
        table.register(2, -1, 0);
        ProducerCheckpoint.write(dir, ProducerCheckpoint.encode(table, 42));
        assertEquals(42, ProducerCheckpoint.coveredThrough(dir));
        ProducerCheckpoint.Loaded loaded = ProducerCheckpoint.read(dir);
        ProducerTable copy = new ProducerTable(3, 1_000, 100);
        for (ProducerCheckpoint.Entry e : loaded.producers()) {
            copy.restore(e.id(), e.epoch(), e.highest(), e.lastSeenMillis(), e.gapRanges());
        }
        assertEquals(DUPLICATE, copy.check(1, 0, 2, 0));
        assertEquals(NEW, copy.check(1, 0, 3, 0));
        assertEquals(1, copy.epoch(2));
        assertEquals(FENCED, copy.check(2, 0, 1, 0));
    }

    @Test
    void aDamagedCheckpointIsRefusedWithTheFileNamed(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        store(1, 1, 2);
        ProducerCheckpoint.write(dir, ProducerCheckpoint.encode(table, 42));
        java.nio.file.Path file = ProducerCheckpoint.file(dir);
        byte[] bytes = java.nio.file.Files.readAllBytes(file);
        bytes[bytes.length - 3] ^= 0x10;
        java.nio.file.Files.write(file, bytes);
        CorruptProducerStateException e = org.junit.jupiter.api.Assertions.assertThrows(
                CorruptProducerStateException.class, () -> ProducerCheckpoint.read(dir));
        org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().contains(file.toString()) && e.getMessage().contains("CRC32C"),
                e.getMessage());
        assertEquals(ProducerCheckpoint.ABSENT, ProducerCheckpoint.coveredThrough(dir.resolve("none")));
    }

    @Test
    void theTransactionCoordinatorsProducerIsNeverEvictedNorExpiredAndKeepsNoGaps() {
        long coordinator = ProducerTable.TRANSACTIONS_PRODUCER_ID;
        table.stored(coordinator, 0, 10, 0);
        table.stored(coordinator, 0, 500, 0); // a jump: the sequences between were other queues' publishes
        assertArrayEquals(new long[0], table.snapshot().get(0).gapRanges(), "no gaps for the coordinator");
        store(1, 1);
        store(2, 1);
        store(3, 1);
        store(4, 1); // the cap is 3 of the clients' producers, the broker's apart: one of them is evicted, never the coordinator
        assertEquals(500, table.lastStoredSequence(coordinator));
        assertEquals(1, table.evictions());
        table.expire(10_000); // long past the idle expiry
        assertEquals(500, table.lastStoredSequence(coordinator));
        assertEquals(1, table.tracked());
    }

    /** Rule R8 of docs/replication.md: a replicated dead-letter queue decides by its copies' producer whether a replayed copy is stored. */
    @Test
    void theDeadLetterCopiesProducerIsNeverEvictedNorExpiredAndKeepsNoGaps() {
        long copies = ProducerTable.DEAD_LETTER_COPIES_PRODUCER_ID;
        long coordinator = ProducerTable.TRANSACTIONS_PRODUCER_ID;
        table.stored(coordinator, 0, 7, 0);
        table.stored(copies, 0, 12, 0);
        table.stored(copies, 0, 40, 0); // log indexes: the entries between were other changes
        assertArrayEquals(new long[0], table.snapshot().get(1).gapRanges(), "no gaps for the copies");
        store(1, 1);
        store(2, 1);
        store(3, 1);
        store(4, 1); // the cap is 3 of the clients' producers: producer 1 is evicted, neither of the broker's
        assertEquals(40, table.lastStoredSequence(copies));
        assertEquals(7, table.lastStoredSequence(coordinator));
        assertEquals(1, table.evictions());
        table.expire(10_000);
        assertEquals(40, table.lastStoredSequence(copies));
        assertEquals(2, table.tracked());
    }

    @Test
    void aHeldTableForgetsOnlyProducersAMarkerCovers() {
        ProducerTable held = new ProducerTable(1, 1_000, 100);
        held.holdUntilMarked();
        held.restore(7, 0, 3, 0, new long[0]);          // read back at a start
        assertEquals(0, held.expire(5_000), "restored, seen before no marker: held past the idle expiry");
        held.stored(8, 0, 1, 5_000);                    // over the cap of one: nothing may be evicted
        assertEquals(2, held.tracked());
        assertEquals(DUPLICATE, held.check(7, 0, 3, 5_000));

        held.marked();
        held.stored(9, 0, 1, 5_000);                    // the least recently seen covered producer goes: 8
        assertEquals(2, held.tracked());
        assertEquals(NEW, held.check(8, 0, 1, 5_000));
        assertEquals(0, held.evictionsBeforeMarker());
        assertEquals(DUPLICATE, held.check(7, 0, 3, 5_000));
        held.stored(10, 0, 1, 5_000);                   // 9 and 7, seen since the marker, are held: at twice the cap, 9 goes
        assertEquals(2, held.tracked());
        assertEquals(1, held.evictionsBeforeMarker());
        assertEquals(NEW, held.check(9, 0, 1, 5_000));
        assertEquals(DUPLICATE, held.check(7, 0, 3, 5_000));
    }

    /** Once every epoch was granted, a new instance is refused with the reason; an instance holding an epoch resumes. */
    @Test
    void whenEveryEpochWasGrantedANewInstanceIsRefusedAndAResumeGoesOn() {
        ProducerTable table = new ProducerTable(10, 1_000, 100);
        table.restoreEpochs(Integer.MAX_VALUE - 1, 0);
        assertEquals(Integer.MAX_VALUE, table.register(7, -1, 0));
        ProducerEpochsExhaustedException refused = assertThrows(ProducerEpochsExhaustedException.class,
                () -> table.register(8, -1, 0));
        assertTrue(refused.getMessage().contains("every producer epoch up to " + Integer.MAX_VALUE + " was granted"),
                refused.getMessage());
        assertEquals(0, table.epoch(8), "the refused instance was not registered");
        assertEquals(Integer.MAX_VALUE, table.register(7, Integer.MAX_VALUE, 0));
    }
}
