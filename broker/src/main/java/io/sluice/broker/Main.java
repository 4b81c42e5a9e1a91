package io.sluice.broker;

import io.sluice.broker.admin.AdminCli;
import io.sluice.broker.auth.PasswordHasher;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.config.ConfigException;
import io.sluice.broker.config.ConfigLoader;
import io.sluice.broker.security.CertificatesCli;
import io.sluice.storage.ChronicleSignals;
import io.sluice.storage.DeferredPosix;
import io.sluice.storage.RecoveryClasses;
import io.sluice.storage.tool.StorageTool;

import java.io.Console;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * The broker's command line.
 *
 * <pre>
 * sluice [--config FILE] [--data-dir DIR] [--port N] [--listen ADDRESS] [--metrics-port N] [--set key=value ...]
 * sluice hash-password          reads a password from the terminal (or stdin) and prints its hash
 * sluice verify DATA_DIR        checks every segment and the ack state offline (exit 1 on damage)
 * sluice dump DATA_DIR QUEUE    prints a queue's messages and ack state
 * sluice admin [--url URL] [--user U --password P] [--json] COMMAND   the admin API (see AdminCli)
 * sluice certs ca|node DIR ...  the certificates of a cluster's mutual TLS (CertificatesCli)
 * sluice class-archive-training the class archive's training run (ClassArchiveTraining; bin/sluice runs it)
 * </pre>
 */
public final class Main {
    /** How long after listening Chronicle's POSIX binding loads: after the first publishes of a restart, not beside them. */
    private static final long POSIX_LOAD_DELAY_MILLIS = 5_000;
    /** How long a SIGTERM during the start waits for the start to end before the process stops without closing. */
    private static final long START_WAIT_AT_SHUTDOWN_SECONDS = 120;
    private Main() {
    }

    /**
     * Netty's system property for its allocator's JFR events; they are on by default on a JVM with JFR, and then
     * the first buffer the broker allocates (its first client's first frame) loads JFR's event metadata on the event
     * loop, most of the time from listening to the first confirm after a restart (docs/performance.md, "Restart after
     * kill -9"). Off unless set: {@code -Dio.netty.jfr.enabled=true} turns them back on.
     */
    static final String NETTY_JFR_EVENTS = "io.netty.jfr.enabled";

    public static void main(String[] args) {
        if (System.getProperty(NETTY_JFR_EVENTS) == null) {
            System.setProperty(NETTY_JFR_EVENTS, "false");
        }
        System.exit(run(args, System.out, System.err));
    }

    static int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length > 0 && args[0].equals("admin")) {
            return AdminCli.run(Arrays.copyOfRange(args, 1, args.length), out, err);
        }
        if (args.length > 0 && args[0].equals("certs")) {
            return CertificatesCli.run(Arrays.copyOfRange(args, 1, args.length), out, err);
        }
        if (args.length > 0 && args[0].equals("hash-password")) {
            return hashPassword(out, err);
        }
        if (args.length > 0 && args[0].equals("class-archive-training")) {
            return ClassArchiveTraining.run(out, err);
        }
        if (args.length > 0 && (args[0].equals("verify") || args[0].equals("dump"))) {
            // Read by LogConfigurator when the first logger is made, which is after this line: logs to stderr, the report to stdout.
            System.setProperty("sluice.log.target", "System.err");
            return StorageTool.run(args, out, err);
        }
        return runBroker(args, out, err, point -> { });
    }

    /** Where a start may be held by a test, to signal it there ({@code PausedStartMain}); held nowhere in production. */
    enum StartupPoint {
        /** The stop is in place and Chronicle's set-up under way; the configuration is read next. */
        BEFORE_CONFIGURATION,
        /** The configuration is read and Chronicle's set-up done; the broker starts next. */
        BEFORE_BROKER_START
    }

    /** As {@link #run} for the broker itself, {@code pause} called at each {@link StartupPoint} as the start passes it. */
    static int runBroker(String[] args, PrintStream out, PrintStream err, Consumer<StartupPoint> pause) {
        try {
            return startBroker(args, out, err, pause);
        } catch (MissingValueException e) {
            err.println("sluice: " + e.getMessage() + " (try --help)");
            return 2;
        }
    }

    /**
     * A flag without the value it takes (the last argument, followed by another flag, or {@code --port=}), or one that takes
     * none given one ({@link FlagValues}).
     */
    private static final class MissingValueException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        MissingValueException(String problem) {
            super(problem);
        }
    }

    private static int startBroker(String[] args, PrintStream out, PrintStream err, Consumer<StartupPoint> pause) {
        StartupPhases phases = new StartupPhases(System.nanoTime());
        Path configFile = null;
        boolean checkOnly = false;
        Map<String, String> overrides = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            FlagValues.Inline inline = FlagValues.inline(args[i]);
            String arg = inline == null ? args[i] : inline.name();
            BrokerFlags.Flag flag = BrokerFlags.find(arg).orElse(null);
            boolean valued = flag != null || arg.equals("--config") || arg.equals("--set");
            String value = null;
            if (inline != null && !valued) {
                if (!arg.equals("--check-config") && !arg.equals("--version") && !arg.equals("--help")) {
                    err.println("sluice: unknown argument '" + args[i] + "' (try --help)");
                    return 2;
                }
                throw new MissingValueException(FlagValues.noValue(inline));
            } else if (inline != null) {
                String missing = FlagValues.missing(inline);
                if (missing != null) {
                    throw new MissingValueException(missing);
                }
                value = inline.value();
            } else if (valued) {
                value = require(arg, i + 1 < args.length ? args[i + 1] : null);
                i++;
            }
            if (flag != null) {
                overrides.put(flag.key(), value);
                continue;
            }
            switch (arg) {
                case "--config" -> configFile = Path.of(value);
                case "--set" -> {
                    int eq = value.indexOf('=');
                    if (eq <= 0) {
                        err.println("sluice: --set takes key=value, got '" + value + "'");
                        return 2;
                    }
                    overrides.put(value.substring(0, eq), value.substring(eq + 1));
                }
                case "-h", "--help" -> {
                    out.print(BrokerFlags.help());
                    return 0;
                }
                case "--check-config" -> checkOnly = true;
                case "--version" -> {
                    out.println("sluice " + BrokerFlags.version());
                    return 0;
                }
                default -> {
                    err.println("sluice: unknown argument '" + arg + "' (try --help)");
                    return 2;
                }
            }
        }
        if (checkOnly) {
            BrokerConfig config = loadConfiguration(configFile, overrides, err);
            if (config == null) {
                return 2;
            }
            out.println("sluice: configuration is valid (clients on " + config.broker.listenAddress + ":" + config.broker.port
                    + ", data in " + config.broker.dataDir + ")");
            return 0;
        }
        // The stop is in place before anything of the start, so that a SIGTERM at any moment from here on (while the
        // configuration is read, Chronicle is set up, the broker starts or runs) ends the same way: the stop waits for
        // what was started, closes it, and the process exits with the stop's status, 0 when clean. Set any later, it
        // would leave a SIGTERM before then to the JVM's own handler or Chronicle's chain, which exit with 143.
        // stopOnSigterm takes the signal at once, without loading Chronicle.
        CompletableFuture<Broker> started = new CompletableFuture<>();
        SignalStop stop = new SignalStop(started, START_WAIT_AT_SHUTDOWN_SECONDS, err);
        ChronicleSignals.stopOnSigterm(stop::stopThenExit);
        try {
            return startThenRun(configFile, overrides, phases, started, stop, err, pause);
        } finally {
            // A return before the start (a configuration refused): a stop waiting for the start finds nothing to close.
            started.complete(null);
        }
    }

    /** Reads the configuration; null, once the refusal is printed, if it is no valid configuration. */
    private static BrokerConfig loadConfiguration(Path configFile, Map<String, String> overrides, PrintStream err) {
        try {
            return new ConfigLoader().load(configFile, overrides);
        } catch (ConfigException e) {
            err.println("sluice: " + e.getMessage());
            return null;
        } catch (RuntimeException e) {
            // Last resort: a case the loader does not foresee is still a configuration error, in one line and with
            // status 2 (--check-config's promise), not a stack trace and status 1.
            String message = String.valueOf(e.getMessage()).lines().findFirst().orElse("");
            err.println("sluice: invalid configuration: reading it failed with " + e.getClass().getName() + ": " + message);
            return null;
        }
    }

    /**
     * The broker's start and its life until {@code stop} has stopped it; the exit status. {@code started} is completed
     * with the broker, exceptionally if its start failed, or with null if the stop came before the start began.
     */
    private static int startThenRun(Path configFile, Map<String, String> overrides, StartupPhases phases,
                                    CompletableFuture<Broker> started, SignalStop stop, PrintStream err,
                                    Consumer<StartupPoint> pause) {
        // Before the store opens Chronicle, so that a signal at any moment exits through the hooks; on a thread
        // of its own, because loading Chronicle and the native libraries under it takes as long as reading the
        // configuration does. Then, still while the configuration is read, the classes the store's recovery
        // initialises first (RecoveryClasses): the store opens only once this thread has ended.
        Thread signals = new Thread(() -> {
            ChronicleSignals.exitOnTerminationSignals();
            RecoveryClasses.initialise();
        }, "sluice-start-signals");
        signals.setDaemon(true);
        signals.start();
        pause.accept(StartupPoint.BEFORE_CONFIGURATION);
        BrokerConfig config = loadConfiguration(configFile, overrides, err);
        if (config == null) {
            return 2;
        }
        phases.end("configuration");
        try {
            signals.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 1;
        }
        phases.end("waiting for Chronicle's set-up");
        pause.accept(StartupPoint.BEFORE_BROKER_START);
        // The hook does the same stop for any other end of the JVM (SIGINT's 130, SIGHUP), whose status the signal has
        // already set. Registered before the start, so that a SIGTERM while the broker starts (its store may be open, its
        // listener already accepting) waits for the start to end and closes the broker, rather than ending the process
        // with the store open; registered after it, the hook could also meet a shutdown already begun and fail the start.
        Thread hook = new Thread(stop::stop, "sluice-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        if (stop.stopping()) {
            // Stopped before the start: nothing is started, nothing is to close, the store is never opened.
            started.complete(null);
            return stop.stop();
        }
        try {
            started.complete(Broker.start(config, phases));
        } catch (StartupException e) {
            err.println("sluice: cannot start: " + e.getMessage());
            started.completeExceptionally(e);
            removeHook(hook);
            return 1;
        } catch (Throwable e) {
            // Any other failure of the start, a checked exception a library throws undeclared included, is a start
            // failure too, ended at once: left uncaught it completed nothing, and the hook, run when the JVM ended,
            // waited START_WAIT_AT_SHUTDOWN_SECONDS for a start already over. Not one the start knows, so its trace is kept.
            started.completeExceptionally(e);
            removeHook(hook);
            err.println("sluice: cannot start: " + e);
            e.printStackTrace(err);
            return 1;
        }
        ChronicleSignals.exitOnTerminationSignals();
        DeferredPosix.loadInBackground(POSIX_LOAD_DELAY_MILLIS);
        try {
            // Chronicle can install its own SIGTERM/SIGINT handlers again after start-up (observed:
            // a broker that ignored kill -TERM), so the main thread puts ours back every second.
            while (!stop.awaitStopped(1_000)) {
                ChronicleSignals.exitOnTerminationSignals();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return stop.status();
    }

    /** A start that failed needs no hook; if a shutdown has begun meanwhile, the hook finds nothing to close. */
    private static void removeHook(Thread hook) {
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shutdownBegun) {
            // the hook runs, and finds the start ended without a broker
        }
    }

    private static String require(String flag, String value) {
        String missing = FlagValues.missing(flag, value, false);
        if (missing != null) {
            throw new MissingValueException(missing);
        }
        return value;
    }

    private static int hashPassword(PrintStream out, PrintStream err) {
        Console console = System.console();
        char[] password;
        if (console != null) {
            password = console.readPassword("password: ");
        } else {
            try {
                String line = new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
                password = line == null ? null : line.toCharArray();
            } catch (java.io.IOException e) {
                password = null;
            }
        }
        if (password == null || password.length == 0) {
            err.println("sluice: no password given");
            return 2;
        }
        out.println(PasswordHasher.hash(password));
        return 0;
    }
}
