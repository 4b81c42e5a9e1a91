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
     */
    CompletableFuture<Void> to(int target, long timeoutMs) {
        TransferLeadershipRequest request = new TransferLeadershipRequest(clientId, self, group, nextCall.getAsLong(),
                RaftPeerId.valueOf(ClusterMember.peerId(target)), timeoutMs);
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
                return null;
            }
            if (refusal instanceof NotLeaderException) {
                throw new BrokerException(ErrorCode.NOT_LEADER, notLeader.get());
            }
            throw new LeadershipNotTransferred("node " + target + " did not take the shard's leadership from node "
                    + nodeId + " within " + timeoutMs + " ms: " + refusal.getMessage());
        });
    }

    /** A leadership transfer that did not happen in time; the reason says what Ratis answered. */
    public static final class LeadershipNotTransferred extends RuntimeException {
        private static final long serialVersionUID = 1L;

        LeadershipNotTransferred(String message) {
            super(message);
        }
    }
}
