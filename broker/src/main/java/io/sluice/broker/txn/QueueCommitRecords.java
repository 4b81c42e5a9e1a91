package io.sluice.broker.txn;

import io.netty.util.concurrent.EventExecutor;
import io.sluice.broker.queue.BrokerQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The commit records kept in their transaction's target queue (T5 of
 * {@link io.sluice.broker.queue.QueueTransactions}) that the coordinator still tracks: how many are not
 * finished (for the log-records metric), and, per queue, those whose transaction's acknowledgements in
 * other queues may not be durable yet, which a delete of the queue waits for (X5 of
 * {@link TransactionCoordinator}).
 *
 * <p>Threads: {@link #unsettled}, {@link #settled} and the counting run on the coordinator's thread
 * ({@code coordinator}), which owns the map; {@link #awaitSettled} on the thread deleting a queue;
 * {@link #unfinished} on any.
 */
final class QueueCommitRecords {
    private static final Logger LOG = LoggerFactory.getLogger(QueueCommitRecords.class);
    /** How long a queue's delete waits for the acknowledgements of the commits whose records it keeps (X5). */
    static final long DELETE_WAIT_MS = 10_000;

    /** The commit records of one queue whose acknowledgements elsewhere may not be durable yet, and who waits for none. */
    private static final class Unsettled {
        int records;
        final List<CompletableFuture<Void>> waiters = new ArrayList<>();
    }

    private final EventExecutor coordinator;
    private final AtomicLong unfinished = new AtomicLong();
    private final Map<BrokerQueue, Unsettled> unsettled = new HashMap<>();

    QueueCommitRecords(EventExecutor coordinator) {
        this.coordinator = coordinator;
    }

    /** A commit record was written (or found at a start) in {@code queue}: not finished, its acknowledgements not durable yet. */
    void written(BrokerQueue queue) {
        unfinished.incrementAndGet();
        unsettled.computeIfAbsent(queue, q -> new Unsettled()).records++;
    }

    /** A commit record in a queue was finished (acknowledged there). Any thread. */
    void finished() {
        unfinished.decrementAndGet();
    }

    /** The acknowledgements of a commit whose record is in {@code queue} (null: in the log) are durable, or never will be. */
    void settled(BrokerQueue queue) {
        Unsettled u = queue == null ? null : unsettled.get(queue);
        if (u != null && --u.records == 0) {
            unsettled.remove(queue);
            u.waiters.forEach(w -> w.complete(null));
        }
    }

    /** Commit records in queues not finished yet. Any thread. */
    long unfinished() {
        return unfinished.get();
    }

    /**
     * X5, on the thread that deletes {@code queue}, once it is closed (no commit record is written there
     * any more): returns once the acknowledgements of every commit whose record it keeps are durable, or
     * after {@value #DELETE_WAIT_MS} ms.
     */
    void awaitSettled(BrokerQueue queue) {
        try {
            CompletableFuture.supplyAsync(() -> {
                Unsettled u = unsettled.get(queue);
                if (u == null) {
                    return CompletableFuture.<Void>completedFuture(null);
                }
                CompletableFuture<Void> waiter = new CompletableFuture<>();
                u.waiters.add(waiter);
                LOG.info("Queue '{}' is closed for its delete; its files go once the acknowledgements of the {} transactions whose "
                        + "commit records it keeps are durable (at most {} ms).", queue.name(), u.records, DELETE_WAIT_MS);
                return waiter;
            }, coordinator).thenCompose(waiter -> waiter).get(DELETE_WAIT_MS, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            LOG.warn("Queue '{}' is deleted while the acknowledgements of transactions whose commit records it keeps are "
                    + "still not durable after {} ms; a crash before they are would deliver those messages again.",
                    queue.name(), DELETE_WAIT_MS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | RuntimeException e) {
            LOG.debug("Queue '{}': no wait for its transactions' acknowledgements ({}).", queue.name(), e.toString());
        }
        CrashPoint.reached(CrashPoint.QUEUE_DELETE_AFTER_X5);
    }
}
