package io.sluice.bench.perf;

import io.sluice.client.Connection;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.SluiceException;
import io.sluice.protocol.QueueSettings;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

/**
 * The many-queues series (workload MQ, issue 14 section 3): {@link PerfOptions#queues} queues, each with
 * one producer and one consumer, every producer sending at {@link PerfOptions#ratePerProducer} msg/s for
 * {@link PerfOptions#durationSeconds} (or one message every {@link PerfOptions#roundMs}). What it measures is the broker's cost per queue, not speed: the
 * broker's RSS over time (from {@code /proc/<broker pid>/status}, given {@code --broker-pid}) and the
 * allocated disk per queue (of {@code --data-dir}), besides sent, confirmed and received counts.
 *
 * <p>Threads: the caller sends, in rounds: each round sends one message to every queue, and rounds are
 * {@code 1 / rate} seconds apart; confirms and deliveries are counted on the client's network threads. The
 * producers and consumers share {@link PerfOptions#connections} connections per role (a connection per queue
 * would be thousands of client threads in this JVM), producer and consumer {@code i} on connection
 * {@code i mod connections}. Not reusable: one instance, one run.
 */
final class ManyQueuesRun {
    /** One sample of the broker process: seconds since the run started, resident and peak resident KiB, threads. */
    record RssSample(long seconds, long rssKb, long hwmKb, long threads) {
        String toJson() {
            return "[" + seconds + "," + rssKb + "," + hwmKb + "," + threads + "]";
        }
    }

    /** What a run measured; {@link #toJson()} is its one-line report. */
    record Result(int queues, long ratePerQueue, long durationSeconds, double declareSeconds, long sent, long confirmed,
                  long failed, long received, long lost, long duplicates, long lateRounds, List<RssSample> rss,
                  long diskBytes) {
        String toJson() {
            StringBuilder samples = new StringBuilder("[");
            for (RssSample sample : rss) {
                samples.append(samples.length() > 1 ? "," : "").append(sample.toJson());
            }
            samples.append(']');
            return String.format(Locale.ROOT, "{\"workload\":\"MQ\",\"queues\":%d,\"rate_per_queue\":%d,\"duration_s\":%d,"
                            + "\"declare_s\":%.1f,\"sent\":%d,\"confirmed\":%d,\"failed\":%d,\"received\":%d,\"lost\":%d,"
                            + "\"dups\":%d,\"late_rounds\":%d,\"disk_bytes\":%d,\"disk_bytes_per_queue\":%d,\"rss_first_kb\":%d,\"rss_last_kb\":%d,"
                            + "\"rss_max_kb\":%d,\"rss_samples\":%s}",
                    queues, ratePerQueue, durationSeconds, declareSeconds, sent, confirmed, failed, received, lost, duplicates,
                    lateRounds, diskBytes, diskBytes < 0 ? -1 : diskBytes / queues, rss.isEmpty() ? -1 : rss.get(0).rssKb(),
                    rss.isEmpty() ? -1 : rss.get(rss.size() - 1).rssKb(),
                    rss.stream().mapToLong(RssSample::rssKb).max().orElse(-1), samples);
        }

        String toSummary() {
            return String.format(Locale.ROOT, "%d queues at %d msg/s each for %d s (declared in %.1f s): sent %d, confirmed %d,"
                            + " failed %d, received %d, lost %d, duplicates %d, rounds dropped late %d%nbroker RSS first %d KiB, last %d KiB, max %d KiB"
                            + " (%d samples); disk %d bytes, %d per queue%n",
                    queues, ratePerQueue, durationSeconds, declareSeconds, sent, confirmed, failed, received, lost, duplicates,
                    lateRounds, rss.isEmpty() ? -1 : rss.get(0).rssKb(), rss.isEmpty() ? -1 : rss.get(rss.size() - 1).rssKb(),
                    rss.stream().mapToLong(RssSample::rssKb).max().orElse(-1), rss.size(), diskBytes,
                    diskBytes < 0 ? -1 : diskBytes / queues);
        }
    }

    private final PerfOptions options;
    private final PrintStream progressOut;
    private final SequenceTracker tracker;
    private final LongAdder sent = new LongAdder();
    private final LongAdder failed = new LongAdder();
    private final LongAdder receipts = new LongAdder();
    private final AtomicReference<Throwable> firstFailure = new AtomicReference<>();
    private final List<RssSample> rss = new ArrayList<>();
    private final List<Connection> connections = new ArrayList<>();
    private long startNanos;
    private long nextSampleNanos;
    private long lateRounds;

    /** @param progressOut where progress lines go; {@code null} for none */
    ManyQueuesRun(PerfOptions options, PrintStream progressOut) {
        this.options = options;
        this.progressOut = progressOut;
        this.tracker = new SequenceTracker(options.queues);
    }

    Result run() throws InterruptedException {
        startNanos = System.nanoTime();
        nextSampleNanos = startNanos;
        List<Producer> producers = new ArrayList<>();
        List<Consumer> consumers = new ArrayList<>();
        try {
            List<Connection> producerConnections = connectAll("producer");
            List<Connection> consumerConnections = connectAll("consumer");
            Connection admin = producerConnections.get(0);
            sample();
            long declareStart = System.nanoTime();
            for (int i = 0; i < options.queues; i++) {
                admin.declareQueue(options.queueName(i), QueueSettings.EMPTY);
                sampleIfDue();
            }
            double declareSeconds = (System.nanoTime() - declareStart) / 1e9;
            note(String.format(Locale.ROOT, "Declared %d queues in %.1f s.", options.queues, declareSeconds));
            ConsumerOptions consumerOptions = new ConsumerOptions(options.credit, options.ackBatch,
                    ConsumerOptions.DEFAULT.ackFlushDelay());
            ProducerOptions producerOptions = ProducerOptions.DEFAULT.withMaxInFlight(Math.max(2, options.confirmWindow));
            for (int i = 0; i < options.queues; i++) {
                consumers.add(consumerConnections.get(i % consumerConnections.size()).subscribe(options.queueName(i),
                        consumerOptions, message -> {
                            byte[] payload = message.payload();
                            receipts.increment();
                            tracker.received(Payload.producer(payload), Payload.sequence(payload));
                            message.ack();
                        }));
                producers.add(producerConnections.get(i % producerConnections.size()).createProducer(options.queueName(i),
                        producerOptions));
            }
            note("Subscribed " + consumers.size() + " consumers and created " + producers.size() + " producers.");
            sendRounds(producers);
            awaitSettled();
            return new Result(options.queues, options.ratePerProducer, options.durationSeconds, declareSeconds, sent.sum(),
                    tracker.confirmedCount(), failed.sum(), tracker.receivedUnique(), tracker.lost(), tracker.duplicates(),
                    lateRounds, List.copyOf(rss), diskBytes());
        } finally {
            consumers.forEach(Consumer::close);
            producers.forEach(Producer::close);
            if (!options.keepQueues && !connections.isEmpty()) {
                for (int i = 0; i < options.queues; i++) {
                    try {
                        connections.get(0).deleteQueue(options.queueName(i));
                    } catch (SluiceException e) {
                        note("Could not delete queue " + options.queueName(i) + ": " + e.getMessage());
                    }
                }
            }
            connections.forEach(Connection::close);
        }
    }

    private List<Connection> connectAll(String role) {
        List<Connection> list = new ArrayList<>();
        for (int i = 0; i < options.connections; i++) {
            Connection connection = Connection.connect(options.connectionOptions()
                    .maxFrameBytes(options.maxFrameBytes).clientName("sluice-perf-mq-" + role + "-" + i)
                    .callbacksOnNetworkThread(true).build());
            connections.add(connection);
            list.add(connection);
        }
        return list;
    }

    /** Every {@code 1 / rate} seconds one message to each queue, until the duration is over. */
    private void sendRounds(List<Producer> producers) throws InterruptedException {
        long roundNanos = options.roundMs > 0 ? TimeUnit.MILLISECONDS.toNanos(options.roundMs)
                : TimeUnit.SECONDS.toNanos(1) / Math.max(1, options.ratePerProducer);
        long sendStart = System.nanoTime();
        long end = sendStart + TimeUnit.SECONDS.toNanos(options.durationSeconds);
        long nextProgress = sendStart + TimeUnit.SECONDS.toNanos(10);
        long roundStart = sendStart;
        for (long round = 0; ; round++) {
            if (roundStart - end >= 0) {
                return;
            }
            long wait = roundStart - System.nanoTime();
            if (wait > 0) {
                TimeUnit.NANOSECONDS.sleep(wait);
            } else if (-wait > roundNanos) {
                // Behind by more than a round (the sends blocked on full confirm windows): the missed rounds
                // are dropped, not sent in a burst, so that the offered rate never exceeds --rate.
                lateRounds++;
                roundStart = System.nanoTime();
            }
            roundStart += roundNanos;
            for (int i = 0; i < producers.size(); i++) {
                int queue = i;
                long sequence = round;
                try {
                    producers.get(i).sendAsync(Payload.create(options.sizeBytes, queue, sequence, System.nanoTime()))
                            .whenComplete((ignored, failure) -> {
                                if (failure == null) {
                                    tracker.confirmed(queue, sequence);
                                } else {
                                    failed.increment();
                                    firstFailure.compareAndSet(null, failure);
                                }
                            });
                    sent.increment();
                } catch (SluiceException e) {
                    failed.increment();
                    firstFailure.compareAndSet(null, e);
                }
            }
            sampleIfDue();
            if (System.nanoTime() - nextProgress >= 0) {
                nextProgress += TimeUnit.SECONDS.toNanos(10);
                note(String.format(Locale.ROOT, "%4d s: sent %d, confirmed %d, received %d, failed %d, broker RSS %s KiB",
                        TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - startNanos), sent.sum(), tracker.confirmedCount(),
                        tracker.receivedUnique(), failed.sum(), rss.isEmpty() ? "?" : rss.get(rss.size() - 1).rssKb()));
            }
        }
    }

    /** Waits until everything sent is settled and everything confirmed received, or nothing moved for the drain timeout. */
    private void awaitSettled() throws InterruptedException {
        long idleLimit = TimeUnit.SECONDS.toNanos(options.drainTimeoutSeconds);
        long lastCount = -1;
        long lastProgress = System.nanoTime();
        while (tracker.confirmedCount() + failed.sum() < sent.sum() || tracker.receivedUnique() < tracker.confirmedCount()) {
            long count = tracker.confirmedCount() + receipts.sum() + failed.sum();
            if (count != lastCount) {
                lastCount = count;
                lastProgress = System.nanoTime();
            } else if (System.nanoTime() - lastProgress > idleLimit) {
                note("Gave up waiting: nothing settled or arrived for " + options.drainTimeoutSeconds + " s.");
                break;
            }
            TimeUnit.MILLISECONDS.sleep(10);
        }
        sample();
        Throwable failure = firstFailure.get();
        if (failure != null) {
            note("First failure: " + failure);
        }
    }

    private void sampleIfDue() {
        if (System.nanoTime() - nextSampleNanos >= 0) {
            sample();
        }
    }

    /** Reads VmRSS, VmHWM and Threads of the broker process, if its PID was given. */
    private void sample() {
        nextSampleNanos = System.nanoTime() + TimeUnit.SECONDS.toNanos(options.sampleSeconds);
        if (options.brokerPid <= 0) {
            return;
        }
        long rssKb = -1;
        long hwmKb = -1;
        long threads = -1;
        try {
            for (String line : Files.readAllLines(Path.of("/proc", Long.toString(options.brokerPid), "status"), StandardCharsets.US_ASCII)) {
                if (line.startsWith("VmRSS:")) {
                    rssKb = statusValue(line);
                } else if (line.startsWith("VmHWM:")) {
                    hwmKb = statusValue(line);
                } else if (line.startsWith("Threads:")) {
                    threads = statusValue(line);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the status of broker process " + options.brokerPid, e);
        }
        rss.add(new RssSample(TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - startNanos), rssKb, hwmKb, threads));
    }

    private static long statusValue(String line) {
        return Long.parseLong(line.substring(line.indexOf(':') + 1).replace("kB", "").trim());
    }

    /** Allocated bytes (not apparent sizes: segments are sparse) of the broker's queues directory, or -1. */
    private long diskBytes() throws InterruptedException {
        if (options.dataDir == null) {
            return -1;
        }
        Path queues = Path.of(options.dataDir).resolve("queues");
        try {
            Process du = new ProcessBuilder("du", "-s", "--block-size=1", queues.toString()).redirectErrorStream(true).start();
            String out = new String(du.getInputStream().readAllBytes(), StandardCharsets.US_ASCII).trim();
            if (!du.waitFor(60, TimeUnit.SECONDS) || du.exitValue() != 0) {
                note("du of " + queues + " failed: " + out);
                return -1;
            }
            return Long.parseLong(out.split("\\s+")[0]);
        } catch (IOException e) {
            note("du of " + queues + " failed: " + e.getMessage());
            return -1;
        }
    }

    private void note(String text) {
        if (progressOut != null && !options.quiet) {
            progressOut.println(text);
        }
    }
}
