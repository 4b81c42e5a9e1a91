package io.sluice.broker.queue;

import io.netty.buffer.ByteBufAllocator;
import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.FlowFrame;
import io.sluice.protocol.FlowState;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Rule R9 of docs/replication.md on a cluster's leader: what it admitted counts as uncommitted until its entry is
 * applied, and past {@code cluster.max-uncommitted-bytes} that blocks the queue. Found by a review: applying an entry
 * re-evaluated the flow state only if it stored a message, so an entry of resends (stored before: the producer table
 * confirms them) or of messages the store or the table refused took its bytes off the uncommitted figure and left the
 * queue BLOCKED, its producers waiting for a FREE that only a later publish or ack would send.
 */
class LeaderAppliedFlowTest {
    private static final long PRODUCER = 7;
    private static final long MAX_UNCOMMITTED_BYTES = 100;

    @TempDir
    Path dir;

    @Test
    void anAppliedEntryOfResendsUnblocksTheQueueItsUncommittedBytesBlocked() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            BrokerQueue q = core.queues.declare("leader", QueueSettings.EMPTY);
            FakeConnection producer = new FakeConnection("producer");
            core.publish(q, producer, PRODUCER, 1, new byte[200]);
            producer.await(ConfirmFrame.class, 1, Duration.ofSeconds(30));

            // The producer sends the message again (it reconnected before its confirm): the leader admits the frame,
            // 200 bytes uncommitted against a bound of 100, and tells the producer BLOCKED.
            CompletableFuture<PublishFrame> submitted = new CompletableFuture<>();
            q.admit(producer, resend(q), MAX_UNCOMMITTED_BYTES, (frame, epochs) -> submitted.complete(frame));
            PublishFrame entry = submitted.get(30, TimeUnit.SECONDS);
            assertEquals(FlowState.BLOCKED, QueueCore.onLoop(q, q::flowState));

            // Its entry is applied here: a resend, confirmed, nothing stored, nothing uncommitted left.
            q.applyReplicated(producer, entry, true, ProducerEpochs.NONE, 2L << 16); // the log's second entry
            producer.await(ConfirmFrame.class, 2, Duration.ofSeconds(30));
            assertEquals(FlowState.FREE, QueueCore.onLoop(q, q::flowState), "nothing is uncommitted any more");
            List<FlowState> told = producer.all(FlowFrame.class).stream().map(FlowFrame::state).toList();
            assertEquals(List.of(FlowState.BLOCKED, FlowState.FREE), told, "the producer is told FREE");
            assertEquals(1L, (long) QueueCore.onLoop(q, q.store()::unackedMessages), "the resend is not stored twice");
        }
    }

    private static PublishFrame resend(BrokerQueue q) {
        PublishFrameBuilder builder = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, q.name());
        builder.add(PRODUCER, 1, List.of(), new byte[200]);
        return builder.build();
    }
}
