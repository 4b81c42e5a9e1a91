package io.sluice.broker.cluster;

import io.sluice.broker.queue.ApplyHalt;

/**
 * A committed log entry this node cannot apply because of its own state (an I/O error or a full disk creating or deleting
 * a queue's files): it stops applying the log at it, as for an entry it cannot read (rule R12) or a message its store
 * cannot hold ({@link EntryNotStorable}), since skipping it would leave this node's queues different from the others'
 * (rule R2). Thrown on the state machine's thread, before the entry counts as applied.
 */
final class EntryNotApplied extends RuntimeException {
    EntryNotApplied(long index, String what, Throwable cause) {
        super(ApplyHalt.reason("log entry " + index + ": " + what, cause), cause);
    }
}
