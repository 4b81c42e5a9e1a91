package io.sluice.broker.queue;

import io.sluice.protocol.PublishCursor;
import io.sluice.protocol.PublishFrame;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Rule R9 of docs/replication.md, resends: the messages a cluster's leader admitted and submitted to the log and has
 * not applied yet, by producer id and sequence. A resend of one of them (its producer had no confirm yet: a new
 * connection, or a resend of its own) is no new message, though the producer table does not hold it yet: the log may.
 * While the quota refuses new messages such a resend is not refused (its original counts in the quota already, and
 * is stored once committed): it waits here for its original and is then answered as a resend of a stored message,
 * confirmed once durable, or refused if the original was not stored after all (its entry was not committed).
 *
 * <p>An entry is taken off when any PUBLISH entry applied here carries its producer id and sequence (the original,
 * or another node's resend of it after a failover), and all at once when this node's submissions are refused or it
 * loses its leadership. The messages admitted are bounded by {@code cluster.max-uncommitted-bytes}.
 *
 * <p>Threads: the queue's executor.
 */
final class InFlightPublishes {
    /** A resend waiting for its original, with what its answer needs: the window it took and the bytes it holds (W1, W2). */
    record Waiting(ProducerLink link, long producerId, long sequence, int windowBytes, int heldBytes, String refusal) {
    }

    private record Key(long producerId, long sequence) {
    }

    /** While no resend waits for a message: shared, so that a submitted message costs no list of its own. */
    private static final List<Waiting> NONE_WAITING = List.of();

    /** Key to the resends waiting for it ({@link #NONE_WAITING} while none waits). */
    private final Map<Key, List<Waiting>> submitted = new HashMap<>();

    /** The leader admitted {@code frame} and submits it now. */
    void submitted(PublishFrame frame) {
        PublishCursor cursor = frame.cursor();
        while (cursor.next()) {
            submitted.putIfAbsent(new Key(cursor.producerId(), cursor.sequence()), NONE_WAITING);
        }
    }

    /** True, and the resend waits, if this message is submitted and not applied yet; false if it is not in flight. */
    boolean await(Waiting resend) {
        Key key = new Key(resend.producerId(), resend.sequence());
        List<Waiting> waiting = submitted.get(key);
        if (waiting == null) {
            return false;
        }
        if (waiting == NONE_WAITING) {
            waiting = new ArrayList<>(1);
            submitted.put(key, waiting);
        }
        waiting.add(resend);
        return true;
    }

    /** A PUBLISH entry was applied here: its messages are no longer in flight; their waiting resends go to {@code answer}. */
    void applied(PublishFrame frame, Consumer<Waiting> answer) {
        if (submitted.isEmpty()) {
            return;
        }
        PublishCursor cursor = frame.cursor();
        while (cursor.next()) {
            List<Waiting> waiting = submitted.remove(new Key(cursor.producerId(), cursor.sequence()));
            if (waiting != null) {
                waiting.forEach(answer);
            }
        }
    }

    /** This node's submissions were refused, or it lost its leadership: nothing is in flight from here any more. */
    void clear(Consumer<Waiting> answer) {
        List<List<Waiting>> all = new ArrayList<>(submitted.values());
        submitted.clear();
        all.forEach(waiting -> waiting.forEach(answer));
    }
}
