package io.sluice.broker.cluster;

import io.netty.channel.DefaultEventLoopGroup;
import io.netty.channel.EventLoopGroup;
import io.sluice.broker.TestPorts;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.config.ConfigLoader;
import io.sluice.broker.queue.QueueManager;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueDigest;
import io.sluice.storage.QueueStore;
import org.apache.ratis.server.protocol.TermIndex;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rule R4 of docs/replication.md at the level of one node's files: a snapshot taken on one node ("leader"),
 * served by its {@link SnapshotServer} and fetched by another ("follower"), replaces the follower's queues,
 * settings included; and a follower that crashed after the fetch, or in the middle of the swap, finishes it
 * when it starts again, ending with the snapshot's queues and none of its old ones.
 */
class SnapshotInstallTest {
    /** The settings every node must share, as the leader's cluster recorded them (rule R2). */
    private static final ClusterSettings.Values CLUSTER = new ClusterSettings.Values(16L << 20, 1000, 3_600_000);
    private static final TermIndex AT = TermIndex.valueOf(3, 42);
    private static final SnapshotInstaller.Timeouts TIMEOUTS = new SnapshotInstaller.Timeouts(10_000, 30_000);
    private static final SnapshotAuth AUTH = SnapshotAuth.withSecret("a cluster secret of this test, 32 bytes or more".getBytes());
    private static final QueueSettings SETTINGS = QueueSettings.builder().set(QueueSettings.MAX_DELIVERIES, 7).build();

    @TempDir
    Path dir;
    private final EventLoopGroup loop = new DefaultEventLoopGroup(1);
    private final BrokerConfig config = new ConfigLoader().load(null, Map.of());

    @AfterEach
    void stopLoop() {
        loop.shutdownGracefully(0, 0, TimeUnit.SECONDS).syncUninterruptibly();
    }

    /** A node's store and queues, opened (recovered) from its data directory. */
    private final class Node implements AutoCloseable {
        final Path data;
        final MessageStore store;
        final QueueManager queues;

        Node(String name) {
            data = dir.resolve(name);
            store = MessageStore.open(data, config.storeConfig());
            queues = new QueueManager(store, loop, config.queues, 1000);
        }

        void fill(String queue, QueueSettings settings, int messages, int ackEvery) {
            QueueStore q = queues.declare(queue, settings).store();
            for (int i = 1; i <= messages; i++) {
                long id = q.append(9, i, ByteBuffer.allocate(0), ByteBuffer.wrap((queue + i).getBytes()));
                if (ackEvery > 0 && i % ackEvery == 0) {
                    q.ack(id);
                }
            }
        }

        Map<String, QueueDigest> digests() {
            Map<String, QueueDigest> digests = new TreeMap<>();
            queues.all().forEach(q -> digests.put(q.name(), QueueDigest.of(q.store())));
            return digests;
        }

        @Override
        public void close() {
            queues.close();
            store.close();
        }
    }

    @Test
    void shouldReplaceAFollowersQueuesWithTheLeadersSnapshotAndFinishASwapACrashInterrupted() throws Exception {
        Map<String, QueueDigest> leaderDigests;
        ShardSnapshots.Snapshot taken;
        Node leader = new Node("leader");
        int port = TestPorts.free();
        SnapshotServer server;
        try {
            leader.fill("orders", SETTINGS, 300, 3);
            leader.fill("audit", QueueSettings.EMPTY, 50, 0);
            leaderDigests = leader.digests();
            ShardSnapshots snapshots = new ShardSnapshots(leader.data.resolve("snapshots"), leader.queues, () -> 4, () -> CLUSTER);
            taken = snapshots.take(AT);
            assertEquals(AT, snapshots.latest().termIndex());
            server = new SnapshotServer("127.0.0.1", port, snapshots, AUTH);
            leader.fill("orders", QueueSettings.EMPTY, 10, 0); // after the snapshot: not in it
        } finally {
            leader.close();
        }
        assertTrue(Files.isDirectory(taken.directory().resolve("queues/orders/segments")));

        try {
            // The follower had queues of its own, one under a name the snapshot holds too.
            Node follower = new Node("follower");
            follower.fill("orders", QueueSettings.EMPTY, 5, 0);
            follower.fill("stale", QueueSettings.EMPTY, 5, 0);
            SnapshotInstaller installer = new SnapshotInstaller(follower.data, follower.queues, TIMEOUTS, AUTH);
            assertNull(installer.fetch("127.0.0.1:" + port, AT.getIndex() + 1).get(60, TimeUnit.SECONDS),
                    "no snapshot that far: none fetched");
            assertEquals(AT, installer.fetch("127.0.0.1:" + port, AT.getIndex()).get(60, TimeUnit.SECONDS));
            assertEquals(AT, installer.pending());
            assertEquals(4, installer.pendingEntryLevel(), "the leader's entry level travels with its snapshot (R12)");
            assertEquals(CLUSTER, ClusterSettings.read(follower.data.resolve(SnapshotInstaller.INSTALL).resolve(ClusterSettings.FILE)),
                    "so do the cluster's settings (R2)");
            installer.close();
            // A crash after the fetch: the old queues are still what the node opens.
            follower.close();
            follower = new Node("follower");
            assertEquals(List.of("orders", "stale"), follower.queues.all().stream().map(q -> q.name()).sorted().toList());

            // A crash in the middle of the swap: the old queues deleted and one of the snapshot's moved in.
            installer = new SnapshotInstaller(follower.data, follower.queues, TIMEOUTS, AUTH);
            for (String name : List.of("orders", "stale")) {
                follower.queues.delete(name);
            }
            Path install = follower.data.resolve(SnapshotInstaller.INSTALL);
            Files.createFile(install.resolve(SnapshotInstaller.OLD_QUEUES_DELETED));
            Files.move(install.resolve("queues/audit"), follower.data.resolve("queues/audit"));
            follower.close();
            follower = new Node("follower");
            installer = new SnapshotInstaller(follower.data, follower.queues, TIMEOUTS, AUTH);
            assertEquals(AT, installer.swapIn());
            installer.finish();
            assertFalse(Files.exists(install));
            assertEquals(leaderDigests, follower.digests(), "the leader's queues as of the snapshot, and only those");
            Node installed = follower;
            assertDoesNotThrow(() -> installed.queues.existing("orders", SETTINGS), "the snapshot's settings came with the queue");
            assertThrows(RuntimeException.class, () -> installed.queues.existing("orders",
                    QueueSettings.builder().set(QueueSettings.MAX_DELIVERIES, 8).build()));
            follower.close();

            // And through a restart, recovered from the installed files.
            follower = new Node("follower");
            assertEquals(leaderDigests, follower.digests());
            follower.close();
        } finally {
            server.close();
        }
    }

    /**
     * Rule R2, "Settings that must match": a node whose own {@code storage.segment-bytes} differs from the cluster's, which a
     * snapshot it fetched records, must refuse the snapshot before it replaces anything, keeping its own queues as they were
     * (and the install pending, for a start with the cluster's settings), and say why under a code: the setting, its value
     * here and the cluster's. Before, the state machine checked the settings only once the snapshot's queues were swapped
     * in: the node refused with the leader's queues already in place of its own.
     */
    @Test
    void aNodeConfiguredOtherwiseRefusesTheSnapshotBeforeItReplacesItsQueues() throws Exception {
        int port = TestPorts.free();
        Node leader = new Node("leader");
        SnapshotServer server;
        try {
            leader.fill("orders", SETTINGS, 300, 3);
            ShardSnapshots snapshots = new ShardSnapshots(leader.data.resolve("snapshots"), leader.queues, () -> 7, () -> CLUSTER);
            snapshots.take(AT);
            server = new SnapshotServer("127.0.0.1", port, snapshots, AUTH);
        } finally {
            leader.close();
        }
        Node follower = new Node("follower");
        SnapshotInstaller installer = new SnapshotInstaller(follower.data, follower.queues, TIMEOUTS, AUTH);
        try {
            follower.fill("orders", QueueSettings.EMPTY, 5, 0);
            follower.fill("stale", QueueSettings.EMPTY, 5, 0);
            Map<String, QueueDigest> before = follower.digests();
            assertEquals(AT, installer.fetch("127.0.0.1:" + port, AT.getIndex()).get(60, TimeUnit.SECONDS));
            ClusterSettings.Values own = new ClusterSettings.Values(2L << 20, CLUSTER.dedupMaxProducers(), CLUSTER.dedupIdleExpiryMs());
            ShardApplier applier = new ShardApplier(follower.queues, new Submissions(), 1,
                    new FinalizedEntryLevel(EntryLevels.SUPPORTED, null), new ClusterSettings(own, null));
            ShardStateMachine stateMachine = new ShardStateMachine(applier, new ApplyBudget(1 << 20), follower.queues, null,
                    installer, peer -> null, new ShardCounters());

            ClusterSettings.Mismatch refused = assertThrows(ClusterSettings.Mismatch.class, stateMachine::reinitialize);

            assertEquals(before, follower.digests(), "the node's own queues, untouched");
            assertEquals(AT, installer.pending(), "the install stays pending, for a start with the cluster's settings");
            String expected = "storage.segment-bytes is 2097152 on this node and 16777216 in the cluster";
            assertTrue(refused.getMessage().contains("the snapshot through log entry 42") && refused.getMessage().contains(expected),
                    refused.getMessage());
            assertEquals("settings_mismatch", follower.queues.applyHalt().code());
            assertEquals(refused.getMessage(), stateMachine.halted());
        } finally {
            installer.close();
            follower.close();
            server.close();
        }
    }

    /**
     * Rule R4, two notifications in a row: the leader purged further while this node swapped in the snapshot it
     * fetched first, so a second fetch completes during that swap. Its snapshot must stay the pending install, to be
     * swapped in next; before, the first swap's end deleted it, and Ratis took the newer snapshot as installed over the
     * older one's queues, the entries between the two never applied on this node (seen as a node 20,000 messages
     * short in ClusterMembershipTest).
     */
    @Test
    void aSnapshotFetchedWhileAnotherIsSwappedInIsTheNextPendingInstall() throws Exception {
        TermIndex first = TermIndex.valueOf(3, 42);
        TermIndex second = TermIndex.valueOf(3, 84);
        int port = TestPorts.free();
        Node leader = new Node("leader");
        SnapshotServer server;
        ShardSnapshots snapshots;
        try {
            leader.fill("orders", QueueSettings.EMPTY, 100, 0);
            snapshots = new ShardSnapshots(leader.data.resolve("snapshots"), leader.queues, () -> 4, () -> null);
            snapshots.take(first);
            server = new SnapshotServer("127.0.0.1", port, snapshots, AUTH);
        } catch (RuntimeException e) {
            leader.close();
            throw e;
        }
        Node follower = new Node("follower");
        SnapshotInstaller installer = new SnapshotInstaller(follower.data, follower.queues, TIMEOUTS, AUTH);
        try {
            assertEquals(first, installer.fetch("127.0.0.1:" + port, first.getIndex()).get(60, TimeUnit.SECONDS));
            leader.fill("orders", QueueSettings.EMPTY, 50, 0);
            snapshots.take(second);
            java.util.concurrent.atomic.AtomicReference<java.util.concurrent.CompletableFuture<TermIndex>> secondFetch =
                    new java.util.concurrent.atomic.AtomicReference<>();
            TermIndex installed = installer.installPending((at, level, settings) -> { }, (at, level, settings) -> {
                // In the middle of the swap: the next notification's fetch runs to its end, as far as it may.
                java.util.concurrent.CompletableFuture<TermIndex> fetch = installer.fetch("127.0.0.1:" + port, second.getIndex());
                secondFetch.set(fetch);
                try {
                    fetch.get(5, TimeUnit.SECONDS);
                } catch (java.util.concurrent.TimeoutException expected) {
                    // it waits for this swap to end before it puts its snapshot in place
                } catch (Exception e) {
                    throw new java.io.IOException(e);
                }
            });
            assertEquals(first, installed);
            assertEquals(second, secondFetch.get().get(60, TimeUnit.SECONDS));
            assertEquals(second, installer.pending(), "the second snapshot is the next install, not deleted by the first's end");
            assertEquals(second, installer.installPending((at, level, settings) -> { }, (at, level, settings) -> { }));
            assertEquals(150, QueueDigest.of(follower.queues.get("orders").store()).messages());
        } finally {
            installer.close();
            follower.close();
            server.close();
            leader.close();
        }
    }
}
