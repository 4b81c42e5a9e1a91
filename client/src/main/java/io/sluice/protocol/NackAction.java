package io.sluice.protocol;

/**
 * What the broker does with negatively acknowledged messages, carried by NACK as a {@code uint8}.
 */
public enum NackAction {
    /** Make the messages deliverable again at once; their delivery count has already grown. */
    REQUEUE(0),
    /** Make the messages deliverable again after the NACK's delayMs. */
    REQUEUE_AFTER_DELAY(1),
    /** Move the messages to the queue's dead-letter queue, or drop them if it has none. */
    REJECT_TO_DEAD_LETTER(2);

    private final int code;

    NackAction(int code) {
        this.code = code;
    }

    public int code() {
        return code;
    }

    /** Returns the action for a wire code, or {@code null} when version 1 defines none. */
    public static NackAction fromCode(int code) {
        for (NackAction action : values()) {
            if (action.code == code) {
                return action;
            }
        }
        return null;
    }
}
