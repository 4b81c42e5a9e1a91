package io.sluice.broker;

import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Kills a broker child JVM (durability "always") with kill -9, from a thread of its own, while a producer
 * in this JVM publishes and a consumer receives and acks, three times, restarting it on the same data
 * directory each time; then consumes everything. Every confirmed message must come back at least once, no
 * message whose ack the broker had processed may return, and no restart may wait out Chronicle's write
 * lock left held by the killed broker (issue 14, item 2.4: that wait made a restart take 15 s). Each
 * restart's time to its first confirm is printed, a figure for docs/performance.md; only its parts are
 * checked, against the lock's timeout ({@link #CHRONICLE_LOCK_TIMEOUT_MILLIS}), not against a target: on two
 * shared cores a cold JVM's start is its CPU work divided by its share of them (the store's recovery took
 * 7.4 s at a load average of 35 here).
 */
@Tag("slow")
class BrokerCrashTest {
    private static final String QUEUE = "crash";
    private static final int ROUNDS = 3;
    /**
     * Chronicle's write-lock timeout (its {@code timeoutMS}, 10 s by default): a start that waits out a lock
     * the killed broker left held spends at least this long in the store's recovery or in its first append
     * (15 s when issue 14 found it). The parts of a restart the broker's own work bounds, its recovery and
     * listening to the first confirm, are each checked against it; its start as a whole is not, since a cold
     * JVM's class loading on two shared cores took 11-16 s at a load average of 20. Chronicle's "Forced
     * unlocking" line is no symptom: the store logs it too when it releases a dead holder's lock at open.
     */
    private static final long CHRONICLE_LOCK_TIMEOUT_MILLIS = 10_000;
    private static final Pattern STARTED_IN = Pattern.compile("started in (\\d+) ms");
    private static final Pattern RECOVERED_IN = Pattern.compile("recovered \\d+ queues in (\\d+) ms");

    @TempDir
    Path dir;
    private Process broker;
    private int port;

    /** Payload sequences whose sendAsync future completed successfully. */
    private final Set<Long> confirmed = ConcurrentHashMap.newKeySet();
    /** Payload sequences acked, counted only once the broker's unacked count showed the acks were processed. */
    private final Set<Long> acked = new HashSet<>();
    /** Payload sequences acked while the broker was being killed: the broker may or may not have processed them. */
    private final Set<Long> ackedInFlight = ConcurrentHashMap.newKeySet();
    private final AtomicLong nextSequence = new AtomicLong();
    private final AtomicLong sent = new AtomicLong();
    private final List<Long> restartMillis = new ArrayList<>();
    private final Random random = new Random();

    @AfterEach
    void killBroker() throws InterruptedException {
        if (broker != null && broker.isAlive()) {
            ChildJvm.kill(broker);
        }
    }

    /** Starts the broker and returns the moment it was seen listening. */
    private long startBroker(int round) throws Exception {
        port = TestPorts.free();
        Path log = dir.resolve("broker-" + round + ".log");
        broker = ChildJvm.start(log, Main.class, "--data-dir", dir.resolve("data").toString(),
                "--port", Integer.toString(port), "--set", "storage.reserved-disk-bytes=67108864", "--set", "metrics.port=0",
                "--set", "storage.durability=always");
        ChildJvm.awaitListening(broker, port, log);
        return System.nanoTime();
    }

    /**
     * After a restart: publishes one message, waits for its confirm, prints the restart time (the broker's own
     * start from its log, plus listening to that confirm) and checks that no lock of the dead broker was waited for.
     */
    private void firstConfirmAfterRestart(int round, long listeningAt, Producer producer) throws Exception {
        send(producer).get(30, TimeUnit.SECONDS);
        long listeningToConfirm = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - listeningAt);
        Path log = dir.resolve("broker-" + round + ".log");
        long brokerStart = logged(log, STARTED_IN);
        long recovery = logged(log, RECOVERED_IN);
        long restart = brokerStart + listeningToConfirm;
        restartMillis.add(restart);
        System.out.printf("BrokerCrashTest: restart %d: broker start %d ms (store recovery %d ms) + listening to first confirm"
                + " %d ms = %d ms%n", round, brokerStart, recovery, listeningToConfirm, restart);
        assertTrue(recovery < CHRONICLE_LOCK_TIMEOUT_MILLIS, "restart " + round + ": the store's recovery took " + recovery
                + " ms, as long as Chronicle's lock timeout: a lock of the dead broker was waited for");
        assertTrue(listeningToConfirm < CHRONICLE_LOCK_TIMEOUT_MILLIS, "restart " + round + ": the first confirm came "
                + listeningToConfirm + " ms after listening, as long as Chronicle's lock timeout: a lock of the dead broker"
                + " was waited for in the first append");
    }

    /**
     * The number the first line of the broker's log matching {@code pattern} carries in its group 1, waiting for
     * the line: the broker's main thread logs "started in" after it binds, so a client's first confirm can come
     * before it (seen at a load average of 12).
     */
    private static long logged(Path log, Pattern pattern) throws InterruptedException {
        TestAwait.until("a line matching '" + pattern + "' in the broker's log", Duration.ofSeconds(30),
                () -> firstLogged(log, pattern) >= 0);
        return firstLogged(log, pattern);
    }

    private static long firstLogged(Path log, Pattern pattern) {
        return ChildJvm.lines(log).stream().map(pattern::matcher).filter(Matcher::find)
                .mapToLong(m -> Long.parseLong(m.group(1))).findFirst().orElse(-1);
    }

    private Connection connect() {
        return Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(port)
                .reconnectPolicy(ReconnectPolicy.DISABLED).build());
    }

    @Test
    @Timeout(180)
    void shouldKeepEveryConfirmedMessageAndForgetEveryAckedOneAcrossKillNine() throws Exception {
        long started = System.nanoTime();
        for (int round = 0; round < ROUNDS; round++) {
            long listeningAt = startBroker(round);
            try (Connection connection = connect()) {
                connection.declareQueue(QUEUE, QueueSettings.EMPTY);
                Producer producer = connection.createProducer(QUEUE, ProducerOptions.DEFAULT);
                if (round > 0) {
                    firstConfirmAfterRestart(round, listeningAt, producer);
                }
                publishAndWait(producer, 1_000);
                ackSome(connection, 300);
                killWhileBusy(connection, producer);
            }
        }
        long listeningAt = startBroker(ROUNDS);
        Set<Long> received = new HashSet<>();
        long duplicates = 0;
        try (Connection connection = connect()) {
            connection.declareQueue(QUEUE, QueueSettings.EMPTY);
            firstConfirmAfterRestart(ROUNDS, listeningAt, connection.createProducer(QUEUE, ProducerOptions.DEFAULT));
            long stored = connection.declareQueue(QUEUE, QueueSettings.EMPTY);
            Consumer consumer = connection.subscribe(QUEUE, ConsumerOptions.DEFAULT);
            for (long i = 0; i < stored; i++) {
                Message m = consumer.receive(Duration.ofSeconds(10));
                assertTrue(m != null, "the broker reported " + stored + " messages but only " + i + " arrived");
                long sequence = Payloads.sequence(m.payload());
                assertTrue(!acked.contains(sequence), "acked message " + sequence + " came back after a crash");
                if (!received.add(sequence)) {
                    duplicates++;
                }
                m.ack();
            }
        }
        Set<Long> missing = new HashSet<>(confirmed);
        missing.removeAll(acked);
        missing.removeAll(ackedInFlight);
        missing.removeAll(received);
        Set<Long> unconfirmedButStored = new HashSet<>(received);
        unconfirmedButStored.removeAll(confirmed);
        System.out.printf("BrokerCrashTest: %d rounds in %d ms; sent %d, confirmed %d, acked %d (and %d while being killed),"
                        + " received after the last restart %d (%d duplicates), unconfirmed but stored %d, unconfirmed and lost %d;"
                        + " restarts to first confirm %s ms%n",
                ROUNDS, (System.nanoTime() - started) / 1_000_000, sent.get(), confirmed.size(), acked.size(), ackedInFlight.size(),
                received.size(), duplicates, unconfirmedButStored.size(), sent.get() - confirmed.size() - unconfirmedButStored.size(),
                restartMillis);
        assertEquals(Set.of(), missing, "confirmed messages lost");
        assertTrue(confirmed.size() > ROUNDS * 1_000, "each round confirmed more than the first batch");
    }

    private void publishAndWait(Producer producer, int count) throws Exception {
        java.util.List<java.util.concurrent.CompletableFuture<Void>> futures = new java.util.ArrayList<>();
        for (int i = 0; i < count; i++) {
            futures.add(send(producer));
        }
        java.util.concurrent.CompletableFuture.allOf(futures.toArray(java.util.concurrent.CompletableFuture[]::new))
                .get(30, java.util.concurrent.TimeUnit.SECONDS);
    }

    private java.util.concurrent.CompletableFuture<Void> send(Producer producer) {
        long sequence = nextSequence.getAndIncrement();
        sent.incrementAndGet();
        java.util.concurrent.CompletableFuture<Void> f = producer.sendAsync(Payloads.of(sequence));
        f.thenRun(() -> confirmed.add(sequence));
        return f;
    }

    /** Acks {@code count} messages and waits until the broker's unacked count shows it processed them. */
    private void ackSome(Connection connection, int count) throws Exception {
        long before = connection.declareQueue(QUEUE, QueueSettings.EMPTY);
        Set<Long> batch = new HashSet<>();
        Consumer consumer = connection.subscribe(QUEUE, ConsumerOptions.DEFAULT.withCredit(count));
        for (int i = 0; i < count; i++) {
            Message m = consumer.receive(Duration.ofSeconds(10));
            assertTrue(m != null, "message " + i + " of " + count + " to ack did not arrive");
            batch.add(Payloads.sequence(m.payload()));
            m.ack();
        }
        consumer.close();
        TestAwait.until("the broker processed " + count + " acks", () ->
                connection.declareQueue(QUEUE, QueueSettings.EMPTY) == before - count);
        acked.addAll(batch);
    }

    /**
     * Publishes from one thread and receives and acks from another; a third kills the broker at a random
     * moment once confirms, deliveries and acks are all flowing, so that each is in flight at the kill.
     */
    private void killWhileBusy(Connection connection, Producer producer) throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        int confirmedBefore = confirmed.size();
        int ackedBefore = ackedInFlight.size();
        Consumer consumer = connection.subscribe(QUEUE, ConsumerOptions.DEFAULT);
        Thread publisher = new Thread(() -> {
            while (!stop.get()) {
                send(producer).whenComplete((ok, failure) -> {
                    if (failure != null) {
                        stop.set(true);
                    }
                });
            }
        }, "crash-test-publisher");
        Thread acker = new Thread(() -> {
            try {
                while (!stop.get()) {
                    Message m = consumer.receive(Duration.ofMillis(50));
                    if (m != null) {
                        long sequence = Payloads.sequence(m.payload());
                        ackedInFlight.add(sequence);
                        m.ack();
                    }
                }
            } catch (InterruptedException | RuntimeException e) {
                stop.set(true);
            }
        }, "crash-test-acker");
        long killAfterMillis = random.nextInt(500);
        AtomicReference<Throwable> killFailed = new AtomicReference<>();
        Thread killer = new Thread(() -> {
            try {
                TestAwait.until("2000 more confirms and 500 acks", () -> confirmed.size() >= confirmedBefore + 2_000
                        && ackedInFlight.size() >= ackedBefore + 500);
                Thread.sleep(killAfterMillis); // a random kill point within the traffic, not a wait for a state
                ChildJvm.kill(broker);
            } catch (Throwable t) {
                killFailed.set(t);
                stop.set(true);
            }
        }, "crash-test-killer");
        publisher.start();
        acker.start();
        killer.start();
        killer.join(60_000);
        if (killFailed.get() != null) {
            throw new AssertionError("killing the broker failed", killFailed.get());
        }
        TestAwait.until("the publisher noticed the crash", Duration.ofSeconds(20), () -> stop.get());
        publisher.join(20_000);
        acker.join(20_000);
        assertTrue(!publisher.isAlive() && !acker.isAlive(), "the publisher and acker threads stopped");
        System.out.printf("BrokerCrashTest: killed %d ms after confirms and acks flowed; %d confirmed and %d acked this round%n",
                killAfterMillis, confirmed.size() - confirmedBefore, ackedInFlight.size() - ackedBefore);
    }
}
