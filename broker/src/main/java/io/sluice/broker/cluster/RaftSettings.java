package io.sluice.broker.cluster;

import io.sluice.broker.config.BrokerConfig;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.grpc.GrpcConfigKeys;
import org.apache.ratis.server.RaftServerConfigKeys;
import org.apache.ratis.util.SizeInBytes;
import org.apache.ratis.util.TimeDuration;

import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The Ratis properties of a node, from the broker's configuration; every choice that differs from Ratis's
 * default is here, with its reason.
 */
final class RaftSettings {
    /**
     * Room around the largest entry in Ratis's buffers: one PUBLISH frame plus the entry header, or a batch of at most
     * max-frame-bytes of entries plus its lengths (EntryBatch, EntryCoalescer).
     */
    static final long ENTRY_HEADROOM_BYTES = 64 << 10;

    private RaftSettings() {
    }

    static RaftProperties of(BrokerConfig config, BrokerConfig.Node self) {
        RaftProperties properties = new RaftProperties();
        RaftServerConfigKeys.setStorageDir(properties, List.of(config.raftDirectory().toFile()));
        // Without cluster.tls Raft traffic is not authenticated (docs/security.md): listen on the node's own address only, not on all.
        GrpcConfigKeys.Server.setHost(properties, self.host);
        GrpcConfigKeys.Server.setPort(properties, self.raftPort);
        RaftServerConfigKeys.Rpc.setTimeoutMin(properties,
                TimeDuration.valueOf(config.cluster.electionTimeoutMinMs, TimeUnit.MILLISECONDS));
        RaftServerConfigKeys.Rpc.setTimeoutMax(properties,
                TimeDuration.valueOf(config.cluster.electionTimeoutMaxMs, TimeUnit.MILLISECONDS));
        // A confirm means "in the log on a majority of disks": each node forces its log before it answers
        // an append. The default already, said here so that nobody turns it on for speed.
        RaftServerConfigKeys.Log.setUnsafeFlushEnabled(properties, false);
        // Ratis's log metadata appends an entry of its own (the commit index) after every commit, so that a node can apply
        // what was committed before a leader exists again. That doubled the entries every node writes, forces and
        // replicates (ClusterReplicationTest: 100 entries for 50 publishes), and one appended while a leadership transfer
        // waited left the target a shorter log than the third node's, which then refused it the election. Nothing here
        // needs to apply before a leader exists: a node serves only as a ready leader, once it committed an entry of its
        // term, and then applies everything before it; a follower learns the commit index from the leader's appends.
        RaftServerConfigKeys.Log.setLogMetadataEnabled(properties, false);
        // HDDS-9232: the appender's minimum wait between batches slows writes; 1 ms keeps batching.
        RaftServerConfigKeys.Log.Appender.setWaitTimeMin(properties, TimeDuration.valueOf(1, TimeUnit.MILLISECONDS));
        // After a follower failed 10 appends in a row, Ratis's default waits 1 s and then 5 s between tries, and a
        // reply that the follower's log is shorter counts as a failure: a node started a few seconds after the
        // others stayed empty for minutes (ClusterFailoverTest), so that the leader's death then left no
        // majority that would vote (Ratis refuses votes of empty logs once entries are committed, RATIS-1995).
        // Tries every 100 ms, then every 500 ms, cost a down follower's leader next to nothing.
        RaftServerConfigKeys.Log.Appender.setRetryPolicy(properties, "1ms,10, 100ms,50, 500ms,100000000");
        // Rule R4: a follower behind the purged log fetches the leader's snapshot itself when Ratis notifies it
        // (ShardStateMachine.notifyInstallSnapshotFromLeader); Ratis's own chunked install stays off (docs/replication.md).
        RaftServerConfigKeys.Log.Appender.setInstallSnapshotEnabled(properties, false);
        // With a snapshot server on every node the log is purged up to the latest snapshot, so that it stays bounded
        // while a follower is away; otherwise snapshots are markers only and the log is kept for every follower.
        RaftServerConfigKeys.Log.setPurgeUptoSnapshotIndex(properties, servesSnapshots(config));
        RaftServerConfigKeys.Log.setPurgeGap(properties, (int) Math.min(1024, config.cluster.snapshotEveryEntries));
        RaftServerConfigKeys.Snapshot.setAutoTriggerEnabled(properties, true);
        // A snapshot waits for every queue's store to be durable and copies what is still being written, so not too often;
        // a restart replays what came after it.
        RaftServerConfigKeys.Snapshot.setAutoTriggerThreshold(properties, config.cluster.snapshotEveryEntries);
        // Markers of older snapshots (their data directories are ShardSnapshots' to delete).
        RaftServerConfigKeys.Snapshot.setRetentionFileNum(properties, 2);
        // One entry is at most one PUBLISH frame, or a batch no larger (ENTRY_HEADROOM_BYTES): every buffer on its way must hold one.
        long entryBytes = config.broker.maxFrameBytes + ENTRY_HEADROOM_BYTES;
        long appenderBytes = Math.max(4L << 20, entryBytes);
        RaftServerConfigKeys.Log.Appender.setBufferByteLimit(properties, SizeInBytes.valueOf(appenderBytes));
        // Ratis requires the log's write buffer to hold what the appender may send at once, plus 8 bytes.
        RaftServerConfigKeys.Log.setWriteBufferSize(properties, SizeInBytes.valueOf(Math.max(8L << 20, appenderBytes + ENTRY_HEADROOM_BYTES)));
        // The log is purged whole closed segments at a time: their size is the purge's granularity.
        RaftServerConfigKeys.Log.setSegmentSizeMax(properties, SizeInBytes.valueOf(Math.max(config.cluster.logSegmentBytes, 2 * entryBytes)));
        GrpcConfigKeys.setMessageSizeMax(properties, SizeInBytes.valueOf(Math.max(64L << 20, 2 * entryBytes)));
        // Ratis holds log entries on the heap in two places whose defaults ignore the heap's size: the segment cache
        // (200 MB) and the log worker's queue of appends not yet written (64 MB). A follower resumed after a stop, taking
        // the entries it missed as fast as the leader sends them, filled a 256 MiB heap with them and its Raft server
        // closed on OutOfMemoryError (ClusterSlowFollowerTest). Both are sized from the heap instead (docs/replication.md,
        // "Memory"); entries evicted from the cache are read again from the log's files when needed.
        long heapBytes = Runtime.getRuntime().maxMemory();
        RaftServerConfigKeys.Log.setSegmentCacheSizeMax(properties, SizeInBytes.valueOf(logCacheBytes(heapBytes, appenderBytes)));
        RaftServerConfigKeys.Log.setQueueByteLimit(properties, SizeInBytes.valueOf(logQueueBytes(heapBytes, appenderBytes)));
        return properties;
    }

    /** Ratis's segment cache: an eighth of the heap, at least what one append to a follower carries, at most Ratis's default. */
    static long logCacheBytes(long heapBytes, long appenderBytes) {
        return Math.max(appenderBytes, Math.min(200L << 20, heapBytes / 8));
    }

    /** Ratis's queue of appends not yet written: a sixteenth of the heap, at least two of the largest appends, at most Ratis's default. */
    static long logQueueBytes(long heapBytes, long appenderBytes) {
        return Math.max(2 * appenderBytes, Math.min(64L << 20, heapBytes / 16));
    }

    /** Every node has a snapshot-port: snapshots hold the queues' data and a follower can install one (rule R4). */
    static boolean servesSnapshots(BrokerConfig config) {
        return !config.cluster.nodes.isEmpty() && config.cluster.nodes.stream().allMatch(node -> node.snapshotPort > 0);
    }
}
