package io.sluice.broker;

import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule R4a of docs/replication.md, "the restart is exact": three broker JVMs whose queues track at most two producers
 * each ({@code queues.dedup-max-producers: 2}) and that write no snapshot marker during the test. Six producers publish
 * one after the other, so every node's table evicts the first two before any marker covers them. A follower that
 * applied everything is killed with kill -9 and started again: it replays the whole log into its stores, which hold
 * every entry already. It must end with the others' digest and the confirmed messages, and, led by it, every confirmed
 * message is consumed exactly once. On main its replay stored the evicted producers' messages a second time, and its
 * digest never agreed with the others' (600 messages against 300).
 */
@Tag("cluster")
class ClusterExactRestartTest {
    private static final String QUEUE = "exact";
    private static final int PRODUCERS = 6;
    private static final int PER_PRODUCER = 50;

    @TempDir
    Path dir;
    private final Process[] nodes = new Process[3];

    @AfterEach
    void killAll() throws InterruptedException {
        ChildJvm.killAll(nodes);
    }

    @Test
    @Timeout(300)
    void aFollowerKilledPastTwiceTheProducerCapHoldsEachConfirmedMessageOnceAfterItsRestart() throws Exception {
        // The queues section rides after the storage keys: the fixture writes them last in that section.
        ClusterFixture cluster = new ClusterFixture(dir, 3, "  snapshot-every-entries: 100000000\n", "",
                "queues:\n  dedup-max-producers: 2\n");
        cluster.startChildren(nodes);
        ConnectionOptions options = cluster.reconnectingOptions();
        Set<Long> confirmed = ConcurrentHashMap.newKeySet();
        long[] next = {0};
        int leader;
        try (Connection connection = Connection.connect(options)) {
            connection.declareQueue(QUEUE, QueueSettings.EMPTY);
            leader = Integer.parseInt(connection.brokerName().substring("node-".length())) - 1;
            for (int p = 0; p < PRODUCERS; p++) {
                Producer producer = connection.createProducer(QUEUE, ProducerOptions.DEFAULT);
                ClusterFixture.publishNumbered(producer, PER_PRODUCER, 100, next, confirmed);
                producer.close();
            }
        }
        assertEquals(PRODUCERS * PER_PRODUCER, confirmed.size(), "every message confirmed");
        cluster.awaitDigest(QUEUE, confirmed.size(), Duration.ofSeconds(60));

        int restarted = (leader + 1) % 3;
        long applied = cluster.get(leader, "/api/cluster").get("appliedIndex").asLong();
        ChildJvm.kill(nodes[restarted]);
        cluster.startChild(restarted, nodes);
        // Its stores answer before its replay is over: the digests are compared once it applied what it held before.
        TestAwait.until("node " + (restarted + 1) + " replaying its log through index " + applied, Duration.ofSeconds(60), () -> {
            com.fasterxml.jackson.databind.JsonNode status = cluster.get(restarted, "/api/cluster");
            return status != null && status.get("appliedIndex").asLong() >= applied && status.get("applyingBytes").asLong() == 0;
        });
        cluster.awaitDigest(QUEUE, confirmed.size(), Duration.ofSeconds(60));

        // Led by it: the leadership is moved from whichever node leads now (an election on a loaded machine may have
        // moved it since the start), again should another election come in between.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        for (int serving = cluster.awaitServing(Duration.ofSeconds(60), 0, 1, 2); serving != restarted;
             serving = cluster.awaitServing(Duration.ofSeconds(60), 0, 1, 2)) {
            assertTrue(System.nanoTime() < deadline, "node " + (restarted + 1) + " did not take the leadership within 120 s");
            try {
                cluster.moveLeader(serving, restarted); // answers once the target leads, or refused
            } catch (AssertionError refused) {
                System.out.println("ClusterExactRestartTest: moving the leadership failed, trying again: " + refused.getMessage());
            }
        }
        try (Connection connection = Connection.connect(options)) {
            assertEquals("node-" + (restarted + 1), connection.brokerName(), "the restarted node leads");
            ClusterFixture.consumeEachOnce(connection, QUEUE, confirmed);
        }
    }
}
