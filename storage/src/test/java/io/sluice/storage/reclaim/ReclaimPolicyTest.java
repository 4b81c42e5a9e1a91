package io.sluice.storage.reclaim;

import org.junit.jupiter.api.Test;

import java.util.List;

import static io.sluice.storage.reclaim.ReclaimDecision.Action.DELETE;
import static io.sluice.storage.reclaim.ReclaimDecision.Action.RELOCATE;
import static org.junit.jupiter.api.Assertions.assertEquals;

class ReclaimPolicyTest {
    private static final long SECOND = 1_000_000_000L;
    private final ReclaimPolicy policy = new ReclaimPolicy(0.05, 100, SECOND);

    private static SegmentState seg(int n, long messages, long unacked) {
        return new SegmentState(n, messages, unacked, messages * 300, Long.MAX_VALUE);
    }

    @Test
    void shouldDeleteFullyAckedSealedSegmentsAndKeepTheWriteSegment() {
        List<SegmentState> segments = List.of(seg(0, 1000, 0), seg(1, 1000, 0), seg(2, 10, 0));
        assertEquals(List.of(new ReclaimDecision(0, DELETE), new ReclaimDecision(1, DELETE)),
                policy.decide(segments, 2, Integer.MAX_VALUE), "R1: segment 2 is being written");
    }

    @Test
    void shouldNotTouchSegmentsAtOrAfterTheOldestReader() {
        List<SegmentState> segments = List.of(seg(0, 1000, 0), seg(1, 1000, 0), seg(2, 1000, 0), seg(3, 1, 1));
        assertEquals(List.of(new ReclaimDecision(0, DELETE)), policy.decide(segments, 3, 1));
    }

    @Test
    void shouldRelocateOnlyWhenFewStragglersAreLeft() {
        List<SegmentState> segments = List.of(
                seg(0, 1000, 50),   // 5 %: relocate
                seg(1, 1000, 51),   // 5.1 %: keep
                seg(2, 10_000, 101), // 1 % but more than 100 messages: keep
                seg(3, 1000, 1),    // relocate
                seg(4, 1000, 1000)); // nothing acked: keep
        assertEquals(List.of(new ReclaimDecision(0, RELOCATE), new ReclaimDecision(3, RELOCATE)),
                policy.decide(segments, 5, Integer.MAX_VALUE));
    }

    @Test
    void shouldNeverRelocateWhenDisabled() {
        ReclaimPolicy off = new ReclaimPolicy(0, 100, SECOND);
        assertEquals(List.of(new ReclaimDecision(1, DELETE)),
                off.decide(List.of(seg(0, 1000, 1), seg(1, 5, 0)), 2, Integer.MAX_VALUE));
    }

    @Test
    void shouldDecideNothingForAnEmptyQueue() {
        assertEquals(List.of(), policy.decide(List.of(), 0, Integer.MAX_VALUE));
    }

    @Test
    void shouldLeaveTheStragglersOfAJustSealedSegmentAloneButDeleteItOnceAcked() {
        List<SegmentState> segments = List.of(
                new SegmentState(0, 1000, 3, 300_000, SECOND),      // sealed a second ago: relocate
                new SegmentState(1, 1000, 3, 300_000, SECOND - 1),  // in flight when it was sealed: wait
                new SegmentState(2, 1000, 0, 300_000, 5),           // acknowledged already: delete at once
                new SegmentState(3, 10, 10, 3_000, 0));
        assertEquals(List.of(new ReclaimDecision(0, RELOCATE), new ReclaimDecision(2, DELETE)),
                policy.decide(segments, 3, Integer.MAX_VALUE));
    }
}
