package io.sluice.broker.queue;

import io.netty.util.collection.LongObjectHashMap;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.ScheduledFuture;
import io.sluice.broker.log.RateLimitedLog;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoredMessage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * The source queue's side of its dead-letter moves ({@link DeadLetterer} carries the copies): a message handed over
 * stays stored and tracked, in no ready list and with no consumer, until its copy is durable in the dead-letter queue
 * (then it is acknowledged here) or the move failed (then it is delivered again after the longest redelivery delay, or,
 * never delivered, by the reader when it gets there: see {@link #failed}). Counts both outcomes.
 *
 * <p>Rule "a refused move makes no room": while a message whose move failed waits for its retry, drop-oldest with
 * dead-lettering makes no room ({@link #refusing}), and a publish at the hard level is refused. A drop whose copy the
 * dead-letter queue refuses leaves its message here; dropping the next one for every publish grew the backlog past the
 * hard quota by one message a publish, without bound. The wait is the longest redelivery delay from the message's last
 * failure, each failure's window its own.
 *
 * <p>Threads: the queue's executor.
 */
final class DeadLetterMoves {
    private static final Logger LOG = LoggerFactory.getLogger(DeadLetterMoves.class);

    private final String queue;
    private final QueueStore store;
    private final IdSet tracked;
    private final DeliveryOrder order;
    private final Backlog backlog;
    private final EventExecutor executor;
    private final Supplier<QueueOptions> options;
    private final BooleanSupplier closed;
    /** Counts a moved message as acknowledged here. */
    private final Runnable acknowledgedOne;
    /** Lets dispatch go on: a move's end may free credit or make a message due. */
    private final Runnable dispatch;
    private final DeadLetterer deadLetterer;
    /**
     * Messages whose move failed, waiting for their retry, by spread id ({@link SpreadIds}), each with the window of its
     * last failure. A message can fail again within the window of its first failure (a consumer received it and rejected
     * it to the dead-letter queue), and its window is then the second failure's: the first one's timer, cancelled, must not
     * end it.
     */
    private final LongObjectHashMap<Window> retries = new LongObjectHashMap<>();
    /** Messages being moved that drop-oldest dropped: counted as dropped only once moved. */
    private final IdSet drops = new IdSet();
    private final RateLimitedLog log;
    private long moved;
    private long dropsMoved;
    private long failures;

    DeadLetterMoves(BrokerQueue source, QueueManager manager, QueueStore store, IdSet tracked, DeliveryOrder order,
                    Backlog backlog, EventExecutor executor, BooleanSupplier closed, Runnable acknowledgedOne, Runnable dispatch) {
        this.queue = source.name();
        this.log = manager.messageLog();
        this.store = store;
        this.tracked = tracked;
        this.order = order;
        this.backlog = backlog;
        this.executor = executor;
        this.options = source::options;
        this.closed = closed;
        this.acknowledgedOne = acknowledgedOne;
        this.dispatch = dispatch;
        this.deadLetterer = new DeadLetterer(source, manager, new DeadLetterer.Outcome() {
            @Override
            public void moved(StoredMessage original) {
                DeadLetterMoves.this.moved(original);
            }

            @Override
            public void failed(StoredMessage original, String why) {
                DeadLetterMoves.this.failed(original, why);
            }
        });
    }

    /** As {@link #start}, for a message drop-oldest dropped: {@link #dropsMoved} counts it once its copy is durable. */
    void startDrop(StoredMessage message, String reason) {
        drops.add(message.id());
        start(message, message.deliveryCount(), reason);
    }

    /**
     * Hands {@code message} to the dead-letterer; it stays tracked until the outcome. A move that throws at once (the
     * declare thread refuses the task at shutdown, a replication submit throws) reports no outcome: it is a failed move
     * now, or the message would stay on its way to the dead-letter queue for good, skipped by the reader, never retried.
     */
    void start(StoredMessage message, int deliveries, String reason) {
        tracked.add(message.id());
        order.deadLetteringStarted(message.id(), message.headersLength() + message.payloadLength());
        try {
            deadLetterer.deadLetter(message, deliveries, reason);
        } catch (RuntimeException e) {
            failed(message, "the move could not start: " + e);
        }
    }

    private void moved(StoredMessage original) {
        order.deadLetteringEnded(original.id(), original.headersLength() + original.payloadLength());
        boolean drop = drops.size() > 0 && drops.contains(original.id());
        if (drop) {
            drops.remove(original.id());
        }
        if (closed.getAsBoolean() || !tracked.contains(original.id())) {
            return; // deleted or purged meanwhile
        }
        // The copy is durable. A store whose ack state cannot be written (its storage failed) acknowledges the original
        // in memory before it throws: the move ends as moved, as the store's figures say (AckBatch.ack). One that took no
        // ack (closed) keeps it: given back as a failed move, a later move makes a second copy at worst, never none.
        RuntimeException notWritten;
        try {
            notWritten = AckBatch.ack(store, original.id());
        } catch (RuntimeException failure) {
            retryLater(original.id(), "its copy is in the dead-letter queue, but acknowledging it here failed: " + failure);
            return;
        }
        if (notWritten != null) {
            log.warn(LOG, "Queue '{}': message {} was dead-lettered, but its ack could not be written ({}); it is acknowledged"
                    + " in memory only, and a restart may bring it back.", queue, original.id(), notWritten.toString());
        }
        if (drop) {
            dropsMoved++;
        }
        tracked.remove(original.id());
        backlog.removed(original.headersLength() + original.payloadLength());
        moved++;
        acknowledgedOne.run();
        dispatch.run();
        log.info(LOG, "Queue '{}': message {} dead-lettered to '{}'.", queue, original.id(), options.get().deadLetterQueue());
    }

    /**
     * The move failed: the message becomes deliverable again after the longest redelivery delay, or at once, in its place,
     * if it was never delivered (a drop-oldest drop of a message the reader has not reached): the reader returns it then,
     * so it is untracked, as a message never handed out, and the retry makes nothing due. Making it due as well had it
     * delivered twice at once, or to a second consumer while the first held it. Either way the retry's delay holds
     * drop-oldest back (rule "a refused move makes no room"), and a later drop may pick the message again.
     */
    private void failed(StoredMessage original, String why) {
        long id = original.id();
        order.deadLetteringEnded(id, original.headersLength() + original.payloadLength());
        if (drops.size() > 0) {
            drops.remove(id);
        }
        if (closed.getAsBoolean() || !tracked.contains(id)) {
            return;
        }
        retryLater(id, why);
    }

    /**
     * The move of message {@code id}, tracked, could not start: reading it failed otherwise than on a damaged record (the
     * store failed). A failed move (see {@link #failed}): counted, and delivered again after the longest redelivery
     * delay, when the store may read it again.
     */
    void unreadable(long id, RuntimeException failure) {
        if (closed.getAsBoolean() || !tracked.contains(id)) {
            return;
        }
        retryLater(id, "reading it failed: " + failure);
    }

    private void retryLater(long id, String why) {
        failures++;
        long delayMs = options.get().maxRedeliveryDelayMs();
        boolean readerReturnsIt = order.readerWillReturn(id);
        if (readerReturnsIt) {
            tracked.remove(id);
            log.warn(LOG, "Queue '{}': message {} could not be dead-lettered ({}); it stays in the queue, where no consumer has"
                    + " read it yet.", queue, id, why);
            dispatch.run();
        } else {
            log.warn(LOG, "Queue '{}': message {} could not be dead-lettered ({}); it stays in the queue and is delivered again"
                    + " in {} ms.", queue, id, why, delayMs);
        }
        refuseFor(id, delayMs);
        if (!readerReturnsIt) {
            order.dueAfter(id, delayMs); // a wait as a NACK's delay (rule D7): a purge, a hold or a drop ends it
        }
    }

    /**
     * True while a message whose move failed waits for its retry (rule "a refused move makes no room"). One that left the
     * queue meanwhile (purged, or delivered and acknowledged) waits for nothing: it is forgotten here.
     */
    boolean refusing() {
        if (retries.isEmpty()) {
            return false;
        }
        long[] gone = new long[retries.size()];
        int n = 0;
        for (Window window : retries.values()) {
            if (store.isAcked(window.id)) {
                gone[n++] = window.id;
            }
        }
        for (int i = 0; i < n; i++) {
            retries.remove(SpreadIds.spread(gone[i])).timer.cancel(false);
        }
        return !retries.isEmpty();
    }

    /** Opens message {@code id}'s window for {@code delayMs}; one it had still open is replaced, its timer cancelled. */
    private void refuseFor(long id, long delayMs) {
        Window window = new Window(id);
        window.timer = executor.schedule(window, delayMs, TimeUnit.MILLISECONDS);
        Window before = retries.put(SpreadIds.spread(id), window);
        if (before != null) {
            before.timer.cancel(false);
        }
    }

    /** One failure's window: while it is open drop-oldest makes no room; its end closes it, unless a newer one replaced it. */
    private final class Window implements Runnable {
        private final long id;
        private ScheduledFuture<?> timer;

        Window(long id) {
            this.id = id;
        }

        @Override
        public void run() {
            long key = SpreadIds.spread(id);
            if (retries.get(key) == this) {
                retries.remove(key);
            }
        }
    }

    long moved() {
        return moved;
    }

    /** Drop-oldest's drops whose dead-letter copy is durable (and the original acknowledged). */
    long dropsMoved() {
        return dropsMoved;
    }

    /** Moves that failed (the dead-letter queue refused, or could not be created); the message stayed. */
    long failures() {
        return failures;
    }
}
