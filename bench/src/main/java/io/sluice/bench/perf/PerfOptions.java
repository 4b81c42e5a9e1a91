package io.sluice.bench.perf;

import io.sluice.client.ConnectionOptions;
import io.sluice.client.ConsumerOptions;

import java.util.Locale;

/**
 * The settings of one perf run, from the command line. A {@code --workload} sets the defaults of
 * docs/performance.md, "The workloads", first; explicit options given anywhere on the line override them. Mutable until {@link #validate()}.
 */
final class PerfOptions {
    static final String USAGE = String.join("\n",
            "usage: sluice-perf [options]",
            "  --host H                 broker address (127.0.0.1)",
            "  --port N                 broker port (7672)",
            "  --bootstrap H:P,H:P,...  a cluster's nodes (docs/replication.md): every connection asks them for the",
            "                           leader and follows it after a failover; --host and --port are then unused",
            "  --workload W1|W2|W3|MQ|DECLARE  the defaults of docs/performance.md, \"The workloads\"; MQ: many",
            "                           queues, each with one producer and one consumer at --rate msg/s for",
            "                           --duration (1000 queues, 10 msg/s, 600 s; reports broker RSS over time and",
            "                           disk per queue); DECLARE: declare --queues new queues (1000) over",
            "                           --connections (1), --declare-window in flight on each (1: the blocking",
            "                           declareQueue, one after the other), and report the total time and the",
            "                           latency per declare; explicit options override",
            "  --client perf|app        perf (the default): the CLI's tuned client, callbacks on the network",
            "                           thread, its own confirm window, lock-free recording; app: the client as an",
            "                           application uses it (issue 18): the client's defaults (callbacks on the",
            "                           dispatch pool unless --callbacks network), one producer calling",
            "                           sendAsync(new byte[]).whenComplete(...) per message with the producer's",
            "                           maxInFlight (--confirm-window) as the only bound, one push consumer that",
            "                           records into a histogram under a lock and acks; W1 and W2 only, 1 + 1,",
            "                           W1 500000 and W2 1000000 messages; also reports the maximum latency and",
            "                           the worst one-second window (docs/performance.md)",
            "  --transactional          W1 through a transaction per batch: each consumer acks --tx-batch",
            "                           deliveries and publishes one message per input to a second queue",
            "                           (<queue>-out) in one transaction, then commits; a drain consumer per",
            "                           consumer reads the second queue, where loss, duplicates and latency",
            "                           are counted; also reports the commit rate and commit latency",
            "  --tx-batch N             --transactional: deliveries per transaction (100)",
            "  --tx-in-flight N         --transactional: commits in flight per consumer (commitAsync); one more",
            "                           transaction fills meanwhile, so keep it below the broker's",
            "                           transactions.max-open-per-connection (16) (10: the consumer's credit",
            "                           in batches of 100, as many messages as W1's producer keeps in flight)",
            "  --producers N            producer connections (1)",
            "  --consumers N            consumer connections (1)",
            "  --queues N               queues; producer/consumer i uses queue i mod N (1)",
            "  --size BYTES             payload size, at least 16 (256)",
            "  --messages N             messages in total, split over the producers (W1 1000000, W2 5000000)",
            "  --duration SECONDS       publish for this long instead of a count (W3 120)",
            "  --rate N                 msg/s per producer, 0 = unlimited (0)",
            "  --confirm-window N       unconfirmed messages per producer (1000)",
            "  --credit N               consumer credit (1000)",
            "  --ack-batch N            acks per ACK frame; every message is acked (128)",
            "  --queue-prefix P         queue names are P-0, P-1, ... (perf-<random>)",
            "  --keep-queues            do not delete the queues at the end",
            "  --drain-after-publish    publish everything with no consumer, then drain (W2)",
            "  --quota-soft N           declare with quotaSoftMessages (W3 100000)",
            "  --quota-hard N           declare with quotaHardMessages (W3 200000)",
            "  --consumer-rate N        msg/s per consumer for the first --consumer-rate-seconds (W3 5000)",
            "  --consumer-rate-seconds S  how long --consumer-rate applies; 0 = the whole run (W3 60)",
            "  --drain-timeout SECONDS  give up waiting when nothing arrives for this long (30)",
            "  --warmup-messages N      first run this many messages through the same shape of run on other",
            "                           queues, unmeasured, so both JVMs' JIT has compiled the paths (0)",
            "  --runs N                 measure N runs one after the other in this JVM, one result each (1);",
            "                           later runs show the steady state of a client whose JIT is done",
            "                           (with --client app: rounds of the workload against the same broker)",
            "  --max-frame-bytes N      frame size the client asks for in HELLO (8388608, the broker's default)",
            "  --callbacks network|dispatch  where the client runs the handler and confirm callbacks: on its",
            "                           network thread (they never block; the default) or its dispatch pool;",
            "                           a consumer paced by --consumer-rate sleeps, so it always uses dispatch",
            "  --connections N          MQ: connections per role that the producers and consumers share",
            "                           (0 = one per 500 queues, at least 4); DECLARE: connections declaring",
            "                           at the same time (1)",
            "  --declare-window N       DECLARE: declares sent and not yet answered per connection (1)",
            "  --broker-pid PID         MQ: sample VmRSS, VmHWM and Threads of this process from /proc",
            "  --data-dir DIR           MQ: the broker's data directory, for allocated disk per queue (du)",
            "  --sample-seconds S       MQ: seconds between RSS samples (10)",
            "  --round-ms N             MQ: milliseconds between rounds of one message to every queue, for",
            "                           rates below 1 msg/s per queue (0 = 1000 / --rate)",
            "  --json                   print one JSON object on stdout (progress stays on stderr)",
            "  --quiet                  no progress lines",
            "Exit status: 0 ok, 1 messages lost or the run failed, 2 bad usage.");

    String host = "127.0.0.1";
    int port = ConnectionOptions.DEFAULT_PORT;
    /** {@code --bootstrap}: a cluster's client addresses; empty for one broker at {@link #host}:{@link #port}. */
    java.util.List<String> bootstrap = java.util.List.of();
    String workload = "custom";
    int producers = 1;
    int consumers = 1;
    int queues = 1;
    int sizeBytes = 256;
    long messages = 100_000;
    long durationSeconds;
    long ratePerProducer;
    int confirmWindow = 1000;
    int credit = 1000;
    int ackBatch = ConsumerOptions.DEFAULT.ackBatchSize();
    String queuePrefix = "perf-" + Long.toHexString(System.nanoTime() & 0xFFFFFFL);
    boolean keepQueues;
    boolean drainAfterPublish;
    long quotaSoft;
    long quotaHard;
    long consumerRate;
    long consumerRateSeconds;
    long drainTimeoutSeconds = 30;
    long warmupMessages;
    int runs = 1;
    /** {@code --transactional}: consumers forward through transactions ({@link TransactionalConsumer}). */
    boolean transactional;
    int messagesPerTransaction = 100;
    /**
     * Ten batches of 100 are the consumer's credit of 1,000: a forwarder keeps as many messages uncommitted as W1's
     * producer keeps unconfirmed (docs/performance.md, "Transactions").
     */
    int commitsInFlight = 10;
    /** {@code --client app}: an {@link AppRun} instead of a {@link PerfRun}. */
    boolean appClient;
    /**
     * Asked for explicitly: a HELLO with 0 ("broker's default") gets a 1,024-byte limit from the broker,
     * which then closes the connection over its own larger DELIVER frames.
     */
    int maxFrameBytes = 8 * 1024 * 1024;
    /** Client callbacks on the network thread ({@code ConnectionOptions.callbacksOnNetworkThread}). */
    boolean callbacksOnNetworkThread = true;
    int connections;
    int declareWindow = 1;
    long brokerPid;
    String dataDir;
    long sampleSeconds = 10;
    long roundMs;
    boolean json;
    boolean quiet;

    /** Parses {@code args}; throws {@link IllegalArgumentException} with a message for the user. */
    static PerfOptions parse(String[] args) {
        PerfOptions options = new PerfOptions();
        // The client shape picks the workloads' defaults, and they come before every explicit option.
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--client")) {
                options.applyClient(value(args, i));
            }
        }
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--workload")) {
                options.applyWorkload(value(args, i));
            }
        }
        for (int i = 0; i < args.length; i++) {
            String flag = args[i];
            switch (flag) {
                case "--workload", "--client" -> i++;
                case "--json" -> options.json = true;
                case "--quiet" -> options.quiet = true;
                case "--keep-queues" -> options.keepQueues = true;
                case "--drain-after-publish" -> options.drainAfterPublish = true;
                case "--transactional" -> options.transactional = true;
                case "-h", "--help" -> throw new HelpRequested();
                default -> {
                    String value = value(args, i);
                    i++;
                    options.set(flag, value);
                }
            }
        }
        return options.validate();
    }

    boolean isManyQueues() {
        return workload.equals("MQ");
    }

    boolean isDeclare() {
        return workload.equals("DECLARE");
    }

    /** Sets the defaults of a client shape: app runs with the client's own callbacks setting (dispatch pool). */
    void applyClient(String name) {
        switch (name) {
            case "perf" -> appClient = false;
            case "app" -> {
                appClient = true;
                callbacksOnNetworkThread = ConnectionOptions.builder().build().callbacksOnNetworkThread();
            }
            default -> throw new IllegalArgumentException("--client " + name + " is not perf or app");
        }
    }

    /**
     * Sets a workload's defaults, those of docs/performance.md, "The workloads" (for {@code --client app} the sizes of its
     * "Application-shaped runs").
     */
    void applyWorkload(String name) {
        workload = name.toUpperCase(Locale.ROOT);
        switch (workload) {
            case "W1" -> messages = appClient ? 500_000 : 1_000_000;
            case "W2" -> {
                messages = appClient ? 1_000_000 : 5_000_000;
                drainAfterPublish = true;
            }
            case "W3" -> {
                durationSeconds = 120;
                quotaSoft = 100_000;
                quotaHard = 200_000;
                consumerRate = 5_000;
                consumerRateSeconds = 60;
            }
            case "MQ" -> {
                queues = 1000;
                ratePerProducer = 10;
                durationSeconds = 600;
                // Each connection's consumers together stay below the broker's max-unacked-per-connection.
                credit = 50;
                confirmWindow = 100;
                ackBatch = 16;
            }
            case "DECLARE" -> {
                queues = 1000;
                connections = 1;
            }
            default -> throw new IllegalArgumentException("--workload " + name + " is not one of W1, W2, W3, MQ, DECLARE");
        }
    }

    /** {@code host:port} items, comma-separated; the client checks each address when it connects. */
    private static java.util.List<String> bootstrapList(String flag, String value) {
        java.util.List<String> nodes = new java.util.ArrayList<>();
        for (String item : value.split(",")) {
            String node = item.trim();
            int colon = node.lastIndexOf(':');
            if (colon <= 0 || colon == node.length() - 1) {
                throw new IllegalArgumentException(flag + " wants host:port items separated by commas; '" + node + "' is not one");
            }
            number(flag, node.substring(colon + 1), 1, 65_535);
            nodes.add(node);
        }
        return java.util.List.copyOf(nodes);
    }

    /** Where every connection of the run goes: one broker, or a cluster's bootstrap list. */
    ConnectionOptions.Builder connectionOptions() {
        return ConnectionOptions.builder().host(host).port(port).bootstrap(bootstrap);
    }

    private void set(String flag, String value) {
        switch (flag) {
            case "--host" -> host = value;
            case "--port" -> port = (int) number(flag, value, 1, 65_535);
            case "--bootstrap" -> bootstrap = bootstrapList(flag, value);
            case "--producers" -> producers = (int) number(flag, value, 1, Payload.MAX_PRODUCERS);
            case "--consumers" -> consumers = (int) number(flag, value, 0, 10_000);
            case "--queues" -> queues = (int) number(flag, value, 1, 10_000);
            case "--size" -> sizeBytes = (int) number(flag, value, Payload.MIN_BYTES, 4 * 1024 * 1024);
            case "--messages" -> messages = number(flag, value, 1, Integer.MAX_VALUE);
            case "--duration" -> durationSeconds = number(flag, value, 0, 86_400);
            case "--rate" -> ratePerProducer = number(flag, value, 0, 1_000_000_000);
            case "--confirm-window" -> confirmWindow = (int) number(flag, value, 1, 1_000_000);
            case "--credit" -> credit = (int) number(flag, value, 1, 1_000_000);
            case "--ack-batch" -> ackBatch = (int) number(flag, value, 1, 1_000_000);
            case "--tx-batch" -> messagesPerTransaction = (int) number(flag, value, 1, 10_000);
            case "--tx-in-flight" -> commitsInFlight = (int) number(flag, value, 1, 1_000);
            case "--queue-prefix" -> queuePrefix = value;
            case "--quota-soft" -> quotaSoft = number(flag, value, 0, Long.MAX_VALUE);
            case "--quota-hard" -> quotaHard = number(flag, value, 0, Long.MAX_VALUE);
            case "--consumer-rate" -> consumerRate = number(flag, value, 0, 1_000_000_000);
            case "--consumer-rate-seconds" -> consumerRateSeconds = number(flag, value, 0, 86_400);
            case "--max-frame-bytes" -> maxFrameBytes = (int) number(flag, value, 1024, Integer.MAX_VALUE);
            case "--drain-timeout" -> drainTimeoutSeconds = number(flag, value, 1, 86_400);
            case "--warmup-messages" -> warmupMessages = number(flag, value, 0, Integer.MAX_VALUE);
            case "--runs" -> runs = (int) number(flag, value, 1, 1_000);
            case "--connections" -> connections = (int) number(flag, value, 0, 1_000);
            case "--declare-window" -> declareWindow = (int) number(flag, value, 1, 100_000);
            case "--broker-pid" -> brokerPid = number(flag, value, 1, Integer.MAX_VALUE);
            case "--data-dir" -> dataDir = value;
            case "--sample-seconds" -> sampleSeconds = number(flag, value, 1, 3_600);
            case "--round-ms" -> roundMs = number(flag, value, 0, 3_600_000);
            case "--callbacks" -> callbacksOnNetworkThread = switch (value) {
                case "network" -> true;
                case "dispatch" -> false;
                default -> throw new IllegalArgumentException("--callbacks " + value + " is not network or dispatch");
            };
            default -> throw new IllegalArgumentException("unknown option '" + flag + "' (try --help)");
        }
    }

    PerfOptions validate() {
        if (appClient) {
            validateApp();
        }
        if (isDeclare()) {
            if (connections < 1 || connections > queues) {
                throw new IllegalArgumentException("--workload DECLARE needs --connections between 1 and --queues "
                        + queues + ", not " + connections);
            }
            return this;
        }
        if (isManyQueues()) {
            if (durationSeconds == 0 || ratePerProducer == 0) {
                throw new IllegalArgumentException("--workload MQ needs --duration and --rate above 0, not "
                        + durationSeconds + " and " + ratePerProducer);
            }
            if (connections == 0) {
                connections = Math.max(4, (queues + 499) / 500);
            }
            return this;
        }
        if (transactional) {
            validateTransactional();
        }
        if (drainAfterPublish && durationSeconds > 0) {
            throw new IllegalArgumentException("--drain-after-publish needs --messages, not --duration "
                    + durationSeconds);
        }
        if (durationSeconds == 0 && messages < producers) {
            throw new IllegalArgumentException("--messages " + messages + " is below --producers " + producers);
        }
        if (quotaHard > 0 && quotaSoft > quotaHard) {
            throw new IllegalArgumentException("--quota-soft " + quotaSoft + " is above --quota-hard " + quotaHard);
        }
        if (consumers == 0 && durationSeconds == 0) {
            throw new IllegalArgumentException("--consumers 0 needs --duration: nothing would drain the queue");
        }
        return this;
    }

    /** Rule "transactional shape": the W1 shape, consumers that forward, with the tuned client. */
    private void validateTransactional() {
        if (!workload.equals("W1") && !workload.equals("custom")) {
            throw new IllegalArgumentException("--transactional runs W1, not --workload " + workload);
        }
        StringBuilder problems = new StringBuilder();
        appRule(problems, !appClient, "--client app");
        appRule(problems, !drainAfterPublish, "--drain-after-publish");
        appRule(problems, consumers > 0, "--consumers " + consumers);
        appRule(problems, consumerRate == 0, "--consumer-rate " + consumerRate);
        if (problems.length() > 0) {
            throw new IllegalArgumentException("--transactional needs consumers forwarding as they receive, with the perf"
                    + " client; remove" + problems);
        }
    }

    /** Rule "app shape": 1 producer and 1 consumer on one queue, a message count, nothing paced or quota'd. */
    private void validateApp() {
        if (!workload.equals("W1") && !workload.equals("W2") && !workload.equals("custom")) {
            throw new IllegalArgumentException("--client app runs W1 or W2, not --workload " + workload);
        }
        StringBuilder problems = new StringBuilder();
        appRule(problems, producers == 1, "--producers " + producers);
        appRule(problems, consumers == 1, "--consumers " + consumers);
        appRule(problems, queues == 1, "--queues " + queues);
        appRule(problems, durationSeconds == 0, "--duration " + durationSeconds);
        appRule(problems, ratePerProducer == 0, "--rate " + ratePerProducer);
        appRule(problems, consumerRate == 0, "--consumer-rate " + consumerRate);
        appRule(problems, quotaSoft == 0 && quotaHard == 0, "--quota-soft/--quota-hard " + quotaSoft + "/" + quotaHard);
        appRule(problems, warmupMessages == 0, "--warmup-messages " + warmupMessages);
        if (problems.length() > 0) {
            throw new IllegalArgumentException("--client app runs 1 producer and 1 consumer on 1 queue for a message"
                    + " count, unpaced, without quotas or warm-up; remove" + problems);
        }
    }

    private static void appRule(StringBuilder problems, boolean holds, String option) {
        if (!holds) {
            problems.append(' ').append(option);
        }
    }

    /**
     * The unmeasured warm-up run before this one: the same producers, consumers, queues, sizes, windows and
     * credit, {@link #warmupMessages} messages, on queues of their own (deleted after), with no rate
     * limits or quotas and no progress lines.
     */
    PerfOptions warmup() {
        PerfOptions w = new PerfOptions();
        w.host = host;
        w.port = port;
        w.workload = workload;
        w.producers = producers;
        w.consumers = Math.max(1, consumers);
        w.queues = queues;
        w.sizeBytes = sizeBytes;
        w.messages = Math.max(warmupMessages, producers);
        w.confirmWindow = confirmWindow;
        w.credit = credit;
        w.ackBatch = ackBatch;
        w.queuePrefix = queuePrefix + "-warmup";
        w.drainAfterPublish = drainAfterPublish;
        w.drainTimeoutSeconds = drainTimeoutSeconds;
        w.maxFrameBytes = maxFrameBytes;
        w.callbacksOnNetworkThread = callbacksOnNetworkThread;
        w.transactional = transactional;
        w.messagesPerTransaction = messagesPerTransaction;
        w.commitsInFlight = commitsInFlight;
        w.quiet = true;
        return w.validate();
    }

    /** Where the run's client callbacks run, as the result reports it (a paced handler sleeps: dispatch). */
    String callbacksLabel() {
        if (appClient) {
            return callbacksOnNetworkThread ? "app, network" : "app, dispatch";
        }
        if (!callbacksOnNetworkThread) {
            return "dispatch";
        }
        return consumerRate > 0 ? "network, paced consumers dispatch" : "network";
    }

    /** The messages producer {@code index} sends in a count run: the total split as evenly as possible. */
    long messagesFor(int index) {
        return messages / producers + (index < messages % producers ? 1 : 0);
    }

    String queueName(int index) {
        return queuePrefix + "-" + (index % queues);
    }

    /** The second queue of a {@code --transactional} run, where consumer {@code index} forwards to. */
    String outputQueueName(int index) {
        return queueName(index) + "-out";
    }

    private static String value(String[] args, int i) {
        if (i + 1 >= args.length) {
            throw new IllegalArgumentException(args[i] + " needs a value");
        }
        return args[i + 1];
    }

    private static long number(String flag, String value, long min, long max) {
        long parsed;
        try {
            parsed = Long.parseLong(value.replace("_", ""));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(flag + " " + value + " is not a whole number");
        }
        if (parsed < min || parsed > max) {
            throw new IllegalArgumentException(flag + " " + parsed + " is outside " + min + ".." + max);
        }
        return parsed;
    }

    /** Thrown by {@link #parse} for {@code --help}. */
    static final class HelpRequested extends RuntimeException {
        private static final long serialVersionUID = 1L;

        HelpRequested() {
            super("help requested", null, false, false);
        }
    }
}
