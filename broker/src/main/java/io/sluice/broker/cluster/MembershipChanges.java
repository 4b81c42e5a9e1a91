package io.sluice.broker.cluster;

import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.protocol.SetConfigurationRequest;
import org.apache.ratis.protocol.exceptions.ReconfigurationInProgressException;
import org.apache.ratis.protocol.exceptions.SetConfigurationException;
import org.apache.ratis.server.RaftServer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Adding a node to the shard and removing one (docs/replication.md, "Adding and removing a node"), on the leader:
 * Ratis's {@code setConfiguration}. Adding first has Ratis bring the new node's log up to date as a staging member
 * (by entries, or by a snapshot it fetches, rule R4), then commits the joint configuration (old and new members: every
 * entry meanwhile needs a majority of each) and then the new one; the change completes once the new configuration is
 * committed. The checks here refuse what would make no sense before Ratis is asked ({@link Refused}, with a code the
 * admin API answers with).
 *
 * <p>Threads: thread-safe; Ratis completes the changes on its own threads, which only log.
 */
public final class MembershipChanges {
    private static final Logger LOG = LoggerFactory.getLogger(MembershipChanges.class);

    private final RaftServer server;
    private final RaftGroupId group;
    private final RaftPeerId self;
    private final ClientId clientId;
    private final LongSupplier nextCall;
    private final ClusterMembers members;
    /**
     * The change asked of Ratis on this node and not answered yet ("add node 4"), or null: Ratis's configuration shows a
     * change only once the joint configuration is in the log, not while it catches a new node up, which can be long.
     */
    private final java.util.concurrent.atomic.AtomicReference<String> pending = new java.util.concurrent.atomic.AtomicReference<>();

    MembershipChanges(RaftServer server, RaftGroupId group, RaftPeerId self, ClientId clientId, LongSupplier nextCall,
                      ClusterMembers members) {
        this.server = server;
        this.group = group;
        this.self = self;
        this.clientId = clientId;
        this.nextCall = nextCall;
        this.members = members;
    }

    /** A change refused before Ratis was asked, or by Ratis for a reason the operator can act on; {@code code} says which. */
    public static final class Refused extends RuntimeException {
        private final String code;

        Refused(String code, String message) {
            super(message);
            this.code = code;
        }

        /** unknown_node, duplicate_node, duplicate_address, is_leader, last_node, change_in_progress or snapshot_port_required. */
        public String code() {
            return code;
        }
    }

    /** A change Ratis did not commit in time, or failed for another reason; the message says what it answered. */
    public static final class NotChanged extends RuntimeException {
        NotChanged(String message) {
            super(message);
        }
    }

    /**
     * Refuses adding {@code added} to {@code current}: an id already a member, or a host and port one of them already
     * uses (or that {@code added} uses twice), or no snapshot port when the cluster serves snapshots (the new node could
     * not serve one as leader, and the log would no longer be purged past it).
     */
    static void checkAdd(Collection<ClusterMember> current, ClusterMember added, boolean snapshotsServed) {
        for (ClusterMember m : current) {
            if (m.id() == added.id()) {
                throw new Refused("duplicate_node", "node " + added.id() + " is a member already (" + m.host() + ", raft-port "
                        + m.raftPort() + "); remove it first to change its addresses");
            }
        }
        if (snapshotsServed && added.snapshotPort() == 0) {
            throw new Refused("snapshot_port_required", "the cluster's nodes serve snapshots (rule R4), so node " + added.id()
                    + " needs a snapshotPort too");
        }
        List<String> used = new ArrayList<>();
        for (ClusterMember m : current) {
            used.addAll(addresses(m));
        }
        List<String> own = addresses(added);
        for (int i = 0; i < own.size(); i++) {
            String address = own.get(i);
            if (used.contains(address) || own.subList(0, i).contains(address)) {
                throw new Refused("duplicate_address", "node " + added.id() + " would listen on " + address
                        + ", which " + (used.contains(address) ? "a member already uses" : "it names twice"));
            }
        }
    }

    /** Refuses removing {@code id}: no member, the leader itself (move the leadership first), or the last member. */
    static void checkRemove(Collection<ClusterMember> current, int id, int leaderId) {
        if (current.stream().noneMatch(m -> m.id() == id)) {
            throw new Refused("unknown_node", "node " + id + " is not a member of the cluster; its members are "
                    + current.stream().map(ClusterMember::id).toList());
        }
        if (id == leaderId) {
            throw new Refused("is_leader", "node " + id + " leads the shard; move the leadership to another node first "
                    + "(POST /api/cluster/leader, sluice admin transfer-leader N), then remove it through the new leader");
        }
        if (current.size() == 1) {
            throw new Refused("last_node", "node " + id + " is the cluster's last member");
        }
    }

    private static List<String> addresses(ClusterMember m) {
        List<String> addresses = new ArrayList<>(List.of(m.host() + ":" + m.raftPort(), m.clientAddress()));
        if (m.snapshotPort() != 0) {
            addresses.add(m.snapshotAddress());
        }
        return addresses;
    }

    /** Adds {@code added} (checked by the caller, on the leader); completes once the new configuration is committed. */
    CompletableFuture<Void> add(ClusterMember added, long timeoutMs) {
        SetConfigurationRequest.Arguments arguments = SetConfigurationRequest.Arguments.newBuilder()
                .setServersInNewConf(List.of(added.toPeer())).setMode(SetConfigurationRequest.Mode.ADD).build();
        return change(arguments, "add node " + added.id(), timeoutMs);
    }

    /**
     * Removes {@code id} (checked by the caller, on the leader): the configuration now without it, compared and set, so
     * that a change made meanwhile by another request makes this one fail rather than undo it.
     */
    CompletableFuture<Void> remove(int id, long timeoutMs) {
        Collection<RaftPeer> now;
        try {
            now = server.getDivision(group).getRaftConf().getCurrentPeers();
        } catch (IOException | RuntimeException e) {
            return CompletableFuture.failedFuture(new NotChanged("the shard is not running on this node: " + e));
        }
        List<RaftPeer> next = now.stream().filter(p -> ClusterMember.nodeIdOf(p.getId().toString()) != id).toList();
        SetConfigurationRequest.Arguments arguments = SetConfigurationRequest.Arguments.newBuilder()
                .setServersInCurrentConf(List.copyOf(now)).setServersInNewConf(next)
                .setMode(SetConfigurationRequest.Mode.COMPARE_AND_SET).build();
        return change(arguments, "remove node " + id, timeoutMs);
    }

    private CompletableFuture<Void> change(SetConfigurationRequest.Arguments arguments, String what, long timeoutMs) {
        SetConfigurationRequest request = new SetConfigurationRequest(clientId, self, group, nextCall.getAsLong(), arguments);
        pending.set(what);
        CompletableFuture<RaftClientReply> reply;
        try {
            reply = server.setConfigurationAsync(request);
        } catch (IOException | RuntimeException e) {
            reply = CompletableFuture.failedFuture(e);
        }
        LOG.info("Asked the shard to {}: {}.", what, arguments);
        return reply.orTimeout(timeoutMs, TimeUnit.MILLISECONDS).handle((answer, failure) -> {
            pending.compareAndSet(what, null); // after a timeout Ratis may still be at it, but this node no longer knows
            Throwable refusal = failure != null ? failure : answer.isSuccess() ? null : answer.getException();
            if (refusal == null) {
                LOG.info("The shard's configuration is now {}.", members.current().keySet());
                return null;
            }
            if (refusal instanceof java.util.concurrent.CompletionException && refusal.getCause() != null) {
                refusal = refusal.getCause();
            }
            LOG.warn("The shard did not {}: {}", what, refusal.toString());
            if (refusal instanceof ReconfigurationInProgressException
                    || refusal instanceof SetConfigurationException && String.valueOf(refusal.getMessage()).contains("compare")) {
                throw new Refused("change_in_progress", "another change of the cluster's members is in progress or was just made ("
                        + refusal.getMessage() + "); GET /api/cluster shows the members, then ask again");
            }
            if (refusal instanceof java.util.concurrent.TimeoutException) {
                throw new NotChanged("the shard did not " + what + " within " + timeoutMs + " ms; the change may still complete:"
                        + " GET /api/cluster shows the members and whether a change is in progress");
            }
            throw new NotChanged("the shard did not " + what + ": " + refusal.getMessage());
        });
    }

    /** The change this node asked of Ratis and has no answer to yet, or null. */
    String pending() {
        return pending.get();
    }

    /** The members now, as the admin API lists them. */
    /**
     * Adds the members and any change in progress to a node's status: {@code membershipChanging} while Ratis holds the
     * joint configuration or, on the leader, a change asked for is not answered yet, named in {@code membershipChange}
     * (e.g. "add node 4", while Ratis catches it up).
     */
    void describe(Map<String, Object> status, ClusterMembers.View view) {
        status.put("members", describe(view.current().values()));
        String asked = pending();
        status.put("membershipChanging", view.changing() || asked != null);
        if (asked != null) {
            status.put("membershipChange", asked);
        }
    }

    static List<Map<String, Object>> describe(Collection<ClusterMember> members) {
        List<Map<String, Object>> list = new ArrayList<>();
        for (ClusterMember m : members) {
            Map<String, Object> row = new java.util.LinkedHashMap<>();
            row.put("nodeId", m.id());
            row.put("host", m.host());
            row.put("raftPort", m.raftPort());
            row.put("clientPort", m.clientPort());
            row.put("snapshotPort", m.snapshotPort());
            list.add(row);
        }
        return list;
    }
}
