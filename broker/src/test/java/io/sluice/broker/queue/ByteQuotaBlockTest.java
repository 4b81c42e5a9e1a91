package io.sluice.broker.queue;

import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.FlowFrame;
import io.sluice.protocol.FlowState;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * docs/flow-control.md, "Blocked": "the backlog never exceeds the hard quota plus what was in flight. A client that
 * ignores BLOCKED gets QUEUE_BLOCKED publish errors once it is a publish window past the hard level." With a hard quota
 * in bytes alone (the broker's default quota is bytes only) and policy block, nothing was ever refused (found by a
 * review).
 */
class ByteQuotaBlockTest {
    @TempDir
    Path dir;

    @Test
    void aProducerThatIgnoresBlockedIsRefusedOnceAPublishWindowPastAByteHardQuota() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never",
                "broker.publish-window-messages", "10", "broker.publish-window-bytes", "1024"))) {
            BrokerQueue q = core.queues.declare("q", QueueSettings.builder().quotaBytes(0, 1000).overflowPolicy("block").build());
            FakeConnection producer = new FakeConnection("producer");
            // One message a frame, each sent once the one before was settled: the producer keeps to its window
            // (one message of 100 bytes in flight) and ignores FLOW.
            for (int i = 1; i <= 100; i++) {
                core.publish(q, producer, 7, i, new byte[100]);
                int settled = i;
                io.sluice.broker.TestAwait.until("publish " + settled + " settled", () -> producer.publishCreditReturned() == settled);
            }
            List<FlowFrame> flows = producer.all(FlowFrame.class);
            assertFalse(flows.isEmpty(), "told BLOCKED");
            assertEquals(FlowState.BLOCKED, flows.get(0).state());
            long bytes = QueueCore.onLoop(q, q::backlogBytes);
            List<PublishErrorFrame> refused = producer.all(PublishErrorFrame.class);
            assertTrue(bytes <= 1000 + 1024, "backlog of " + bytes + " bytes against a hard quota of 1000 bytes and a publish"
                    + " window of 1024 bytes; " + refused.size() + " publishes refused");
            assertEquals(ErrorCode.QUEUE_BLOCKED, refused.get(0).errorCode());
        }
    }
}
