package io.sluice.bench.perf;

import io.sluice.client.Connection;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.SluiceException;
import io.sluice.protocol.QueueSettings;
import org.HdrHistogram.Histogram;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * One application-shaped run ({@code --client app}, issue 18): the client used the way an application writes
 * it, not the way {@link PerfRun} tunes it. Not reusable: one instance, one run.
 *
 * <p>What differs from {@link PerfRun}: the connections take the client's defaults but for host, port and
 * name, so callbacks run on the client's dispatch pool (unless {@code --callbacks network}); the one producer
 * sends from {@link #run()}'s own thread, a new {@code byte[]} and {@code sendAsync(payload).whenComplete(...)}
 * per message, bounded only by the producer's {@code maxInFlight} (the client's default 1,000); the one push
 * consumer's handler records the latency into an HdrHistogram inside a {@code synchronized} block and then
 * acks. The send time goes into the payload before {@code sendAsync}, which may block for an in-flight slot,
 * so the latency includes that wait, as an application measuring its own messages sees it.
 *
 * <p>Threads: the caller declares the queue, subscribes (unless {@link PerfOptions#drainAfterPublish}),
 * publishes, waits for the confirms, subscribes now for a drain run, and waits for the drain; the confirm
 * callbacks and the handler run where the client runs callbacks. The consumer has a connection of its own, as
 * the producer and the declaring admin have.
 */
final class AppRun {
    private final PerfOptions options;
    private final PrintStream progressOut;
    private final SequenceTracker tracker = new SequenceTracker(1);
    private final LongAdder failed = new LongAdder();
    private final LongAdder receipts = new LongAdder();
    private final AtomicLong lastConfirmNanos = new AtomicLong();
    private final AtomicLong lastReceiveNanos = new AtomicLong();
    private final AtomicReference<Throwable> firstFailure = new AtomicReference<>();
    private final List<Connection> connections = new ArrayList<>();
    /** The handler's lock: the application's little piece of locked work. Guards the next four fields. */
    private final Object latencyLock = new Object();
    private final Histogram everyLatency = new Histogram(1, LatencyStats.HIGHEST_MICROS, 3);
    /** The percentiles are over the last 80 % of the messages (docs/performance.md, "The workloads"), as in {@link PerfRun}. */
    private final Histogram summaryLatency = new Histogram(1, LatencyStats.HIGHEST_MICROS, 3);
    private long recorded;
    private SecondWindows receiveWindows;
    /** Guards {@link #confirmWindows}; confirm callbacks may run on several dispatch threads. */
    private final Object confirmLock = new Object();
    private SecondWindows confirmWindows;
    private final long unsummarisedMessages;
    private long sent;

    /** @param progressOut where notes go; {@code null} for none */
    AppRun(PerfOptions options, PrintStream progressOut) {
        this.options = options;
        this.progressOut = progressOut;
        this.unsummarisedMessages = options.messages / 5;
    }

    Result run() throws InterruptedException {
        Consumer consumer = null;
        Producer producer = null;
        String queue = options.queueName(0);
        try {
            Connection admin = connect("admin");
            declareQueue(admin, queue);
            if (!options.drainAfterPublish) {
                consumer = subscribe(queue);
            }
            producer = connect("producer").createProducer(queue, ProducerOptions.DEFAULT.withMaxInFlight(options.confirmWindow));
            long firstSendNanos = System.nanoTime();
            synchronized (confirmLock) {
                confirmWindows = new SecondWindows(firstSendNanos);
            }
            if (!options.drainAfterPublish) {
                startReceiveWindows(firstSendNanos);
            }
            publish(producer);
            await(() -> tracker.confirmedCount() + failed.sum() >= sent,
                    () -> tracker.confirmedCount() + failed.sum(), "confirms");
            long drainStartNanos = System.nanoTime();
            if (options.drainAfterPublish) {
                startReceiveWindows(drainStartNanos);
                consumer = subscribe(queue);
            }
            await(() -> tracker.receivedUnique() >= tracker.confirmedCount(), receipts::sum, "receipts");
            return result(admin.brokerName(), firstSendNanos, drainStartNanos);
        } finally {
            if (consumer != null) {
                consumer.close();
            }
            if (producer != null) {
                producer.close();
            }
            if (!options.keepQueues && !connections.isEmpty()) {
                try {
                    connections.get(0).deleteQueue(queue);
                } catch (SluiceException e) {
                    note("Could not delete queue " + queue + ": " + e.getMessage());
                }
            }
            connections.forEach(Connection::close);
        }
    }

    private Connection connect(String role) {
        Connection connection = Connection.connect(options.connectionOptions()
                .clientName("sluice-perf-app-" + role).callbacksOnNetworkThread(options.callbacksOnNetworkThread)
                .build());
        connections.add(connection);
        return connection;
    }

    private void declareQueue(Connection admin, String queue) {
        long ready = admin.declareQueue(queue, QueueSettings.builder().build());
        if (ready > 0) {
            note("Queue " + queue + " held " + ready + " messages from an earlier run; purged "
                    + admin.purgeQueue(queue) + ".");
        }
    }

    private Consumer subscribe(String queue) {
        ConsumerOptions consumerOptions = new ConsumerOptions(options.credit, options.ackBatch,
                ConsumerOptions.DEFAULT.ackFlushDelay());
        return connect("consumer").subscribe(queue, consumerOptions, this::onMessage);
    }

    private void startReceiveWindows(long originNanos) {
        synchronized (latencyLock) {
            receiveWindows = new SecondWindows(originNanos);
        }
    }

    /** On the caller's thread: sendAsync blocks while the producer's maxInFlight messages are unconfirmed. */
    private void publish(Producer producer) {
        for (long sequence = 0; sequence < options.messages; sequence++) {
            long confirmedSequence = sequence;
            byte[] payload = Payload.create(options.sizeBytes, 0, sequence, System.nanoTime());
            producer.sendAsync(payload).whenComplete((ignored, failure) -> onSettled(confirmedSequence, failure));
            sent++;
        }
    }

    /** Where the client runs callbacks. */
    private void onSettled(long sequence, Throwable failure) {
        if (failure != null) {
            failed.increment();
            firstFailure.compareAndSet(null, failure);
            return;
        }
        long now = System.nanoTime();
        tracker.confirmed(0, sequence);
        lastConfirmNanos.accumulateAndGet(now, Math::max);
        synchronized (confirmLock) {
            confirmWindows.record(now);
        }
    }

    /** The consumer's handler, where the client runs callbacks: record under the lock, then ack. */
    private void onMessage(Message message) {
        long now = System.nanoTime();
        byte[] payload = message.payload();
        receipts.increment();
        lastReceiveNanos.accumulateAndGet(now, Math::max);
        if (tracker.received(Payload.producer(payload), Payload.sequence(payload))) {
            long micros = Math.min(LatencyStats.HIGHEST_MICROS, Math.max(1, (now - Payload.sendNanos(payload)) / 1_000));
            synchronized (latencyLock) {
                everyLatency.recordValue(micros);
                if (recorded++ >= unsummarisedMessages) {
                    summaryLatency.recordValue(micros);
                }
                receiveWindows.record(now, micros);
            }
        }
        message.ack();
    }

    /** Waits until {@code done} while {@code progress} moves; a note when it stood still for the drain timeout. */
    private void await(BooleanSupplier done, LongSupplier progress, String what) throws InterruptedException {
        if (!IdleWait.until(done, progress, TimeUnit.SECONDS.toNanos(options.drainTimeoutSeconds))) {
            note("Gave up waiting for " + what + ": none for " + options.drainTimeoutSeconds + " s.");
        }
    }

    private Result result(String brokerName, long firstSendNanos, long drainStartNanos) {
        long lastReceive = lastReceiveNanos.get();
        long confirmed = tracker.confirmedCount();
        long received = tracker.receivedUnique();
        if (firstFailure.get() != null) {
            note("First publish failure: " + firstFailure.get());
        }
        double publishSeconds = (lastConfirmNanos.get() - firstSendNanos) / 1e9;
        double endToEndSeconds = (lastReceive - firstSendNanos) / 1e9;
        double drainSeconds = options.drainAfterPublish ? (lastReceive - drainStartNanos) / 1e9 : -1;
        SecondWindows.Worst confirmWorst;
        long[] confirmsPerSecond;
        synchronized (confirmLock) {
            confirmWorst = confirmWindows.worst(lastConfirmNanos.get());
            confirmsPerSecond = confirmWindows.perSecond();
        }
        synchronized (latencyLock) {
            PerfResult base = new PerfResult(options.workload, brokerName, sent, options.sizeBytes, 1, 1,
                    options.callbacksLabel(), sent, confirmed, failed.sum(), received, tracker.lost(),
                    tracker.duplicates(), rate(confirmed, publishSeconds), rate(received, endToEndSeconds),
                    options.drainAfterPublish ? rate(received, drainSeconds) : -1, publishSeconds, drainSeconds,
                    summaryLatency.copy(), List.of(), false, null);
            return new Result(base, everyLatency.getTotalCount(), everyLatency.getMaxValue(), confirmWorst,
                    confirmsPerSecond, receiveWindows.worst(lastReceive), receiveWindows.perSecond(),
                    receiveWindows.p99PerSecondMicros(), options.drainAfterPublish ? "subscribe" : "first send");
        }
    }

    private static double rate(long count, double seconds) {
        return seconds > 0 ? count / seconds : 0;
    }

    private void note(String text) {
        if (progressOut != null) {
            progressOut.println(text);
        }
    }

    /**
     * What an application-shaped run measured: {@link PerfResult}'s figures (percentiles over the last 80 %)
     * and, over every message, the maximum latency and the worst one-second windows ({@link SecondWindows}).
     *
     * @param receiveFrom where the receive windows start: "first send", or "subscribe" in a drain run
     */
    record Result(PerfResult base, long everySamples, long everyMaxMicros, SecondWindows.Worst confirmWorst,
                  long[] confirmsPerSecond, SecondWindows.Worst receiveWorst, long[] receivesPerSecond,
                  long[] p99PerSecondMicros, String receiveFrom) {

        String toJson() {
            return base.toJson(String.format(Locale.ROOT,
                    "\"latency_samples_all\":%d,\"max_all_us\":%d,\"receive_windows_from\":%s,\"full_seconds\":%d,"
                            + "\"worst_second_receive_rate\":%d,\"worst_second_receive_at_s\":%d,"
                            + "\"worst_second_p99_us\":%d,\"worst_second_p99_at_s\":%d,"
                            + "\"worst_second_confirm_rate\":%d,\"worst_second_confirm_at_s\":%d,"
                            + "\"receives_per_second\":%s,\"p99_per_second_us\":%s,\"confirms_per_second\":%s",
                    everySamples, everyMaxMicros, PerfResult.quote(receiveFrom), receiveWorst.windows(),
                    receiveWorst.lowestRate(), receiveWorst.lowestAt(), receiveWorst.highestP99Micros(),
                    receiveWorst.highestP99At(), confirmWorst.lowestRate(), confirmWorst.lowestAt(),
                    array(receivesPerSecond), array(p99PerSecondMicros), array(confirmsPerSecond)));
        }

        String toSummary() {
            StringBuilder text = new StringBuilder(base.toSummary());
            text.append(String.format(Locale.ROOT, "latency over every message (%d samples): max %d us%n",
                    everySamples, everyMaxMicros));
            if (receiveWorst.windows() <= 0) {
                text.append(String.format(Locale.ROOT,
                        "worst one-second window: none, the receipts lasted under one full second from the %s%n",
                        receiveFrom));
            } else {
                text.append(String.format(Locale.ROOT,
                        "worst one-second window (of %d full seconds from the %s): fewest received %d (second %d),"
                                + " highest p99 %d us (second %d); fewest confirmed %d (second %d from the first send)%n",
                        receiveWorst.windows(), receiveFrom, receiveWorst.lowestRate(), receiveWorst.lowestAt(),
                        receiveWorst.highestP99Micros(), receiveWorst.highestP99At(), confirmWorst.lowestRate(),
                        confirmWorst.lowestAt()));
            }
            text.append(String.format(Locale.ROOT, "received per second %s, p99 us per second %s, confirmed per second %s%n",
                    array(receivesPerSecond), array(p99PerSecondMicros), array(confirmsPerSecond)));
            return text.toString();
        }

        long lost() {
            return base.lost();
        }

        private static String array(long[] values) {
            return Arrays.toString(values).replace(" ", "");
        }
    }
}
