package io.sluice.broker;

import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.SluiceException;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.ProducerIds;
import io.sluice.protocol.ProducerInitFrame;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule R10 of docs/replication.md: named producers on a cluster. A registration is an entry of the log, so every
 * node grants the same epoch, and a PUBLISH entry carries the epochs the leader resolved, so every node fences the
 * same messages; after a failover the new leader fences the old instance and lets the newest resume.
 */
@Tag("cluster")
@Timeout(180)
class ClusterNamedProducerTest {
    @TempDir
    Path dir;
    private final List<Broker> brokers = new ArrayList<>();

    @AfterEach
    void stop() {
        for (Broker broker : brokers) {
            broker.close();
        }
    }

    private static SluiceException failure(Producer producer, long payload) {
        ExecutionException e = assertThrows(ExecutionException.class,
                () -> producer.sendAsync(Payloads.of(payload)).get(30, TimeUnit.SECONDS));
        return (SluiceException) e.getCause();
    }

    @Test
    void shouldGrantTheSameEpochsOnEveryNodeAndFenceTheOldInstanceAcrossAFailover() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        brokers.addAll(cluster.startInProcess());
        Broker leader = ClusterFixture.awaitLeader(brokers);
        ConnectionOptions options = ConnectionOptions.builder().bootstrap(cluster.bootstrap()).build();
        try (Connection first = Connection.connect(options); Connection second = Connection.connect(options)) {
            first.declareQueue("orders", QueueSettings.EMPTY);
            Producer old = first.createProducer("orders", ProducerOptions.DEFAULT.withName("order-service"));
            assertEquals(1, old.epoch());
            assertEquals(0, old.lastStoredSequence());
            ClusterFixture.publish(old, 0, 3);

            Producer replacement = second.createProducer("orders", ProducerOptions.DEFAULT.withName("order-service"));
            assertEquals(2, replacement.epoch());
            assertEquals(3, replacement.lastStoredSequence(), "the leader answers what the log stored for the name");
            replacement.send(Payloads.of(3));
            SluiceException fenced = failure(old, 99);
            assertEquals(ErrorCode.PRODUCER_FENCED, fenced.errorCode(), fenced.getMessage());
            assertEquals(4, cluster.awaitDigest("orders", 4, Duration.ofSeconds(30)).get("messages").asLong(),
                    "every node stored the four messages and not the fenced one");

            // The leader goes; the replacement's client reconnects to the new leader and resumes its epoch there.
            brokers.remove(leader);
            leader.close();
            Broker next = ClusterFixture.awaitLeader(brokers);
            assertTrue(next != leader);
            ClusterFixture.publish(replacement, 4, 2);
            assertEquals(2, replacement.epoch(), "resumed, not a new instance");
            // The new leader knows epoch 2 from the log: an instance resuming epoch 1 is fenced, and so is a publish
            // under the name from a connection that did not register it.
            try (RawClient stale = RawClient.connected(next.port())) {
                stale.send(new ProducerInitFrame(8, "orders", "order-service", 1));
                ErrorFrame refused = stale.expect(ErrorFrame.class);
                assertEquals(ErrorCode.PRODUCER_FENCED.code(), refused.code(), refused.message());
                assertTrue(refused.message().contains("epoch 2"), refused.message());
                // An epoch no node granted is refused by the leader before it submits anything.
                stale.send(new ProducerInitFrame(9, "orders", "order-service", 3));
                ErrorFrame ungranted = stale.expect(ErrorFrame.class);
                assertEquals(ErrorCode.PRODUCER_FENCED.code(), ungranted.code(), ungranted.message());
                assertTrue(ungranted.message().contains("never granted epoch 3"), ungranted.message());
                PublishFrameBuilder publish = new PublishFrameBuilder(stale.alloc(), "orders");
                publish.add(ProducerIds.forName("order-service"), 50, List.of(), Payloads.of(50));
                stale.send(publish.build());
                PublishErrorFrame notStored = stale.expect(PublishErrorFrame.class);
                assertEquals(ErrorCode.PRODUCER_FENCED.code(), notStored.code(), notStored.message());
            }
            for (Broker b : brokers) {
                TestAwait.until(b.config().broker.name + " holding the six messages of the newest instance, once each", Duration.ofSeconds(30),
                        () -> b.queues().get("orders").store().unackedMessages() == 6);
            }
        }
    }
}
