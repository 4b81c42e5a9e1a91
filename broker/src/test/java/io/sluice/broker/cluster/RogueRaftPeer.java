package io.sluice.broker.cluster;

import io.sluice.protocol.DeleteQueueFrame;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.client.RaftClientConfigKeys;
import org.apache.ratis.conf.Parameters;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.grpc.GrpcConfigKeys;
import org.apache.ratis.grpc.GrpcTlsConfig;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.retry.RetryPolicies;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.util.TimeDuration;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * For tests: a Raft client that is no node of the cluster, submitting a well-formed DELETE_QUEUE entry straight to
 * the nodes' Raft ports, as anyone who reaches those ports could (docs/security.md, "Between the nodes").
 */
public final class RogueRaftPeer {
    private RogueRaftPeer() {
    }

    /**
     * Submits a delete of {@code queue} to the shard through the Raft ports {@code raftAddresses} (host:port, node 1
     * first), over TLS with {@code tls} (null: plain). Returns true if the shard committed it, false if it was refused
     * or could not be sent within {@code timeoutMs}.
     */
    public static boolean deleteQueue(List<String> raftAddresses, String queue, GrpcTlsConfig tls, long timeoutMs) {
        List<RaftPeer> peers = new ArrayList<>();
        for (int i = 0; i < raftAddresses.size(); i++) {
            peers.add(RaftPeer.newBuilder().setId("n" + (i + 1)).setAddress(raftAddresses.get(i)).build());
        }
        RaftProperties properties = new RaftProperties();
        RaftClientConfigKeys.Rpc.setRequestTimeout(properties, TimeDuration.valueOf(timeoutMs, TimeUnit.MILLISECONDS));
        Parameters parameters = new Parameters();
        if (tls != null) {
            GrpcConfigKeys.Client.setTlsConf(parameters, tls);
            GrpcConfigKeys.Admin.setTlsConf(parameters, tls);
        }
        byte[] entry = ShardEntry.encode(99, 1, queue, new DeleteQueueFrame(0, queue), 1 << 20);
        try (RaftClient client = RaftClient.newBuilder().setProperties(properties).setParameters(parameters)
                .setRaftGroup(RaftGroup.valueOf(ClusterNode.SHARD_GROUP, peers))
                .setRetryPolicy(RetryPolicies.retryUpToMaximumCountWithFixedSleep(3, TimeDuration.valueOf(100, TimeUnit.MILLISECONDS)))
                .build()) {
            RaftClientReply reply = client.async().send(Message.valueOf(ByteString.copyFrom(entry))).get(timeoutMs * 5, TimeUnit.MILLISECONDS);
            return reply.isSuccess();
        } catch (Exception e) {
            return false;
        }
    }
}
