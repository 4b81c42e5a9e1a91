package io.sluice.bench.restart;

import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.protocol.QueueSettings;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Restart to the first confirm after kill -9, for one or more broker launchers, interleaved.
 *
 * <pre>
 * java -cp bench/target/sluice-bench.jar io.sluice.bench.restart.RestartAfterKill DIR PORT PAIRS NAME=LAUNCHER...
 * </pre>
 *
 * <p>A launcher is an executable that runs a broker in the foreground and passes its arguments on (bin/sluice,
 * or a script running another build's jar); it gets {@code --data-dir DIR/NAME-I --port PORT --set
 * metrics.port=0}. In each of {@code PAIRS} rounds, for each launcher (their order reversed every other round):
 * start a broker on a fresh data directory, publish (one producer, its default window of 1,000 in flight) while a
 * consumer acks, kill the broker with kill -9 at a random moment 0.5–2.5 s in (the seed is printed), start it
 * again on the same data and publish one message. Reported per restart, in milliseconds: the broker's own
 * "started in" (from its {@code main}, JVM start excluded), listening to the first confirm as this client sees it
 * (polling the port every 2 ms), their sum (issue 14's measure), the launcher's start to the first confirm
 * (JVM start included), and the broker process's CPU time to listening and to the first confirm (the work a start
 * does, which on a shared machine is steadier than its wall time). With {@code -Drestart.backlog-seconds=S} nobody
 * consumes and the kill comes S to S + 2 s in, so the restart opens a backlog. This JVM's client is warm by then: it published
 * before the kill. A launcher must run the JVM in its own process (bin/sluice ends with exec) for the CPU figures.
 *
 * <p>Threads: the main thread runs the rounds; a {@code restart-publisher} thread calls sendAsync until the kill.
 */
public final class RestartAfterKill {
    private static final Pattern STARTED_IN = Pattern.compile("started in (\\d+) ms \\(the store's recovery (\\d+) ms\\)");
    private static final String QUEUE = "restart";
    /** USER_HZ, the unit of /proc/PID/stat's times: 100 on Linux on x86-64 and arm64. */
    private static final long CLOCK_TICKS_PER_SECOND = 100;
    private static final long DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(60);
    /** {@code -Drestart.backlog-seconds=S}: publish without a consumer for S s (and 0–2 s more) before each kill. */
    private static final int BACKLOG_SECONDS = Integer.getInteger("restart.backlog-seconds", 0);

    private final Path dir;
    private final int port;
    private final Random random;
    private final PrintStream out;

    /** One restart's figures, in milliseconds. */
    record Restart(long brokerStart, long recovery, long listeningToConfirm, long launchToConfirm, long cpuToListening,
                   long cpuToConfirm) {
        long total() {
            return brokerStart + listeningToConfirm;
        }
    }

    private RestartAfterKill(Path dir, int port, long seed, PrintStream out) {
        this.dir = dir;
        this.port = port;
        this.random = new Random(seed);
        this.out = out;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: RestartAfterKill DIR PORT PAIRS NAME=LAUNCHER...");
            System.exit(2);
        }
        Path dir = Path.of(args[0]);
        int port = Integer.parseInt(args[1]);
        int pairs = Integer.parseInt(args[2]);
        Map<String, Path> launchers = new LinkedHashMap<>();
        for (int i = 3; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq <= 0) {
                System.err.println("RestartAfterKill: a launcher is NAME=PATH, got '" + args[i] + "'");
                System.exit(2);
            }
            launchers.put(args[i].substring(0, eq), Path.of(args[i].substring(eq + 1)));
        }
        long seed = System.nanoTime();
        System.out.println("RestartAfterKill: seed " + seed);
        Files.createDirectories(dir);
        RestartAfterKill run = new RestartAfterKill(dir, port, seed, System.out);
        Map<String, List<Restart>> results = new LinkedHashMap<>();
        launchers.keySet().forEach(name -> results.put(name, new ArrayList<>()));
        List<String> names = new ArrayList<>(launchers.keySet());
        for (int pair = 1; pair <= pairs; pair++) {
            List<String> order = new ArrayList<>(names);
            if (pair % 2 == 0) {
                java.util.Collections.reverse(order);
            }
            for (String name : order) {
                Restart restart = run.round(name, launchers.get(name), pair);
                results.get(name).add(restart);
                System.out.printf("restart %s %d: broker start %d ms (store recovery %d ms) + listening to first confirm %d ms = %d ms;"
                                + " launch to first confirm %d ms; the broker's CPU (user + system) to listening %d ms, to first confirm %d ms;"
                        + " load average %s%n", name, pair, restart.brokerStart, restart.recovery, restart.listeningToConfirm,
                        restart.total(), restart.launchToConfirm, restart.cpuToListening, restart.cpuToConfirm, loadAverage());
            }
        }
        results.forEach((name, list) -> System.out.printf("summary %s: restart to first confirm median %d ms (%d–%d); launch to first"
                        + " confirm median %d ms (%d–%d); broker start median %d ms; CPU to first confirm median %d ms (%d–%d);"
                        + " %d restarts%n", name,
                median(list, Restart::total), min(list, Restart::total), max(list, Restart::total),
                median(list, Restart::launchToConfirm), min(list, Restart::launchToConfirm), max(list, Restart::launchToConfirm),
                median(list, Restart::brokerStart), median(list, Restart::cpuToConfirm), min(list, Restart::cpuToConfirm),
                max(list, Restart::cpuToConfirm), list.size()));
    }

    private Restart round(String name, Path launcher, int pair) throws Exception {
        Path data = dir.resolve(name + "-" + pair);
        Path firstLog = dir.resolve(name + "-" + pair + "-first.log");
        Process broker = launch(launcher, data, firstLog);
        try {
            awaitListening(broker, firstLog);
            publishUntilKilled(broker);
        } finally {
            broker.destroyForcibly();
            broker.waitFor(30, TimeUnit.SECONDS);
        }
        Path log = dir.resolve(name + "-" + pair + "-restart.log");
        long launched = System.nanoTime();
        Process restarted = launch(launcher, data, log);
        try {
            awaitListening(restarted, log);
            long listening = System.nanoTime();
            long cpuToListening = cpuMillis(restarted);
            try (Connection connection = connect()) {
                connection.declareQueue(QUEUE, QueueSettings.EMPTY);
                connection.createProducer(QUEUE, ProducerOptions.DEFAULT).send(new byte[256]);
            }
            long confirmed = System.nanoTime();
            long cpuToConfirm = cpuMillis(restarted);
            Matcher started = startedIn(log);
            return new Restart(Long.parseLong(started.group(1)), Long.parseLong(started.group(2)),
                    TimeUnit.NANOSECONDS.toMillis(confirmed - listening), TimeUnit.NANOSECONDS.toMillis(confirmed - launched),
                    cpuToListening, cpuToConfirm);
        } finally {
            restarted.destroy();
            if (!restarted.waitFor(30, TimeUnit.SECONDS)) {
                restarted.destroyForcibly();
            }
        }
    }

    /**
     * Publishes and acks until a random moment 0.5–2.5 s in, then kills the broker with kill -9 (SIGKILL); with
     * {@link #BACKLOG_SECONDS} set, publishes with no consumer for that many seconds and a random 0–2 s more, so that
     * the restart finds a backlog (millions of unacknowledged messages in a W2-sized run).
     */
    private void publishUntilKilled(Process broker) throws Exception {
        long killAfterMillis = BACKLOG_SECONDS > 0 ? BACKLOG_SECONDS * 1_000L + random.nextInt(2_000) : 500 + random.nextInt(2_000);
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong confirmed = new AtomicLong();
        try (Connection connection = connect()) {
            connection.declareQueue(QUEUE, QueueSettings.EMPTY);
            Producer producer = connection.createProducer(QUEUE, ProducerOptions.DEFAULT);
            Consumer consumer = BACKLOG_SECONDS > 0 ? null : connection.subscribe(QUEUE, ConsumerOptions.DEFAULT, message -> message.ack());
            Thread publisher = new Thread(() -> {
                byte[] payload = new byte[256];
                while (!stop.get()) {
                    try {
                        producer.sendAsync(payload).thenRun(confirmed::incrementAndGet);
                    } catch (RuntimeException e) {
                        return;
                    }
                }
            }, "restart-publisher");
            publisher.start();
            Thread.sleep(killAfterMillis); // the kill point itself, not a wait for a condition
            broker.destroyForcibly();
            broker.waitFor(30, TimeUnit.SECONDS);
            stop.set(true);
            publisher.join(TimeUnit.SECONDS.toMillis(30));
            out.println("  killed after " + killAfterMillis + " ms with " + confirmed.get() + " confirmed");
            try {
                if (consumer != null) {
                    consumer.close();
                }
            } catch (RuntimeException expected) {
                // the broker is gone
            }
        } catch (RuntimeException expected) {
            // closing a connection to a dead broker
        }
    }

    private Process launch(Path launcher, Path data, Path log) throws IOException {
        return new ProcessBuilder(launcher.toString(), "--data-dir", data.toString(), "--port", Integer.toString(port),
                "--set", "metrics.port=0")
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
    }

    private void awaitListening(Process broker, Path log) throws InterruptedException {
        long deadline = System.nanoTime() + DEADLINE_NANOS;
        while (System.nanoTime() < deadline) {
            if (!broker.isAlive()) {
                throw new IllegalStateException("the broker exited with " + broker.exitValue() + "; see " + log);
            }
            try (Socket ignored = new Socket("127.0.0.1", port)) {
                return;
            } catch (IOException notYet) {
                Thread.sleep(2);
            }
        }
        throw new IllegalStateException("the broker did not listen on port " + port + " within 60 s; see " + log);
    }

    private Connection connect() {
        return Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(port)
                .reconnectPolicy(ReconnectPolicy.DISABLED).build());
    }

    /**
     * The broker's "started in" line, polled for under the deadline: the broker binds before it logs the line, so
     * the first confirm can come first on a loaded machine.
     */
    private static Matcher startedIn(Path log) throws InterruptedException {
        long deadline = System.nanoTime() + DEADLINE_NANOS;
        while (System.nanoTime() < deadline) {
            try {
                for (String line : Files.readAllLines(log)) {
                    Matcher m = STARTED_IN.matcher(line);
                    if (m.find()) {
                        return m;
                    }
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            Thread.sleep(10);
        }
        throw new IllegalStateException("no 'started in' line in " + log + " within 60 s");
    }

    /**
     * The process's CPU time so far, user and system, all its threads (the JIT compiler's and the GC's included), from
     * /proc/PID/stat: on a shared machine the work a start does, which its wall time divides by its share of the cores.
     */
    private static long cpuMillis(Process process) {
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(process.pid()), "stat"));
            String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            long ticks = Long.parseLong(fields[11]) + Long.parseLong(fields[12]); // utime, stime: fields 14 and 15 of stat
            return ticks * 1000 / CLOCK_TICKS_PER_SECOND;
        } catch (IOException e) {
            return -1;
        }
    }

    private static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
        } catch (IOException e) {
            return "?";
        }
    }

    private static long median(List<Restart> list, java.util.function.ToLongFunction<Restart> f) {
        long[] sorted = list.stream().mapToLong(f).sorted().toArray();
        return sorted[sorted.length / 2];
    }

    private static long min(List<Restart> list, java.util.function.ToLongFunction<Restart> f) {
        return list.stream().mapToLong(f).min().orElse(0);
    }

    private static long max(List<Restart> list, java.util.function.ToLongFunction<Restart> f) {
        return list.stream().mapToLong(f).max().orElse(0);
    }
}
