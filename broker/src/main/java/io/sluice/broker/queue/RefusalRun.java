package io.sluice.broker.queue;

import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.IdRange;

/**
 * The refusals of one PUBLISH frame's messages, as few PUBLISH_ERROR frames as they allow: a run of one producer's
 * consecutive sequences refused with the same code and sentence goes out as one range. A frame refused whole (a queue
 * at its hard quota under {@code reject}, a fenced producer) used to be answered with one PUBLISH_ERROR per message,
 * each with its sentence: about a dozen times the bytes the client had sent. Confined to the queue's executor, one per
 * frame being stored; {@link #flush} before anything else is written to the link about that frame.
 */
final class RefusalRun {
    private final ProducerLink link;
    private boolean open;
    private long producerId;
    private long from;
    private long to;
    private ErrorCode code;
    private String message;

    RefusalRun(ProducerLink link) {
        this.link = link;
    }

    /** Refuses one message; sent when the run it extends ends (another producer, a gap, another reason) or at {@link #flush}. */
    void refuse(long producerId, long sequence, ErrorCode code, String message) {
        if (open && producerId == this.producerId && to != Long.MAX_VALUE && sequence == to + 1 && code == this.code
                && message.equals(this.message)) {
            to = sequence;
            return;
        }
        flush();
        open = true;
        this.producerId = producerId;
        this.from = sequence;
        this.to = sequence;
        this.code = code;
        this.message = message;
    }

    /** Sends the run still open, if any. */
    void flush() {
        if (open) {
            open = false;
            link.refuse(producerId, new IdRange(from, to), code, message);
        }
    }
}
