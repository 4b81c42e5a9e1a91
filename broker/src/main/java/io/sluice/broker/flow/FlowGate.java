package io.sluice.broker.flow;

import io.sluice.protocol.FlowState;

/**
 * The quota state machine of one queue: FREE, SLOWED or BLOCKED, from the backlog figures, with
 * hysteresis. A pure object: the queue feeds it the backlog after every publish batch and every ack
 * batch (so it never overshoots the way a periodic check would, and never stays blocked after the
 * backlog has drained), and acts on the transitions it reports. Not thread-safe: the queue's
 * executor owns it.
 *
 * <p>Rules:
 * <ul>
 *   <li>Q1 FREE → SLOWED when either backlog figure reaches its soft level;</li>
 *   <li>Q2 any → BLOCKED when either reaches its hard level, under the policy {@code block} (the
 *       policies {@code reject} and {@code drop-oldest} act per message at the hard level instead,
 *       and never tell producers to wait);</li>
 *   <li>Q3 BLOCKED → SLOWED once both are below {@value QuotaSettings#RESUME_RATIO} of their hard level;</li>
 *   <li>Q4 SLOWED → FREE once both are below {@value QuotaSettings#FREE_RATIO} of their soft level.</li>
 * </ul>
 */
public final class FlowGate {
    private QuotaSettings quota;
    private FlowState state = FlowState.FREE;
    private String reason = "";

    public FlowGate(QuotaSettings quota) {
        this.quota = quota;
    }

    public FlowState state() {
        return state;
    }

    /** Why the gate is in its state, naming the quota: for FLOW frames and logs. */
    public String reason() {
        return reason;
    }

    public QuotaSettings quota() {
        return quota;
    }

    /** Re-evaluates; returns true if the state changed. */
    public boolean update(long backlogMessages, long backlogBytes) {
        FlowState next = state;
        String why = reason;
        String hard = reached(backlogMessages, backlogBytes, "hard", QuotaSettings.Setting.HARD_MESSAGES,
                QuotaSettings.Setting.HARD_BYTES);
        if (hard != null && quota.overflow() == QuotaSettings.OverflowPolicy.BLOCK) { // Q2
            next = FlowState.BLOCKED;
            why = hard;
        } else if (state == FlowState.BLOCKED) {
            if (below(backlogMessages, quota.hardMessages(), QuotaSettings.RESUME_RATIO)
                    && below(backlogBytes, quota.hardBytes(), QuotaSettings.RESUME_RATIO)) { // Q3
                next = FlowState.SLOWED;
                why = "backlog " + backlogMessages + " messages / " + backlogBytes + " bytes fell below the resume level";
            }
        }
        if (next == FlowState.SLOWED || next == FlowState.FREE) {
            String soft = reached(backlogMessages, backlogBytes, "soft", QuotaSettings.Setting.SOFT_MESSAGES,
                    QuotaSettings.Setting.SOFT_BYTES);
            if (soft != null) { // Q1
                next = FlowState.SLOWED;
                why = soft;
            } else if (below(backlogMessages, quota.softMessages(), QuotaSettings.FREE_RATIO)
                    && below(backlogBytes, quota.softBytes(), QuotaSettings.FREE_RATIO)) { // Q4
                next = FlowState.FREE;
                why = "backlog below the soft quota";
            }
        }
        boolean changed = next != state;
        state = next;
        reason = why;
        return changed;
    }

    /** Changes the quota (a re-declare); the next update applies it. */
    public void quota(QuotaSettings newQuota) {
        this.quota = newQuota;
    }

    /** The sentence of the {@code level} quota the backlog reached, naming the key that holds it; null if it reached none. */
    private String reached(long messages, long bytes, String level, QuotaSettings.Setting inMessages,
                           QuotaSettings.Setting inBytes) {
        long messageLimit = quota.level(inMessages);
        long byteLimit = quota.level(inBytes);
        if (messageLimit > 0 && messages >= messageLimit) {
            return "backlog of " + messages + " messages reached the " + level + " quota of " + messageLimit + " messages ("
                    + quota.key(inMessages) + ")";
        }
        if (byteLimit > 0 && bytes >= byteLimit) {
            return "backlog of " + bytes + " bytes reached the " + level + " quota of " + byteLimit + " bytes ("
                    + quota.key(inBytes) + ")";
        }
        return null;
    }

    private static boolean below(long value, long limit, double ratio) {
        return limit == 0 || value < limit * ratio;
    }
}
