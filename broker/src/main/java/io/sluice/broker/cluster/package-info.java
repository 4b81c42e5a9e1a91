/**
 * The broker as a node of a cluster, on an embedded Apache Ratis server (docs/replication.md). The
 * {@link io.sluice.broker.cluster.ClusterNode} owns the Raft server and its one data shard and is the
 * queues' {@link io.sluice.broker.queue.Replication}: declares, PUBLISH frames and acks become
 * {@link io.sluice.broker.cluster.ShardEntry} log entries, which the
 * {@link io.sluice.broker.cluster.ShardStateMachine} applies to every node's queues once committed, through
 * the {@link io.sluice.broker.cluster.ShardApplier}; {@link io.sluice.broker.cluster.Submissions} remembers
 * which client waits for each entry this node submitted. Nothing here is used when {@code cluster.enabled}
 * is false.
 */
package io.sluice.broker.cluster;
