package io.sluice.broker.cluster;

import io.sluice.broker.queue.BrokerQueue;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule R8 on the leader: a committed dead-letter whose copy this node's store refuses fails the leader's dead-letter move,
 * not the entry's apply. The applier used to hand the failure to Ratis as the entry's outcome, and Ratis answers the
 * entry's submitter with a StateMachineException for that, which {@link ClusterNode}'s send takes for Raft refusing the
 * entry: the leader closed every client connection with NOT_LEADER and gave back what its queues held for entries in
 * flight, for an entry that was committed (found by a review). Rule R2: the node then stops applying the log (every other
 * node stored the copy and acknowledged the original), rather than go on with the original in its source.
 */
class ShardApplierDeadLetterFailureTest extends ShardApplierFixture {
    private static final int THIS_NODE = 1;

    @Test
    void aCopyThisNodeCannotStoreFailsTheLeadersMoveNotTheEntrysApply() {
        Submissions submissions = new Submissions();
        ShardApplier applier = new ShardApplier(queues, submissions, THIS_NODE, new FinalizedEntryLevel(EntryLevels.SUPPORTED, null), ownSettings());
        applier.applyLogEntry(declare(1), 10).join();
        applier.applyLogEntry(publish(2, 7, 1, 1), 11).join();
        BrokerQueue source = queues.get("orders");
        long[] original = {-1};
        source.store().forEachRecordAfter(-1, (id, codec) -> original[0] = id);

        // The dead-letter queue's store fails on this node alone (its files gone from under the queue), as an I/O error
        // would: the copy's append is refused. A size this node's limits refuse no longer does (rule R2).
        applier.applyLogEntry(ShardEntry.encode(OTHER_NODE, 3, "orders.dlq", new DeclareQueueFrame(0, "orders.dlq",
                QueueSettings.EMPTY), MAX_FRAME), 12).join();
        queues.store().deleteQueue("orders.dlq");
        ShardEntry.DeadLetterCopy copy = new ShardEntry.DeadLetterCopy("orders", original[0], 7, 1, new byte[0], new byte[] {1});
        CompletableFuture<Void> move = new CompletableFuture<>();
        long call = submissions.nextCall();
        submissions.applied(call, move);
        CompletableFuture<Void> applied = applier.applyLogEntry(ShardEntry.encodeDeadLetter(THIS_NODE, call, "orders.dlq", copy), 13);

        assertDoesNotThrow(() -> applied.join(), "the entry is applied: what Ratis gets must not be a failure");
        CompletionException failed = assertThrows(CompletionException.class, move::join, "the leader's move failed");
        assertTrue(failed.getCause().getMessage().contains("queue 'orders.dlq' is closed"), failed.getCause().getMessage());
        assertFalse(source.store().isAcked(original[0]), "the original stays in its source");
        String stopped = queues.applyHalt().reason();
        assertTrue(stopped != null && stopped.contains("dead-letter copy") && stopped.contains("log entry 13"),
                "the node stops applying the log: " + stopped);
    }
}
