package io.sluice.bench.perf;

import io.sluice.client.Connection;
import io.sluice.client.SluiceException;
import io.sluice.protocol.QueueSettings;
import org.HdrHistogram.Histogram;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

/**
 * The declare series (workload DECLARE, issue 15): {@link PerfOptions#queues} new queues declared over
 * {@link PerfOptions#connections} connections, queue {@code i} on connection {@code i mod connections}, each
 * connection keeping at most {@link PerfOptions#declareWindow} declares unanswered. A window of 1 is a user
 * calling the blocking {@code Connection.declareQueue} in a loop, one after the other; a larger one is
 * {@code declareQueueAsync} pipelined. Reported: the total time (first declare sent to last answer), and the
 * latency of each declare from its send to its answer.
 *
 * <p>Threads: one thread per connection sends its declares; answers complete on the client's network thread,
 * which records the latency under this object's histogram lock. Not reusable: one instance, one run.
 */
final class DeclareRun {
    /** What a run measured; {@link #toJson()} is its one-line report. Latencies in microseconds. */
    record Result(int queues, int connections, int window, long declared, long failed, double seconds,
                  Histogram latency, String firstFailure) {
        String toJson() {
            return String.format(Locale.ROOT, "{\"workload\":\"DECLARE\",\"queues\":%d,\"connections\":%d,\"window\":%d,"
                            + "\"declared\":%d,\"failed\":%d,\"seconds\":%.3f,\"declares_per_s\":%.1f,\"p50_us\":%d,"
                            + "\"p90_us\":%d,\"p99_us\":%d,\"max_us\":%d}",
                    queues, connections, window, declared, failed, seconds, declared / seconds,
                    latency.getValueAtPercentile(50), latency.getValueAtPercentile(90), latency.getValueAtPercentile(99),
                    latency.getMaxValue());
        }

        String toSummary() {
            return String.format(Locale.ROOT, "%d declares over %d connections, %d in flight per connection: %d answered OK,"
                            + " %d failed, in %.3f s (%.1f declares/s)%nlatency per declare p50 %.2f ms, p90 %.2f ms,"
                            + " p99 %.2f ms, max %.2f ms%n%s",
                    queues, connections, window, declared, failed, seconds, declared / seconds,
                    latency.getValueAtPercentile(50) / 1e3, latency.getValueAtPercentile(90) / 1e3,
                    latency.getValueAtPercentile(99) / 1e3, latency.getMaxValue() / 1e3,
                    firstFailure == null ? "" : "first failure: " + firstFailure + "\n");
        }
    }

    private final PerfOptions options;
    private final String queuePrefix;
    private final PrintStream progressOut;
    private final Histogram latency = new Histogram(1, TimeUnit.MINUTES.toMicros(10), 3);
    private final LongAdder declared = new LongAdder();
    private final LongAdder failed = new LongAdder();
    private final AtomicReference<Throwable> firstFailure = new AtomicReference<>();

    /**
     * @param queuePrefix the queues are {@code queuePrefix-0}, {@code queuePrefix-1}, ...: new ones for each run
     * @param progressOut where progress lines go; {@code null} for none
     */
    DeclareRun(PerfOptions options, String queuePrefix, PrintStream progressOut) {
        this.options = options;
        this.queuePrefix = queuePrefix;
        this.progressOut = progressOut;
    }

    Result run() throws InterruptedException {
        List<Connection> connections = new ArrayList<>();
        try {
            for (int i = 0; i < options.connections; i++) {
                connections.add(Connection.connect(options.connectionOptions()
                        .maxFrameBytes(options.maxFrameBytes).clientName("sluice-perf-declare-" + i).build()));
            }
            CountDownLatch start = new CountDownLatch(1);
            List<Thread> senders = new ArrayList<>();
            for (int c = 0; c < connections.size(); c++) {
                int index = c;
                Thread sender = new Thread(() -> {
                    try {
                        start.await();
                        declareAll(connections.get(index), index);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }, "sluice-perf-declarer-" + c);
                senders.add(sender);
                sender.start();
            }
            long started = System.nanoTime();
            start.countDown();
            for (Thread sender : senders) {
                sender.join();
            }
            double seconds = (System.nanoTime() - started) / 1e9;
            Throwable failure = firstFailure.get();
            Histogram copy;
            synchronized (latency) {
                copy = latency.copy();
            }
            return new Result(options.queues, options.connections, options.declareWindow, declared.sum(), failed.sum(),
                    seconds, copy, failure == null ? null : failure.toString());
        } finally {
            if (!options.keepQueues && !connections.isEmpty()) {
                deleteAll(connections);
            }
            connections.forEach(Connection::close);
        }
    }

    /** Declares the queues of connection {@code index}, keeping at most the window in flight, and waits for every answer. */
    private void declareAll(Connection connection, int index) throws InterruptedException {
        Semaphore window = new Semaphore(options.declareWindow);
        List<CompletableFuture<Long>> answers = new ArrayList<>();
        for (int i = index; i < options.queues; i += options.connections) {
            if (options.declareWindow == 1) {
                declareBlocking(connection, queueName(i));
                continue;
            }
            window.acquire();
            long sent = System.nanoTime();
            CompletableFuture<Long> answer = connection.declareQueueAsync(queueName(i), QueueSettings.EMPTY);
            answers.add(answer.whenComplete((count, failure) -> {
                long micros = Math.max(1, (System.nanoTime() - sent) / 1_000);
                window.release();
                if (failure == null) {
                    declared.increment();
                    synchronized (latency) {
                        latency.recordValue(Math.min(micros, latency.getHighestTrackableValue()));
                    }
                } else {
                    failed.increment();
                    firstFailure.compareAndSet(null, failure);
                }
            }));
        }
        for (CompletableFuture<Long> answer : answers) {
            try {
                answer.join();
            } catch (RuntimeException e) {
                // counted in the callback
            }
        }
    }

    /** A user's declare: the blocking call, which sends one DECLARE_QUEUE and waits for its answer. */
    private void declareBlocking(Connection connection, String queue) {
        long sent = System.nanoTime();
        try {
            connection.declareQueue(queue, QueueSettings.EMPTY);
            long micros = Math.max(1, (System.nanoTime() - sent) / 1_000);
            declared.increment();
            synchronized (latency) {
                latency.recordValue(Math.min(micros, latency.getHighestTrackableValue()));
            }
        } catch (SluiceException e) {
            failed.increment();
            firstFailure.compareAndSet(null, e);
        }
    }

    /** Deletes the run's queues, one delete in flight per connection; not measured. */
    private void deleteAll(List<Connection> connections) throws InterruptedException {
        note("Deleting the " + options.queues + " queues (not measured)...");
        List<Thread> deleters = new ArrayList<>();
        for (int c = 0; c < connections.size(); c++) {
            int index = c;
            Thread deleter = new Thread(() -> {
                for (int i = index; i < options.queues; i += connections.size()) {
                    try {
                        connections.get(index).deleteQueue(queueName(i));
                    } catch (SluiceException e) {
                        note("Could not delete queue " + queueName(i) + ": " + e.getMessage());
                    }
                }
            }, "sluice-perf-deleter-" + c);
            deleters.add(deleter);
            deleter.start();
        }
        for (Thread deleter : deleters) {
            deleter.join();
        }
    }

    private String queueName(int index) {
        return queuePrefix + "-" + index;
    }

    private void note(String text) {
        if (progressOut != null && !options.quiet) {
            progressOut.println(text);
        }
    }
}
