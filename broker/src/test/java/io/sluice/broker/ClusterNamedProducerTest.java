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

    /** The answer of {@code leader} to a PUBLISH of {@code sequence} under {@code producerId} from a connection that never registered it. */
    private static Object publishUnregistered(Broker leader, long producerId, long sequence) throws InterruptedException {
        try (RawClient unregistered = RawClient.connected(leader.port())) {
            PublishFrameBuilder publish = new PublishFrameBuilder(unregistered.alloc(), "orders");
            publish.add(producerId, sequence, List.of(), Payloads.of(sequence));
            unregistered.send(publish.build());
            Object answer = unregistered.received.poll(30, TimeUnit.SECONDS);
            while (answer instanceof io.sluice.protocol.FlowFrame) {
                answer = unregistered.received.poll(30, TimeUnit.SECONDS);
            }
            return answer;
        }
    }

    /**
     * Rule R11 with a node whose producer table lost its epoch marks (its producer checkpoint set aside as damaged: the
     * table is rebuilt from the records, which carry no epochs). Such a node cannot tell a named producer from an unnamed
     * one, so as the leader it admits a publish under a named producer's id from a connection that never registered it;
     * the nodes that kept their marks know the producer's epoch. Every node must still decide that entry alike: the leader's
     * decision travels in the entry. Before, the leader (no owners, no epoch granted in its table) wrote no epochs at all,
     * stored the message, and the two others fenced it: their digests held three messages against its four. The other way
     * round, a leader that kept its marks fences such a publish and the node that lost them must fence it too.
     */
    @Test
    void aPublishUnderANamedProducerIsDecidedAlikeOnEveryNodeWhenOneLostItsProducerMarks() throws Exception {
        ClusterFixture cluster = new ClusterFixture(dir, 3);
        brokers.addAll(cluster.startInProcess());
        Broker leader = ClusterFixture.awaitLeader(brokers);
        int kept = brokers.indexOf(leader);
        int lost = (kept + 1) % 3;
        long producerId = ProducerIds.forName("order-service");
        try (Connection first = Connection.connect(ConnectionOptions.builder().bootstrap(cluster.bootstrap()).build())) {
            first.declareQueue("orders", QueueSettings.EMPTY);
            Producer producer = first.createProducer("orders", ProducerOptions.DEFAULT.withName("order-service"));
            assertEquals(1, producer.epoch());
            ClusterFixture.publish(producer, 0, 3);
        }
        cluster.awaitDigest("orders", 3, Duration.ofSeconds(30));

        // Node `lost` stops cleanly (its marker covers the registration, so no replay grants the epoch again) and its
        // producer checkpoint is damaged: started again, its table of "orders" has lost its epoch marks.
        Broker stopped = brokers.get(lost);
        stopped.close();
        brokers.remove(stopped);
        java.nio.file.Path checkpoint = dir.resolve("node-" + (lost + 1)).resolve("queues/orders")
                .resolve(io.sluice.storage.dedup.ProducerCheckpoint.FILE);
        assertTrue(java.nio.file.Files.exists(checkpoint), checkpoint.toString());
        java.nio.file.Files.write(checkpoint, "not a producer checkpoint".getBytes(java.nio.charset.StandardCharsets.UTF_8));
        Broker restarted = Broker.start(cluster.config(lost));
        brokers.add(restarted);
        ClusterFixture.awaitApplied(brokers, leader);
        // Caught up as the leader sees it (its channel to the restarted node open again), or the transfer finds it unreachable.
        TestAwait.until("node " + (lost + 1) + " answering the leader again", Duration.ofSeconds(30), () -> leader.cluster()
                .follower(lost + 1).filter(f -> f.lastResponseMs() < 500 && f.matchIndex() >= leader.cluster().commitIndex())
                .isPresent());

        cluster.moveLeader(kept, lost);
        assertEquals(lost, cluster.awaitServing(lost));
        // This leader cannot tell the name from an unnamed producer: it stores the message.
        assertTrue(publishUnregistered(restarted, producerId, 50) instanceof io.sluice.protocol.ConfirmFrame);
        assertEquals(4, cluster.awaitDigest("orders", 4, Duration.ofSeconds(30)).get("messages").asLong(),
                "every node decided the publish as the leader did");

        cluster.moveLeader(lost, kept);
        assertEquals(kept, cluster.awaitServing(kept));
        Object answer = publishUnregistered(leader, producerId, 51);
        assertTrue(answer instanceof PublishErrorFrame fenced && fenced.code() == ErrorCode.PRODUCER_FENCED.code(), String.valueOf(answer));
        ClusterFixture.awaitApplied(brokers, leader);
        assertEquals(4, cluster.awaitDigest("orders", 4, Duration.ofSeconds(30)).get("messages").asLong(),
                "the node that lost its marks fenced the publish as the leader did");
    }
}
