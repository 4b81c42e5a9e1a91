package io.sluice.broker.cluster;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Rule R12: the level each entry format needs, the level entry's codec, and the finalized level a node keeps. */
class EntryLevelsTest {
    @TempDir
    Path dir;

    @Test
    void shouldMapEachEntryVersionToItsLevel() {
        assertEquals(1, EntryLevels.required(ShardEntry.VERSION));
        assertEquals(2, EntryLevels.required(ShardEntry.DEAD_LETTER_VERSION));
        assertEquals(3, EntryLevels.required(ShardEntry.DELIVERED_VERSION));
        assertEquals(4, EntryLevels.required(ShardEntry.NAMED_PUBLISH_VERSION));
        assertEquals(5, EntryLevels.required(EntryBatch.VERSION));
        assertEquals(1, EntryLevels.required(EntryLevels.LEVEL_ENTRY_VERSION), "a level entry may be written at any level");
        // Version 6 is the level entry's, so transactions (version 7) are level 6, the next level (rule R13).
        assertEquals(6, EntryLevels.required(TransactionEntry.VERSION));
        assertEquals(7, EntryLevels.required(ClusterSettings.VERSION), "the cluster's settings (rule R2)");
        assertEquals(Integer.MAX_VALUE, EntryLevels.required(9));
        assertEquals(Integer.MAX_VALUE, EntryLevels.required(0));
    }

    @Test
    void shouldRoundTripALevelEntryAndRefuseADamagedOne() {
        byte[] encoded = EntryLevels.encodeLevelEntry(3, 77, 5);
        assertTrue(EntryLevels.isLevelEntry(encoded));
        assertFalse(EntryBatch.batchable(encoded), "a level entry takes effect at a log entry of its own");
        assertEquals(new EntryLevels.LevelEntry(3, 77, 5), EntryLevels.decodeLevelEntry(encoded));
        assertThrows(IllegalArgumentException.class, () -> EntryLevels.decodeLevelEntry(java.util.Arrays.copyOf(encoded, encoded.length - 1)));
        byte[] zero = encoded.clone();
        zero[zero.length - 1] = 0;
        assertThrows(IllegalArgumentException.class, () -> EntryLevels.decodeLevelEntry(zero));
        assertThrows(IllegalArgumentException.class, () -> EntryLevels.encodeLevelEntry(3, 77, 0));
    }

    @Test
    void shouldReadTheTestKnob() {
        assertEquals(EntryLevels.NEWEST, EntryLevels.supportedFromKnob(null));
        assertEquals(4, EntryLevels.supportedFromKnob("4"));
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> EntryLevels.supportedFromKnob("9"));
        assertTrue(bad.getMessage().contains("sluice.cluster.max-entry-level"), bad.getMessage());
    }

    @Test
    void shouldWriteEveryFormatBeforeAnyLevelIsFinalizedButNeverOneItDoesNotSupport() {
        assertEquals(EntryLevels.BEFORE_LEVELS, new FinalizedEntryLevel(5, null).writable());
        FinalizedEntryLevel older = new FinalizedEntryLevel(4, null);
        assertEquals(4, older.writable());
        assertFalse(older.allows(EntryBatch.VERSION));
        assertTrue(older.allows(ShardEntry.NAMED_PUBLISH_VERSION));
    }

    @Test
    void shouldKeepTheFinalizedLevelAcrossARestartAndOnlyRaiseIt() {
        Path file = dir.resolve(FinalizedEntryLevel.FILE);
        FinalizedEntryLevel level = new FinalizedEntryLevel(5, file);
        assertEquals(0, level.finalized());
        level.apply(4, 10);
        assertEquals(4, level.writable());
        assertFalse(level.allows(EntryBatch.VERSION), "finalized at 4: no batches, though this broker reads them");
        assertEquals(4, new FinalizedEntryLevel(5, file).finalized(), "kept across a restart");
        level.apply(3, 11); // replayed, or an older leader's: changes nothing
        assertEquals(4, level.finalized());
        level.apply(5, 12);
        assertEquals(5, new FinalizedEntryLevel(5, file).finalized());
    }

    @Test
    void shouldStopAtALevelItDoesNotSupportWithoutRecordingIt() {
        Path file = dir.resolve(FinalizedEntryLevel.FILE);
        FinalizedEntryLevel level = new FinalizedEntryLevel(4, file);
        level.apply(4, 3);
        EntryLevels.EntryTooNew halt = assertThrows(EntryLevels.EntryTooNew.class, () -> level.apply(5, 9));
        assertTrue(halt.getMessage().contains("log entry 9 finalizes entry level 5") && halt.getMessage().contains("up to 4"),
                halt.getMessage());
        assertEquals(4, new FinalizedEntryLevel(4, file).finalized());
    }

    @Test
    void shouldRefuseToStartABrokerOnDataOfALevelItDoesNotSupport() {
        Path file = dir.resolve(FinalizedEntryLevel.FILE);
        new FinalizedEntryLevel(5, file).apply(5, 20);
        EntryLevels.EntryTooNew refused = assertThrows(EntryLevels.EntryTooNew.class, () -> new FinalizedEntryLevel(4, file));
        assertTrue(refused.getMessage().contains("finalized entry level 5") && refused.getMessage().contains("upgrade"),
                refused.getMessage());
    }
}
