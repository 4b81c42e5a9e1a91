package io.sluice.broker.queue;

import io.sluice.broker.flow.FlowGate;
import io.sluice.broker.flow.QuotaSettings;
import io.sluice.protocol.FlowState;
import io.sluice.protocol.PublishCursor;
import io.sluice.protocol.PublishFrame;

import java.util.function.BooleanSupplier;

/**
 * A queue's backlog as flow control sees it: the unacknowledged bytes (headers plus payload, the one
 * unit of byte quotas), the quota state machine, the broker's disk block, the slowed producers'
 * tokens and the time spent blocked. The only owner of each of these figures; confined to its
 * queue's executor.
 *
 * <p>Its queue tells it what changed (bytes added and removed, messages acknowledged, and on a cluster's
 * leader what it submitted to the log and has not applied yet) and asks it
 * whether a message may be stored ({@link #refusal}) and whether a confirm may go out
 * ({@link #mayConfirm}); it reports each change of the state producers are told.
 */
final class Backlog {
    private final String queue;
    private final FlowGate gate;
    private final int publishAllowance;
    private final long publishAllowanceBytes;
    private long bytes;
    /** While slowed: messages acknowledged and not yet matched by a released confirm (C2). */
    private long slowTokens;
    private String diskBlockedReason;
    /**
     * Rule R9 of docs/replication.md: what this node, a cluster's leader, submitted to the log for this queue and
     * has not applied yet (nor seen refused). It counts toward the quota like stored messages, and past
     * {@code maxUncommittedBytes} it blocks producers by itself: a slow majority then slows producers rather than
     * growing the leader's memory. Always 0 on a single broker.
     */
    private long uncommittedMessages;
    private long uncommittedBytes;
    private long maxUncommittedBytes;
    private boolean uncommittedBlocked;
    /**
     * Rule R9: {@code drop-oldest} drops this node, a cluster's leader, chose and has not applied yet ({@link LeaderHold}).
     * They are still stored but count as gone, as they are on a single broker at once: their bytes left {@link #bytes}
     * when they were chosen, and they are taken off the stored messages here, so the publish each made room for is
     * admitted against the backlog it leaves, and nothing is dropped twice for it. Always 0 on a single broker.
     */
    private long heldDrops;
    /**
     * The store's figure of the damaged records' bytes it discarded, as last taken off {@link #bytes}: the store acks
     * such a record itself (for whichever reader or read met it), so without this its bytes would stay counted until
     * the queue emptied, and byte quotas slow, block or drop for bytes no longer stored.
     */
    private long discardedSeen;
    /** The hard quota the last publish over it met, as {@link #refusal} names it. */
    private String hardQuotaMet;
    /** BLOCKED time before the current stretch, and when that stretch began (meaningful while blocked). */
    private long blockedNanosBefore;
    private long blockedSinceNanos;

    /**
     * @param publishAllowance how far past the hard level a blocked queue still stores what was in
     *                         flight (A2), and the most tokens slowed producers may bank (C2)
     * @param publishAllowanceBytes how far past a hard level in bytes a blocked queue still stores what was in flight (A2)
     */
    Backlog(String queue, QuotaSettings quota, int publishAllowance, long publishAllowanceBytes, long messages, long bytes) {
        this.queue = queue;
        this.gate = new FlowGate(quota);
        this.publishAllowance = publishAllowance;
        this.publishAllowanceBytes = publishAllowanceBytes;
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

    /** {@code total}: the store's discarded bytes so far ({@code QueueStore.discardedMessageBytes}); what is new leaves the backlog. */
    void storeDiscarded(long total) {
        if (total != discardedSeen) {
            removed(total - discardedSeen);
            discardedSeen = total;
        }
    }

    /**
     * {@code total}: the store's discarded bytes when {@link #bytes} was counted from its unacknowledged records. A
     * discarded record is acknowledged, so those bytes are not in the count: they are seen, not taken off again.
     */
    void storeDiscardedBeforeTheCount(long total) {
        discardedSeen = total;
    }

    /** Whether the store discarded damaged records since {@link #storeDiscarded} last heard of it. */
    boolean discardsUnseen(long total) {
        return total != discardedSeen;
    }

    /** Rule R9: a drop of {@code messageBytes} was chosen, to be applied later: off the backlog now ({@link #heldDrops}). */
    void dropHeld(long messageBytes) {
        heldDrops++;
        removed(messageBytes);
    }

    /** Rule R9: the drops chosen and not applied yet, still stored but counted as gone. */
    long heldDrops() {
        return heldDrops;
    }

    /** Rule R9: {@code count} held drops were applied: they are no longer stored, so no longer taken off. */
    void dropsApplied(int count) {
        heldDrops = Math.max(0, heldDrops - count);
    }

    /** Rule R9: a held drop of {@code messageBytes} was not committed: the message counts again. */
    void dropGivenBack(long messageBytes) {
        heldDrops = Math.max(0, heldDrops - 1);
        added(messageBytes);
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
     *       the producer was told are stored, up to the publish window beyond the hard level (in messages
     *       past a hard quota in messages, in bytes past one in bytes); after that, refused (the byte limit
     *       matters: a hard quota in bytes alone is the embedded defaults');</li>
     *   <li>A3 policy reject: refused at once; policy drop-oldest: {@code dropOldest} discards the
     *       oldest message not out with a consumer to make room, or answers false if there is none.</li>
     * </ul>
     */
    String refusal(long storedMessages, int messageBytes, BooleanSupplier dropOldest) {
        QuotaSettings quota = gate.quota();
        long messages = storedMessages - heldDrops + uncommittedMessages;
        boolean overMessages = quota.hardMessages() > 0 && messages >= quota.hardMessages();
        boolean overHard = overMessages || (quota.hardBytes() > 0 && bytes + uncommittedBytes + messageBytes > quota.hardBytes());
        if (diskBlockedReason != null) {
            return "queue '" + queue + "' is blocked: " + diskBlockedReason;
        }
        // A2 for the log's bound: what was in flight when the producers were told is still admitted, up to the window.
        if (uncommittedBlocked && uncommittedMessages >= publishAllowance) {
            return "queue '" + queue + "' is blocked: " + uncommittedReason() + "; wait for FLOW before publishing more";
        }
        if (!overHard) { // A1
            return null;
        }
        // Named here: under reject and drop-oldest the gate never reaches the hard level, so its reason names the soft
        // level or none ("queue 'q' is full: backlog below the soft quota" is what they would say).
        // Each names the key that holds the quota (the queue's DECLARE or the configuration's default): the one to change.
        hardQuotaMet = overMessages
                ? "backlog of " + messages + " messages reached the hard quota of " + quota.hardMessages() + " messages ("
                        + quota.key(QuotaSettings.Setting.HARD_MESSAGES) + ")"
                : "backlog of " + (bytes + uncommittedBytes) + " bytes and a message of " + messageBytes
                        + " bytes would pass the hard quota of " + quota.hardBytes() + " bytes ("
                        + quota.key(QuotaSettings.Setting.HARD_BYTES) + ")";
        switch (quota.overflow()) {
            case REJECT -> {
                return "queue '" + queue + "' is full: " + hardQuotaMet + "; the overflow policy is reject ("
                        + quota.key(QuotaSettings.Setting.OVERFLOW) + ")";
            }
            case DROP_OLDEST -> {
                return dropOldest.getAsBoolean() ? null : "queue '" + queue + "' is full: " + hardQuotaMet + ", and no message"
                        + " can be dropped now: every message is out with a consumer, or the dead-letter queue refused the last one"
                        + " dropped";
            }
            default -> { // A2
                boolean pastMessages = quota.hardMessages() > 0 && messages >= quota.hardMessages() + publishAllowance;
                boolean pastBytes = quota.hardBytes() > 0
                        && bytes + uncommittedBytes + messageBytes > quota.hardBytes() + publishAllowanceBytes;
                return !pastMessages && !pastBytes ? null : "queue '" + queue + "' is blocked: " + gate.reason()
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
        if (gate.update(messages - heldDrops + uncommittedMessages, bytes + uncommittedBytes) && gate.state() == FlowState.FREE) {
            slowTokens = 0;
        }
        if (maxUncommittedBytes > 0) { // blocked at the bound, free again below 90 % of it (the quotas' hysteresis)
            uncommittedBlocked = uncommittedBlocked ? uncommittedBytes >= maxUncommittedBytes * 9 / 10
                    : uncommittedBytes >= maxUncommittedBytes;
        }
        return changed(before);
    }

    /** Rule R9: the leader submitted a message of {@code messageBytes} to the log; {@code maxBytes} is the cluster's bound. */
    void submitted(long messageBytes, long maxBytes) {
        maxUncommittedBytes = maxBytes;
        uncommittedMessages++;
        uncommittedBytes += messageBytes;
    }

    /** Rule R9: submitted messages were applied here (now stored, or refused as a single broker would) or Raft refused them. */
    void uncommittedDone(long messages, long messageBytes) {
        uncommittedMessages = Math.max(0, uncommittedMessages - messages);
        uncommittedBytes = Math.max(0, uncommittedBytes - messageBytes);
    }

    /**
     * Rule R9: the leader's quota check of a whole PUBLISH frame before it is submitted: null if every message may
     * be stored, as {@link #refusal} says one by one (each then counts as uncommitted), else the first refusal,
     * and none counts. One entry is stored whole or not at all, so a frame is admitted whole or refused whole.
     */
    String admit(long storedMessages, PublishFrame frame, long maxUncommitted, BooleanSupplier dropOldest) {
        PublishCursor cursor = frame.cursor();
        long messages = 0;
        long messageBytes = 0;
        while (cursor.next()) {
            int size = cursor.headersLength() + cursor.payloadLength();
            String refusal = refusal(storedMessages, size, dropOldest);
            if (refusal != null) {
                uncommittedDone(messages, messageBytes);
                return refusal;
            }
            submitted(size, maxUncommitted);
            messages++;
            messageBytes += size;
        }
        return null;
    }

    /**
     * As {@link #admit} for messages of {@code sizes} bytes (headers plus payload) that are not in a frame: a cluster
     * transaction's TX_PUBLISH (rule R13), admitted whole, each counted as uncommitted, or refused whole.
     */
    String admit(long storedMessages, int[] sizes, long maxUncommitted, BooleanSupplier dropOldest) {
        long messageBytes = 0;
        for (int i = 0; i < sizes.length; i++) {
            String refusal = refusal(storedMessages, sizes[i], dropOldest);
            if (refusal != null) {
                uncommittedDone(i, messageBytes);
                return refusal;
            }
            submitted(sizes[i], maxUncommitted);
            messageBytes += sizes[i];
        }
        return null;
    }

    private String uncommittedReason() {
        return uncommittedBytes + " bytes submitted to the replicated log and not yet committed and applied reached the bound of "
                + maxUncommittedBytes + " bytes (cluster.max-uncommitted-bytes: a majority of the nodes is slow)";
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
        return diskBlockedReason != null || uncommittedBlocked ? FlowState.BLOCKED : gate.state();
    }

    /** Why: the disk guard's reason, the log's bound (R9), or the quota's. */
    String reason() {
        return diskBlockedReason != null ? diskBlockedReason : uncommittedBlocked ? uncommittedReason() : gate.reason();
    }

    /** The hard quota the publish being admitted met (for the drop-oldest dead-letter header). */
    String quotaReason() {
        return hardQuotaMet != null ? hardQuotaMet : gate.reason();
    }

    /** Time spent BLOCKED since the queue opened, for {@code sluice_queue_blocked_seconds_total}. */
    long blockedNanos() {
        return blockedNanosBefore + (state() == FlowState.BLOCKED ? System.nanoTime() - blockedSinceNanos : 0);
    }
}
