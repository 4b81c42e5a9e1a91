package io.sluice.protocol;

/**
 * How hard a queue pushes back on publishers, carried by FLOW as a {@code uint8}.
 */
public enum FlowState {
    /** Publish freely within the publish window. */
    FREE(0),
    /** The queue passed a soft quota: publishers should slow down; publishes are still accepted. */
    SLOWED(1),
    /** The queue passed a hard quota: publishes to it fail with QUEUE_BLOCKED until FLOW says FREE. */
    BLOCKED(2);

    private final int code;

    FlowState(int code) {
        this.code = code;
    }

    public int code() {
        return code;
    }

    /** Returns the state for a wire code, or {@code null} when version 1 defines none. */
    public static FlowState fromCode(int code) {
        for (FlowState state : values()) {
            if (state.code == code) {
                return state;
            }
        }
        return null;
    }
}
