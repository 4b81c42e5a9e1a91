package io.sluice.broker.admin;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sluice.broker.auth.Action;
import io.sluice.broker.auth.Authorizer;
import io.sluice.broker.cluster.ClusterMember;
import io.sluice.broker.cluster.ClusterNode;
import io.sluice.broker.cluster.MembershipChanges;
import io.sluice.broker.error.BrokerException;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * The admin API's cluster resources (docs/replication.md, "Operating a cluster"):
 * <pre>
 * GET  /api/cluster          this node's view of its shard: role, leader, term, indexes, counters, followers
 * POST /api/cluster/leader   hand the shard's leadership to a node; body {"nodeId": N}; on the leader only
 * POST /api/cluster/nodes    add a node; body {"id", "host", "raftPort", "clientPort", "snapshotPort"}; on the leader only
 * DELETE /api/cluster/nodes/N remove node N (not the leader itself); on the leader only
 * </pre>
 * All answer 404 {@code not_a_cluster} on a single broker. Moving the leader and changing the members need manage on
 * every queue ({@code "*"}): they send clients to other nodes, and change who holds every queue.
 */
final class ClusterAdmin {
    /** How long a leadership transfer may take: the target catching up, then its election. */
    static final long TRANSFER_TIMEOUT_MS = 10_000;
    /**
     * How long adding or removing a node may take before the request answers 503: an added node catches up first (by
     * entries, or by fetching a snapshot of every queue), then two configurations are committed.
     */
    static final long MEMBERSHIP_TIMEOUT_MS = 120_000;

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
        permitEveryQueue(user, "move the cluster's leader");
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

    /** POST /api/cluster/nodes: waits until the configuration with the new node is committed (up to {@link #MEMBERSHIP_TIMEOUT_MS}). */
    Map<String, Object> addNode(String user, byte[] body) {
        ClusterNode cluster = cluster();
        permitEveryQueue(user, "add a node to the cluster");
        ClusterMember added = newMember(body);
        awaitChange(cluster.addNode(added, MEMBERSHIP_TIMEOUT_MS), "adding node " + added.id());
        return Map.of("added", added.id(), "members", cluster.status().get("members"));
    }

    /** DELETE /api/cluster/nodes/{id}: waits until the configuration without it is committed. */
    Map<String, Object> removeNode(String user, String idText) {
        ClusterNode cluster = cluster();
        permitEveryQueue(user, "remove a node from the cluster");
        int id;
        try {
            id = Integer.parseInt(idText);
        } catch (NumberFormatException e) {
            throw new AdminApi.ApiException(400, "bad_request", "'" + idText + "' is not a node id; DELETE /api/cluster/nodes/N takes a number");
        }
        awaitChange(cluster.removeNode(id, MEMBERSHIP_TIMEOUT_MS), "removing node " + id);
        return Map.of("removed", id, "members", cluster.status().get("members"));
    }

    private void awaitChange(CompletableFuture<Void> change, String what) {
        try {
            change.get(MEMBERSHIP_TIMEOUT_MS + 5_000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AdminApi.ApiException(503, "interrupted", what + " was interrupted");
        } catch (TimeoutException e) {
            throw new AdminApi.ApiException(503, "change_failed", what + " was not committed within " + MEMBERSHIP_TIMEOUT_MS
                    + " ms; it may still complete: GET /api/cluster shows the members and whether a change is in progress");
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() instanceof java.util.concurrent.CompletionException c && c.getCause() != null
                    ? c.getCause() : e.getCause();
            if (cause instanceof MembershipChanges.Refused refused) {
                int status = switch (refused.code()) {
                    case "unknown_node" -> 404;
                    case "snapshot_port_required" -> 400;
                    default -> 409; // duplicate_node, duplicate_address, is_leader, last_node, change_in_progress
                };
                throw new AdminApi.ApiException(status, refused.code(), refused.getMessage());
            }
            if (cause instanceof BrokerException refused) {
                throw new AdminApi.ApiException(409, "not_leader", "only the shard's leader changes its members: " + refused.getMessage());
            }
            if (cause instanceof MembershipChanges.NotChanged) {
                throw new AdminApi.ApiException(503, "change_failed", cause.getMessage());
            }
            throw new IllegalStateException(what + " failed", cause);
        }
    }

    /** The body of POST /api/cluster/nodes: every field but snapshotPort required, each a number but the host. */
    private ClusterMember newMember(byte[] body) {
        JsonNode root = readJson(body);
        String shape = "the body must be a JSON object {\"id\": N, \"host\": \"H\", \"raftPort\": P, \"clientPort\": P, "
                + "\"snapshotPort\": P} (snapshotPort 0 or absent when the cluster serves no snapshots)";
        if (root == null || !root.isObject()) {
            throw new AdminApi.ApiException(400, "bad_request", shape);
        }
        for (String field : List.of("id", "raftPort", "clientPort", "snapshotPort")) {
            JsonNode v = root.get(field);
            if (v == null && field.equals("snapshotPort")) {
                continue;
            }
            if (v == null || !v.isIntegralNumber() || !v.canConvertToInt()) {
                throw new AdminApi.ApiException(400, "bad_request", (v == null ? "'" + field + "' is missing" : "'" + field
                        + "' is not a whole number") + "; " + shape);
            }
        }
        JsonNode host = root.get("host");
        if (host == null || !host.isTextual()) {
            throw new AdminApi.ApiException(400, "bad_request", "'host' is missing or not a string; " + shape);
        }
        try {
            return new ClusterMember(root.get("id").intValue(), host.textValue(), root.get("raftPort").intValue(),
                    root.get("clientPort").intValue(), root.path("snapshotPort").asInt(0));
        } catch (IllegalArgumentException e) {
            throw new AdminApi.ApiException(400, "bad_request", e.getMessage());
        }
    }

    private void permitEveryQueue(String user, String what) {
        if (!authorizer.allowedOnEveryQueue(user, Action.MANAGE)) {
            authorizer.countDenial();
            throw new AdminApi.ApiException(403, "access_denied", Authorizer.who(user)
                    + " may not " + what + " (that needs manage on every queue, \"*\")");
        }
    }

    private JsonNode readJson(byte[] body) {
        try {
            return body.length == 0 ? null : json.readTree(body);
        } catch (IOException e) {
            throw new AdminApi.ApiException(400, "bad_json", "the body is not valid JSON: " + e.getMessage());
        }
    }

    private int targetNode(byte[] body) {
        JsonNode root = readJson(body);
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
