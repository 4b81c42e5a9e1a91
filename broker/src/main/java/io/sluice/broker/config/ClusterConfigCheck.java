package io.sluice.broker.config;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The checks of the {@code cluster} section, part of {@link BrokerConfig#validate()}'s one pass. With
 * {@code cluster.enabled} false only the timeouts are checked, so a single node's configuration never
 * fails on keys it does not use.
 */
final class ClusterConfigCheck {
    private ClusterConfigCheck() {
    }

    static void validate(BrokerConfig config, List<String> problems) {
        BrokerConfig.Cluster cluster = config.cluster;
        if (cluster.electionTimeoutMinMs < 100 || cluster.electionTimeoutMinMs > 60_000) {
            problems.add("cluster.election-timeout-min-ms " + cluster.electionTimeoutMinMs + " is outside 100..60000");
        }
        if (cluster.electionTimeoutMaxMs <= cluster.electionTimeoutMinMs || cluster.electionTimeoutMaxMs > 120_000) {
            problems.add("cluster.election-timeout-max-ms " + cluster.electionTimeoutMaxMs + " must be above "
                    + "cluster.election-timeout-min-ms " + cluster.electionTimeoutMinMs + " and at most 120000");
        }
        if (cluster.snapshotEveryEntries < 1 || cluster.snapshotEveryEntries > 100_000_000) {
            problems.add("cluster.snapshot-every-entries " + cluster.snapshotEveryEntries + " is outside 1..100000000");
        }
        if (cluster.maxUncommittedBytes < 1024) {
            problems.add("cluster.max-uncommitted-bytes " + cluster.maxUncommittedBytes + " is below 1024");
        }
        if (cluster.logSegmentBytes < 1 << 20 || cluster.logSegmentBytes > 1L << 30) {
            problems.add("cluster.log-segment-bytes " + cluster.logSegmentBytes + " is outside 1048576..1073741824");
        }
        if (cluster.snapshotReadTimeoutMs < 100 || cluster.snapshotReadTimeoutMs > 3_600_000) {
            problems.add("cluster.snapshot-read-timeout-ms " + cluster.snapshotReadTimeoutMs + " is outside 100..3600000");
        }
        if (cluster.snapshotConnectTimeoutMs < 100 || cluster.snapshotConnectTimeoutMs > 600_000) {
            problems.add("cluster.snapshot-connect-timeout-ms " + cluster.snapshotConnectTimeoutMs + " is outside 100..600000");
        }
        if (!cluster.enabled) {
            return;
        }
        if (cluster.nodes.isEmpty()) {
            problems.add("cluster.enabled is true but cluster.nodes is empty; list every node (id, host, raft-port, client-port)");
            return;
        }
        Set<Integer> ids = new HashSet<>();
        BrokerConfig.Node self = null;
        for (int i = 0; i < cluster.nodes.size(); i++) {
            BrokerConfig.Node node = cluster.nodes.get(i);
            String key = "cluster.nodes[" + i + "]";
            if (node.id < 1) {
                problems.add(key + ".id " + node.id + " must be at least 1");
            } else if (!ids.add(node.id)) {
                problems.add(key + ".id " + node.id + " is used by another node too");
            }
            if (node.host == null || node.host.isBlank()) {
                problems.add(key + ".host is empty");
            }
            if (node.raftPort < 1 || node.raftPort > 65535) {
                problems.add(key + ".raft-port " + node.raftPort + " is outside 1..65535");
            }
            if (node.clientPort < 1 || node.clientPort > 65535) {
                problems.add(key + ".client-port " + node.clientPort + " is outside 1..65535");
            }
            if (node.snapshotPort < 0 || node.snapshotPort > 65535
                    || node.snapshotPort != 0 && (node.snapshotPort == node.raftPort || node.snapshotPort == node.clientPort)) {
                problems.add(key + ".snapshot-port " + node.snapshotPort + " is outside 0..65535 or is the node's raft-port or client-port");
            }
            if (node.id == cluster.nodeId) {
                self = node;
            }
        }
        if (self == null) {
            problems.add("cluster.node-id " + cluster.nodeId + " is not the id of any of cluster.nodes " + ids);
        } else if (self.clientPort != config.broker.port) {
            problems.add("cluster.nodes entry of node " + self.id + " has client-port " + self.clientPort
                    + ", but this broker listens on broker.port " + config.broker.port + "; clients are sent to the port listed");
        } else if (self.raftPort == config.broker.port || self.raftPort == config.metrics.port) {
            problems.add("cluster.nodes entry of node " + self.id + " has raft-port " + self.raftPort
                    + ", which broker.port or metrics.port already uses");
        }
        checkSnapshotAuth(cluster, problems);
        checkTls(cluster.tls, problems);
        if (!config.queues.dedupEnabled) {
            problems.add("cluster.enabled needs queues.dedup-enabled true: a restarted node replays its Raft log and "
                    + "the producer tables keep that replay from storing a message twice");
        }
    }

    /** With {@code cluster.tls.enabled}, its three files must be set and readable. */
    private static void checkTls(BrokerConfig.ClusterTls tls, List<String> problems) {
        if (!tls.enabled) {
            return;
        }
        for (String[] file : new String[][] {{"certificate", tls.certificate}, {"private-key", tls.privateKey}, {"ca", tls.ca}}) {
            if (file[1] == null || file[1].isBlank()) {
                problems.add("cluster.tls.enabled is true but cluster.tls." + file[0] + " is empty; set certificate, private-key "
                        + "and ca (docs/security.md, \"Between the nodes\")");
            } else if (!java.nio.file.Files.isReadable(java.nio.file.Path.of(file[1]))) {
                problems.add("cluster.tls." + file[0] + " " + file[1] + " does not exist or cannot be read");
            }
        }
    }

    /**
     * Safe by default, as the listeners are (docs/security.md): a node serving snapshots needs the cluster secret,
     * unless the operator opts out with {@code cluster.snapshot-auth: none} knowingly.
     */
    private static void checkSnapshotAuth(BrokerConfig.Cluster cluster, List<String> problems) {
        String auth = cluster.snapshotAuth == null ? "" : cluster.snapshotAuth;
        if (!auth.equals("secret") && !auth.equals("none")) {
            problems.add("cluster.snapshot-auth '" + auth + "' is not one of secret, none");
            return;
        }
        boolean servesSnapshots = cluster.nodes.stream().anyMatch(node -> node.snapshotPort > 0);
        boolean hasFile = cluster.secretFile != null && !cluster.secretFile.isBlank();
        if (auth.equals("secret") && servesSnapshots && !hasFile) {
            problems.add("cluster.secret-file is empty, but the nodes serve snapshots (snapshot-port) and cluster.snapshot-auth is "
                    + "secret: without a secret anyone who reaches a snapshot port could download every queue's messages. "
                    + "Set cluster.secret-file (see docs/security.md, \"The snapshot port\"), or cluster.snapshot-auth: none "
                    + "on a network only the nodes reach");
        } else if (auth.equals("secret") && hasFile) {
            String problem = ClusterSecretFile.problem("cluster.secret-file", cluster.secretFile);
            if (problem != null) {
                problems.add(problem);
            }
        }
    }
}
