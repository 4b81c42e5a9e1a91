package io.sluice.broker.cluster;

/** A raise of the cluster's entry level refused (rule R12); {@link #reason} says which way, the message names what. */
public final class EntryLevelRefused extends RuntimeException {
    /** Why the level was not raised. */
    public enum Reason {
        /** Above what the leader's own broker supports. */
        UNSUPPORTED_HERE,
        /** Below the finalized level: levels are never lowered. */
        DOWNGRADE,
        /** A member of the shard does not support it, or did not answer. */
        NODES_BEHIND
    }

    private final Reason reason;

    EntryLevelRefused(Reason reason, String message) {
        super(message);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }
}
