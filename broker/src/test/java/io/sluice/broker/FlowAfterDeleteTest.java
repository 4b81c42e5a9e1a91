package io.sluice.broker;

import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.protocol.FlowState;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * docs/flow-control.md: a queue deleted while it is blocked tells its producers FREE. Found by a review: it told them
 * nothing, so the client's producer stayed BLOCKED, and every message it was given for the queue declared again under
 * that name waited out the blocked timeout and failed.
 */
class FlowAfterDeleteTest {
    @TempDir
    Path dataDir;
    private Broker broker;

    @AfterEach
    void stop() {
        if (broker != null) {
            broker.close();
        }
    }

    @Test
    void aProducerBlockedByADeletedQueueResumes() throws Exception {
        broker = TestBrokers.start(dataDir, Map.of());
        List<FlowState> states = new CopyOnWriteArrayList<>();
        try (Connection c = Connection.connect(ConnectionOptions.builder().port(broker.port()).build())) {
            c.declareQueue("w", QueueSettings.builder().set(QueueSettings.QUOTA_HARD_MESSAGES, 5).build());
            Producer p = c.createProducer("w", new ProducerOptions(20, 256, 1 << 20, (q, s, r) -> states.add(s))
                    .withBlockedTimeout(Duration.ofSeconds(3)));
            for (int i = 0; i < 5; i++) {
                p.send(new byte[] {(byte) i});
            }
            TestAwait.until("told BLOCKED", () -> states.contains(FlowState.BLOCKED));

            c.deleteQueue("w"); // the backlog is gone
            c.declareQueue("w", QueueSettings.EMPTY);
            CompletableFuture<Void> sent = p.sendAsync(new byte[] {9});
            try {
                sent.get(10, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                throw new AssertionError("a send to the empty queue 'w' failed; flow states heard: " + states, e.getCause());
            }
            assertEquals(1L, broker.store().queue("w").unackedMessages());
        }
    }
}
