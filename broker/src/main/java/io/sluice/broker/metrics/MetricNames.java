package io.sluice.broker.metrics;

import java.util.List;

/**
 * Every metric the broker exposes, by its Prometheus name: prefix {@code sluice_}, base units in the
 * name (seconds, bytes), {@code _total} on counters. Labels are bounded: {@value #LABEL_QUEUE} (one per
 * queue), {@value #LABEL_CODE} (one per protocol error code), {@value #LABEL_DURABILITY} and
 * {@value #LABEL_OVERFLOW_POLICY} on the info gauge {@value #QUEUE_INFO} (named without
 * {@code _info}: Micrometer's Prometheus registry would strip that suffix); never a message or connection id.
 * {@code MetricsEndpointTest} scrapes the endpoint and checks that each name here appears.
 */
public final class MetricNames {
    public static final String LABEL_QUEUE = "queue";
    public static final String LABEL_CODE = "code";
    public static final String LABEL_DURABILITY = "durability";
    public static final String LABEL_OVERFLOW_POLICY = "overflow_policy";
    /** Why a consumer gets nothing: {@value #REASON_NO_CREDIT} or {@value #REASON_NOT_WRITABLE}. */
    public static final String LABEL_REASON = "reason";
    public static final String REASON_NO_CREDIT = "no_credit";
    public static final String REASON_NOT_WRITABLE = "not_writable";

    // Per queue: gauges computed at scrape time.
    public static final String QUEUE_INFO = "sluice_queue_config";
    public static final String QUEUE_BACKLOG_MESSAGES = "sluice_queue_backlog_messages";
    public static final String QUEUE_BACKLOG_BYTES = "sluice_queue_backlog_bytes";
    public static final String QUEUE_READY_MESSAGES = "sluice_queue_ready_messages";
    public static final String QUEUE_UNACKED_MESSAGES = "sluice_queue_unacked_messages";
    public static final String QUEUE_CONSUMERS = "sluice_queue_consumers";
    public static final String QUEUE_PRODUCERS = "sluice_queue_producers";
    public static final String QUEUE_PRODUCERS_BLOCKED = "sluice_queue_producers_blocked";
    public static final String QUEUE_FLOW_STATE = "sluice_queue_flow_state";
    public static final String QUEUE_PINNED_BYTES = "sluice_queue_pinned_bytes";
    public static final String QUEUE_OLDEST_UNACKED_AGE_SECONDS = "sluice_queue_oldest_unacked_age_seconds";
    public static final String QUEUE_SEGMENTS = "sluice_queue_segments";
    public static final String QUEUE_DISK_BYTES = "sluice_queue_disk_bytes";
    /** Age of the oldest ready message: stored, not out with a consumer, not waiting out a requeue delay. */
    public static final String QUEUE_OLDEST_READY_AGE_SECONDS = "sluice_queue_oldest_ready_age_seconds";
    /** Consumers that get nothing, by {@link #LABEL_REASON}; a consumer can count under both reasons. */
    public static final String QUEUE_CONSUMERS_STALLED = "sluice_queue_consumers_stalled";

    // Per queue: histograms (Prometheus gets _bucket, _sum, _count and a _max gauge).
    /** From the PUBLISH frame's arrival to the release of its CONFIRM; one sample per frame. */
    public static final String QUEUE_PUBLISH_CONFIRM_SECONDS = "sluice_queue_publish_confirm_seconds";
    /** From the store timestamp of the oldest message in an ACK frame to that frame; one sample per frame. */
    public static final String QUEUE_PUBLISH_ACK_SECONDS = "sluice_queue_publish_ack_seconds";

    // Per queue: counters.
    public static final String QUEUE_PUBLISHED = "sluice_queue_published_messages_total";
    public static final String QUEUE_CONFIRMED = "sluice_queue_confirmed_messages_total";
    public static final String QUEUE_PUBLISH_REFUSED = "sluice_queue_publish_refused_messages_total";
    public static final String QUEUE_DELIVERED = "sluice_queue_delivered_messages_total";
    public static final String QUEUE_REDELIVERED = "sluice_queue_redelivered_messages_total";
    public static final String QUEUE_ACKED = "sluice_queue_acked_messages_total";
    public static final String QUEUE_NACKED = "sluice_queue_nacked_messages_total";
    public static final String QUEUE_DEAD_LETTERED = "sluice_queue_dead_lettered_messages_total";
    public static final String QUEUE_DEAD_LETTER_FAILURES = "sluice_queue_dead_letter_failures_total";
    public static final String QUEUE_DROPPED = "sluice_queue_dropped_messages_total";
    public static final String QUEUE_DUPLICATES = "sluice_queue_duplicates_total";
    public static final String QUEUE_PRODUCERS_TRACKED = "sluice_queue_producers_tracked";
    public static final String QUEUE_PRODUCERS_EVICTED = "sluice_queue_producers_evicted_total";
    public static final String QUEUE_PRODUCERS_EXPIRED = "sluice_queue_producers_expired_total";
    public static final String QUEUE_RECLAIMED_SEGMENTS = "sluice_queue_reclaimed_segments_total";
    public static final String QUEUE_RECLAIMED_BYTES = "sluice_queue_reclaimed_bytes_total";
    public static final String QUEUE_RELOCATED = "sluice_queue_relocated_messages_total";
    public static final String QUEUE_SYNCS = "sluice_queue_syncs_total";
    public static final String QUEUE_SYNC_SECONDS = "sluice_queue_sync_seconds_total";
    public static final String QUEUE_CORRUPT_RECORDS = "sluice_queue_corrupt_records_total";
    /** Reclaim passes that failed (threw); each is tried again by the next (docs/storage.md, "Reclaim"). */
    public static final String QUEUE_RECLAIM_FAILURES = "sluice_queue_reclaim_failures_total";
    /** 1 once the queue's storage failed (a force to disk did not succeed): it refuses publishes until a restart. */
    public static final String QUEUE_STORAGE_FAILED = "sluice_queue_storage_failed";
    /** Producer checkpoints that could not be written; each is tried again until one is (docs/storage.md, "Producer state"). */
    public static final String QUEUE_PRODUCER_CHECKPOINT_FAILURES = "sluice_queue_producer_checkpoint_failures_total";
    /** Time the queue's flow state was BLOCKED (quota or disk guard), the current stretch included. */
    public static final String QUEUE_BLOCKED_SECONDS = "sluice_queue_blocked_seconds_total";

    // Broker-wide.
    public static final String BROKER_READY = "sluice_broker_ready";
    public static final String STORAGE_RECOVERY_SECONDS = "sluice_storage_recovery_seconds";
    public static final String DISK_FREE_BYTES = "sluice_disk_free_bytes";
    public static final String DISK_RESERVED_BYTES = "sluice_disk_reserved_bytes";
    public static final String CONNECTIONS_OPEN = "sluice_connections_open";
    /**
     * Over the open connections: the headers and payload of the messages they published that are not yet confirmed or
     * refused, the broker's own count (rule W2 of docs/flow-control.md); each connection's is bounded by
     * {@code broker.publish-window-bytes} and one socket read.
     */
    public static final String PUBLISH_HELD_BYTES = "sluice_publish_held_bytes";
    public static final String FRAMES_RECEIVED = "sluice_frames_received_total";
    public static final String FRAMES_SENT = "sluice_frames_sent_total";
    public static final String RECEIVED_BYTES = "sluice_received_bytes_total";
    public static final String SENT_BYTES = "sluice_sent_bytes_total";
    public static final String PROTOCOL_ERRORS = "sluice_protocol_errors_total";
    /** Refused authentication attempts, by {@link #LABEL_LISTENER}: {@code client} (HELLO) or {@code admin} (HTTP Basic). */
    public static final String AUTHENTICATION_FAILURES = "sluice_authentication_failures_total";
    public static final String LABEL_LISTENER = "listener";
    /** Operations refused by a limit against hostile or broken clients, by {@link #LABEL_LIMIT}. */
    public static final String LIMIT_REFUSALS = "sluice_limit_refusals_total";
    /** Frames and admin requests refused because the user lacks the permission (publish, consume, manage, monitor). */
    public static final String ACCESS_DENIED = "sluice_access_denied_total";
    public static final String LABEL_LIMIT = "limit";
    public static final String NETTY_DIRECT_MEMORY_USED_BYTES = "sluice_netty_direct_memory_used_bytes";

    // Transactions (docs/transactions.md).
    public static final String TRANSACTIONS_OPEN = "sluice_transactions_open";
    public static final String TRANSACTIONS_OLDEST_AGE_SECONDS = "sluice_transactions_oldest_age_seconds";
    public static final String TRANSACTIONS_COMMITTED = "sluice_transactions_committed_total";
    /** Rolled back by their client or by their connection closing. */
    public static final String TRANSACTIONS_ROLLED_BACK = "sluice_transactions_rolled_back_total";
    /** Rolled back by the broker: timeouts, refused operations, caps (timeouts are also counted on their own). */
    public static final String TRANSACTIONS_ABORTED = "sluice_transactions_aborted_total";
    public static final String TRANSACTIONS_TIMED_OUT = "sluice_transactions_timed_out_total";
    public static final String TRANSACTIONS_APPLY_FAILURES = "sluice_transactions_apply_failures_total";
    /** Records of the transaction log still needed: open transactions' staged publishes and commits not yet durable in their queues. */
    public static final String TRANSACTIONS_LOG_RECORDS = "sluice_transactions_log_records";

    // A cluster node's (docs/replication.md, "Operating a cluster"), by {@link #LABEL_SHARD}; the follower ones on the leader
    // only, by {@link #LABEL_NODE} (one per node of the cluster).
    public static final String LABEL_SHARD = "shard";
    public static final String LABEL_NODE = "node";
    /** 1 while this node is the shard's leader and serves its clients, else 0. */
    public static final String CLUSTER_LEADER = "sluice_cluster_leader";
    public static final String CLUSTER_TERM = "sluice_cluster_term";
    public static final String CLUSTER_LAST_LOG_INDEX = "sluice_cluster_last_log_index";
    public static final String CLUSTER_COMMIT_INDEX = "sluice_cluster_commit_index";
    public static final String CLUSTER_APPLIED_INDEX = "sluice_cluster_applied_index";
    /** Committed entries this node has not applied yet. */
    public static final String CLUSTER_APPLY_LAG_ENTRIES = "sluice_cluster_apply_lag_entries";
    public static final String CLUSTER_LEADER_CHANGES = "sluice_cluster_leader_changes_total";
    public static final String CLUSTER_SUBMITTED_BYTES = "sluice_cluster_submitted_bytes_total";
    public static final String CLUSTER_APPLIED_BYTES = "sluice_cluster_applied_bytes_total";
    public static final String CLUSTER_APPLIED_ENTRIES = "sluice_cluster_applied_entries_total";
    /** On the leader, per follower: entries of the leader's log the follower is not known to hold; NaN elsewhere. */
    public static final String CLUSTER_FOLLOWER_LAG_ENTRIES = "sluice_cluster_follower_lag_entries";
    /** On the leader, per follower: seconds since the follower last answered; NaN elsewhere. */
    public static final String CLUSTER_FOLLOWER_LAST_RESPONSE_SECONDS = "sluice_cluster_follower_last_response_seconds";

    /** A cluster node's, besides {@link #ALL}. */
    public static final List<String> CLUSTER = List.of(CLUSTER_LEADER, CLUSTER_TERM, CLUSTER_LAST_LOG_INDEX, CLUSTER_COMMIT_INDEX,
            CLUSTER_APPLIED_INDEX, CLUSTER_APPLY_LAG_ENTRIES, CLUSTER_LEADER_CHANGES, CLUSTER_SUBMITTED_BYTES, CLUSTER_APPLIED_BYTES,
            CLUSTER_APPLIED_ENTRIES, CLUSTER_FOLLOWER_LAG_ENTRIES, CLUSTER_FOLLOWER_LAST_RESPONSE_SECONDS);

    /** All of the above but {@link #CLUSTER}, for the test that scrapes the endpoint. */
    public static final List<String> ALL = List.of(
            QUEUE_INFO, QUEUE_BACKLOG_MESSAGES, QUEUE_BACKLOG_BYTES, QUEUE_READY_MESSAGES, QUEUE_UNACKED_MESSAGES,
            QUEUE_CONSUMERS, QUEUE_PRODUCERS, QUEUE_PRODUCERS_BLOCKED, QUEUE_FLOW_STATE, QUEUE_PINNED_BYTES,
            QUEUE_OLDEST_UNACKED_AGE_SECONDS, QUEUE_SEGMENTS, QUEUE_DISK_BYTES, QUEUE_OLDEST_READY_AGE_SECONDS,
            QUEUE_CONSUMERS_STALLED, QUEUE_BLOCKED_SECONDS,
            QUEUE_PUBLISHED, QUEUE_CONFIRMED, QUEUE_PUBLISH_REFUSED, QUEUE_DELIVERED, QUEUE_REDELIVERED, QUEUE_ACKED,
            QUEUE_NACKED, QUEUE_DEAD_LETTERED, QUEUE_DEAD_LETTER_FAILURES, QUEUE_DROPPED,
            QUEUE_DUPLICATES, QUEUE_PRODUCERS_TRACKED, QUEUE_PRODUCERS_EVICTED, QUEUE_PRODUCERS_EXPIRED, QUEUE_RECLAIMED_SEGMENTS, QUEUE_RECLAIMED_BYTES,
            QUEUE_RELOCATED, QUEUE_SYNCS, QUEUE_SYNC_SECONDS, QUEUE_CORRUPT_RECORDS, QUEUE_RECLAIM_FAILURES, QUEUE_STORAGE_FAILED, QUEUE_PRODUCER_CHECKPOINT_FAILURES,
            BROKER_READY, STORAGE_RECOVERY_SECONDS, DISK_FREE_BYTES, DISK_RESERVED_BYTES, CONNECTIONS_OPEN, PUBLISH_HELD_BYTES,
            FRAMES_RECEIVED, FRAMES_SENT, RECEIVED_BYTES, SENT_BYTES, PROTOCOL_ERRORS, AUTHENTICATION_FAILURES,
            NETTY_DIRECT_MEMORY_USED_BYTES, TRANSACTIONS_OPEN, TRANSACTIONS_OLDEST_AGE_SECONDS, TRANSACTIONS_COMMITTED,
            TRANSACTIONS_ROLLED_BACK, TRANSACTIONS_ABORTED, TRANSACTIONS_TIMED_OUT, TRANSACTIONS_APPLY_FAILURES,
            TRANSACTIONS_LOG_RECORDS);

    /** The histograms, whose samples carry the suffixes {@code _bucket}, {@code _sum}, {@code _count}, {@code _max}. */
    public static final List<String> HISTOGRAMS = List.of(QUEUE_PUBLISH_CONFIRM_SECONDS, QUEUE_PUBLISH_ACK_SECONDS);

    private MetricNames() {
    }
}
