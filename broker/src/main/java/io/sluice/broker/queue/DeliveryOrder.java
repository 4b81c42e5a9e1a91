package io.sluice.broker.queue;

import io.netty.util.collection.LongObjectHashMap;
import io.sluice.storage.CorruptRecordException;
import io.sluice.storage.QueueReader;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoredMessage;

import java.util.function.LongConsumer;

/**
 * What a queue delivers next: the redeliveries due now first, in order (D2, D4), then the store in
 * store order through the queue's reader, skipping the messages on their way to the dead-letter
 * queue and those a transaction staged and has not committed (T2 of {@link QueueTransactions}): the
 * reader passes them, so an open transaction never stalls the queue, and one that commits later
 * has them due then, after the redeliveries. Also remembers which consumer each message taken back by the ack timeout came from, so
 * that only that consumer's late ack counts (D5). The only owner of the ready list, the reader and
 * those sets; confined to the queue's executor.
 */
final class DeliveryOrder {
    private final QueueStore store;
    /** The queue's tracked messages: a due message whose record is gone stops being tracked. */
    private final IdSet tracked;
    private final ReadyQueue ready = new ReadyQueue();
    private final LongObjectHashMap<ConsumerSession> takenBackFrom = new LongObjectHashMap<>();
    private final IdSet deadLettering = new IdSet();
    /** The pending messages, {@link QueueTransactions}'; read here only. */
    private final IdSet pending;
    /** Pending messages the reader has passed: due once their transaction commits. */
    private final IdSet passedPending = new IdSet();
    /**
     * The newest record appended visible (a publish, a forwarded copy) or made visible by a commit.
     * Past it the reader could find only pending messages, so it waits there instead of passing them:
     * a commit then finds them still ahead of the reader, delivered in store order without a read by
     * id. Passing stays the rule wherever a visible message comes after a pending one.
     */
    private long visibleThrough;
    private QueueReader reader;

    DeliveryOrder(QueueStore store, IdSet tracked, IdSet pending) {
        this.store = store;
        this.tracked = tracked;
        this.pending = pending;
        this.visibleThrough = store.writtenIndex(); // what a start finds pending is resolved before any reader opens
    }

    /** Opens the reader at the oldest unacknowledged message, on the first subscription. */
    void openReader() {
        if (reader == null) {
            reader = store.openReader();
        }
    }

    void closeReader() {
        if (reader != null) {
            reader.close();
            reader = null;
        }
    }

    /** Due now, after the others (a NACK-requeue whose delay is over). */
    void due(long id) {
        ready.addLast(id);
    }

    /** Due before everything else (a consumer that left: its messages go back to the front). */
    void dueFirst(long id) {
        ready.addFirst(id);
    }

    /** Taken back from {@code from} by the ack timeout: due now, and that consumer's late ack still counts. */
    void takenBack(long id, ConsumerSession from) {
        ready.addLast(id);
        takenBackFrom.put(SpreadIds.spread(id), from);
    }

    /** Hands {@code acked} each message of {@code from..to} that was taken back from {@code by}; returns how many. */
    int lateAcks(long from, long to, ConsumerSession by, LongConsumer acked) {
        return ready.removeRange(from, to, id -> takenBackFrom.get(SpreadIds.spread(id)) == by, id -> {
            takenBackFrom.remove(SpreadIds.spread(id));
            acked.accept(id);
        });
    }

    boolean hasDue() {
        return !ready.isEmpty();
    }

    /**
     * The oldest ready message, or -1: the older of the oldest unacknowledged message the queue does
     * not track (never delivered, or relocated) and the oldest redelivery due now. Messages out with
     * a consumer or waiting out a requeue delay are not ready. Bounded by the messages tracked.
     */
    long oldestReadyId() {
        long[] oldest = {store.oldestUnacked(id -> tracked.contains(id) || pending.contains(id), tracked.size() + pending.size())};
        ready.forEach(id -> {
            if (oldest[0] < 0 || id < oldest[0]) {
                oldest[0] = id;
            }
        });
        return oldest[0];
    }

    /** A purge: nothing is due any more. */
    void clearDue() {
        ready.clear();
        takenBackFrom.clear();
    }

    /** A message was appended visible (not staged by a transaction). */
    void appendedVisible(long id) {
        visibleThrough = Math.max(visibleThrough, id);
    }

    /** A pending message's transaction committed: if the reader passed it, it is due now; else the reader delivers it. */
    void madeVisible(long id) {
        visibleThrough = Math.max(visibleThrough, id);
        if (passedPending.size() > 0 && passedPending.contains(id)) {
            passedPending.remove(id);
            ready.addLast(id);
        }
    }

    /** A pending message's transaction rolled back: it is acknowledged and never due. */
    void discarded(long id) {
        if (passedPending.size() > 0) {
            passedPending.remove(id);
        }
    }

    void deadLetteringStarted(long id) {
        deadLettering.add(id);
    }

    void deadLetteringEnded(long id) {
        deadLettering.remove(id);
    }

    /** The next message to deliver, or null. A due message whose record is damaged is skipped (the store discarded it). */
    StoredMessage next() {
        for (long id = ready.pollFirst(); id >= 0; id = ready.pollFirst()) {
            takenBackFrom.remove(SpreadIds.spread(id));
            StoredMessage m;
            try {
                m = store.read(id);
            } catch (CorruptRecordException e) {
                m = null; // the store discarded it, logged and counted: it can never be delivered
            } catch (RuntimeException e) {
                ready.addFirst(id); // the store failed: the message stays due
                throw e;
            }
            if (m != null) {
                return m; // counted as redelivered when it was taken back
            }
            tracked.remove(id);
        }
        // The reader returns each message once, relocated ones included (see QueueReader); one that
        // drop-oldest is moving to the dead-letter queue before the reader got to it is not delivered.
        // Up to the newest visible record a pending message is passed, not waited for (T2); a lookup only for
        // records a transaction staged.
        StoredMessage next;
        while (reader.position() <= visibleThrough && (next = reader.next()) != null) {
            if (next.transactional() && pending.contains(next.id())) {
                passedPending.add(next.id());
            } else if (deadLettering.size() == 0 || !deadLettering.contains(next.id())) { // no lookup unless a move is under way
                return next;
            }
        }
        return null;
    }
}
