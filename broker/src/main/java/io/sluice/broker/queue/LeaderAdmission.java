package io.sluice.broker.queue;

import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.PublishFrame;

import java.util.function.Consumer;

/**
 * Rule R9 of docs/replication.md: on a cluster's leader, a queue's quota is checked before a PUBLISH is submitted
 * to the log, exactly as a single broker checks it before storing (docs/flow-control.md: the same refusals and
 * reasons, and drop-oldest's drops, replicated as acks); followers store what was committed with no check. What
 * was admitted counts as uncommitted in the {@link Backlog} until its entry is applied here or Raft refuses it,
 * so it feeds the same SLOWED and BLOCKED states, and past {@code cluster.max-uncommitted-bytes} blocks by itself.
 *
 * <p>Threads: the queue's executor.
 */
final class LeaderAdmission {
    private final BrokerQueue queue;
    private final Backlog backlog;
    private final QueuePublishers publishers;
    private final Runnable updateFlow;
    private long refused;

    LeaderAdmission(BrokerQueue queue, Backlog backlog, QueuePublishers publishers, Runnable updateFlow) {
        this.queue = queue;
        this.backlog = backlog;
        this.publishers = publishers;
        this.updateFlow = updateFlow;
    }

    /**
     * Hands the frame to {@code submit} if every message of it may be stored, counted as uncommitted; else refuses
     * it whole on {@code link} (one entry is stored whole or not at all) and releases it.
     */
    void admit(ProducerLink link, PublishFrame frame, long maxUncommittedBytes, Consumer<PublishFrame> submit) {
        publishers.add(link, backlog.state(), backlog.reason()); // told BLOCKED now if it is, even if refused below
        boolean deleted = queue.isClosed();
        String refusal = deleted ? "queue '" + queue.name() + "' was deleted before the message was stored"
                : backlog.admit(queue.store().unackedMessages(), frame, maxUncommittedBytes, queue::dropOldest);
        if (refusal != null) {
            refused += deleted ? 0 : frame.messageCount();
            try {
                link.refuseAll(frame, deleted ? ErrorCode.UNKNOWN_QUEUE : ErrorCode.QUEUE_BLOCKED, refusal);
            } finally {
                frame.release();
            }
            return;
        }
        updateFlow.run();
        submit.accept(frame);
    }

    /**
     * Rule R8 with the quota of R9: the leader checks this queue's quota for a dead-letter copy of {@code messageBytes}
     * before it submits the dead-letter, as a single broker checks it before storing the copy (the same refusals,
     * and drop-oldest's drops, replicated as acks). Null if admitted, counted as uncommitted until the entry is
     * applied here or Raft refuses it; else the reason, which fails the move (the original stays in its source).
     */
    String admitCopy(int messageBytes, long maxUncommittedBytes) {
        if (queue.isClosed()) {
            return "queue '" + queue.name() + "' was deleted";
        }
        String refusal = backlog.refusal(queue.store().unackedMessages(), messageBytes, queue::dropOldest);
        if (refusal != null) {
            refused++;
            return refusal;
        }
        backlog.submitted(messageBytes, maxUncommittedBytes);
        updateFlow.run();
        return null;
    }

    /** Raft refused a frame {@link #admit} counted: it is no longer uncommitted. */
    void notCommitted(long messages, long messageBytes) {
        backlog.uncommittedDone(messages, messageBytes);
        updateFlow.run();
    }

    /** Messages refused by the quota before they were submitted. */
    long refused() {
        return refused;
    }
}
