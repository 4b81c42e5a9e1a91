package io.sluice.bench.perf;

import io.sluice.client.Connection;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.SluiceException;
import io.sluice.protocol.FlowState;
import io.sluice.protocol.QueueSettings;
import org.HdrHistogram.Histogram;

import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;

/**
 * Runs one perf workload against a broker and returns what it measured. Not reusable: one instance, one run.
 *
 * <p>Threads: {@link #run()}'s caller coordinates the phases; one {@code perf-producer-N} thread per producer
 * calls {@code sendAsync} (blocking while its confirm window is full); the client's dispatch threads count
 * confirms and run each consumer's handler; {@code perf-progress} prints one line a second. Every producer
 * and every consumer has its own {@link Connection}, as PerfTest does.
 *
 * <p>Phases: declare the queues (purging messages a previous run left); subscribe the consumers unless
 * {@link PerfOptions#drainAfterPublish}; publish; wait for every confirm; for drain-after-publish, subscribe
 * now; wait until everything confirmed was received, or nothing arrived for {@link PerfOptions#drainTimeoutSeconds}.
 *
 * <p>{@link PerfOptions#transactional}: each consumer is a {@link TransactionalConsumer} forwarding the first
 * queue to a second one ({@link PerfOptions#outputQueueName}) in transactions, on a connection of its own, and a
 * drain consumer per consumer, on another, receives from the second queue: receipts, loss, duplicates and
 * latency are counted there, so a message counts once it was committed through. The {@code perf-progress}
 * thread also commits the transactions that linger.
 */
final class PerfRun {
    private final PerfOptions options;
    private final PrintStream progressOut;
    private final SequenceTracker tracker;
    private final LatencyStats latency = new LatencyStats();
    private final LongAdder sent = new LongAdder();
    private final LongAdder failed = new LongAdder();
    private final LongAdder receipts = new LongAdder();
    private final AtomicLong uniqueIndex = new AtomicLong();
    private final AtomicLong firstSendNanos = new AtomicLong();
    private final AtomicLong lastConfirmNanos = new AtomicLong();
    private final AtomicLong lastReceiveNanos = new AtomicLong();
    private final AtomicReference<Throwable> firstFailure = new AtomicReference<>();
    private final AtomicReferenceArray<FlowState> flowStates;
    private final List<ProgressPoint> series = Collections.synchronizedList(new ArrayList<>());
    private final List<Connection> connections = new ArrayList<>();
    /** For a transactional run, what its consumers committed; otherwise null. */
    private final TransactionalConsumer.Totals transactions;
    private final List<TransactionalConsumer> forwarders = new ArrayList<>();
    /**
     * Latency is summarised over the last 80 % of messages, the first 20 % left out (docs/performance.md, "The workloads").
     */
    private final long unsummarisedMessages;
    private volatile boolean stopProducers;
    private long startNanos;
    private long summaryFromNanos;

    /** @param progressOut where the per-second lines go; {@code null} for none */
    PerfRun(PerfOptions options, PrintStream progressOut) {
        this.options = options;
        this.progressOut = progressOut;
        this.tracker = new SequenceTracker(options.producers);
        this.flowStates = new AtomicReferenceArray<>(options.producers);
        for (int i = 0; i < options.producers; i++) {
            flowStates.set(i, FlowState.FREE);
        }
        this.unsummarisedMessages = options.durationSeconds > 0 ? 0 : options.messages / 5;
        this.transactions = options.transactional ? new TransactionalConsumer.Totals(unsummarisedMessages) : null;
    }

    PerfResult run() throws InterruptedException {
        startNanos = System.nanoTime();
        summaryFromNanos = options.durationSeconds > 0
                ? startNanos + TimeUnit.SECONDS.toNanos(options.durationSeconds) / 5 : startNanos;
        ScheduledExecutorService progress = Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread thread = new Thread(runnable, "perf-progress");
            thread.setDaemon(true);
            return thread;
        });
        List<Consumer> consumers = new ArrayList<>();
        List<Producer> producers = new ArrayList<>();
        String brokerName = "";
        try {
            Connection admin = connect("admin");
            brokerName = admin.brokerName();
            declareQueues(admin);
            progress.scheduleAtFixedRate(new ProgressTask(), 1, 1, TimeUnit.SECONDS);
            if (!options.drainAfterPublish) {
                subscribeAll(consumers);
            }
            if (!forwarders.isEmpty()) {
                long tickNanos = TransactionalConsumer.LINGER_NANOS / 2;
                progress.scheduleAtFixedRate(() -> forwarders.forEach(f -> f.commitIfIdle(System.nanoTime())),
                        tickNanos, tickNanos, TimeUnit.NANOSECONDS);
            }
            List<Thread> threads = new ArrayList<>();
            for (int i = 0; i < options.producers; i++) {
                int index = i;
                Connection connection = connect("producer-" + i);
                // The confirm window is enforced here (see publish), so the client's own bound only has to be
                // above it: twice, because the client frees its slot after this run's callback has run.
                ProducerOptions producerOptions = ProducerOptions.DEFAULT.withMaxInFlight(2 * options.confirmWindow)
                        .withFlowListener((queue, state, reason) -> flowStates.set(index, state));
                Producer producer = connection.createProducer(options.queueName(index), producerOptions);
                producers.add(producer);
                Thread thread = new Thread(() -> publish(index, producer), "perf-producer-" + i);
                threads.add(thread);
            }
            threads.forEach(Thread::start);
            awaitProducers(threads);
            awaitConfirms();
            long drainStart = System.nanoTime();
            if (options.drainAfterPublish) {
                subscribeAll(consumers);
            }
            if (!consumers.isEmpty()) {
                awaitDrain();
            }
            long drainEnd = lastReceiveNanos.get();
            progress.shutdownNow();
            return result(brokerName, drainStart, drainEnd);
        } finally {
            progress.shutdownNow();
            for (Consumer consumer : consumers) {
                consumer.close();
            }
            producers.forEach(Producer::close);
            if (!options.keepQueues && !connections.isEmpty()) {
                deleteQueues(connections.get(0));
            }
            connections.forEach(Connection::close);
        }
    }

    private Connection connect(String role) {
        return connect(role, options.callbacksOnNetworkThread);
    }

    private Connection connect(String role, boolean callbacksOnNetworkThread) {
        Connection connection = Connection.connect(options.connectionOptions()
                .maxFrameBytes(options.maxFrameBytes).clientName("sluice-perf-" + role)
                .callbacksOnNetworkThread(callbacksOnNetworkThread).build());
        connections.add(connection);
        return connection;
    }

    private void declareQueues(Connection admin) {
        QueueSettings.Builder settings = QueueSettings.builder();
        if (options.quotaSoft > 0) {
            settings.set(QueueSettings.QUOTA_SOFT_MESSAGES, options.quotaSoft);
        }
        if (options.quotaHard > 0) {
            settings.set(QueueSettings.QUOTA_HARD_MESSAGES, options.quotaHard);
        }
        for (String queue : queueNames()) {
            long ready = admin.declareQueue(queue, settings.build());
            if (ready > 0) {
                long purged = admin.purgeQueue(queue);
                note("Queue " + queue + " held " + ready + " messages from an earlier run; purged " + purged + ".");
            }
        }
    }

    private void deleteQueues(Connection admin) {
        for (String queue : queueNames()) {
            try {
                admin.deleteQueue(queue);
            } catch (SluiceException e) {
                note("Could not delete queue " + queue + ": " + e.getMessage());
            }
        }
    }

    /** The run's queues: the first ones, and for a transactional run the second ones after them. */
    private List<String> queueNames() {
        List<String> names = new ArrayList<>();
        for (int i = 0; i < options.queues; i++) {
            names.add(options.queueName(i));
        }
        for (int i = 0; options.transactional && i < options.queues; i++) {
            names.add(options.outputQueueName(i));
        }
        return names;
    }

    private void subscribeAll(List<Consumer> consumers) {
        ConsumerOptions consumerOptions = new ConsumerOptions(options.credit, options.ackBatch,
                ConsumerOptions.DEFAULT.ackFlushDelay());
        for (int i = 0; i < options.consumers; i++) {
            // A paced handler sleeps, which must not happen on the network thread.
            Connection connection = connect("consumer-" + i,
                    options.callbacksOnNetworkThread && options.consumerRate == 0);
            Pacer pacer = new Pacer(options.consumerRate, options.consumerRateSeconds);
            LatencyStats.Writer latencyWriter = latency.newWriter();
            if (!options.transactional) {
                consumers.add(connection.subscribe(options.queueName(i), consumerOptions,
                        message -> onMessage(message, pacer, latencyWriter)));
                continue;
            }
            consumers.add(connect("drain-" + i).subscribe(options.outputQueueName(i), consumerOptions,
                    message -> onMessage(message, pacer, latencyWriter)));
            TransactionalConsumer forwarder = new TransactionalConsumer(connection, options.outputQueueName(i), options,
                    transactions);
            consumers.add(connection.subscribe(options.queueName(i), consumerOptions, forwarder::onMessage));
            forwarders.add(forwarder);
        }
    }

    /**
     * On the producer's own thread. The send time written into the payload is taken once the confirm window
     * has room, i.e. when the message is handed to the client: the workloads' latency is from send to receive,
     * and time spent waiting for a window slot is the producer's own queue, not the message's trip. (Before
     * 2026-11-29 the time was taken before waiting, which added up to a full window's turn-around.)
     */
    private void publish(int index, Producer producer) {
        Pacer pacer = new Pacer(options.ratePerProducer, 0);
        Semaphore window = new Semaphore(options.confirmWindow);
        long count = options.durationSeconds > 0 ? Long.MAX_VALUE : options.messagesFor(index);
        try {
            for (long sequence = 0; sequence < count && !stopProducers; sequence++) {
                pacer.pace();
                window.acquire();
                long now = System.nanoTime();
                if (firstSendNanos.get() == 0) {
                    firstSendNanos.compareAndSet(0, now);
                }
                long confirmedSequence = sequence;
                producer.sendAsync(Payload.create(options.sizeBytes, index, sequence, now))
                        .whenComplete((ignored, failure) -> onSettled(index, confirmedSequence, failure, window));
                sent.increment();
            }
        } catch (InterruptedException e) {
            firstFailure.compareAndSet(null, new IllegalStateException("producer " + index
                    + " interrupted while waiting for room in its confirm window", e));
        } catch (RuntimeException e) {
            firstFailure.compareAndSet(null, e);
        }
    }

    /** Where the client runs callbacks (its network thread or dispatch pool; --callbacks). */
    private void onSettled(int producer, long sequence, Throwable failure, Semaphore window) {
        window.release();
        if (failure == null) {
            tracker.confirmed(producer, sequence);
            lastConfirmNanos.accumulateAndGet(System.nanoTime(), Math::max);
        } else {
            failed.increment();
            firstFailure.compareAndSet(null, failure);
        }
    }

    /** On the consumer's handler thread. */
    private void onMessage(Message message, Pacer pacer, LatencyStats.Writer latencyWriter) {
        pacer.pace();
        long now = System.nanoTime();
        byte[] payload = message.payload();
        receipts.increment();
        lastReceiveNanos.accumulateAndGet(now, Math::max);
        if (tracker.received(Payload.producer(payload), Payload.sequence(payload))) {
            long index = uniqueIndex.getAndIncrement();
            latencyWriter.record(now - Payload.sendNanos(payload), index >= unsummarisedMessages && now >= summaryFromNanos);
        }
        message.ack();
    }

    /**
     * Waits for the producer threads; stops them at the end of a duration run, and interrupts them (failing
     * the blocked send) when neither a send nor a confirm happened for the drain timeout.
     */
    private void awaitProducers(List<Thread> threads) throws InterruptedException {
        long deadline = options.durationSeconds > 0
                ? startNanos + TimeUnit.SECONDS.toNanos(options.durationSeconds) : Long.MAX_VALUE;
        long idleLimit = TimeUnit.SECONDS.toNanos(options.drainTimeoutSeconds);
        long lastCount = -1;
        long lastProgress = System.nanoTime();
        while (threads.stream().anyMatch(Thread::isAlive)) {
            long now = System.nanoTime();
            long count = sent.sum() + tracker.confirmedCount() + failed.sum();
            if (count != lastCount) {
                lastCount = count;
                lastProgress = now;
            }
            if (now - deadline >= 0) {
                stopProducers = true;
            }
            if (now - lastProgress > idleLimit) {
                note("Stopping the producers: no send and no confirm for " + options.drainTimeoutSeconds + " s.");
                stopProducers = true;
                threads.forEach(Thread::interrupt);
            }
            Thread.sleep(20);
        }
    }

    private void awaitConfirms() throws InterruptedException {
        LongSupplier settled = () -> tracker.confirmedCount() + failed.sum();
        if (!IdleWait.until(() -> settled.getAsLong() >= sent.sum(), settled, idleLimitNanos())) {
            note("Gave up waiting for " + (sent.sum() - settled.getAsLong()) + " confirms after "
                    + options.drainTimeoutSeconds + " s without one.");
        }
    }

    private void awaitDrain() throws InterruptedException {
        if (!IdleWait.until(() -> tracker.receivedUnique() >= tracker.confirmedCount(), receipts::sum, idleLimitNanos())) {
            note("Gave up draining: nothing arrived for " + options.drainTimeoutSeconds + " s with "
                    + (tracker.confirmedCount() - tracker.receivedUnique()) + " confirmed messages missing.");
        }
    }

    private long idleLimitNanos() {
        return TimeUnit.SECONDS.toNanos(options.drainTimeoutSeconds);
    }

    private PerfResult result(String brokerName, long drainStart, long drainEnd) {
        Throwable failure = firstFailure.get();
        if (failure != null) {
            note("First publish failure: " + failure);
        }
        long first = firstSendNanos.get();
        long confirmed = tracker.confirmedCount();
        long received = tracker.receivedUnique();
        double publishSeconds = seconds(lastConfirmNanos.get() - first);
        double endToEndSeconds = seconds(drainEnd - first);
        double drainSeconds = options.drainAfterPublish ? seconds(drainEnd - drainStart) : -1;
        Histogram summary = latency.summaryCopy();
        // Rule "loss" needs a consumer: in a producer-only run (--consumers 0) nothing is meant to be received.
        long lost = options.consumers == 0 ? 0 : tracker.lost();
        return new PerfResult(options.workload, brokerName, sent.sum(), options.sizeBytes, options.producers,
                options.consumers, options.callbacksLabel(), sent.sum(), confirmed, failed.sum(), received, lost,
                tracker.duplicates(), rate(confirmed, publishSeconds), rate(received, endToEndSeconds),
                options.drainAfterPublish ? rate(received, drainSeconds) : -1, publishSeconds,
                drainSeconds, summary, List.copyOf(series), options.workload.equals("W3"), transactionResult(first));
    }

    private TransactionResult transactionResult(long firstSendNanos) {
        if (transactions == null) {
            return null;
        }
        try {
            if (!transactions.awaitAnswers(java.util.concurrent.TimeUnit.SECONDS.toNanos(30))) {
                note("Some commits had no answer 30 s after the last message arrived; they count as not committed.");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Throwable failure = transactions.firstFailure.get();
        if (failure != null) {
            note("First failed transaction: " + failure);
        }
        long committed = transactions.committedMessages.get();
        return new TransactionResult(options.messagesPerTransaction, options.commitsInFlight, transactions.consumed.sum(),
                transactions.commits.sum(), committed, transactions.failedTransactions.sum(),
                rate(committed, seconds(transactions.lastCommitNanos.get() - firstSendNanos)),
                transactions.commitLatency.summaryCopy());
    }

    private static double seconds(long nanos) {
        return nanos / 1e9;
    }

    private static double rate(long count, double seconds) {
        return seconds > 0 ? count / seconds : 0;
    }

    private void note(String text) {
        if (progressOut != null) {
            progressOut.println(text);
        }
    }

    /** Prints and records one {@link ProgressPoint} per second. */
    private final class ProgressTask implements Runnable {
        private long lastSent;
        private long lastConfirmed;
        private long lastReceipts;

        @Override
        public void run() {
            long sentNow = sent.sum();
            long confirmedNow = tracker.confirmedCount();
            long receiptsNow = receipts.sum();
            Histogram interval = latency.takeInterval();
            FlowState worst = FlowState.FREE;
            for (int i = 0; i < flowStates.length(); i++) {
                if (flowStates.get(i).code() > worst.code()) {
                    worst = flowStates.get(i);
                }
            }
            ProgressPoint point = new ProgressPoint(Math.round(seconds(System.nanoTime() - startNanos)),
                    sentNow - lastSent, confirmedNow - lastConfirmed, receiptsNow - lastReceipts,
                    confirmedNow - tracker.receivedUnique(), interval.getValueAtPercentile(50),
                    interval.getValueAtPercentile(99), worst.name());
            lastSent = sentNow;
            lastConfirmed = confirmedNow;
            lastReceipts = receiptsNow;
            series.add(point);
            if (progressOut != null && !options.quiet) {
                progressOut.println(point.toLine());
            }
        }
    }

    /**
     * Spaces calls {@code 1/rate} apart for the first {@code forSeconds} after the first call (for ever when
     * 0), then lets them through. Rate 0 means unlimited. One thread only.
     */
    static final class Pacer {
        private final long intervalNanos;
        private final long forNanos;
        private long firstNanos;
        private long nextNanos;

        Pacer(long ratePerSecond, long forSeconds) {
            this.intervalNanos = ratePerSecond > 0 ? 1_000_000_000L / ratePerSecond : 0;
            this.forNanos = forSeconds > 0 ? TimeUnit.SECONDS.toNanos(forSeconds) : Long.MAX_VALUE;
        }

        void pace() {
            if (intervalNanos == 0) {
                return;
            }
            long now = System.nanoTime();
            if (firstNanos == 0) {
                firstNanos = now;
                nextNanos = now;
            }
            if (now - firstNanos >= forNanos) {
                return;
            }
            while (now < nextNanos) {
                LockSupport.parkNanos(nextNanos - now);
                now = System.nanoTime();
            }
            nextNanos = Math.max(nextNanos + intervalNanos, now - Duration.ofMillis(100).toNanos());
        }
    }
}
