package io.sluice.broker.cluster;

import io.sluice.broker.error.BrokerException;
import io.sluice.protocol.ErrorCode;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.protocol.TransferLeadershipRequest;
import org.apache.ratis.protocol.exceptions.NotLeaderException;
import org.apache.ratis.server.RaftServer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Moving the shard's leadership to a node an operator names ({@code POST /api/cluster/leader}, docs/replication.md,
 * "Operating a cluster"): Ratis brings the target's log up to date, then has it start an election at once, which it
 * wins. The checks that only the leader asks and that the target is a member are {@link ClusterNode}'s; this class
 * sends the request and reads Ratis's answer. Any thread; it holds no state of its own.
 */
public final class LeadershipTransfer {
    private static final Logger LOG = LoggerFactory.getLogger(LeadershipTransfer.class);
    private static final long RETRY_PAUSE_MS = 100;

    private final RaftServer server;
    private final RaftGroupId group;
    private final RaftPeerId self;
    private final int nodeId;
    private final ClientId clientId;
    private final LongSupplier nextCall;
    /** The NOT_LEADER sentence naming the leader, for a node that lost its leadership meanwhile. */
    private final Supplier<String> notLeader;

    LeadershipTransfer(RaftServer server, RaftGroupId group, RaftPeerId self, int nodeId, ClientId clientId, LongSupplier nextCall,
                       Supplier<String> notLeader) {
        this.server = server;
        this.group = group;
        this.self = self;
        this.nodeId = nodeId;
        this.clientId = clientId;
        this.nextCall = nextCall;
        this.notLeader = notLeader;
    }

    /**
     * Completes once node {@code target} leads; exceptionally with {@link LeadershipNotTransferred} if it does not
     * within {@code timeoutMs} (the leader stays, or an election picks one), or a {@link BrokerException} NOT_LEADER if
     * this node is not the leader any more.
     *
     * <p>A transfer that Ratis gives up while this node leads again is asked again, as long as time is left: Ratis tells
     * the target to run for leader as soon as its log matches the leader's, and an entry the leader appends in between
     * leaves the target's log shorter than the others', which then refuse it their votes; the leader is re-elected and
     * Ratis answers DIFFERENT_LEADER (seen in ClusterOperationsTest, when Ratis still appended a commit-index entry after
     * every commit; RaftSettings turns those off, which removed the usual cause, and a third node could win then).
     */
    CompletableFuture<Void> to(int target, long timeoutMs) {
        return attempt(target, timeoutMs, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs), 1);
    }

    private CompletableFuture<Void> attempt(int target, long timeoutMs, long deadlineNanos, int attempt) {
        long leftMs = Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime()));
        TransferLeadershipRequest request = new TransferLeadershipRequest(clientId, self, group, nextCall.getAsLong(),
                RaftPeerId.valueOf(ClusterMember.peerId(target)), leftMs);
        CompletableFuture<RaftClientReply> reply;
        try {
            reply = server.transferLeadershipAsync(request);
        } catch (IOException | RuntimeException e) {
            reply = CompletableFuture.failedFuture(e);
        }
        return reply.handle((answer, failure) -> {
            Throwable refusal = failure != null ? failure : answer.isSuccess() ? null : answer.getException();
            if (refusal == null) {
                LOG.info("Cluster node {} handed the shard's leadership to node {}.", nodeId, target);
                return CompletableFuture.<Void>completedFuture(null);
            }
            if (refusal instanceof NotLeaderException) {
                throw new BrokerException(ErrorCode.NOT_LEADER, notLeader.get());
            }
            if (System.nanoTime() < deadlineNanos && leads()) {
                LOG.info("Cluster node {}: handing the leadership to node {} failed ({}); node {} leads again and asks again "
                        + "(attempt {}).", nodeId, target, refusal.getMessage(), nodeId, attempt + 1);
                // A pause, so that a refusal that comes at once (whatever it is) does not spin until the deadline.
                return CompletableFuture.runAsync(() -> { }, CompletableFuture.delayedExecutor(RETRY_PAUSE_MS, TimeUnit.MILLISECONDS))
                        .thenCompose(paused -> attempt(target, timeoutMs, deadlineNanos, attempt + 1));
            }
            throw new LeadershipNotTransferred("node " + target + " did not take the shard's leadership from node "
                    + nodeId + " within " + timeoutMs + " ms (" + attempt + (attempt == 1 ? " attempt" : " attempts") + "): "
                    + refusal.getMessage() + (leads() ? "; node " + nodeId + " still leads" : "; now " + notLeader.get()));
        }).thenCompose(next -> next);
    }

    private boolean leads() {
        try {
            return server.getDivision(group).getInfo().isLeader();
        } catch (IOException e) {
            return false;
        }
    }

    /** A leadership transfer that did not happen in time; the reason says what Ratis answered. */
    public static final class LeadershipNotTransferred extends RuntimeException {
        private static final long serialVersionUID = 1L;

        LeadershipNotTransferred(String message) {
            super(message);
        }
    }
}
