package io.sluice.broker.admin;

import com.fasterxml.jackson.databind.JsonNode;
import io.sluice.broker.auth.Action;
import io.sluice.broker.auth.Authorizer;
import io.sluice.broker.cluster.ClusterMember;
import io.sluice.broker.cluster.ClusterNode;
import io.sluice.broker.cluster.EntryLevelRefused;
import io.sluice.broker.cluster.LeadershipTransfer;
import io.sluice.broker.cluster.MembershipChanges;
import io.sluice.broker.error.BrokerException;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The admin API's cluster resources (docs/replication.md, "Operating a cluster"):
 * <pre>
 * GET  /api/cluster          this node's view of its shard: role, leader, term, indexes, counters, followers
 * POST /api/cluster/leader   hand the shard's leadership to a node; body {"nodeId": N}; on the leader only
 * POST /api/cluster/feature-level   raise the cluster's entry level (rule R12); body {"level": N}; on the leader only
 * POST /api/cluster/nodes    add a node; body {"id", "host", "raftPort", "clientPort", "snapshotPort"}; on the leader only
 * DELETE /api/cluster/nodes/N remove node N (not the leader itself); on the leader only
 * </pre>
 * All answer 404 {@code not_a_cluster} on a single broker. Moving the leader, raising the level and changing the members
 * need manage on every queue ({@code "*"}): they send clients to other nodes, change what every node must read, or
 * change who holds every queue.
 */
final class ClusterAdmin {
    /** How long raising the entry level may take: asking every node (3 s each at most, at once), then a commit. */
    static final long RAISE_TIMEOUT_MS = 15_000;
    /** How long a leadership transfer may take: the target catching up, then its election. */
    static final long TRANSFER_TIMEOUT_MS = 10_000;
    /**
     * How long adding or removing a node may take before the request answers 503: an added node catches up first (by
     * entries, or by fetching a snapshot of every queue), then two configurations are committed.
     */
    static final long MEMBERSHIP_TIMEOUT_MS = 120_000;

    private final Supplier<ClusterNode> node;
    private final Authorizer authorizer;
    private final AdminJson json;

    ClusterAdmin(Supplier<ClusterNode> node, Authorizer authorizer, AdminJson json) {
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
        requireManageEverything(user, "move the cluster's leader");
        int target = intField(body, "nodeId", "the body must be a JSON object naming the new leader, "
                + "{\"nodeId\": N}, with N a node id of cluster.nodes");
        await(cluster.transferLeadership(target, TRANSFER_TIMEOUT_MS), TRANSFER_TIMEOUT_MS + 5_000,
                "the leadership transfer to node " + target,
                new ApiException(503, "transfer_failed", "node " + target + " did not take the shard's leadership within "
                        + TRANSFER_TIMEOUT_MS + " ms; GET /api/cluster shows who leads now"),
                cause -> {
                    if (cause instanceof IllegalArgumentException) {
                        return new ApiException(400, "unknown_node", cause.getMessage());
                    }
                    if (cause instanceof BrokerException refused) {
                        return new ApiException(409, "not_leader", "only the shard's leader hands its leadership over: "
                                + refused.getMessage());
                    }
                    if (cause instanceof LeadershipTransfer.LeadershipNotTransferred) {
                        return new ApiException(503, "transfer_failed", cause.getMessage());
                    }
                    return null;
                });
        return Map.of("leaderNodeId", target);
    }

    /**
     * POST /api/cluster/feature-level (rule R12 of docs/replication.md): waits until the level's entry is applied on the
     * leader. 400 for a level the leader's broker does not support or below the finalized one, 409 naming the nodes that
     * do not support it (or did not answer), 409 {@code not_leader} off the leader.
     */
    Map<String, Object> raiseEntryLevel(String user, byte[] body) {
        ClusterNode cluster = cluster();
        requireManageEverything(user, "raise the cluster's entry level");
        String usage = "the body must be a JSON object naming the entry level, {\"level\": N}, with N from 1 to the newest "
                + "level every node's broker supports (GET /api/cluster lists them)";
        int level = intField(body, "level", usage);
        if (level < 1) {
            throw new ApiException(400, "bad_request", usage + "; got " + level);
        }
        int finalized = await(cluster.raiseEntryLevel(level), RAISE_TIMEOUT_MS, "raising the entry level to " + level,
                new ApiException(503, "not_committed", "entry level " + level + " was not committed within "
                        + RAISE_TIMEOUT_MS + " ms; it may still be: GET /api/cluster shows the level"),
                cause -> {
                    if (cause instanceof EntryLevelRefused refused) {
                        return new ApiException(refused.reason() == EntryLevelRefused.Reason.NODES_BEHIND ? 409 : 400,
                                switch (refused.reason()) {
                                    case NODES_BEHIND -> "nodes_behind";
                                    case DOWNGRADE -> "downgrade";
                                    case UNSUPPORTED_HERE -> "unsupported_level";
                                }, refused.getMessage());
                    }
                    if (cause instanceof BrokerException notLeader) {
                        return new ApiException(409, "not_leader", "only the shard's leader raises the entry level: "
                                + notLeader.getMessage());
                    }
                    return null;
                });
        return Map.of("entryLevel", finalized);
    }

    /** POST /api/cluster/nodes: waits until the configuration with the new node is committed (up to {@link #MEMBERSHIP_TIMEOUT_MS}). */
    Map<String, Object> addNode(String user, byte[] body) {
        ClusterNode cluster = cluster();
        requireManageEverything(user, "add a node to the cluster");
        ClusterMember added = newMember(body);
        awaitChange(cluster.addNode(added, MEMBERSHIP_TIMEOUT_MS), "adding node " + added.id());
        return Map.of("added", added.id(), "members", cluster.status().get("members"));
    }

    /** DELETE /api/cluster/nodes/{id}: waits until the configuration without it is committed. */
    Map<String, Object> removeNode(String user, String idText) {
        ClusterNode cluster = cluster();
        requireManageEverything(user, "remove a node from the cluster");
        int id;
        try {
            id = Integer.parseInt(idText);
        } catch (NumberFormatException e) {
            throw new ApiException(400, "bad_request", "'" + idText + "' is not a node id; DELETE /api/cluster/nodes/N takes a number");
        }
        awaitChange(cluster.removeNode(id, MEMBERSHIP_TIMEOUT_MS), "removing node " + id);
        return Map.of("removed", id, "members", cluster.status().get("members"));
    }

    private void awaitChange(CompletableFuture<Void> change, String what) {
        await(change, MEMBERSHIP_TIMEOUT_MS + 5_000, what,
                new ApiException(503, "change_failed", what + " was not committed within " + MEMBERSHIP_TIMEOUT_MS
                        + " ms; it may still complete: GET /api/cluster shows the members and whether a change is in progress"),
                cause -> {
                    if (cause instanceof MembershipChanges.Refused refused) {
                        int status = switch (refused.code()) {
                            case "unknown_node" -> 404;
                            case "snapshot_port_required" -> 400;
                            default -> 409; // duplicate_node, duplicate_address, is_leader, last_node, change_in_progress
                        };
                        return new ApiException(status, refused.code(), refused.getMessage());
                    }
                    if (cause instanceof BrokerException refused) {
                        return new ApiException(409, "not_leader", "only the shard's leader changes its members: "
                                + refused.getMessage());
                    }
                    if (cause instanceof MembershipChanges.NotChanged) {
                        return new ApiException(503, "change_failed", cause.getMessage());
                    }
                    return null;
                });
    }

    /** The body of POST /api/cluster/nodes: every field but snapshotPort required, each a number but the host. */
    private ClusterMember newMember(byte[] body) {
        JsonNode root = json.read(body);
        String shape = "the body must be a JSON object {\"id\": N, \"host\": \"H\", \"raftPort\": P, \"clientPort\": P, "
                + "\"snapshotPort\": P} (snapshotPort 0 or absent when the cluster serves no snapshots)";
        if (root == null || !root.isObject()) {
            throw new ApiException(400, "bad_request", shape);
        }
        for (String field : List.of("id", "raftPort", "clientPort", "snapshotPort")) {
            JsonNode v = root.get(field);
            if (v == null && field.equals("snapshotPort")) {
                continue;
            }
            if (v == null || !v.isIntegralNumber() || !v.canConvertToInt()) {
                throw new ApiException(400, "bad_request", (v == null ? "'" + field + "' is missing" : "'" + field
                        + "' is not a whole number") + "; " + shape);
            }
        }
        JsonNode host = root.get("host");
        if (host == null || !host.isTextual()) {
            throw new ApiException(400, "bad_request", "'host' is missing or not a string; " + shape);
        }
        try {
            return new ClusterMember(root.get("id").intValue(), host.textValue(), root.get("raftPort").intValue(),
                    root.get("clientPort").intValue(), root.path("snapshotPort").asInt(0));
        } catch (IllegalArgumentException e) {
            throw new ApiException(400, "bad_request", e.getMessage());
        }
    }

    /**
     * The value of {@code future} within {@code timeoutMs}; {@code onTimeout} if it takes longer, 503 if interrupted, and
     * for a failure what {@code onFailure} makes of its cause (null: an unexpected failure, an internal error).
     */
    private static <T> T await(CompletableFuture<T> future, long timeoutMs, String what, ApiException onTimeout,
                               Function<Throwable, ApiException> onFailure) {
        try {
            return future.get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ApiException(503, "interrupted", what + " was interrupted");
        } catch (TimeoutException e) {
            throw onTimeout;
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() instanceof java.util.concurrent.CompletionException c && c.getCause() != null
                    ? c.getCause() : e.getCause();
            ApiException answer = onFailure.apply(cause);
            if (answer != null) {
                throw answer;
            }
            throw new IllegalStateException(what + " failed", cause);
        }
    }

    private void requireManageEverything(String user, String what) {
        if (!authorizer.allowedOnEveryQueue(user, Action.MANAGE)) {
            authorizer.countDenial();
            throw new ApiException(403, "access_denied", Authorizer.who(user)
                    + " may not " + what + " (that needs manage on every queue, \"*\")");
        }
    }

    /** The integer {@code field} of the body's JSON object; 400 with {@code usage} if there is none. */
    private int intField(byte[] body, String field, String usage) {
        JsonNode root = json.read(body);
        JsonNode value = root == null ? null : root.get(field);
        if (value == null || !value.isIntegralNumber() || !value.canConvertToInt()) {
            throw new ApiException(400, "bad_request", usage);
        }
        return value.intValue();
    }

    private ClusterNode cluster() {
        ClusterNode cluster = node.get();
        if (cluster == null) {
            throw new ApiException(404, "not_a_cluster", "this broker is not a cluster node (cluster.enabled is false)");
        }
        return cluster;
    }
}
