package io.sluice.storage.ack;

import io.sluice.storage.Directories;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A purge's ack ({@link AckLog#ackAllExcept}): every unacknowledged message but the kept ones, by either name of a
 * relocated one, counted exactly, journaled as one range a gap so that it costs the kept messages and not the
 * acknowledged ones, and the same after a restart that replays the journal.
 */
class AckAllExceptTest {
    private static final Set<Long> KEPT = Set.of(id(0, 3), id(0, 5), id(1, 0), id(1, 9), id(2, 4));

    @TempDir
    Path dir;

    private static long id(int segment, long seq) {
        return AckTracker.id(segment, seq);
    }

    @Test
    void everythingButTheKeptIsAcknowledgedOnceAndSurvivesAReplay() throws IOException {
        AckLog log = AckLog.open(dir, 1 << 20);
        log.segmentGrew(0, 10);
        log.segmentGrew(1, 10);
        log.recover();
        log.segmentGrew(2, 5);
        log.relocate(id(0, 5), id(2, 0)); // kept below, by its original name
        log.relocate(id(0, 7), id(2, 1)); // not kept
        log.ack(id(0, 1));
        log.ackRange(id(1, 4), id(1, 6));
        // 25 slots, 2 of them left by relocations, 4 acknowledged: 19 messages; 5 kept (one out of order in a segment's gap).
        assertEquals(19, log.state().unackedCount());
        long[] keep = {id(0, 3), id(0, 5), id(1, 0), id(1, 5), id(1, 9), id(2, 4)};
        long journaled = log.journalRecords();

        assertEquals(14, log.ackAllExcept(keep), "every unacknowledged message but the 5 kept ones (id(1, 5) was acknowledged)");
        assertTrue(log.journalRecords() - journaled <= keep.length + 2, "one range a gap, not a record a message: "
                + (log.journalRecords() - journaled));
        assertKept(log.state(), KEPT);
        assertEquals(0, log.ackAllExcept(keep), "nothing is left to acknowledge");

        // As after kill -9: the journal is replayed onto the segments the store reports.
        AckLog reopened = AckLog.open(dir, 1 << 20);
        reopened.segmentGrew(0, 10);
        reopened.segmentGrew(1, 10);
        reopened.segmentGrew(2, 5);
        reopened.recover();
        assertKept(reopened.state(), KEPT);
        reopened.close();
    }

    @Test
    void withNothingKeptEveryMessageIsAcknowledgedInOneRecordAndAnEmptyStateNeedsNone() throws IOException {
        AckLog log = AckLog.open(dir, 1 << 20);
        assertEquals(0, log.recover().journalRecordsReplayed());
        assertEquals(0, log.ackAllExcept(new long[0]), "an empty queue");
        log.segmentGrew(0, 1_000_000);
        log.segmentGrew(1, 1_000_000);
        long journaled = log.journalRecords();
        assertEquals(2_000_000, log.ackAllExcept(new long[0]));
        assertEquals(1, log.journalRecords() - journaled, "one range over both segments");
        assertEquals(0, log.state().unackedCount());
        log.close();
    }

    @Property(tries = 60)
    void agreesWithAcknowledgingEachMessageNotKeptOneByOne(@ForAll long seed) throws IOException {
        Path home = Files.createTempDirectory("acks-all-except");
        try {
            AckModel model = new AckModel();
            AckLog log = AckLog.open(home, 4096);
            log.recover();
            new AckWorkload(seed, model, 40).run(AckLogPersistenceTest.target(log), 150); // relocations and reclaims too
            model.assertMatches(log.state());
            Random random = new Random(seed);
            List<Long> keep = new ArrayList<>();
            List<Long> removed = new ArrayList<>();
            AckStateReader state = log.state();
            for (long slot = state.firstUnackedId(); slot >= 0; slot = state.nextUnackedId(slot + 1)) {
                (random.nextInt(4) == 0 ? keep : removed).add(state.originalId(slot));
            }
            long expected = 0;
            for (long id : removed) {
                expected += model.ack(id) == AckResult.NEWLY_ACKED ? 1 : 0;
            }
            assertEquals(expected, log.ackAllExcept(keep.stream().mapToLong(Long::longValue).sorted().toArray()));
            model.assertMatches(log.state());

            AckLog reopened = AckLog.open(home, 4096); // the first abandoned, as by kill -9: its journal is replayed
            for (Map.Entry<Integer, Long> entry : model.counts.entrySet()) {
                reopened.segmentGrew(entry.getKey(), entry.getValue());
            }
            reopened.recover();
            model.assertMatches(reopened.state());
            reopened.close();
            log.close();
        } finally {
            Directories.deleteRecursively(home);
        }
    }

    private static void assertKept(AckStateReader state, Set<Long> kept) {
        for (int segment = 0; segment <= 2; segment++) {
            for (long seq = 0; seq < (segment == 2 ? 5 : 10); seq++) {
                long id = id(segment, seq);
                if (segment == 2 && seq < 2) {
                    continue; // the relocated copies: named by their originals
                }
                assertEquals(!kept.contains(id), state.isAcked(state.physicalId(id)), "message " + segment + ":" + seq);
            }
        }
        assertEquals(kept.size(), state.unackedCount());
    }
}
