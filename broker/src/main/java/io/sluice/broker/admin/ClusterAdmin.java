package io.sluice.broker.admin;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sluice.broker.auth.Action;
import io.sluice.broker.auth.Authorizer;
import io.sluice.broker.cluster.ClusterNode;
import io.sluice.broker.error.BrokerException;

import java.io.IOException;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * The admin API's cluster resources (docs/replication.md, "Operating a cluster"):
 * <pre>
 * GET  /api/cluster          this node's view of its shard: role, leader, term, indexes, counters, followers
 * POST /api/cluster/leader   hand the shard's leadership to a node; body {"nodeId": N}; on the leader only
 * </pre>
 * Both answer 404 {@code not_a_cluster} on a single broker. Moving the leader needs manage on every
 * queue ({@code "*"}): it sends every client of the shard to another node.
 */
final class ClusterAdmin {
    /** How long a leadership transfer may take: the target catching up, then its election. */
    static final long TRANSFER_TIMEOUT_MS = 10_000;

    private final Supplier<ClusterNode> node;
    private final Authorizer authorizer;
    private final ObjectMapper json;

    ClusterAdmin(Supplier<ClusterNode> node, Authorizer authorizer, ObjectMapper json) {
        this.node = node;
        this.authorizer = authorizer;
        this.json = json;
    }

    Map<String, Object> status() {
        return cluster().status();
    }

    /** POST /api/cluster/leader: waits until the target leads (up to {@link #TRANSFER_TIMEOUT_MS}). */
    Map<String, Object> transferLeader(String user, byte[] body) {
        ClusterNode cluster = cluster();
        if (!authorizer.allowedOnEveryQueue(user, Action.MANAGE)) {
            authorizer.countDenial();
            throw new AdminApi.ApiException(403, "access_denied", Authorizer.who(user)
                    + " may not move the cluster's leader (that needs manage on every queue, \"*\")");
        }
        int target = targetNode(body);
        try {
            cluster.transferLeadership(target, TRANSFER_TIMEOUT_MS).get(TRANSFER_TIMEOUT_MS + 5_000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AdminApi.ApiException(503, "interrupted", "the leadership transfer to node " + target + " was interrupted");
        } catch (TimeoutException e) {
            throw new AdminApi.ApiException(503, "transfer_failed", "node " + target + " did not take the shard's leadership within "
                    + TRANSFER_TIMEOUT_MS + " ms; GET /api/cluster shows who leads now");
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() instanceof java.util.concurrent.CompletionException c && c.getCause() != null
                    ? c.getCause() : e.getCause();
            if (cause instanceof IllegalArgumentException) {
                throw new AdminApi.ApiException(400, "unknown_node", cause.getMessage());
            }
            if (cause instanceof BrokerException refused) {
                throw new AdminApi.ApiException(409, "not_leader", "only the shard's leader hands its leadership over: "
                        + refused.getMessage());
            }
            if (cause instanceof ClusterNode.LeadershipNotTransferred) {
                throw new AdminApi.ApiException(503, "transfer_failed", cause.getMessage());
            }
            throw new IllegalStateException("the leadership transfer to node " + target + " failed", cause);
        }
        return Map.of("leaderNodeId", target);
    }

    private int targetNode(byte[] body) {
        JsonNode root;
        try {
            root = body.length == 0 ? null : json.readTree(body);
        } catch (IOException e) {
            throw new AdminApi.ApiException(400, "bad_json", "the body is not valid JSON: " + e.getMessage());
        }
        JsonNode id = root == null ? null : root.get("nodeId");
        if (id == null || !id.isIntegralNumber() || !id.canConvertToInt()) {
            throw new AdminApi.ApiException(400, "bad_request", "the body must be a JSON object naming the new leader, "
                    + "{\"nodeId\": N}, with N a node id of cluster.nodes");
        }
        return id.intValue();
    }

    private ClusterNode cluster() {
        ClusterNode cluster = node.get();
        if (cluster == null) {
            throw new AdminApi.ApiException(404, "not_a_cluster", "this broker is not a cluster node (cluster.enabled is false)");
        }
        return cluster;
    }
}
