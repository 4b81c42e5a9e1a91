package io.sluice.broker;

import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.SubscribeFrame;
import io.sluice.protocol.TxAckFrame;
import io.sluice.protocol.TxBeginFrame;
import io.sluice.protocol.TxCommitFrame;
import io.sluice.protocol.TxPublishFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A TX_PUBLISH without messages and a TX_ACK without ranges stage and hold nothing, and are not kept as operations of
 * their transaction (found by a review: each was kept until the transaction ended, about 200 bytes for a frame of 21
 * that no cap counted, so one open transaction grew without bound for up to its timeout).
 */
@Timeout(60)
class EmptyTransactionFramesTest {
    @TempDir
    Path dir;

    @Test
    void emptyTransactionalFramesAreNotKeptAndTheTransactionCommitsWhatItHas() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient c = RawClient.connected(broker.port())) {
            c.send(new DeclareQueueFrame(1, "q", QueueSettings.EMPTY));
            c.expect(OkFrame.class);
            long before = broker.transactions().counts().operationsStarted();

            c.send(new TxBeginFrame(1, 0));
            for (int i = 0; i < 2_000; i++) {
                c.send(new TxPublishFrame(1, new PublishFrameBuilder(c.alloc(), "q").build()));
                c.send(new TxAckFrame(1, 7, List.of())); // no subscription needed: no ranges, nothing to hold
            }
            c.send(new TxPublishFrame(1, new PublishFrameBuilder(c.alloc(), "q")
                    .add(0, 0, List.of(), "one".getBytes(StandardCharsets.UTF_8)).build()));
            c.send(new TxCommitFrame(3, 1));
            assertEquals(3, c.expect(OkFrame.class).requestId(), "the commit is answered");
            assertEquals(1, broker.transactions().counts().operationsStarted() - before,
                    "only the TX_PUBLISH with a message is an operation of the transaction");
            c.send(new SubscribeFrame(2, 7, "q", 10));
            c.expect(OkFrame.class);
            assertEquals("one", new String(c.deliveries(1).get(0).payload(), StandardCharsets.UTF_8), "what was committed");
        }
    }
}
