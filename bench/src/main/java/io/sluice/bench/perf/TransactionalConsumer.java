package io.sluice.bench.perf;

import io.sluice.client.Connection;
import io.sluice.client.Message;
import io.sluice.client.SluiceException;
import io.sluice.client.Transaction;

import java.util.ArrayDeque;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

/**
 * The handler of one consumer of a {@code --transactional} run: it forwards what it receives to the second
 * queue, one {@link Transaction} per batch. Each delivery is acknowledged in the open transaction, which also
 * publishes the delivery's payload, unchanged, to {@link #outputQueue}; once the transaction holds
 * {@link PerfOptions#messagesPerTransaction} deliveries it is committed with {@code commitAsync}.
 *
 * <p>Rule "commits in flight": at most {@link PerfOptions#commitsInFlight} commits of this consumer await their
 * answer at once, and one more transaction fills meanwhile. A full transaction that finds no free slot waits for
 * one, and the deliveries after it wait in {@link #waiting} until a commit's answer frees a slot; they hold the
 * consumer's credit (they are unsettled), so the credit bounds that queue. Rule "linger": a transaction that is
 * not full and got nothing for {@link #LINGER_NANOS} is committed as it is ({@link #commitIfIdle}), so the last
 * deliveries of a run are committed too.
 *
 * <p>Threads: the handler runs where the client runs callbacks, the commits' answers too (the network thread, or
 * the dispatch pool with {@code --callbacks dispatch}), and {@link #commitIfIdle} on the run's timer thread; all
 * of them take this object's lock, which is uncontended but for the timer's tick. Nothing here blocks:
 * {@code publish}, {@code ack} and {@code commitAsync} hand their work to the network thread.
 */
final class TransactionalConsumer {
    /** A partial batch this long without a new delivery is committed (rule "linger"). */
    static final long LINGER_NANOS = 5_000_000;

    private final Connection connection;
    private final String outputQueue;
    private final int messagesPerTransaction;
    private final int maxCommitsInFlight;
    private final Totals totals;
    private final LatencyStats.Writer commitLatency;

    // Guarded by this.
    private Transaction open;
    private int openMessages;
    private long lastAddNanos;
    private int commitsInFlight;
    private final ArrayDeque<Message> waiting = new ArrayDeque<>();

    TransactionalConsumer(Connection connection, String outputQueue, PerfOptions options, Totals totals) {
        this.connection = connection;
        this.outputQueue = outputQueue;
        this.messagesPerTransaction = options.messagesPerTransaction;
        this.maxCommitsInFlight = options.commitsInFlight;
        this.totals = totals;
        this.commitLatency = totals.commitLatency.newWriter();
    }

    /** The consumer's handler. */
    synchronized void onMessage(Message message) {
        totals.consumed.increment();
        if (openMessages == messagesPerTransaction || !waiting.isEmpty()) {
            waiting.add(message); // the open transaction is full and waits for a commit slot
            return;
        }
        add(message);
    }

    /** On the run's timer: commits a partial transaction that got nothing for {@link #LINGER_NANOS}. */
    synchronized void commitIfIdle(long nowNanos) {
        if (open != null && openMessages < messagesPerTransaction && nowNanos - lastAddNanos >= LINGER_NANOS
                && commitsInFlight < maxCommitsInFlight) {
            commit();
        }
    }

    private void add(Message message) {
        if (open == null) {
            open = connection.transaction();
        }
        try {
            // Publish first: if the transaction failed, ack throws before it settles the message.
            open.publish(outputQueue, message.payload());
            open.ack(message);
        } catch (SluiceException failed) {
            // The broker rolled the transaction back (its acknowledged deliveries come back): start another.
            totals.failed(failed);
            open.rollbackAsync();
            open = connection.transaction();
            openMessages = 0;
            open.publish(outputQueue, message.payload());
            open.ack(message);
        }
        openMessages++;
        lastAddNanos = System.nanoTime();
        if (openMessages == messagesPerTransaction && commitsInFlight < maxCommitsInFlight) {
            commit();
        }
    }

    private void commit() {
        Transaction transaction = open;
        int messages = openMessages;
        open = null;
        openMessages = 0;
        commitsInFlight++;
        long startNanos = System.nanoTime();
        boolean inSummary = totals.committedMessages.get() >= totals.unsummarisedMessages;
        totals.begun();
        transaction.commitAsync().whenComplete((ok, failure) -> committed(messages, startNanos, inSummary, failure));
    }

    /** Where the client completes the commit's future. */
    private synchronized void committed(int messages, long startNanos, boolean inSummary, Throwable failure) {
        long now = System.nanoTime();
        commitsInFlight--;
        if (failure == null) {
            commitLatency.record(now - startNanos, inSummary);
            totals.committed(messages, now);
        } else {
            totals.failed(failure);
        }
        if (openMessages == messagesPerTransaction) {
            commit();
        }
        while (!waiting.isEmpty() && openMessages < messagesPerTransaction) {
            add(waiting.poll());
        }
    }

    /** What all consumers of one run committed; thread-safe. */
    static final class Totals {
        final LongAdder consumed = new LongAdder();
        final LongAdder commits = new LongAdder();
        final AtomicLong committedMessages = new AtomicLong();
        final LongAdder failedTransactions = new LongAdder();
        final AtomicLong lastCommitNanos = new AtomicLong();
        final AtomicReference<Throwable> firstFailure = new AtomicReference<>();
        /** Commit latency from {@code commitAsync} to its answer, per transaction. */
        final LatencyStats commitLatency = new LatencyStats();
        /** The workloads' last 80 %: commits that start before this many messages were committed are left out. */
        final long unsummarisedMessages;

        Totals(long unsummarisedMessages) {
            this.unsummarisedMessages = unsummarisedMessages;
        }

        /** Commits begun and not yet answered; the monitor its waiters wait on. */
        private long unanswered;

        private synchronized void begun() {
            unanswered++;
        }

        private void committed(int messages, long nowNanos) {
            commits.increment();
            committedMessages.addAndGet(messages);
            lastCommitNanos.accumulateAndGet(nowNanos, Math::max);
            answered();
        }

        private void failed(Throwable failure) {
            failedTransactions.increment();
            firstFailure.compareAndSet(null, failure);
            answered();
        }

        private synchronized void answered() {
            unanswered--;
            notifyAll();
        }

        /**
         * Waits up to {@code timeoutNanos} for every commit begun to be answered: the drain consumer may
         * receive a commit's last message before its OK reaches the forwarder, and a report read then
         * counts it as not committed. Returns false on timeout.
         */
        synchronized boolean awaitAnswers(long timeoutNanos) throws InterruptedException {
            long deadline = System.nanoTime() + timeoutNanos;
            while (unanswered > 0) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                java.util.concurrent.TimeUnit.NANOSECONDS.timedWait(this, left);
            }
            return true;
        }
    }
}
