package io.sluice.bench.perf;

import io.sluice.broker.Broker;
import io.sluice.broker.config.ConfigLoader;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Smoke runs of the perf CLI's main logic against a broker in this JVM. */
class PerfRunTest {
    @TempDir
    Path dataDirectory;
    private Broker broker;

    @BeforeEach
    void startBroker() {
        broker = Broker.start(new ConfigLoader().load(null, Map.of(
                "broker.data-dir", dataDirectory.toString(),
                "broker.port", "0",
                "metrics.port", "0",
                "storage.reserved-disk-bytes", "67108864")));
    }

    @AfterEach
    void stopBroker() {
        broker.close();
    }

    @Test
    void shouldDeliverEveryMessageOnceInAW1Run() throws InterruptedException {
        PerfResult result = new PerfRun(options("W1", "--messages", "3000"), null).run();

        assertEquals(3000, result.messages());
        assertEquals(3000, result.confirmed());
        assertEquals(0, result.lost());
        assertEquals(0, result.duplicates());
        assertEquals(2400, result.latency().getTotalCount(), "latency covers the last 80 %");
        assertTrue(result.toJson().contains("\"e2e_rate\":"));
    }

    @Test
    void shouldDrainTheWholeBacklogInAW2Run() throws InterruptedException {
        PerfResult result = new PerfRun(options("W2", "--messages", "3000"), null).run();

        assertEquals(3000, result.confirmed());
        assertEquals(3000, result.received());
        assertEquals(0, result.lost());
        assertTrue(result.drainRate() > 0, "drain rate " + result.drainRate());
        assertTrue(result.toJson().contains("\"drain_rate\":"));
    }

    @Test
    void shouldCommitEveryMessageThroughToTheSecondQueueExactlyOnceInATransactionalW1Run() throws InterruptedException {
        // 2,550 is no multiple of the batch: the last partial transactions are committed when they linger.
        PerfResult result = new PerfRun(options("W1", "--transactional", "--messages", "2550", "--producers", "2",
                "--consumers", "2", "--tx-in-flight", "3"), null).run();

        assertEquals(2550, result.confirmed());
        assertEquals(2550, result.received(), "received from the second queue");
        assertEquals(0, result.lost());
        assertEquals(0, result.duplicates());
        TransactionResult transactions = result.transactions();
        assertEquals(2550, transactions.committedMessages());
        assertEquals(2550, transactions.consumed(), "nothing redelivered");
        assertEquals(0, transactions.failed());
        assertTrue(transactions.commits() >= 26, "batches of at most 100: " + transactions.commits());
        assertTrue(transactions.commitLatency().getTotalCount() > 0 && transactions.commitRate() > 0, result.toJson());
        assertTrue(result.toJson().contains("\"transactional\":true,\"tx_batch\":100,\"tx_in_flight\":3,")
                && result.toJson().contains("\"tx_committed\":2550,"), result.toJson());
        assertEquals(java.util.List.of(), broker.queues().all().stream().map(q -> q.name()).toList(),
                "both queues are deleted");
    }

    @Test
    void shouldForwardEveryMessageOnceWithOneCommitAtATimeAndSmallBatchesThroughTheCommandLine() throws InterruptedException {
        PerfOutput run = perf("--port", String.valueOf(broker.port()), "--workload", "W1", "--transactional",
                "--messages", "1000", "--tx-batch", "7", "--tx-in-flight", "1", "--warmup-messages", "300", "--json", "--quiet");

        assertEquals(0, run.status(), run.err());
        String json = run.json();
        assertTrue(json.contains("\"received\":1000,") && json.contains("\"lost\":0,") && json.contains("\"dups\":0,")
                && json.contains("\"tx_failed\":0,"), json);
        assertEquals(1000, jsonLong(json, "tx_committed"), json);
        assertTrue(jsonLong(json, "tx_commits") >= 143, "batches of at most 7: " + json);
        assertTrue(run.err().contains("committed") && run.err().contains("commit latency"), run.err());
        assertEquals(java.util.List.of(), broker.queues().all().stream().map(q -> q.name()).toList(),
                "the warm-up's and the run's queues are deleted");
    }

    @Test
    void shouldReportOneJsonObjectAndExitZeroThroughTheCommandLine() throws InterruptedException {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        int status = PerfMain.run(new String[] {"--port", String.valueOf(broker.port()), "--workload", "W1",
                "--messages", "500", "--json", "--quiet"}, new java.io.PrintStream(out, true),
                new java.io.PrintStream(java.io.OutputStream.nullOutputStream()));

        assertEquals(0, status);
        String json = out.toString().trim();
        assertTrue(json.startsWith("{\"workload\":\"W1\"") && json.endsWith("}") && json.lines().count() == 1, json);
    }

    @Test
    void shouldWarmUpOnQueuesOfItsOwnAndMeasureOnlyTheRunAfterIt() throws InterruptedException {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        java.io.ByteArrayOutputStream err = new java.io.ByteArrayOutputStream();
        int status = PerfMain.run(new String[] {"--port", String.valueOf(broker.port()), "--workload", "W1",
                "--messages", "700", "--warmup-messages", "1500", "--queue-prefix", "warm", "--json", "--quiet"},
                new java.io.PrintStream(out, true), new java.io.PrintStream(err, true));

        assertEquals(0, status, err.toString());
        String json = out.toString().trim();
        assertTrue(json.contains("\"msgs\":700,") && json.contains("\"received\":700,"), json);
        assertTrue(err.toString().contains("Warming up with 1500 messages"), err.toString());
        assertEquals(java.util.List.of(), broker.queues().all().stream().map(q -> q.name()).toList(), "the warm-up's and the run's queues are deleted");
    }

    @Test
    void shouldMeasureEachOfSeveralRunsInOneJvmAndPrintOneResultPerRun() throws InterruptedException {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        java.io.ByteArrayOutputStream err = new java.io.ByteArrayOutputStream();
        int status = PerfMain.run(new String[] {"--port", String.valueOf(broker.port()), "--workload", "W1",
                "--messages", "300", "--runs", "3", "--json", "--quiet"},
                new java.io.PrintStream(out, true), new java.io.PrintStream(err, true));

        assertEquals(0, status, err.toString());
        java.util.List<String> results = out.toString().lines().toList();
        assertEquals(3, results.size(), out.toString());
        for (String json : results) {
            assertTrue(json.contains("\"msgs\":300,") && json.contains("\"received\":300,")
                    && json.contains("\"lost\":0,") && json.contains("\"dups\":0,")
                    && json.contains("\"callbacks\":\"network\""), json);
        }
        assertTrue(err.toString().contains("Run 3 of 3:"), err.toString());
    }

    @Test
    void shouldEndAProducerOnlyRunWithExitZeroAndNoLoss() throws InterruptedException {
        PerfOutput run = perf("--port", String.valueOf(broker.port()), "--workload", "W1",
                "--consumers", "0", "--duration", "1", "--json", "--quiet");
        assertEquals(0, run.status(), run.err());
        assertTrue(run.json().contains("\"consumers\":0,") && run.json().contains("\"received\":0,")
                && run.json().contains("\"lost\":0,"), run.json());
        assertTrue(!run.err().contains("never received"), run.err());
    }

    @Test
    void shouldDeliverEveryMessageOfManyQueuesAndReportTheBrokersRssAndDiskPerQueue() throws InterruptedException {
        // The broker runs in this JVM, so its PID is this process's.
        PerfOutput run = perf("--port", String.valueOf(broker.port()), "--workload", "MQ", "--queues", "30",
                "--rate", "5", "--duration", "2", "--sample-seconds", "1", "--broker-pid", String.valueOf(ProcessHandle.current().pid()),
                "--data-dir", dataDirectory.toString(), "--keep-queues", "--queue-prefix", "mq", "--json");
        assertEquals(0, run.status(), run.err());
        String json = run.json();
        assertTrue(json.startsWith("{\"workload\":\"MQ\",\"queues\":30,") && json.contains("\"lost\":0,")
                && json.contains("\"dups\":0,") && json.contains("\"failed\":0,"), json);
        long sent = jsonLong(json, "sent");
        assertTrue(sent >= 30 * 5 && sent % 30 == 0, "whole rounds of one message per queue: " + json);
        assertEquals(sent, jsonLong(json, "confirmed"), json);
        assertEquals(sent, jsonLong(json, "received"), json);
        assertTrue(jsonLong(json, "rss_max_kb") > 0 && json.contains("\"rss_samples\":[["), json);
        long diskPerQueue = jsonLong(json, "disk_bytes_per_queue");
        assertTrue(diskPerQueue > 0 && diskPerQueue < 1 << 20, "an almost idle queue costs under 1 MiB of disk: " + json);
        assertEquals(30, broker.queues().all().size(), "--keep-queues");
    }

    @Test
    void shouldRunEachRoundOfAnAppClientRunWithEveryMessageInItsPerSecondSeries() throws InterruptedException {
        PerfOutput run = perf("--port", String.valueOf(broker.port()), "--workload", "W1", "--client", "app",
                "--messages", "2000", "--runs", "2", "--json", "--quiet");

        assertEquals(0, run.status(), run.err());
        java.util.List<String> rounds = run.json().lines().toList();
        assertEquals(2, rounds.size(), run.json());
        for (String json : rounds) {
            assertTrue(json.contains("\"received\":2000,") && json.contains("\"lost\":0,") && json.contains("\"dups\":0,")
                    && json.contains("\"callbacks\":\"app, dispatch\"") && json.contains("\"receive_windows_from\":\"first send\""), json);
            assertEquals(2000, jsonLong(json, "latency_samples_all"), json);
            assertEquals(1600, jsonLong(json, "latency_samples"), "the percentiles cover the last 80 %: " + json);
            assertTrue(jsonLong(json, "max_all_us") >= jsonLong(json, "max_us"), json);
            assertEquals(2000, jsonArraySum(json, "receives_per_second"), json);
            assertEquals(2000, jsonArraySum(json, "confirms_per_second"), json);
            if (jsonLong(json, "full_seconds") == 0) {
                assertEquals(-1, jsonLong(json, "worst_second_receive_rate"), json);
            } else {
                assertTrue(jsonLong(json, "worst_second_receive_rate") >= 0, json);
            }
        }
        assertTrue(run.err().contains("Run 2 of 2:") && run.err().contains("worst one-second window"), run.err());
    }

    @Test
    void shouldDrainAnAppClientW2RunWithItsReceiveWindowsFromTheSubscribe() throws InterruptedException {
        PerfOutput run = perf("--port", String.valueOf(broker.port()), "--workload", "W2", "--client", "app",
                "--messages", "3000", "--json", "--quiet");

        assertEquals(0, run.status(), run.err());
        String json = run.json();
        assertTrue(json.contains("\"received\":3000,") && json.contains("\"drain_rate\":")
                && json.contains("\"receive_windows_from\":\"subscribe\""), json);
        assertEquals(3000, jsonArraySum(json, "receives_per_second"), json);
        assertTrue(broker.queues().all().isEmpty(), "the run's queue is deleted");
    }

    private static long jsonArraySum(String json, String field) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("\"" + field + "\":\\[([-0-9,]*)]").matcher(json);
        assertTrue(m.find(), field + " in " + json);
        return java.util.Arrays.stream(m.group(1).split(",")).filter(v -> !v.isEmpty()).mapToLong(Long::parseLong).sum();
    }

    /** What a perf CLI run in this JVM printed. */
    private record PerfOutput(int status, String json, String err) {
    }

    private static PerfOutput perf(String... args) throws InterruptedException {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        java.io.ByteArrayOutputStream err = new java.io.ByteArrayOutputStream();
        int status = PerfMain.run(args, new java.io.PrintStream(out, true), new java.io.PrintStream(err, true));
        return new PerfOutput(status, out.toString().trim(), err.toString());
    }

    private static long jsonLong(String json, String field) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("\"" + field + "\":(-?\\d+)").matcher(json);
        assertTrue(m.find(), field + " in " + json);
        return Long.parseLong(m.group(1));
    }

    private PerfOptions options(String workload, String... extra) {
        String[] base = {"--port", String.valueOf(broker.port()), "--workload", workload, "--quiet",
                "--drain-timeout", "20"};
        String[] args = new String[base.length + extra.length];
        System.arraycopy(base, 0, args, 0, base.length);
        System.arraycopy(extra, 0, args, base.length, extra.length);
        return PerfOptions.parse(args);
    }

    @Test
    void shouldTimeEveryDeclareOfADeclareRunAndDeleteTheQueuesAfter() throws InterruptedException {
        PerfOptions options = PerfOptions.parse(new String[] {"--port", String.valueOf(broker.port()), "--workload", "DECLARE",
                "--queues", "40", "--connections", "2", "--declare-window", "8"});
        DeclareRun.Result result = new DeclareRun(options, "declare-test", null).run();

        assertEquals(40, result.declared());
        assertEquals(0, result.failed());
        assertEquals(40, result.latency().getTotalCount(), "one latency per declare");
        assertTrue(result.toJson().startsWith("{\"workload\":\"DECLARE\",\"queues\":40,\"connections\":2,\"window\":8,"),
                result.toJson());
        assertTrue(broker.queues().all().isEmpty(), "the run's queues are deleted");
    }
}
