package io.sluice.storage.ack;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.nio.file.StandardOpenOption;
import java.util.Comparator;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;

/** Restart behaviour of {@link AckLog}: clean close, dropped instance (as after kill -9), rotation, damage. */
class AckLogPersistenceTest {
    private static final int TINY_JOURNAL = 4096;

    @Property(tries = 50)
    void shouldRestoreModelStateAfterCloseOrAbandonAcrossManyRotations(@ForAll long seed) throws IOException {
        Path dir = Files.createTempDirectory("acks");
        AckModel model = new AckModel();
        AckWorkload workload = new AckWorkload(seed, model, 40);
        Random random = new Random(seed);
        AckLog log = reopen(dir, model, TINY_JOURNAL);
        for (int restart = 0; restart < 6; restart++) {
            workload.run(target(log), 150);
            model.assertMatches(log.state());
            if (random.nextBoolean()) {
                log.close();
            } // else: abandon it as a killed process would; its mapped writes are in the page cache
            log = reopen(dir, model, TINY_JOURNAL);
            model.assertMatches(log.state());
        }
        assertTrue(log.generation() > 6, "rotations happened, generation " + log.generation());
        log.close();
        io.sluice.storage.Directories.deleteRecursively(dir);
    }

    @Example
    void shouldRotateJournalThroughManyCheckpointsWithTinyCapacity() throws IOException {
        Path dir = Files.createTempDirectory("acks");
        AckLog log = tinyJournalLogOf100k(dir);
        for (long seq = 0; seq < 100_000; seq += 3) {
            assertEquals(AckResult.NEWLY_ACKED, log.ack(seq));
        }
        // 33,334 records of 21 bytes in 4 KiB journals: about 180 rotations.
        assertTrue(log.generation() > 150, "generation " + log.generation());
        AckLog reopened = reopenTinyJournalLogOf100k(dir); // abandoned, not closed
        for (long seq = 0; seq < 100_000; seq++) {
            assertEquals(seq % 3 == 0, reopened.state().isAcked(seq), "seq " + seq);
        }
        log.close();
        reopened.close();
        io.sluice.storage.Directories.deleteRecursively(dir);
    }

    @Example
    void shouldJournalARunOfConsecutiveAcksAsOneRecordAndReplayItExactly() throws IOException {
        Path dir = Files.createTempDirectory("acks");
        AckLog log = tinyJournalLogOf100k(dir);
        long[] batch = new long[1000];
        List<Long> newlyAcked = new ArrayList<>();
        for (int frame = 0; frame < 100; frame++) {
            int n = 0;
            for (long seq = frame * 1000L; seq < frame * 1000L + 1000; seq++) {
                if (seq % 1000 != 500) { // one hole per frame: two runs each
                    batch[n++] = seq;
                }
            }
            assertEquals(n, log.ackAll(batch, n, newlyAcked::add));
        }
        assertEquals(99_900, newlyAcked.size());
        // 200 range records of 21 bytes fit in two 4 KiB journals; a record per id (99,900 of them) would
        // have rotated the journal about 500 times.
        assertTrue(log.generation() <= 3, "generation " + log.generation());
        AckLog reopened = reopenTinyJournalLogOf100k(dir); // abandoned, not closed: replays the journal
        for (long seq = 0; seq < 100_000; seq++) {
            assertEquals(seq % 1000 != 500, reopened.state().isAcked(seq), "seq " + seq);
        }
        log.close();
        reopened.close();
        io.sluice.storage.Directories.deleteRecursively(dir);
    }

    @Example
    void shouldJournalADispatchOfConsecutiveDeliveriesAsOneRecordAndReplayItExactly() throws IOException {
        Path dir = Files.createTempDirectory("acks");
        AckLog log = tinyJournalLogOf100k(dir);
        long[] ids = new long[100];
        int[] counts = new int[100];
        for (int dispatch = 0; dispatch < 1000; dispatch++) {
            for (int i = 0; i < 100; i++) {
                ids[i] = dispatch * 100L + i;
                counts[i] = ids[i] % 1000 == 50 ? 2 : 1; // a redelivery in the middle: three runs
            }
            log.recordDeliveries(ids, counts, 100);
        }
        log.ack(7); // acknowledged ids are not delivered again
        log.recordDeliveries(new long[] {6, 7, 8}, new int[] {2, 2, 2}, 3);
        // 2,701 records of at most 25 bytes fit in 17 journals of 4 KiB; a record per id (100,000 of
        // them, 17 bytes each) would have rotated the journal about 420 times.
        assertTrue(log.generation() <= 20, "generation " + log.generation());
        AckLog reopened = reopenTinyJournalLogOf100k(dir); // abandoned, not closed: replays the journal
        for (long id = 0; id < 100_000; id++) {
            int expected = id == 7 ? 0 : id == 6 || id == 8 || id % 1000 == 50 ? 2 : 1;
            assertEquals(expected, reopened.state().deliveryCount(id), "id " + id);
        }
        log.close();
        reopened.close();
        io.sluice.storage.Directories.deleteRecursively(dir);
    }

    @Example
    void shouldJournalTheDeliveriesBeforeABadOneInABatch() throws IOException {
        Path dir = Files.createTempDirectory("acks");
        AckLog log = tinyJournalLogOf100k(dir);
        assertThrows(IllegalArgumentException.class,
                () -> log.recordDeliveries(new long[] {10, 11, 12, 13}, new int[] {1, 1, 0, 1}, 4));
        assertEquals(1, log.state().deliveryCount(11));
        AckLog reopened = reopenTinyJournalLogOf100k(dir); // abandoned: replays the journal
        assertEquals(1, reopened.state().deliveryCount(10));
        assertEquals(1, reopened.state().deliveryCount(11));
        assertEquals(0, reopened.state().deliveryCount(12));
        assertEquals(0, reopened.state().deliveryCount(13));
        log.close();
        reopened.close();
        io.sluice.storage.Directories.deleteRecursively(dir);
    }

    @Example
    void shouldRotateIntoTheSameJournalFile() throws IOException {
        Path dir = Files.createTempDirectory("acks");
        AckLog log = tinyJournalLogOf100k(dir);
        Path journal = dir.resolve(AckFiles.JOURNAL);
        Object inode = Files.getAttribute(journal, "unix:ino");
        for (long seq = 0; seq < 6000; seq += 2) {
            log.ack(seq);
        }
        assertTrue(log.generation() > 10, "generation " + log.generation());
        assertEquals(inode, Files.getAttribute(journal, "unix:ino"), "the journal file was replaced, not reused");
        log.close();
        io.sluice.storage.Directories.deleteRecursively(dir);
    }

    @Example
    void shouldReplayIntactPrefixWhenLastJournalRecordIsTorn() throws IOException {
        Path dir = Files.createTempDirectory("acks");
        AckLog log = AckLog.open(dir);
        log.segmentGrew(0, 50);
        log.recover();
        for (long seq = 0; seq < 10; seq++) {
            log.ack(seq * 2);
        }
        Path journal = dir.resolve(AckFiles.JOURNAL);
        int lastRecord = AckJournal.HEADER_BYTES + 9 * 21;
        // A torn write: the last record's CRC and half its payload never reached the file.
        try (FileChannel channel = FileChannel.open(journal, StandardOpenOption.WRITE)) {
            channel.write(ByteBuffer.wrap(new byte[] {0x5A, 0x00, 0x13, 0x7F, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07}), lastRecord + 10);
        }
        AckLog reopened = AckLog.open(dir);
        reopened.segmentGrew(0, 50);
        AckLog.Recovery recovery = reopened.recover();
        assertEquals(9, recovery.journalRecordsReplayed());
        for (long seq = 0; seq < 50; seq++) {
            assertEquals(seq % 2 == 0 && seq < 18, reopened.state().isAcked(seq), "seq " + seq);
        }
        log.close();
        reopened.close();
        io.sluice.storage.Directories.deleteRecursively(dir);
    }

    @Property(tries = 50)
    void shouldNeverReplayPastRandomDamageInJournal(@ForAll long seed) throws IOException {
        Random random = new Random(seed);
        Path dir = Files.createTempDirectory("acks");
        AckLog log = AckLog.open(dir);
        log.segmentGrew(0, 1000);
        log.recover();
        int acks = 1 + random.nextInt(40);
        for (int i = 0; i < acks; i++) {
            log.ack(i * 7L);
        }
        int damageAt = AckJournal.HEADER_BYTES + random.nextInt(acks * 21);
        int intactRecords = (damageAt - AckJournal.HEADER_BYTES) / 21;
        byte[] garbage = new byte[1 + random.nextInt(30)];
        random.nextBytes(garbage);
        garbage[0] ^= 0x55; // make sure the first damaged byte differs
        try (FileChannel channel = FileChannel.open(dir.resolve(AckFiles.JOURNAL), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer original = ByteBuffer.allocate(1);
            channel.read(original, damageAt);
            garbage[0] = (byte) (original.get(0) ^ (garbage[0] | 1));
            channel.write(ByteBuffer.wrap(garbage), damageAt);
        }
        AckLog reopened = AckLog.open(dir);
        reopened.segmentGrew(0, 1000);
        AckLog.Recovery recovery = reopened.recover();
        assertEquals(intactRecords, recovery.journalRecordsReplayed(), "seed " + seed + " damage at " + damageAt);
        for (int i = 0; i < acks; i++) {
            assertEquals(i < intactRecords, reopened.state().isAcked(i * 7L), "seed " + seed + " ack " + i);
        }
        log.close();
        reopened.close();
        io.sluice.storage.Directories.deleteRecursively(dir);
    }

    @Example
    void shouldIgnoreJournalOfOlderGenerationLeftByCrashBetweenCheckpointAndJournalReset() throws IOException {
        Path dir = Files.createTempDirectory("acks");
        AckLog log = AckLog.open(dir);
        log.segmentGrew(0, 10);
        log.recover();
        log.ack(1);
        log.close();
        long generation = AckCheckpoint.read(dir.resolve(AckFiles.CHECKPOINT)).generation();
        try (AckJournal stale = AckJournal.create(dir.resolve(AckFiles.JOURNAL), generation - 1, 4096)) {
            stale.appendAckRange(5, 5); // already in the checkpoint, or not: either way it must not apply
        }
        AckLog reopened = AckLog.open(dir);
        reopened.segmentGrew(0, 10);
        assertEquals(0, reopened.recover().journalRecordsReplayed());
        assertTrue(reopened.state().isAcked(1));
        assertFalse(reopened.state().isAcked(5));
        reopened.close();
        io.sluice.storage.Directories.deleteRecursively(dir);
    }

    @Example
    void shouldRefuseJournalNewerThanCheckpoint() throws IOException {
        Path dir = Files.createTempDirectory("acks");
        try (AckJournal orphan = AckJournal.create(dir.resolve(AckFiles.JOURNAL), 7, 4096)) {
            orphan.appendAckRange(0, 3);
        }
        AckLog log = AckLog.open(dir);
        CorruptAckStateException error = assertThrows(CorruptAckStateException.class, log::recover);
        assertTrue(error.getMessage().contains(AckFiles.JOURNAL) && error.getMessage().contains("generation 7"), error.getMessage());
        io.sluice.storage.Directories.deleteRecursively(dir);
    }

    @Example
    void shouldReportCorruptCheckpointWithFileAndOffset() throws IOException {
        Path dir = Files.createTempDirectory("acks");
        AckLog log = AckLog.open(dir);
        log.segmentGrew(0, 1000);
        log.recover();
        log.ackRange(10, 500);
        log.close();
        Path checkpoint = dir.resolve(AckFiles.CHECKPOINT);
        byte[] good = Files.readAllBytes(checkpoint);

        byte[] flipped = good.clone();
        flipped[good.length - 3] ^= 0x10;
        Files.write(checkpoint, flipped);
        CorruptAckStateException crc = assertThrows(CorruptAckStateException.class, () -> AckLog.open(dir));
        assertEquals(checkpoint, crc.file());
        assertEquals(24, crc.offset(), "where the CRC32C over header and body is kept");
        assertTrue(crc.getMessage().contains(checkpoint.toString()) && crc.getMessage().contains("offset 24"), crc.getMessage());

        byte[] badMagic = good.clone();
        badMagic[0] = 'X';
        Files.write(checkpoint, badMagic);
        assertEquals(0, assertThrows(CorruptAckStateException.class, () -> AckLog.open(dir)).offset());

        Files.write(checkpoint, java.util.Arrays.copyOf(good, good.length - 5));
        assertEquals(16, assertThrows(CorruptAckStateException.class, () -> AckLog.open(dir)).offset());
        io.sluice.storage.Directories.deleteRecursively(dir);
    }

    @Example
    void shouldPersistHalfAMillionHolesExactlyAtAboutOneBitPerMessage() throws IOException {
        Path dir = Files.createTempDirectory("acks");
        int messages = 1_000_000;
        AckLog log = AckLog.open(dir);
        log.segmentGrew(3, messages);
        log.recover();
        for (long seq = 1; seq < messages; seq += 2) {
            log.ack(AckTracker.id(3, seq));
        }
        assertEquals(500_000, log.state().unackedCount());
        log.close();
        long checkpointBytes = Files.size(dir.resolve(AckFiles.CHECKPOINT));
        assertTrue(checkpointBytes <= messages / 8 + 1024, "checkpoint of " + checkpointBytes + " bytes for " + messages + " messages");

        AckLog reopened = AckLog.open(dir);
        reopened.segmentGrew(3, messages);
        reopened.recover();
        AckStateReader state = reopened.state();
        assertEquals(500_000, state.unackedCount());
        long expected = AckTracker.id(3, 0);
        for (long id = state.firstUnackedId(); id >= 0; id = state.nextUnackedId(id + 1)) {
            assertEquals(expected, id);
            expected += 2;
        }
        assertEquals(AckTracker.id(3, messages), expected);
        reopened.close();
        io.sluice.storage.Directories.deleteRecursively(dir);
    }

    @Example
    void shouldReconcileSegmentsMissingOrShorterOrReclaimedButStillOnDisk() throws IOException {
        Path dir = Files.createTempDirectory("acks");
        AckLog log = AckLog.open(dir);
        log.recover();
        log.segmentGrew(0, 10);
        log.segmentGrew(1, 10);
        log.segmentGrew(2, 10);
        log.segmentGrew(3, 10);
        log.checkpoint();
        log.ackRange(0, AckTracker.id(0, 9));
        log.segmentReclaimed(0);
        log.ack(AckTracker.id(2, 8));
        log.recordDelivery(AckTracker.id(2, 9), 3);
        // abandoned: the store's rename-then-delete of segment 0 did not finish, segment 1 vanished,
        // segment 2 lost its last two messages in a machine crash
        AckLog reopened = AckLog.open(dir);
        reopened.segmentGrew(0, 10);
        reopened.segmentGrew(2, 8);
        reopened.segmentGrew(3, 10);
        AckLog.Recovery recovery = reopened.recover();
        assertArrayEquals(new int[] {1}, recovery.droppedMissingSegments());
        assertArrayEquals(new int[] {0}, recovery.reclaimedSegmentsStillOnDisk());
        AckStateReader state = reopened.state();
        assertArrayEquals(new int[] {2, 3}, state.liveSegments());
        assertEquals(18, state.unackedCount());
        assertEquals(0, state.deliveryCount(AckTracker.id(2, 9)));
        assertEquals(AckResult.UNKNOWN, reopened.ack(AckTracker.id(2, 8)));
        assertEquals(AckResult.ALREADY_ACKED, reopened.ack(AckTracker.id(1, 4)));
        log.close();
        reopened.close();
        io.sluice.storage.Directories.deleteRecursively(dir);
    }

    /** Opens the log as the store would after a restart: report every segment file, then recover. */
    /** A new log with 4 KiB journals over one segment of 100,000 messages. */
    private static AckLog tinyJournalLogOf100k(Path dir) throws IOException {
        AckLog log = AckLog.open(dir, TINY_JOURNAL);
        log.recover();
        log.segmentGrew(0, 100_000);
        return log;
    }

    /** Opens {@link #tinyJournalLogOf100k}'s directory again, as after a restart. */
    private static AckLog reopenTinyJournalLogOf100k(Path dir) throws IOException {
        AckLog log = AckLog.open(dir, TINY_JOURNAL);
        log.segmentGrew(0, 100_000);
        log.recover();
        return log;
    }

    private static AckLog reopen(Path dir, AckModel model, int journalCapacity) throws IOException {
        AckLog log = AckLog.open(dir, journalCapacity);
        for (Map.Entry<Integer, Long> entry : model.counts.entrySet()) {
            log.segmentGrew(entry.getKey(), entry.getValue());
        }
        AckLog.Recovery recovery = log.recover();
        assertEquals(0, recovery.droppedMissingSegments().length);
        assertEquals(0, recovery.reclaimedSegmentsStillOnDisk().length);
        return log;
    }

    static AckWorkload.Target target(AckLog log) {
        return new AckWorkload.Target() {
            public void segmentGrew(int segment, long messageCount) {
                log.segmentGrew(segment, messageCount);
            }

            public AckResult ack(long id) {
                try {
                    return log.ack(id);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }

            public int ackAll(long[] ids, int count) {
                try {
                    return log.ackAll(ids, count, physical -> { });
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }

            public long ackRange(long fromId, long toIdInclusive) {
                try {
                    return log.ackRange(fromId, toIdInclusive);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }

            public boolean recordDelivery(long id, int count) {
                try {
                    return log.recordDelivery(id, count);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }

            public void recordDeliveries(long[] ids, int[] counts, int count) {
                try {
                    log.recordDeliveries(ids, counts, count);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }

            public void relocate(long originalId, long newId) {
                try {
                    log.relocate(originalId, newId);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }

            public void removeSegment(int segment) {
                try {
                    log.segmentReclaimed(segment);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
        };
    }

}
