package io.sluice.broker.cluster;

import org.apache.ratis.client.RaftClient;
import org.apache.ratis.client.RaftClientConfigKeys;
import org.apache.ratis.conf.Parameters;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.retry.RetryPolicies;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.raftlog.RaftLog;
import org.apache.ratis.util.TimeDuration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.IntFunction;

/**
 * The leader's side of entry levels (rule R12 of docs/replication.md): it finalizes the newest level this broker supports
 * when it leads a brand-new cluster, and raises the level on an operator's request once it has asked every member of the
 * shard, over Raft's own channel (a stale read of {@link #QUERY}, which each node's state machine answers with the level it
 * supports), that each supports it.
 *
 * <p>Threads: {@link #finalizeIfNew} on Ratis's threads (leader ready) or a connection's; {@link #raise} on the admin
 * API's; {@link #supportedByNode} on any. Each round of questions has a client of its own and a thread per peer
 * ({@link #askEveryNode}).
 */
final class EntryLevelControl implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(EntryLevelControl.class);
    /** What a node is asked; its state machine answers the entry level its broker supports, in decimal. */
    static final String QUERY = "supported-entry-level";
    /** How long a node has to answer: the raise is refused naming it if it does not. */
    private static final long ASK_TIMEOUT_MS = 3_000;
    private static final long STATUS_ASK_EVERY_MS = 5_000;

    private final FinalizedEntryLevel level;
    private final RaftServer server;
    private final RaftGroupId group;
    private final RaftPeerId self;
    /** Submits a level entry; completes once it is applied here, exceptionally if Raft refused it. */
    private final IntFunction<CompletableFuture<Void>> submitLevel;
    /** "node 3" for peer n3. */
    private final Function<RaftPeerId, String> describe;
    private final Parameters tls;
    /** Threads that wait for the peers' answers, one per peer asked at once; idle ones end after a minute. */
    private final java.util.concurrent.ExecutorService askers = new java.util.concurrent.ThreadPoolExecutor(0, 16, 60,
            TimeUnit.SECONDS, new java.util.concurrent.SynchronousQueue<>(), runnable -> {
                Thread thread = new Thread(runnable, "sluice-entry-level-ask");
                thread.setDaemon(true);
                return thread;
            });
    /** When the members were last asked (for the status, which asks again at most every {@link #STATUS_ASK_EVERY_MS}). */
    private volatile long lastAskedNanos = System.nanoTime() - TimeUnit.DAYS.toNanos(1);
    /** The last answers, peer to level (0: did not answer), for the status. */
    private volatile Map<String, Integer> lastAnswers = Map.of();

    EntryLevelControl(FinalizedEntryLevel level, RaftServer server, RaftGroupId group, RaftPeerId self,
                      IntFunction<CompletableFuture<Void>> submitLevel, Function<RaftPeerId, String> describe, Parameters tls) {
        this.level = level;
        this.server = server;
        this.group = group;
        this.self = self;
        this.submitLevel = submitLevel;
        this.describe = describe;
        this.tls = tls;
    }

    /**
     * On a leader that just became ready: if no level was ever finalized and the committed log holds no state change at
     * all, the cluster is brand new, nothing older can have written to it, and the newest level this broker supports is
     * finalized. A cluster of brokers that predate levels (its log holds entries and no level entry) stays at
     * {@link EntryLevels#BEFORE_LEVELS} until an operator raises it. Completes once the level entry is applied here (or
     * refused), at once if none is submitted: the leader serves only then, so that its first clients see the level.
     */
    CompletableFuture<Void> finalizeIfNew() {
        CompletableFuture<Void> none = CompletableFuture.completedFuture(null);
        if (level.finalized() != 0) {
            return none;
        }
        try {
            RaftServer.Division division = server.getDivision(group);
            if (division.getStateMachine().getLatestSnapshot() != null) {
                return none;
            }
            RaftLog log = division.getRaftLog();
            long committed = log.getLastCommittedIndex();
            if (log.getStartIndex() > 0) {
                return none; // purged after a snapshot: entries were there
            }
            for (long i = 0; i <= committed; i++) {
                LogEntryProto entry = log.get(i);
                if (entry == null || entry.hasStateMachineLogEntry()) {
                    return none;
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.warn("Could not tell whether the shard's log is empty, so no entry level is finalized now: {}", e.toString());
            return none;
        }
        int newest = level.supported();
        LOG.info("The shard's log holds no entry yet: a new cluster, whose entry level is finalized at {}, the newest this broker "
                + "supports.", newest);
        return submitLevel.apply(newest).whenComplete((applied, failure) -> {
            if (failure != null) {
                LOG.warn("Finalizing entry level {} of the new cluster was not committed ({}); the next leader tries again.", newest,
                        failure.toString());
            }
        });
    }

    /**
     * Raises the cluster's entry level to {@code target} (on the leader; the caller checked). Completes with the level once
     * its entry is applied here; exceptionally with {@link EntryLevelRefused} if this broker does not support it, it is below the
     * current level, or a member of the shard does not support it or did not answer.
     */
    CompletableFuture<Integer> raise(int target) {
        int current = level.finalized() == 0 ? EntryLevels.BEFORE_LEVELS : level.finalized();
        if (target > level.supported()) {
            return CompletableFuture.failedFuture(new EntryLevelRefused(EntryLevelRefused.Reason.UNSUPPORTED_HERE, "entry level " + target
                    + " is above what this node's broker supports (" + level.supported() + "); upgrade every node first"));
        }
        if (target < current) {
            return CompletableFuture.failedFuture(new EntryLevelRefused(EntryLevelRefused.Reason.DOWNGRADE, "entry level " + target
                    + " is below the cluster's finalized level " + current + "; a level is never lowered, since entries of "
                    + "level " + current + " may already be in the log"));
        }
        return askEveryNode().thenCompose(answers -> {
            List<String> behind = new ArrayList<>();
            answers.forEach((node, supported) -> {
                if (supported == 0) {
                    behind.add(node + " did not answer (down, stopped applying the log, or a broker from before entry levels)");
                } else if (supported < target) {
                    behind.add(node + " supports entry levels up to " + supported);
                }
            });
            if (!behind.isEmpty()) {
                throw new EntryLevelRefused(EntryLevelRefused.Reason.NODES_BEHIND, "entry level " + target + " is not supported by every node: "
                        + String.join("; ", behind) + ". Upgrade those nodes' brokers first");
            }
            if (target == level.finalized()) {
                return CompletableFuture.completedFuture(target);
            }
            LOG.info("Every node of the shard supports entry level {} ({}); finalizing it.", target, answers);
            return submitLevel.apply(target).thenApply(applied -> target);
        });
    }

    /**
     * Each member's supported level as last asked (0: it did not answer), this node's own included, by description; asks
     * again in the background if the answers are older than {@link #STATUS_ASK_EVERY_MS}, so the status never waits.
     */
    /** Adds the level this node writes at, whether a level entry finalized it, and what every node supports to a node's status. */
    void describe(Map<String, Object> status) {
        status.put("entryLevel", level.writable());
        status.put("entryLevelFinalized", level.finalized() != 0);
        status.put("supportedEntryLevels", supportedByNode());
    }

    Map<String, Integer> supportedByNode() {
        long now = System.nanoTime();
        long last = lastAskedNanos;
        if (now - last > TimeUnit.MILLISECONDS.toNanos(STATUS_ASK_EVERY_MS)) {
            lastAskedNanos = now;
            askEveryNode();
        }
        Map<String, Integer> all = new TreeMap<>(lastAnswers);
        all.put(describe.apply(self), level.supported());
        return all;
    }

    /**
     * Asks every other member of the shard (its current configuration, listeners included) the level it supports, each
     * on a thread of its own with a blocking call (Ratis's ordered asynchronous calls fail every call of a client once one
     * fails, and a peer that is down must not hide the others' answers), through a client made for this round only (one
     * kept would hold a closed connection to a peer that restarted). Never fails: a peer that does not answer is 0.
     */
    CompletableFuture<Map<String, Integer>> askEveryNode() {
        List<RaftPeer> peers;
        RaftClient client;
        try {
            peers = new ArrayList<>(server.getDivision(group).getRaftConf().getAllPeers());
            client = asker(peers);
        } catch (IOException | RuntimeException e) {
            LOG.warn("Could not ask the shard's nodes which entry level they support: {}", e.toString());
            return CompletableFuture.completedFuture(Map.of());
        }
        Map<String, CompletableFuture<Integer>> asked = new TreeMap<>();
        for (RaftPeer peer : peers) {
            if (peer.getId().equals(self)) {
                continue;
            }
            String node = describe.apply(peer.getId());
            CompletableFuture<Integer> answer;
            try {
                answer = CompletableFuture.supplyAsync(() -> ask(client, peer.getId(), node), askers);
            } catch (java.util.concurrent.RejectedExecutionException e) { // stopping, or too many rounds at once
                answer = CompletableFuture.completedFuture(0);
            }
            asked.put(node, answer.completeOnTimeout(0, ASK_TIMEOUT_MS + 1_000, TimeUnit.MILLISECONDS));
        }
        return CompletableFuture.allOf(asked.values().toArray(CompletableFuture[]::new)).thenApply(done -> {
            closeQuietly(client);
            Map<String, Integer> answers = new TreeMap<>();
            asked.forEach((node, answer) -> answers.put(node, answer.join()));
            lastAnswers = answers;
            return answers;
        });
    }

    /** The level {@code peer} supports, or 0 if it does not answer in time (logged with the reason). */
    private static int ask(RaftClient client, RaftPeerId peer, String node) {
        try {
            RaftClientReply answer = client.io().sendStaleRead(Message.valueOf(QUERY), 0, peer);
            if (answer.isSuccess()) {
                return parse(answer);
            }
            LOG.info("{} did not say which entry level it supports: {}", node, answer.getException());
        } catch (IOException | RuntimeException e) {
            LOG.info("{} did not say which entry level it supports: {}", node, e.toString());
        }
        return 0;
    }

    private static void closeQuietly(RaftClient client) {
        try {
            client.close();
        } catch (IOException e) {
            LOG.warn("Closing the client that asked the nodes their entry levels failed: {}", e.toString());
        }
    }

    private static int parse(RaftClientReply answer) {
        try {
            return Integer.parseInt(answer.getMessage().getContent().toString(StandardCharsets.UTF_8).trim());
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    /**
     * A client that asks the peers, to their Raft ports (not the clients' ports, which their peers' client addresses
     * name for NOT_LEADER hints). It never retries: an answer missing is an answer.
     */
    private RaftClient asker(List<RaftPeer> peers) {
        List<RaftPeer> raftPorts = new ArrayList<>();
        for (RaftPeer peer : peers) {
            raftPorts.add(RaftPeer.newBuilder().setId(peer.getId()).setAddress(peer.getAddress()).build());
        }
        RaftProperties properties = new RaftProperties();
        RaftClientConfigKeys.Rpc.setRequestTimeout(properties, TimeDuration.valueOf(ASK_TIMEOUT_MS, TimeUnit.MILLISECONDS));
        RaftClient.Builder builder = RaftClient.newBuilder().setClientId(ClientId.randomId()).setRaftGroup(RaftGroup.valueOf(group, raftPorts))
                .setProperties(properties).setRetryPolicy(RetryPolicies.noRetry());
        if (tls != null) {
            builder.setParameters(tls);
        }
        return builder.build();
    }

    @Override
    public void close() {
        askers.shutdownNow();
    }
}
