package io.sluice.broker.queue;

import io.sluice.broker.flow.QuotaSettings;
import io.sluice.protocol.FlowState;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Rule R9 of docs/replication.md: what a cluster's leader submitted and has not applied, as the {@link Backlog} counts it. */
class UncommittedBacklogTest {
    private static final int ALLOWANCE = 5;

    @Test
    void shouldCountUncommittedMessagesTowardTheQuota() {
        Backlog backlog = new Backlog("q", new QuotaSettings(0, 10, 0, 0, QuotaSettings.OverflowPolicy.BLOCK), ALLOWANCE, QueueManager.DEFAULT_PUBLISH_ALLOWANCE_BYTES, 6, 60);
        for (int i = 0; i < 4; i++) {
            assertNull(backlog.refusal(6, 10, () -> false));
            backlog.submitted(10, 1 << 20);
        }
        assertEquals(FlowState.BLOCKED, backlog.update(6), "6 stored and 4 uncommitted reach the hard quota of 10");
        for (int i = 0; i < ALLOWANCE; i++) { // A2: what was in flight is still admitted, up to the allowance
            assertNull(backlog.refusal(6, 10, () -> false));
            backlog.submitted(10, 1 << 20);
        }
        String refusal = backlog.refusal(6, 10, () -> false);
        assertNotNull(refusal);
        assertTrue(refusal.contains("wait for FLOW"), refusal);
        backlog.uncommittedDone(9, 90); // applied: now stored, and counted as such by the caller
        assertEquals(null, backlog.update(15), "the same backlog, now all stored");
        assertEquals(FlowState.FREE, backlog.update(8), "below the resume level once acks land");
    }

    @Test
    void shouldBlockAtTheBoundOfUncommittedBytesAndResumeBelowNinetyPercent() {
        Backlog backlog = new Backlog("q", QuotaSettings.NONE, ALLOWANCE, QueueManager.DEFAULT_PUBLISH_ALLOWANCE_BYTES, 0, 0);
        backlog.submitted(600, 1000);
        assertNull(backlog.update(0));
        backlog.submitted(400, 1000);
        assertEquals(FlowState.BLOCKED, backlog.update(0));
        assertTrue(backlog.reason().contains("max-uncommitted-bytes"), backlog.reason());
        // What was in flight when producers were told is admitted, up to the allowance; then refused.
        for (int i = 2; i < ALLOWANCE; i++) {
            assertNull(backlog.refusal(0, 10, () -> false));
            backlog.submitted(10, 1000);
        }
        String refusal = backlog.refusal(0, 10, () -> false);
        assertNotNull(refusal);
        assertTrue(refusal.contains("wait for FLOW"), refusal);
        backlog.uncommittedDone(1, 100); // 930 left: above 90 %
        assertNull(backlog.update(0));
        backlog.uncommittedDone(1, 100); // 830
        assertEquals(FlowState.FREE, backlog.update(0));
    }
}
