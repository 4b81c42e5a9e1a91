package io.sluice.storage.ack;

import io.sluice.storage.DiskSpaceGuard;
import io.sluice.storage.DiskUsage;
import io.sluice.storage.StorageFullException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The journal starts small and grows in doubling steps of written zeros, only with the disk budget's
 * consent; refused, it rotates. A crash in the middle of a growth, or after it, loses no record.
 */
class AckJournalGrowthTest {
    private static final int MAX_BYTES = 1 << 20;
    private static final long MESSAGES = 10_000_000;
    /** ACK_RANGE records that fit in the initial 64 KiB after the header: (65536 - 32) / 21. */
    private static final int RECORDS_IN_INITIAL = (AckJournal.INITIAL_BYTES - AckJournal.HEADER_BYTES)
            / AckJournal.RecordType.ACK_RANGE.recordBytes;

    /** A clock that never moves: every journal fills "fast" (AckLog's rule "only a fast journal grows"). */
    private static final LongSupplier FROZEN_CLOCK = () -> 1_000;

    @TempDir
    Path dir;

    @Test
    void aJournalThatFillsSlowlyRotatesInsteadOfGrowingSoThatItsResidentPagesStaySmall() throws IOException {
        AtomicLong now = new AtomicLong(5_000);
        try (AckLog log = newLog(dir.resolve("acks"))) {
            log.growthBudget(bytes -> true, now::get);
            long generation = log.generation();
            for (int i = 0; i < RECORDS_IN_INITIAL; i++) {
                log.ack(oddId(i));
            }
            now.addAndGet(AckLog.GROW_IF_FILLED_WITHIN_MS); // the journal took a minute to fill: slow
            log.ack(oddId(RECORDS_IN_INITIAL));
            assertEquals(AckJournal.INITIAL_BYTES, log.journalBytes());
            assertEquals(generation + 1, log.generation(), "rotated");
            assertEquals(0, log.journalGrowths());
            assertEquals(0, log.journalGrowthsRefused(), "not refused: not asked for");

            // The next generation fills within the minute: it grows.
            now.addAndGet(AckLog.GROW_IF_FILLED_WITHIN_MS - 1);
            for (int i = RECORDS_IN_INITIAL + 1; i < 2 * RECORDS_IN_INITIAL + 20; i++) {
                log.ack(oddId(i));
            }
            assertEquals(2 * AckJournal.INITIAL_BYTES, log.journalBytes());
            assertEquals(1, log.journalGrowths());
            assertEquals(generation + 1, log.generation());
        }
    }

    @Test
    void shouldGrowInDoublingStepsOfWrittenZerosUpToTheMaximumWithoutCheckpointing() throws IOException {
        Path acks = dir.resolve("acks");
        List<Long> granted = new ArrayList<>();
        try (AckLog log = newLog(acks)) {
            log.growthBudget(bytes -> granted.add(bytes), FROZEN_CLOCK);
            long generation = log.generation();
            assertEquals(AckJournal.INITIAL_BYTES, log.journalBytes());
            List<Integer> sizes = new ArrayList<>();
            sizes.add(log.journalBytes());
            int acked = 0;
            while (log.journalBytes() < MAX_BYTES) {
                log.ack(oddId(acked++));
                if (log.journalBytes() != sizes.get(sizes.size() - 1)) {
                    sizes.add(log.journalBytes());
                }
            }
            assertEquals(List.of(64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20), sizes);
            assertEquals(List.of(64L << 10, 128L << 10, 256L << 10, 512L << 10), granted, "each growth asks for what it adds");
            assertEquals(4, log.journalGrowths());
            assertEquals(generation, log.generation(), "growing is not a checkpoint");
            Path journal = acks.resolve(AckFiles.JOURNAL);
            assertEquals(MAX_BYTES, Files.size(journal));
            assertEquals(MAX_BYTES, DiskUsage.allocatedBytes(journal), "every byte of the grown journal is written, none sparse");

            // Past the maximum the journal rotates, and stays at the maximum.
            while (log.generation() == generation) {
                log.ack(oddId(acked++));
            }
            assertEquals(MAX_BYTES, log.journalBytes());
            assertEquals(4, log.journalGrowths());
        }
    }

    @Test
    void shouldCheckpointInsteadOfGrowingWhenTheBudgetRefusesAndNeverFailAnAck() throws IOException {
        Path acks = dir.resolve("acks");
        try (AckLog log = newLog(acks)) {
            log.growthBudget(bytes -> false, FROZEN_CLOCK);
            long generation = log.generation();
            for (int i = 0; i < 3 * RECORDS_IN_INITIAL; i++) {
                assertEquals(AckResult.NEWLY_ACKED, log.ack(oddId(i)));
            }
            assertEquals(AckJournal.INITIAL_BYTES, log.journalBytes());
            assertEquals(AckJournal.INITIAL_BYTES, Files.size(acks.resolve(AckFiles.JOURNAL)));
            assertTrue(log.generation() >= generation + 2, "generation " + log.generation() + ": full journals rotate");
            assertTrue(log.journalGrowthsRefused() >= 2, "refused " + log.journalGrowthsRefused());
        }
        assertAllAcked(reopen(acks), 3 * RECORDS_IN_INITIAL);
    }

    @Test
    void shouldGrowOnlyWhileTheDiskGuardHasRoomAboveItsReserve() throws IOException {
        long free = Files.getFileStore(dir).getUsableSpace();
        DiskSpaceGuard noRoom = new DiskSpaceGuard(dir, free + (1L << 30));
        DiskSpaceGuard room = new DiskSpaceGuard(dir, 0);
        try (AckLog refused = newLog(dir.resolve("refused")); AckLog grown = newLog(dir.resolve("grown"))) {
            refused.growthBudget(guardBudget(noRoom), FROZEN_CLOCK);
            grown.growthBudget(guardBudget(room), FROZEN_CLOCK);
            for (int i = 0; i <= RECORDS_IN_INITIAL; i++) {
                refused.ack(oddId(i));
                grown.ack(oddId(i));
            }
            assertEquals(AckJournal.INITIAL_BYTES, refused.journalBytes(), "no growth into the reserve");
            assertEquals(1, refused.journalGrowthsRefused());
            assertEquals(2 * AckJournal.INITIAL_BYTES, grown.journalBytes());
            assertEquals(1, grown.journalGrowths());
        }
    }

    @Test
    void shouldRecoverEveryRecordAfterAGrowthAndAfterAGrowthTornAtAnyPoint() throws IOException {
        Path acks = dir.resolve("acks");
        AtomicBoolean mayGrow = new AtomicBoolean(false);
        try (AckLog log = newLog(acks)) {
            log.growthBudget(bytes -> mayGrow.get(), FROZEN_CLOCK);
            for (int i = 0; i < RECORDS_IN_INITIAL; i++) {
                log.ack(oddId(i));
            }
            assertEquals(0, log.journalGrowths() + log.journalGrowthsRefused(), "the initial journal is exactly full");
            // Images of the files as a crash leaves them (kill -9: the page cache, mappings included).
            Path beforeGrowth = copy(acks, dir.resolve("before-growth"));

            mayGrow.set(true);
            for (int i = RECORDS_IN_INITIAL; i < RECORDS_IN_INITIAL + 100; i++) {
                log.ack(oddId(i));
            }
            assertEquals(1, log.journalGrowths());
            Path afterGrowth = copy(acks, dir.resolve("after-growth"));

            // A growth cut short in its first step: the file is longer, by written zeros or by a hole
            // (which reads as zeros), up to any length short of the doubled size.
            for (long tornLength : new long[] {AckJournal.INITIAL_BYTES + 1, AckJournal.INITIAL_BYTES + 12_345,
                    2L * AckJournal.INITIAL_BYTES - 1}) {
                for (boolean hole : new boolean[] {false, true}) {
                    Path torn = copy(beforeGrowth, dir.resolve("torn-" + tornLength + (hole ? "-hole" : "-zeros")));
                    try (RandomAccessFile file = new RandomAccessFile(torn.resolve(AckFiles.JOURNAL).toFile(), "rw")) {
                        if (hole) {
                            file.setLength(tornLength);
                        } else {
                            file.seek(AckJournal.INITIAL_BYTES);
                            file.write(new byte[(int) (tornLength - AckJournal.INITIAL_BYTES)]);
                        }
                    }
                    assertEquals(tornLength, Files.size(torn.resolve(AckFiles.JOURNAL)));
                    assertAllAcked(reopen(torn), RECORDS_IN_INITIAL);
                }
            }
            assertAllAcked(reopen(beforeGrowth), RECORDS_IN_INITIAL);
            assertAllAcked(reopen(afterGrowth), RECORDS_IN_INITIAL + 100);
        }
    }

    @Test
    void aRecoveredJournalStartsSmallAgain() throws IOException {
        Path acks = dir.resolve("acks");
        try (AckLog log = newLog(acks)) {
            log.growthBudget(bytes -> true, FROZEN_CLOCK);
            for (int i = 0; i < 2 * RECORDS_IN_INITIAL; i++) {
                log.ack(oddId(i));
            }
            assertEquals(2 * AckJournal.INITIAL_BYTES, log.journalBytes());
        }
        try (AckLog reopened = reopen(acks)) {
            assertEquals(AckJournal.INITIAL_BYTES, reopened.journalBytes());
            assertEquals(AckJournal.INITIAL_BYTES, Files.size(acks.resolve(AckFiles.JOURNAL)));
        }
    }

    private static long oddId(int i) {
        return 2L * i + 1;
    }

    private static AckLog newLog(Path acks) throws IOException {
        AckLog log = AckLog.open(acks, MAX_BYTES);
        log.recover();
        log.segmentGrew(0, MESSAGES);
        return log;
    }

    private static AckLog reopen(Path acks) throws IOException {
        AckLog log = AckLog.open(acks, MAX_BYTES);
        log.segmentGrew(0, MESSAGES);
        log.recover();
        return log;
    }

    private static void assertAllAcked(AckLog log, int records) throws IOException {
        try (log) {
            AckStateReader state = log.state();
            for (int i = 0; i < records; i++) {
                assertTrue(state.isAcked(oddId(i)), "ack of id " + oddId(i) + " (record " + i + " of " + records + ") was lost");
            }
            assertTrue(!state.isAcked(oddId(records)), "id " + oddId(records) + " was never acked");
            assertEquals(MESSAGES - records, state.unackedCount());
        }
    }

    private static AckLog.GrowthBudget guardBudget(DiskSpaceGuard guard) {
        return bytes -> {
            try {
                guard.reserve(bytes);
                return true;
            } catch (StorageFullException e) {
                return false;
            }
        };
    }

    private static Path copy(Path from, Path to) throws IOException {
        Files.createDirectories(to);
        try (Stream<Path> files = Files.list(from)) {
            for (Path file : (Iterable<Path>) files::iterator) {
                Files.copy(file, to.resolve(file.getFileName()));
            }
        }
        return to;
    }
}
