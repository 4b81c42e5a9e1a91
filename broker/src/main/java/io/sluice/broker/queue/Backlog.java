package io.sluice.broker.queue;

import io.sluice.broker.flow.FlowGate;
import io.sluice.broker.flow.QuotaSettings;
import io.sluice.protocol.FlowState;

import java.util.function.BooleanSupplier;

/**
 * A queue's backlog as flow control sees it: the unacknowledged bytes (headers plus payload, the one
 * unit of byte quotas), the quota state machine, the broker's disk block, the slowed producers'
 * tokens and the time spent blocked. The only owner of each of these figures; confined to its
 * queue's executor.
 *
 * <p>Its queue tells it what changed (bytes added and removed, messages acknowledged) and asks it
 * whether a message may be stored ({@link #refusal}) and whether a confirm may go out
 * ({@link #mayConfirm}); it reports each change of the state producers are told.
 */
final class Backlog {
    private final String queue;
    private final FlowGate gate;
    private final int publishAllowance;
    private long bytes;
    /** While slowed: messages acknowledged and not yet matched by a released confirm (C2). */
    private long slowTokens;
    private String diskBlockedReason;
    /** BLOCKED time before the current stretch, and when that stretch began (meaningful while blocked). */
    private long blockedNanosBefore;
    private long blockedSinceNanos;

    /**
     * @param publishAllowance how far past the hard level a blocked queue still stores what was in
     *                         flight (A2), and the most tokens slowed producers may bank (C2)
     */
    Backlog(String queue, QuotaSettings quota, int publishAllowance, long messages, long bytes) {
        this.queue = queue;
        this.gate = new FlowGate(quota);
        this.publishAllowance = publishAllowance;
        this.bytes = bytes;
        gate.update(messages, bytes);
        blockedSinceNanos = System.nanoTime();
    }

    /** Headers plus payload of the unacknowledged messages. */
    long bytes() {
        return bytes;
    }

    void added(long messageBytes) {
        bytes += messageBytes;
    }

    void removed(long messageBytes) {
        bytes = Math.max(0, bytes - messageBytes);
    }

    /** After a purge: only what is still out with the consumers is left. */
    void resetBytes(long messageBytes) {
        bytes = messageBytes;
    }

    /**
     * Whether one more message of {@code messageBytes} may be stored with the backlog at
     * {@code messages}: null if so, else the reason (A1..A3).
     * <ul>
     *   <li>A1 below the hard level, or no hard level: yes;</li>
     *   <li>A2 blocked (quota with policy block, or the disk guard): messages already in flight when
     *       the producer was told are stored, up to the publish window beyond the hard level; after
     *       that, refused;</li>
     *   <li>A3 policy reject: refused at once; policy drop-oldest: {@code dropOldest} discards the
     *       oldest message not out with a consumer to make room, or answers false if there is none.</li>
     * </ul>
     */
    String refusal(long messages, int messageBytes, BooleanSupplier dropOldest) {
        QuotaSettings quota = gate.quota();
        boolean overHard = (quota.hardMessages() > 0 && messages >= quota.hardMessages())
                || (quota.hardBytes() > 0 && bytes + messageBytes > quota.hardBytes());
        if (diskBlockedReason != null) {
            return "queue '" + queue + "' is blocked: " + diskBlockedReason;
        }
        if (!overHard) { // A1
            return null;
        }
        switch (quota.overflow()) {
            case REJECT -> {
                return "queue '" + queue + "' is full: " + gate.reason() + "; the overflow policy is reject";
            }
            case DROP_OLDEST -> {
                return dropOldest.getAsBoolean() ? null : "queue '" + queue + "' is full and every message is out with a consumer";
            }
            default -> { // A2
                long limit = (quota.hardMessages() > 0 ? quota.hardMessages() : Long.MAX_VALUE / 2) + publishAllowance;
                return messages < limit ? null : "queue '" + queue + "' is blocked: " + gate.reason()
                        + "; wait for FLOW before publishing more";
            }
        }
    }

    /**
     * Re-evaluates the quota with the backlog at {@code messages} (after a publish or an ack batch);
     * returns the state producers are to be told now, or null if it did not change.
     */
    FlowState update(long messages) {
        FlowState before = state();
        if (messages == 0) {
            bytes = 0; // what the store discarded as damaged was never seen here
        }
        if (gate.update(messages, bytes) && gate.state() == FlowState.FREE) {
            slowTokens = 0;
        }
        return changed(before);
    }

    /** The broker-wide disk guard: blocks (reason) or unblocks (null); returns the new state if it changed. */
    FlowState diskBlocked(String reason) {
        FlowState before = state();
        diskBlockedReason = reason;
        return changed(before);
    }

    private FlowState changed(FlowState before) {
        FlowState after = state();
        if (after == before) {
            return null;
        }
        if (after == FlowState.BLOCKED) {
            blockedSinceNanos = System.nanoTime();
        } else if (before == FlowState.BLOCKED) {
            blockedNanosBefore += System.nanoTime() - blockedSinceNanos;
        }
        return after;
    }

    /** Messages acknowledged (or dead-lettered): while slowed, each lets one more confirm go (C2). */
    void acknowledged(long count) {
        if (gate.state() == FlowState.SLOWED) {
            slowTokens = Math.min(slowTokens + count, publishAllowance);
        }
    }

    /**
     * Whether the confirm of {@code messages} stored may go out now (C2: while slowed only against
     * tokens the consumers' acks earned); if so, they are spent. A confirm of none (resends alone)
     * always may: it added nothing to the backlog.
     */
    boolean mayConfirm(int messages) {
        if (messages == 0 || gate.state() != FlowState.SLOWED) {
            return true;
        }
        if (slowTokens <= 0) {
            return false;
        }
        slowTokens -= messages;
        return true;
    }

    /** The state producers were last told: the disk block overrides the quota. */
    FlowState state() {
        return diskBlockedReason != null ? FlowState.BLOCKED : gate.state();
    }

    /** Why: the disk guard's reason, or the quota's. */
    String reason() {
        return diskBlockedReason != null ? diskBlockedReason : gate.reason();
    }

    /** The quota's reason alone (for the drop-oldest dead-letter header). */
    String quotaReason() {
        return gate.reason();
    }

    /** Time spent BLOCKED since the queue opened, for {@code sluice_queue_blocked_seconds_total}. */
    long blockedNanos() {
        return blockedNanosBefore + (state() == FlowState.BLOCKED ? System.nanoTime() - blockedSinceNanos : 0);
    }
}
