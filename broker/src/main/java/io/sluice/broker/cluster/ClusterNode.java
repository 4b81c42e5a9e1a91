package io.sluice.broker.cluster;

import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.error.BrokerException;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.ClientConnection;
import io.sluice.broker.queue.ProducerRegistry;
import io.sluice.broker.queue.ProducerLink;
import io.sluice.broker.queue.QueueManager;
import io.sluice.broker.queue.Replication;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.ProducerInitFrame;
import io.sluice.protocol.DeleteQueueFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.Frame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.StoredMessage;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftClientRequest;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.DivisionInfo;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.thirdparty.com.google.protobuf.UnsafeByteOperations;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * This broker as a node of a cluster (docs/replication.md): the embedded Ratis server and its one data
 * shard, a Raft group of every node that replicates the state changes of all queues. It is the
 * {@link Replication} of the {@link QueueManager}: declares, PUBLISH frames and acks become log entries
 * ({@link ShardEntry}), and every node applies the committed ones ({@link ShardStateMachine}).
 *
 * <p>Serving: a node serves clients only while it is the shard's leader, is ready (it committed an entry
 * of its term, so every earlier entry is committed) and has applied what was committed when it became
 * ready; otherwise {@link #notLeader} names the leader ({@link LeaderServing}). When this node stops being the leader, or Raft
 * refuses one of its submissions, it closes every client connection with NOT_LEADER (rule S1 of
 * {@link Submissions}), and the clients resend to the new leader what it did not confirm.
 *
 * <p>More shards later: queues would map to shards through the metadata group (issue 20); every queue is
 * in shard 0 now, the one group {@link #SHARD_GROUP}.
 *
 * <p>Threads: thread-safe. Connections' event loops submit; Ratis completes submissions on its own
 * threads, which only release, log and close connections; the state machine applies on its thread.
 */
public final class ClusterNode implements Replication, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ClusterNode.class);
    /** The one data shard's group: the same id on every node, derived from a fixed name. */
    static final String SHARD_NAME = "sluice-shard-0";
    static final RaftGroupId SHARD_GROUP = RaftGroupId.valueOf(UUID.nameUUIDFromBytes(SHARD_NAME.getBytes(StandardCharsets.UTF_8)));

    /** Ranges of message ids per ACK entry of a purge: 16 bytes each, 64 KiB an entry at most. */
    private static final int PURGE_RANGES_PER_ENTRY = 4096;
    /**
     * A batch of entries holds at most this much (and never more than one PUBLISH frame may, so that Ratis's buffers,
     * sized for one frame, hold it: RaftSettings): the top of the 64–256 KiB the issue measured as the sweet spot.
     */
    private static final int BATCH_CAP_BYTES = 256 << 10;
    /** While a submission is in flight, waiting entries go as soon as this much waits, so that a busy node keeps several in flight. */
    private static final int BATCH_SEND_BYTES = 64 << 10;

    private final int nodeId;
    private final int maxFrameBytes;
    /** Rule R9: per queue, the bytes submitted and not yet applied that block its producers (cluster.max-uncommitted-bytes). */
    private final long maxUncommittedBytes;
    /**
     * How long a HELLO may wait for a leader while an election runs (rule S2): three of the longest election
     * timeouts, room for a detection that takes two and a round lost to a split vote.
     */
    private final long leaderWaitMs;
    /** A follower that answered the leader within this long (the minimum election timeout) is alive enough to take over. */
    private final long leaderAnswerMs;
    private final RaftPeerId self;
    /** The shard's members from the Raft configuration: NOT_LEADER hints, snapshot addresses, the admin API's list. */
    private final ClusterMembers members;
    /** Adding and removing members, on the leader. */
    private final MembershipChanges membershipChanges;
    /** Whether the Raft server started: a shard that is gone afterwards was shut down (this node was removed). */
    private volatile boolean started;
    private final Submissions submissions = new Submissions();
    private final ShardCounters counters = new ShardCounters();
    /** Every entry this node submits goes through it, in order (one Raft entry for several while one is in flight). */
    private final EntryCoalescer coalescer;
    /** This process's client id at its own Raft server: with the call number, the key of Ratis's retry cache. */
    private final ClientId clientId = ClientId.randomId();
    private final LeadershipTransfer leadershipTransfer;
    private final Consumer<String> closeClients;
    /** This node's queues: the leader checks a dead-letter queue's quota before it submits a copy (R8). */
    private final QueueManager queues;
    /** {@code limits.max-queues}, checked before a declare or a dead-letter is submitted, never when it is applied (R2). */
    private final LeaderQueueLimit queueLimit;
    private final RaftServer server;
    /** Rule R12: the cluster's entry level as applied here, which bounds the formats this node writes as the leader. */
    private final FinalizedEntryLevel entryLevel;
    /** Rule R12: finalizes a new cluster's level, and raises it once every node supports the new one. */
    private final EntryLevelControl entryLevels;
    /** Rule R2: the settings every node must share, as the cluster recorded them, and this node's own. */
    private final ClusterSettings settings;
    /** Rule R13: a transaction's commit as one entry. */
    private final ClusterTransactions transactions;
    /** Applies the committed entries; it knows whether this node stopped applying them (rules R2, R12). */
    private final ShardStateMachine stateMachine;
    /** What this node's Raft server knows of the shard: its indexes, term, role, its followers. */
    private final ShardDivision division;
    /** Serves this node's snapshots to followers that fell behind (rule R4), or null if snapshots are markers only. */
    private final SnapshotServer snapshotServer;
    /** Whether this node serves clients, and the NOT_LEADER answer when it does not (rules S1, S2). */
    private final LeaderServing serving;
    private volatile boolean closed;

    private ClusterNode(BrokerConfig config, QueueManager queues, Consumer<String> closeClients) throws IOException {
        this.nodeId = config.cluster.nodeId;
        this.maxFrameBytes = config.broker.maxFrameBytes;
        this.entryLevel = new FinalizedEntryLevel(EntryLevels.SUPPORTED, config.dataDirectory().resolve(FinalizedEntryLevel.FILE));
        this.settings = new ClusterSettings(ClusterSettings.Values.of(config), config.dataDirectory().resolve(ClusterSettings.FILE));
        int batchCap = Math.min(BATCH_CAP_BYTES, maxFrameBytes);
        this.coalescer = new EntryCoalescer(this::send, batchCap, Math.min(BATCH_SEND_BYTES, batchCap),
                () -> entryLevel.allows(EntryBatch.VERSION));
        this.maxUncommittedBytes = config.cluster.maxUncommittedBytes;
        this.leaderWaitMs = 3 * config.cluster.electionTimeoutMaxMs;
        this.leaderAnswerMs = config.cluster.electionTimeoutMinMs;
        this.closeClients = closeClients;
        this.queues = queues;
        this.queueLimit = new LeaderQueueLimit(queues, config.limits.maxQueues);
        BrokerConfig.Node selfNode = null;
        List<RaftPeer> peers = new ArrayList<>();
        for (BrokerConfig.Node node : config.cluster.nodes) {
            peers.add(ClusterMember.of(node).toPeer());
            if (node.id == nodeId) {
                selfNode = node;
            }
        }
        if (selfNode == null) {
            throw new IllegalArgumentException("cluster.node-id " + nodeId + " is not among cluster.nodes"); // validate() said so
        }
        this.self = RaftPeerId.valueOf(ClusterMember.peerId(nodeId));
        NodeTls tls = NodeTls.of(config.cluster.tls);
        ShardSnapshots snapshots = null;
        SnapshotInstaller installer = null;
        if (RaftSettings.servesSnapshots(config)) {
            snapshots = new ShardSnapshots(config.dataDirectory().resolve("snapshots"), queues, entryLevel::finalized, settings::recorded);
            SnapshotAuth auth = SnapshotAuth.forConfig(config);
            installer = new SnapshotInstaller(config.dataDirectory(), queues, new SnapshotInstaller.Timeouts(
                    (int) config.cluster.snapshotConnectTimeoutMs, (int) config.cluster.snapshotReadTimeoutMs), auth,
                    tls == null ? null : tls.clientContext());
            this.snapshotServer = new SnapshotServer(selfNode.host, selfNode.snapshotPort, snapshots, auth,
                    tls == null ? null : tls.serverContext());
        } else {
            this.snapshotServer = null;
        }
        ClusterMembers[] membersOnceBuilt = new ClusterMembers[1]; // the state machine is built before the server it reads
        this.stateMachine = new ShardStateMachine(new ShardApplier(queues, submissions, nodeId, entryLevel, settings),
                ApplyBudget.forHeap(Runtime.getRuntime().maxMemory(), maxFrameBytes + RaftSettings.ENTRY_HEADROOM_BYTES), queues,
                snapshots, installer, peer -> membersOnceBuilt[0].snapshotAddress(peer), counters);
        stateMachine.events(new ShardStateMachine.Events() {
            @Override
            public void leaderChanged(RaftPeerId leader) {
                onLeaderChanged(leader);
            }

            @Override
            public void leaderReady() {
                serving.leaderReady();
            }
        });
        RaftServer.Builder builder = RaftServer.newBuilder();
        if (tls != null) {
            builder.setParameters(tls.raftParameters());
        }
        // A node that joins starts with no members (Ratis starts it in its "initializing" state: no election, it waits
        // for the leader's appends); every other start names cluster.nodes, which Ratis uses only while its log and
        // metadata hold no configuration: once they do (any start after the first), the configuration there wins.
        this.server = builder
                .setServerId(self)
                .setGroup(config.cluster.join ? RaftGroup.valueOf(SHARD_GROUP, List.of()) : RaftGroup.valueOf(SHARD_GROUP, peers))
                .setProperties(RaftSettings.of(config, selfNode))
                .setStateMachine(stateMachine)
                .setOption(RaftStorage.StartupOption.RECOVER)
                .build();
        this.division = new ShardDivision(server, SHARD_GROUP);
        queues.applyHalt().listener(new HaltedShard(nodeId, division, queues, this::notLeader, closeClients)); // rules R2, R12
        this.members = new ClusterMembers(server, SHARD_GROUP, config.cluster.nodes);
        membersOnceBuilt[0] = members;
        this.membershipChanges = new MembershipChanges(server, SHARD_GROUP, self, clientId, submissions::nextCall, members);
        this.leadershipTransfer = new LeadershipTransfer(server, SHARD_GROUP, self, nodeId, clientId, submissions::nextCall, this::notLeader);
        this.entryLevels = new EntryLevelControl(entryLevel, server, SHARD_GROUP, self,
                level -> submitApplied(call -> EntryLevels.encodeLevelEntry(nodeId, call, level), "entry level " + level),
                peer -> "node " + ClusterMember.nodeIdOf(peer.toString()), tls == null ? null : tls.raftParameters());
        this.transactions = new ClusterTransactions(nodeId, maxFrameBytes, entryLevel, submissions, this::submit, this::notLeader);
        this.serving = new LeaderServing(nodeId, self, division, members, stateMachine::halted, () -> started && !closed,
                () -> entryLevels.finalizeIfNew().handle((done, failure) -> null).thenCompose(done -> recordSettings()),
                config.cluster.electionTimeoutMinMs, config.cluster.electionTimeoutMaxMs);
    }

    /**
     * Starts this node's Raft server (its log recovered, its committed entries applied to {@code queues}
     * as they are learned) and makes it the queues' replication. {@code closeClients} closes every client
     * connection with CLOSE NOT_LEADER and the reason given.
     */
    public static ClusterNode start(BrokerConfig config, QueueManager queues, Consumer<String> closeClients) throws IOException {
        ClusterNode node = new ClusterNode(config, queues, closeClients);
        queues.replication(node);
        try {
            node.server.start();
            node.started = true;
            node.division.dropLogBelowInstalledSnapshot(node.nodeId);
        } catch (IOException | RuntimeException e) {
            queues.replication(null);
            node.close();
            throw e;
        }
        // The address the Raft server binds (RaftSettings: this node's host); Ratis's own peer reads 0.0.0.0.
        LOG.info("Cluster node {} started: Raft on {} ({}), the members {}{}, the Raft log in {}.", node.nodeId,
                config.cluster.nodes.stream().filter(n -> n.id == config.cluster.nodeId).map(n -> n.host + ":" + n.raftPort)
                        .findFirst().orElse("?"), config.cluster.tls.enabled ? "mutual TLS"
                        : "plain: whoever reaches it can append to the log, see cluster.tls", node.members.current().keySet(),
                config.cluster.join ? " (cluster.join: it waits to be added)" : "", config.raftDirectory().toAbsolutePath());
        return node;
    }

    // ------------------------------------------------------------------ serving

    @Override
    public String notLeader() {
        return serving.notLeader();
    }

    /** True while this node leads the shard and serves its clients, read without {@link #notLeader}'s side effects (metrics). */
    public boolean serving() {
        return serving.serving();
    }

    @Override
    public boolean awaitingLeader(long askedAtNanos) {
        return serving.awaitingLeader(askedAtNanos);
    }

    @Override
    public long leaderWaitMillis() {
        return leaderWaitMs;
    }

    private void onLeaderChanged(RaftPeerId leader) {
        counters.leaderChanged();
        boolean wasServing = serving.leaderChanged();
        LOG.info("Cluster node {}: the shard's leader is now {}.", nodeId,
                leader == null ? "unknown" : "node " + ClusterMember.nodeIdOf(leader.toString()));
        if (!self.equals(leader) || wasServing) {
            // Clients of a node that is no longer the leader must go to the new one; none may stay half-served.
            closeClients.accept(notLeader());
        }
        if (wasServing) {
            queues.all().forEach(BrokerQueue::leadershipLost); // rule R5: the acks it settled may never commit
        }
    }

    // ------------------------------------------------------------------ replication

    /**
     * Rule R9: the queue checks its quota first, on its executor, and counts what it admitted as uncommitted until
     * the entry is applied here or Raft refuses it.
     */
    @Override
    public void publish(BrokerQueue queue, ProducerLink link, PublishFrame frame) {
        queue.admit(link, frame, maxUncommittedBytes, (admitted, epochs) -> {
            long call = submissions.nextCall();
            int messages = admitted.messageCount();
            long bytes = messages == 0 ? 0 : admitted.messageBytes();
            byte[] entry;
            try {
                entry = ShardEntry.encode(nodeId, call, queue.name(), admitted, writableEpochs(epochs), maxFrameBytes);
            } finally {
                admitted.release(); // the entry holds a copy; the leader applies that, as every node does
            }
            submissions.publish(call, link);
            submit(call, entry, "a PUBLISH of " + link.describe()).thenAccept(refused -> {
                if (refused) {
                    queue.uncommittedRefused(messages, bytes);
                }
            });
        });
    }

    /**
     * Rule R12: below entry level 4 the epochs stay out, as before R11 (followers then fence by their own view); below
     * level 8 so do the producers a leader that lost its epoch marks admitted unchecked, which an older broker would fence.
     */
    private io.sluice.broker.queue.ProducerEpochs writableEpochs(io.sluice.broker.queue.ProducerEpochs epochs) {
        if (!entryLevel.allows(ShardEntry.NAMED_PUBLISH_VERSION)) {
            return io.sluice.broker.queue.ProducerEpochs.NONE;
        }
        return entryLevel.reached(ShardEntry.ADMITTED_WITHOUT_EPOCH_LEVEL) ? epochs : epochs.withoutAdmittedWithoutEpoch();
    }

    @Override
    public long maxUncommittedBytes() {
        return maxUncommittedBytes;
    }

    @Override
    public String transactionsRefused() {
        return transactions.refused();
    }

    @Override
    public CompletableFuture<Void> commitTransaction(long number, List<TransactionPart> parts) {
        return transactions.commit(number, parts);
    }

    @Override
    public CompletableFuture<ProducerRegistry.Registered> registerProducer(BrokerQueue queue, ClientConnection connection,
                                                                           String producerName, long producerId, int requestedEpoch) {
        CompletableFuture<ProducerRegistry.Registered> answer = new CompletableFuture<>();
        // Rule R11: the cap on named producers is the leader's, checked before it submits; every node applies what it submits.
        queue.producerState().admitRegistration(producerId, requestedEpoch, () -> {
            long call = submissions.nextCall();
            submissions.registration(call, connection, answer);
            submit(call, entry(call, queue.name(), new ProducerInitFrame(0, queue.name(), producerName, requestedEpoch)),
                    "a registration of producer '" + producerName + "' on queue '" + queue.name() + "'")
                    .thenAccept(refused -> {
                        if (refused) {
                            answer.completeExceptionally(new BrokerException(ErrorCode.NOT_LEADER, notLeader()));
                        }
                    });
        }).whenComplete((submitted, refused) -> {
            if (refused != null) {
                answer.completeExceptionally(refused);
            }
        });
        return answer;
    }

    /**
     * Rule R2: {@code limits.max-queues} is checked here, before the entry is submitted, and refused as a single broker
     * refuses it; every node applies the committed declare without it ({@link LeaderQueueLimit}).
     */
    @Override
    public CompletableFuture<BrokerQueue> declare(String name, QueueSettings settings) {
        Runnable release;
        try {
            release = queueLimit.hold(name);
        } catch (BrokerException e) {
            return CompletableFuture.failedFuture(e);
        }
        CompletableFuture<BrokerQueue> answer = new CompletableFuture<>();
        answer.whenComplete((queue, failure) -> release.run()); // applied here (the queue is in the catalog) or refused
        long call = submissions.nextCall();
        submissions.declare(call, answer);
        submit(call, entry(call, name, new DeclareQueueFrame(0, name, settings)), "a declare of queue '" + name + "'")
                .thenAccept(refused -> {
                    if (refused) {
                        answer.completeExceptionally(new BrokerException(ErrorCode.NOT_LEADER, notLeader()));
                    }
                });
        return answer;
    }

    @Override
    public void acked(BrokerQueue queue, List<IdRange> ids) {
        long call = submissions.nextCall();
        submit(call, entry(call, queue.name(), new AckFrame(0, ids)), "acks on queue '" + queue.name() + "'");
    }

    /** Rule R10: one entry per dispatch's deliveries (at most {@link ShardEntry#MAX_DELIVERIES} each), not waited for. */
    @Override
    public void delivered(BrokerQueue queue, long[] ids, int[] counts, int n) {
        if (!entryLevel.allows(ShardEntry.DELIVERED_VERSION)) {
            return; // below entry level 3 (R12): the counts stay the leader's own, as before R10
        }
        for (int from = 0; from < n; from += ShardEntry.MAX_DELIVERIES) {
            int size = Math.min(ShardEntry.MAX_DELIVERIES, n - from);
            long call = submissions.nextCall();
            submit(call, ShardEntry.encodeDeliveries(nodeId, call, queue.name(), java.util.Arrays.copyOfRange(ids, from, from + size),
                    java.util.Arrays.copyOfRange(counts, from, from + size), size), "deliveries on queue '" + queue.name() + "'");
        }
    }

    @Override
    public CompletableFuture<Boolean> delete(String name) {
        CompletableFuture<Boolean> answer = new CompletableFuture<>();
        long call = submissions.nextCall();
        submissions.delete(call, answer);
        submit(call, entry(call, name, new DeleteQueueFrame(0, name)), "a delete of queue '" + name + "'")
                .thenAccept(refused -> {
                    if (refused) {
                        answer.completeExceptionally(new BrokerException(ErrorCode.NOT_LEADER, notLeader()));
                    }
                });
        return answer;
    }

    /** Rule R7: one ACK entry per {@link #PURGE_RANGES_PER_ENTRY} ranges, so that each stays far below a frame's limit. */
    @Override
    public CompletableFuture<Void> purged(BrokerQueue queue, List<IdRange> ids) {
        List<CompletableFuture<Void>> entries = new ArrayList<>();
        for (int from = 0; from < ids.size(); from += PURGE_RANGES_PER_ENTRY) {
            List<IdRange> chunk = List.copyOf(ids.subList(from, Math.min(ids.size(), from + PURGE_RANGES_PER_ENTRY)));
            entries.add(ackEntry(queue, chunk, "a purge of queue '" + queue.name() + "'"));
        }
        return CompletableFuture.allOf(entries.toArray(CompletableFuture[]::new));
    }

    /** Rule R9: a drop-oldest drop is one ACK entry. */
    @Override
    public CompletableFuture<Void> dropped(BrokerQueue queue, long id) {
        return ackEntry(queue, List.of(IdRange.single(id)), "a drop-oldest drop of message " + id + " of queue '" + queue.name() + "'");
    }

    /** An ACK entry of the leader's own decision (R7, R9); completes once it is applied here, exceptionally if Raft refused it. */
    private CompletableFuture<Void> ackEntry(BrokerQueue queue, List<IdRange> ids, String what) {
        CompletableFuture<Void> applied = new CompletableFuture<>();
        long call = submissions.nextCall();
        submissions.applied(call, applied);
        submit(call, entry(call, queue.name(), new AckFrame(0, ids)), what).thenAccept(refused -> {
            if (refused) {
                applied.completeExceptionally(new BrokerException(ErrorCode.NOT_LEADER, notLeader()));
            }
        });
        return applied;
    }

    /**
     * Rule R8: one entry per message, which holds the leader's copy; completes once it is applied here. The dead-letter
     * queue's quota is checked first, as a single broker checks it (R9): a refusal fails the move, so the original
     * stays in its source on every node. A dead-letter queue that does not exist is declared first, through the log,
     * so that its quota (the broker's defaults) and {@code limits.max-queues} are checked too; the entry keeps the
     * dead-letter queue's place in the leader's count until it is applied (R2, {@link LeaderQueueLimit}).
     */
    @Override
    public CompletableFuture<Void> deadLetter(BrokerQueue source, StoredMessage original, String deadLetterQueue, ByteBuffer headers) {
        if (!entryLevel.allows(ShardEntry.DEAD_LETTER_VERSION)) { // R12: no older form of it keeps the nodes alike
            return CompletableFuture.failedFuture(new IllegalStateException("dead-lettering needs entry level "
                    + ShardEntry.DEAD_LETTER_VERSION + " and the cluster's is " + entryLevel.writable()
                    + "; the message stays in its queue (POST /api/cluster/feature-level raises the level)"));
        }
        ShardEntry.DeadLetterCopy copy = ShardEntry.DeadLetterCopy.of(source.name(), original, headers);
        int bytes = copy.headers().length + copy.payload().length;
        BrokerQueue existing = queues.get(deadLetterQueue);
        CompletableFuture<BrokerQueue> target = existing != null ? CompletableFuture.completedFuture(existing)
                : declare(deadLetterQueue, QueueSettings.EMPTY);
        return target.thenCompose(dlq -> dlq.admitCopy(bytes, maxUncommittedBytes).thenCompose(admitted -> {
            Runnable release;
            try {
                // The entry declares the dead-letter queue again if a delete applied before it removed it: counted till then.
                release = queueLimit.hold(deadLetterQueue);
            } catch (BrokerException e) {
                dlq.uncommittedRefused(1, bytes);
                return CompletableFuture.failedFuture(e);
            }
            CompletableFuture<Void> applied = new CompletableFuture<>();
            applied.whenComplete((done, failure) -> release.run());
            long call = submissions.nextCall();
            submissions.applied(call, applied);
            submit(call, ShardEntry.encodeDeadLetter(nodeId, call, deadLetterQueue, copy),
                    "a dead-letter of message " + original.id() + " of queue '" + source.name() + "'")
                    .thenAccept(refused -> {
                        if (refused) {
                            dlq.uncommittedRefused(1, bytes);
                            applied.completeExceptionally(new BrokerException(ErrorCode.NOT_LEADER, notLeader()));
                        }
                    });
            return applied;
        }));
    }

    /**
     * Rule R2: the leader records the cluster's settings ({@link ClusterSettings}) once the level allows it and none were;
     * a new cluster's leader serves only once they are applied. Completes at once if there is nothing to record.
     */
    private CompletableFuture<Void> recordSettings() {
        if (settings.recorded() != null || !entryLevel.allows(ClusterSettings.VERSION)) {
            return CompletableFuture.completedFuture(null);
        }
        return submitApplied(call -> ClusterSettings.encode(nodeId, call, settings.own()), "the cluster's settings")
                .whenComplete((applied, failure) -> {
                    if (failure != null) {
                        LOG.warn("Cluster node {}: recording the cluster's settings was not committed ({}); the next leader tries "
                                + "again.", nodeId, failure.toString());
                    }
                });
    }

    /**
     * An entry of the leader's own (a level entry, the settings), encoded for its call; completes once it is applied here,
     * exceptionally if Raft refused it.
     */
    private CompletableFuture<Void> submitApplied(java.util.function.LongFunction<byte[]> encode, String what) {
        CompletableFuture<Void> applied = new CompletableFuture<>();
        long call = submissions.nextCall();
        submissions.applied(call, applied);
        submit(call, encode.apply(call), what).thenAccept(refused -> {
            if (refused) {
                applied.completeExceptionally(new BrokerException(ErrorCode.NOT_LEADER, notLeader()));
            }
        });
        return applied;
    }

    private byte[] entry(long call, String queue, Frame frame) {
        return ShardEntry.encode(nodeId, call, queue, frame, maxFrameBytes);
    }

    /**
     * Submits an entry to this node's Raft server, coalesced with others that wait ({@link EntryCoalescer});
     * completes with true if Raft refused it while its submitter still waited (rule S1).
     */
    private CompletableFuture<Boolean> submit(long call, byte[] entry, String what) {
        return coalescer.add(entry, what).thenApply(refusal -> refusal != null && submissions.forget(call));
    }

    /**
     * Sends one Raft entry (a shard entry, or a batch of them); completes with Raft's refusal, or null once it is
     * committed and applied here. A refusal closes the clients so that they resend to the leader (rule S1). Each
     * request has a call number of its own, the key of Ratis's retry cache with this node's client id.
     */
    private CompletableFuture<Throwable> send(byte[] entry, String what) {
        RaftClientRequest request = RaftClientRequest.newBuilder().setClientId(clientId).setServerId(self).setGroupId(SHARD_GROUP)
                .setCallId(submissions.nextCall()).setMessage(Message.valueOf(UnsafeByteOperations.unsafeWrap(entry)))
                .setType(RaftClientRequest.writeRequestType()).build();
        CompletableFuture<RaftClientReply> reply;
        counters.submitted(entry.length);
        try {
            reply = server.submitClientRequestAsync(request);
        } catch (IOException | RuntimeException e) {
            reply = CompletableFuture.failedFuture(e);
        }
        return reply.handle((answer, failure) -> {
            Throwable refusal = failure != null ? failure : answer.isSuccess() ? null : answer.getException();
            if (refusal != null && !closed) {
                LOG.warn("Cluster node {}: Raft did not commit {} ({}); its clients are sent to the leader to resend it.",
                        nodeId, what, refusal.toString());
                closeClients.accept(notLeader());
                queues.all().forEach(BrokerQueue::leadershipLost); // rule R5, as when the leader changes
            }
            return refusal;
        });
    }

    /** The index of the last log entry this node applied, -1 before its shard exists. */
    public long appliedIndex() {
        return division.appliedIndex();
    }

    /** The index of the last log entry this node knows committed, -1 before its shard exists. */
    public long commitIndex() {
        return division.commitIndex();
    }

    /** The index of the last entry in this node's Raft log (committed or not), -1 if unknown. */
    public long lastLogIndex() {
        return division.lastLogIndex();
    }

    /** The shard's current term on this node, -1 before its shard exists. */
    public long term() {
        return division.term();
    }

    /** How far each follower is, while this node is the shard's leader; empty on any other node. */
    public List<FollowerProgress> followers() {
        return division.followers();
    }

    /** The follower {@code node}'s progress, while this node leads the shard; empty otherwise. */
    public java.util.Optional<FollowerProgress> follower(int node) {
        return followers().stream().filter(f -> f.nodeId() == node).findFirst();
    }

    /**
     * What this node knows of the shard, for the admin API ({@code GET /api/cluster}): its id, its role, the
     * leader's node id (0 if none is known), the current term (each election round raises it: the failover
     * test counts elections with it), the last, commit and applied indexes, whether it serves clients, its
     * counters ({@link ShardCounters}), and on the leader how far each follower is ({@link #followers}).
     */
    public Map<String, Object> status() {
        Map<String, Object> status = new java.util.LinkedHashMap<>();
        status.put("nodeId", nodeId);
        status.put("shard", SHARD_NAME);
        entryLevels.describe(status); // rule R12
        DivisionInfo info = division.info();
        String halted = stateMachine.halted();
        status.put("member", halted != null || !serving.notAMember(info));
        membershipChanges.describe(status, members.view());
        if (info == null || halted != null) {
            status.put("role", halted != null ? "HALTED" : started ? "REMOVED" : "STARTING"); // HALTED: rules R2, R12, the reason follows
            if (halted != null) {
                status.put("haltedCode", stateMachine.haltedCode());
                status.put("halted", halted);
            }
            status.put("serving", false);
            return status;
        }
        RaftPeerId leader = info.getLeaderId();
        if (self.equals(leader) && !info.isLeader()) {
            // A leader that stepped down (it heard no majority: a partition) keeps itself as Ratis's leader id until it
            // times out as a follower; it is not the leader, and an operator reading this looks for the leader here.
            leader = null;
        }
        status.put("role", info.getCurrentRole().name());
        status.put("leaderNodeId", leader == null ? 0 : ClusterMember.nodeIdOf(leader.toString()));
        status.put("term", info.getCurrentTerm());
        status.put("lastLogIndex", lastLogIndex());
        status.put("commitIndex", commitIndex());
        status.put("appliedIndex", info.getLastAppliedIndex());
        status.put("logStartIndex", division.logStartIndex());
        status.put("serving", notLeader() == null);
        counters.describe(status);
        status.put("applyingBytes", stateMachine.applyingBytes());
        status.put("followers", followers().stream().map(FollowerProgress::toMap).toList());
        return status;
    }

    /** The shard's name, as the metrics label it. */
    public String shardName() {
        return SHARD_NAME;
    }

    public int nodeId() {
        return nodeId;
    }

    /** This shard's counters on this node. */
    public ShardCounters counters() {
        return counters;
    }

    /** Every member of the cluster by id, this one included, as the Raft configuration says now. */
    public List<Integer> nodeIds() {
        return List.copyOf(members.current().keySet());
    }

    /**
     * Adds {@code added} to the cluster (docs/replication.md, "Adding and removing a node"); only the leader can. Completes
     * once the configuration with it is committed; exceptionally with {@link MembershipChanges.Refused} (why, as a code),
     * {@link MembershipChanges.NotChanged} (not in {@code timeoutMs}), or a {@link BrokerException} NOT_LEADER naming it.
     */
    public CompletableFuture<Void> addNode(ClusterMember added, long timeoutMs) {
        return changeMembers(() -> {
            MembershipChanges.checkAdd(members.current().values(), added, snapshotServer != null);
            return membershipChanges.add(added, timeoutMs);
        });
    }

    /** Removes node {@code id} from the cluster, as {@link #addNode} adds one; the leader refuses to remove itself. */
    public CompletableFuture<Void> removeNode(int id, long timeoutMs) {
        return changeMembers(() -> {
            MembershipChanges.checkRemove(members.current().values(), id, nodeId);
            return membershipChanges.remove(id, timeoutMs);
        });
    }

    private CompletableFuture<Void> changeMembers(java.util.function.Supplier<CompletableFuture<Void>> change) {
        if (!leads()) {
            return notLeaderFailure();
        }
        try {
            return change.get();
        } catch (MembershipChanges.Refused e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /**
     * Hands the shard's leadership to node {@code target} (an operator moving the leader off a node before its
     * maintenance): Ratis brings the target's log up to date, then has it start an election at once, which it
     * wins; this node's clients are then sent to it (NOT_LEADER) and resend what was not confirmed. Only the
     * leader can do it. Completes once the target leads, exceptionally with a {@link BrokerException} if it
     * does not within {@code timeoutMs} ({@link LeadershipTransfer.LeadershipNotTransferred}: the leader stays, or an election picks
     * one), if this node is not the leader ({@link BrokerException} NOT_LEADER, naming it), or if {@code target} is
     * no node of the cluster ({@link IllegalArgumentException}).
     */
    public CompletableFuture<Void> transferLeadership(int target, long timeoutMs) {
        if (!members.isMember(target)) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("node " + target
                    + " is not a node of this cluster; its nodes are " + nodeIds()));
        }
        if (!leads()) {
            return notLeaderFailure();
        }
        if (target == nodeId) {
            return CompletableFuture.completedFuture(null); // the leader already
        }
        return leadershipTransfer.to(target, timeoutMs);
    }

    /**
     * Before a graceful stop (docs/replication.md, "Stopping a node"): if this node leads, it hands the leadership to the
     * follower furthest along among those that answered within the minimum election timeout, and returns once that node
     * leads (its clients are sent there with NOT_LEADER and resend what was not confirmed). Otherwise the shard would have
     * no leader from the stop until the followers' election timeout, plus an election. Waits at most {@code timeoutMs};
     * if no follower answers, or the transfer fails, the stop goes on as before and the others elect a leader.
     */
    public void handOverLeadershipBeforeStop(long timeoutMs) {
        if (!leads()) {
            return;
        }
        java.util.Optional<FollowerProgress> target = followers().stream()
                .filter(f -> f.lastResponseMs() < leaderAnswerMs)
                .max(java.util.Comparator.comparingLong(FollowerProgress::matchIndex));
        if (target.isEmpty()) {
            LOG.info("Cluster node {} stops as the leader: no follower answered within {} ms to hand the leadership to.",
                    nodeId, leaderAnswerMs);
            return;
        }
        int to = target.get().nodeId();
        try {
            transferLeadership(to, timeoutMs).get(timeoutMs + 1_000, TimeUnit.MILLISECONDS);
            LOG.info("Cluster node {} handed the shard's leadership to node {} before stopping.", nodeId, to);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            LOG.warn("Cluster node {} could not hand the leadership to node {} before stopping ({}); the others elect a leader "
                    + "after their election timeout.", nodeId, to, e.getCause() != null ? e.getCause().getMessage() : e.toString());
        }
    }

    /**
     * Rule R12: raises the cluster's entry level to {@code level} (POST /api/cluster/feature-level); only the leader can.
     * Completes with the level once its entry is applied here; exceptionally with {@link EntryLevelRefused} (this broker
     * does not support it, it is below the current one, or a node does not support it or did not answer) or, off the
     * leader, a {@link BrokerException} NOT_LEADER naming it.
     */
    public CompletableFuture<Integer> raiseEntryLevel(int level) {
        if (!leads()) {
            return notLeaderFailure();
        }
        // Raised to where the settings are recorded (R2), the leader records them at once.
        return entryLevels.raise(level).thenCompose(raised -> recordSettings().handle((recorded, failure) -> raised));
    }

    /**
     * True while this node is the shard's leader. Never once it stopped applying the log (rules R2, R12): its division is
     * closed then, yet Ratis's closed division may still call itself the leader, with none of a leader's state left (a
     * halted leader stopped with SIGTERM failed on its followers' progress, which no longer exists, and never closed).
     */
    private boolean leads() {
        DivisionInfo info = division.info();
        return stateMachine.halted() == null && info != null && info.isLeader();
    }

    /** The failure of an operator's request off the leader: NOT_LEADER, naming the leader. */
    private <T> CompletableFuture<T> notLeaderFailure() {
        return CompletableFuture.failedFuture(new BrokerException(ErrorCode.NOT_LEADER, notLeader()));
    }

    /** Entries submitted here and not yet applied or refused (for tests and metrics). */
    int waitingSubmissions() {
        return submissions.size();
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        entryLevels.close();
        try {
            server.close();
        } catch (IOException e) {
            LOG.warn("Cluster node {}: closing the Raft server failed: {}", nodeId, e.toString());
        }
        if (snapshotServer != null) {
            snapshotServer.close();
        }
    }
}
