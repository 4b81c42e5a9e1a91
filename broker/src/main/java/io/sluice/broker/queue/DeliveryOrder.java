package io.sluice.broker.queue;

import io.netty.util.collection.LongObjectHashMap;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.ScheduledFuture;
import io.sluice.protocol.IdRange;
import io.sluice.storage.CorruptRecordException;
import io.sluice.storage.QueueReader;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StorageFilesExhaustedException;
import io.sluice.storage.StoredMessage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.LongConsumer;

/**
 * What a queue delivers next: the redeliveries due now first, in order (D2, D4), then the store in
 * store order through the queue's reader, skipping the messages on their way to the dead-letter
 * queue, those a cluster leader's purge or drop holds ({@link LeaderHold}) and those a transaction staged and has not
 * committed (T2 of {@link QueueTransactions}): the
 * reader passes them, so an open transaction never stalls the queue, and one that commits later
 * has them due then, after the redeliveries. Also remembers which consumer each message taken back by the ack timeout came from, so
 * that only that consumer's late ack counts (D5). The only owner of the ready list, the reader and
 * those sets; confined to the queue's executor.
 *
 * <p>The reader is opened at the first subscription, and a queue never written opens its files then.
 * If the process is out of file descriptors, the subscription stands anyway and the reader is opened
 * later: at each dispatch, and every {@value #READER_RETRY_MS} ms while it cannot be, so the consumer
 * is served once a descriptor is free (the queue's appends are refused meanwhile, with the same cause).
 * So is a read that needs a segment file opened while none can be.
 *
 * <p>Rule D7 of docs/broker-core.md, "a delay ends with its wait": a message waiting out a delay before it is due again
 * (a NACK's requeue, a failed dead-letter move's retry) is made due by its timer only if it is still in that very wait.
 * Whatever else takes it out (a purge, a cluster leader's purge or drop, a drop-oldest drop, an acknowledgement, the
 * queue's close) cancels the timer; given back and delivered again since, the message is not made due a second time
 * while a consumer holds it.
 */
final class DeliveryOrder {
    private static final Logger LOG = LoggerFactory.getLogger(DeliveryOrder.class);
    static final long READER_RETRY_MS = 1000;

    private final QueueStore store;
    /** The queue's tracked messages: a due message whose record is gone stops being tracked. */
    private final IdSet tracked;
    private final ReadyQueue ready = new ReadyQueue();
    private final LongObjectHashMap<ConsumerSession> takenBackFrom = new LongObjectHashMap<>();
    /** The messages waiting out a delay (rule D7), by spread id ({@link SpreadIds}), each with its timer: only those. */
    private final LongObjectHashMap<Delay> delayed = new LongObjectHashMap<>();
    private final IdSet deadLettering = new IdSet();
    private long deadLetteringBytes;
    /** The pending messages, {@link QueueTransactions}'; read here only. */
    private final IdSet pending;
    /** What a cluster leader's purges and drops hold until their entries are applied (rules R7, R9); read here only. */
    private final LeaderHold leaderHeld;
    /**
     * Rule R7: what a purge held and gave back (its entries were not committed) that the reader had passed, as ranges
     * (a purge may have held millions): due before the ready list, in id order, each id once if it is still unacknowledged
     * then and neither tracked, held nor otherwise passed by the reader.
     */
    private final RangeSet givenBack = new RangeSet();
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
    private final EventExecutor executor;
    private final Runnable dispatch;
    /** A subscription wants the reader (it stays open until the queue closes). */
    private boolean readerWanted;
    /** A file could not be opened for the reader for want of descriptors; a dispatch is scheduled. */
    private boolean retrying;
    private boolean closed;

    /** {@code dispatch} asks the queue for a dispatch; it runs on {@code executor}, the queue's. */
    DeliveryOrder(QueueStore store, IdSet tracked, IdSet pending, LeaderHold leaderHeld, EventExecutor executor, Runnable dispatch) {
        this.store = store;
        this.tracked = tracked;
        this.pending = pending;
        this.leaderHeld = leaderHeld;
        this.visibleThrough = store.writtenIndex(); // what a start finds pending is resolved before any reader opens
        this.executor = executor;
        this.dispatch = dispatch;
    }

    /** Opens the reader at the oldest unacknowledged message, on the first subscription (or later: see the class comment). */
    void openReader() {
        readerWanted = true;
        tryOpenReader();
    }

    /** True if the reader is open; false if it cannot be opened now for want of descriptors (a retry is then scheduled). */
    private boolean tryOpenReader() {
        if (reader != null) {
            return true;
        }
        try {
            reader = store.openReader();
        } catch (StorageFilesExhaustedException e) {
            retryLater(e);
            return false;
        }
        return true;
    }

    /**
     * The store could not open a file for the reader (the reader itself, or the segment it reads next)
     * for want of descriptors: the dispatch ends without a failure, and another is asked for in
     * {@value #READER_RETRY_MS} ms, once, however many consumers wait.
     */
    private void retryLater(StorageFilesExhaustedException e) {
        if (retrying) {
            return;
        }
        retrying = true;
        LOG.warn("Queue '{}': {}; its consumers are served once a descriptor is free (tried again every {} ms).",
                store.name(), e.getMessage(), READER_RETRY_MS);
        try {
            executor.schedule(this::retry, READER_RETRY_MS, TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException shuttingDown) {
            retrying = false; // the broker stops: nothing left to serve
        }
    }

    private void retry() {
        retrying = false;
        if (!closed) {
            dispatch.run();
        }
    }

    /** The queue closed: the reader is closed and no delay makes anything due (their timers leave the event loop now). */
    void close() {
        closed = true;
        cancelDelays();
        if (reader != null) {
            reader.close();
            reader = null;
        }
    }

    /** Due now, after the others (a NACK-requeue whose delay is over). */
    void due(long id) {
        ready.addLast(id);
    }

    /**
     * Due after {@code delayMs} (at once if it is not positive), after the others, if it is still tracked and still in
     * this wait then (rule D7): a NACK-requeue, a failed dead-letter move's retry.
     */
    void dueAfter(long id, long delayMs) {
        if (delayMs <= 0) {
            due(id);
            return;
        }
        Delay delay = new Delay(id);
        delay.timer = executor.schedule(delay, delayMs, TimeUnit.MILLISECONDS);
        Delay before = delayed.put(SpreadIds.spread(id), delay);
        if (before != null) {
            before.timer.cancel(false); // one wait at a time: the newer one is the message's
        }
    }

    /** The message left its wait otherwise than by its timer (an acknowledgement, a hold, a drop): the timer is cancelled. */
    void delayEnded(long id) {
        if (!delayed.isEmpty()) {
            Delay delay = delayed.remove(SpreadIds.spread(id));
            if (delay != null) {
                delay.timer.cancel(false);
            }
        }
    }

    private void cancelDelays() {
        for (Delay delay : delayed.values()) {
            delay.timer.cancel(false);
        }
        delayed.clear();
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

    /**
     * A late ack of a message {@link #lateAcks} handed over could not be applied: due again, first, and still {@code from}'s
     * to ack late.
     */
    void stillTakenBack(long id, ConsumerSession from) {
        ready.addFirst(id);
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

    /** Store timestamp of the oldest ready message ({@link #oldestReadyId}), or -1, as for a damaged record (the store discarded it). */
    long oldestReadyTimestampMillis() {
        long oldestId = oldestReadyId();
        try {
            StoredMessage m = oldestId < 0 ? null : store.read(oldestId);
            return m == null ? -1 : m.timestampMillis();
        } catch (CorruptRecordException e) {
            return -1;
        }
    }

    /** A purge: nothing is due any more, nor waits out a delay. */
    void clearDue() {
        cancelDelays();
        ready.clear();
        givenBack.clear();
        takenBackFrom.clear();
    }

    /**
     * A cluster leader's purge or drop holds this message (rules R7, R9), or a drop takes it: not due any more, whatever
     * made it due, and out of its delay if it waited one (D7).
     */
    void notDue(long id) {
        delayEnded(id);
        ready.remove(id);
        takenBackFrom.remove(SpreadIds.spread(id));
    }

    /**
     * A drop's hold on this message ended without its entry being applied (rule R9): deliverable again. The reader
     * passed it while it was held if it is behind the reader, so it is due now; ahead of the reader, the reader
     * returns it. Not tracked, so that if the entry commits after all, applying it acknowledges the message.
     */
    void givenBack(long id) {
        if (!readerWillReturn(id)) {
            ready.addFirst(id);
        }
    }

    /**
     * True if the reader has not reached message {@code id} yet (or is not open yet: it opens at the oldest unacknowledged
     * message), so it returns the message when it gets there, tracked or not, unless the message is then on its way to
     * the dead-letter queue, held or pending. A message it has passed comes back only through the ready list.
     */
    boolean readerWillReturn(long id) {
        return reader == null || id >= reader.position();
    }

    /**
     * A purge's hold on {@code ranges} ended without its entries being applied (rule R7): deliverable again, as
     * {@link #givenBack(long)} says of one message, without a step per message: what the reader passed is due as ranges.
     */
    void givenBack(List<IdRange> ranges) {
        for (IdRange range : ranges) {
            if (reader != null && range.from() < reader.position()) {
                givenBack.add(range.from(), Math.min(range.to(), reader.position() - 1));
            }
        }
    }

    /** Hands {@code action} every message on its way to the dead-letter queue. */
    void forEachDeadLettering(LongConsumer action) {
        deadLettering.forEach(action);
    }

    /** True while the message is on its way to the dead-letter queue. */
    boolean deadLettering(long id) {
        return deadLettering.size() > 0 && deadLettering.contains(id);
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

    /** {@code bytes}: the message's headers and payload, counted in {@link #deadLetteringBytes} until its move ends. */
    void deadLetteringStarted(long id, int bytes) {
        deadLettering.add(id);
        deadLetteringBytes += bytes;
    }

    void deadLetteringEnded(long id, int bytes) {
        deadLettering.remove(id);
        deadLetteringBytes -= bytes;
    }

    /** Headers and payload of the messages on their way to the dead-letter queue: still in the backlog until moved. */
    long deadLetteringBytes() {
        return deadLetteringBytes;
    }

    /** The next message to deliver, or null. A due message whose record is damaged is skipped (the store discarded it). */
    StoredMessage next() {
        StoredMessage back = nextGivenBack();
        if (back != null) {
            return back;
        }
        for (long id = ready.pollFirst(); id >= 0; id = ready.pollFirst()) {
            takenBackFrom.remove(SpreadIds.spread(id));
            if (!leaderHeld.isEmpty() && leaderHeld.holds(id)) {
                continue; // made due while a purge or a drop holds it: given back (or removed) when the hold ends
            }
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
        if (!readerWanted || !tryOpenReader()) {
            return null;
        }
        // The reader returns each message once, relocated ones included (see QueueReader); one that
        // drop-oldest is moving to the dead-letter queue before the reader got to it is not delivered.
        // Up to the newest visible record a pending message is passed, not waited for (T2); a lookup only for
        // records a transaction staged.
        StoredMessage next;
        try {
            while (reader.position() <= visibleThrough && (next = reader.next()) != null) {
                if (next.transactional() && pending.contains(next.id())) {
                    passedPending.add(next.id());
                } else if (!deadLettering(next.id()) && (leaderHeld.isEmpty() || !leaderHeld.holds(next.id()))) {
                    return next; // no lookup unless a move, a purge or a drop is under way
                }
            }
        } catch (StorageFilesExhaustedException e) {
            retryLater(e); // the reader stays where it was: the message is read again next time
        }
        return null;
    }

    /** The next message a purge gave back behind the reader ({@link #givenBack(List)}), or null. */
    private StoredMessage nextGivenBack() {
        for (IdRange range = givenBack.first(); range != null; range = givenBack.first()) {
            long id = store.nextUnacked(range.from());
            if (id < 0 || id > range.to()) {
                givenBack.remove(range.from(), range.to(), null);
                continue;
            }
            givenBack.remove(range.from(), id, null);
            if (leaderHeld.holds(id) || tracked.contains(id) || pending.contains(id) || deadLettering(id)) {
                continue; // held again, delivered, staged or being moved since: not this path's to deliver
            }
            try {
                StoredMessage m = store.read(id);
                if (m != null) {
                    return m;
                }
            } catch (CorruptRecordException e) {
                // the store discarded it, logged and counted: it can never be delivered
            } catch (RuntimeException e) {
                givenBack.add(id, id); // the store failed: the message stays due
                throw e;
            }
        }
        return null;
    }

    /** One message's wait for a delay (rule D7): makes it due when it ends, unless the message left the wait meanwhile. */
    private final class Delay implements Runnable {
        private final long id;
        private ScheduledFuture<?> timer;

        Delay(long id) {
            this.id = id;
        }

        @Override
        public void run() {
            long key = SpreadIds.spread(id);
            if (delayed.get(key) != this) {
                return; // the message left this wait (a cancel normally removes the timer before it runs)
            }
            delayed.remove(key);
            if (!closed && tracked.contains(id)) {
                ready.addLast(id);
                dispatch.run();
            }
        }
    }
}
