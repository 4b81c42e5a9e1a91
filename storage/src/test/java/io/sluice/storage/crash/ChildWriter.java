package io.sluice.storage.crash;

import io.sluice.storage.Await;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * A {@link CrashingWriter} run in a child JVM with this JVM's flags (Chronicle's --add-opens and
 * friends) and class path, with what it reported on stdout collected as it arrives.
 *
 * <p>{@link #unreaped} starts the JVM under a parent that never waits for it, as a slow supervisor
 * would: once killed it stays a zombie, and {@code /proc/<pid>} exists until {@link #close()}.
 */
final class ChildWriter implements AutoCloseable {
    /**
     * How long a report may take: a bound for a hung child, not a wait for a state. A child JVM on a machine loaded
     * twenty-fold spent 30 s loading its first classes.
     */
    private static final long REPORT_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(60);
    final Set<Long> acking = ConcurrentHashMap.newKeySet();
    final Set<Long> acked = ConcurrentHashMap.newKeySet();
    /** Sequence to id of messages reported "kept" (reclaim mode). */
    final Map<Long, Long> kept = new ConcurrentHashMap<>();
    volatile long confirmed = -1;
    /** The last sequence appended (unforced-tail mode). */
    volatile long written = -1;
    /** Queues the child reported created (create mode). */
    final Set<String> created = ConcurrentHashMap.newKeySet();
    /** The child reported that it holds Chronicle's write lock (hold-lock mode). */
    volatile boolean holding;
    /** The process this JVM started: the writer JVM itself, or the parent that never reaps it. */
    private final Process process;
    /** The writer JVM. */
    private final ProcessHandle writer;
    private final boolean reaped;
    private final Path stdoutFile;
    private final Path stderrFile;

    ChildWriter(Path dataDir, String mode, long firstSeq, Path stderrFile) throws IOException {
        this(dataDir, mode, firstSeq, stderrFile, true);
    }

    /** A writer whose death nobody reaps until {@link #close()}: see the class comment. */
    static ChildWriter unreaped(Path dataDir, String mode, long firstSeq, Path stderrFile) throws IOException {
        return new ChildWriter(dataDir, mode, firstSeq, stderrFile, false);
    }

    private ChildWriter(Path dataDir, String mode, long firstSeq, Path stderrFile, boolean reaped) throws IOException {
        this.reaped = reaped;
        this.stderrFile = stderrFile;
        // The child's stdout goes to a file, not a pipe: after a SIGKILL, Java's process pipe may be
        // closed under a reader still draining it, and lines the child had written would be lost.
        this.stdoutFile = stderrFile.resolveSibling(stderrFile.getFileName() + ".stdout");
        List<String> command = new ArrayList<>();
        if (!reaped) {
            // The shell starts the JVM in the background and becomes `sleep`, which never waits for it.
            command.addAll(List.of("sh", "-c", "\"$0\" \"$@\" & exec sleep 600"));
        }
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        for (String arg : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (arg.startsWith("--add-") || arg.startsWith("-Dchronicle.")) {
                command.add(arg);
            }
        }
        command.add("-Xmx256m");
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(CrashingWriter.class.getName());
        command.add(dataDir.toString());
        command.add(mode);
        command.add(Long.toString(firstSeq));
        process = new ProcessBuilder(command)
                .redirectOutput(stdoutFile.toFile())
                .redirectError(ProcessBuilder.Redirect.appendTo(stderrFile.toFile()))
                .start();
        writer = reaped ? process.toHandle() : awaitOnlyChild(process);
    }

    private static ProcessHandle awaitOnlyChild(Process parent) throws IOException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            List<ProcessHandle> children = parent.children().toList();
            if (children.size() == 1) {
                return children.get(0);
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        parent.destroyForcibly();
        throw new IOException("the launching shell started no writer JVM within 30 s");
    }

    /** The writer JVM's PID. */
    long pid() {
        return writer.pid();
    }

    /** Parses what the child wrote; a last line cut short by the kill is ignored. */
    private void parseStdout() throws IOException {
        String text = Files.readString(stdoutFile, StandardCharsets.US_ASCII);
        int end = text.lastIndexOf('\n');
        if (end < 0) {
            return;
        }
        for (String line : text.substring(0, end).split("\n")) {
            String[] f = line.split(" ");
            switch (f[0]) {
                case "confirmed" -> confirmed = Long.parseLong(f[1]);
                case "kept" -> kept.put(Long.parseLong(f[1]), Long.parseLong(f[2]));
                case "acking" -> acking.add(Long.parseLong(f[1]));
                case "acked" -> acked.add(Long.parseLong(f[1]));
                case "holding" -> holding = true;
                case "created" -> created.add(f[1]);
                case "written" -> written = Long.parseLong(f[1]);
                default -> throw new IllegalStateException("unexpected line from the child: " + line);
            }
        }
    }

    private boolean reported(String word) throws IOException {
        // ISO-8859-1 decodes any byte: a thread dump or a fatal error's header on stdout is not the protocol's ASCII.
        return Files.exists(stdoutFile) && Files.readString(stdoutFile, StandardCharsets.ISO_8859_1).contains(word);
    }

    private boolean reportedUnchecked(String word) {
        try {
            return reported(word);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Polls the child's stdout until it holds a line containing {@code word}; fails if the child dies first or
     * does not report within 60 s, with what it left behind ({@link #notReported}).
     */
    void awaitReport(String word) throws Exception {
        awaitStdout(word, () -> reported(word));
    }

    /**
     * Polls until {@code reported} holds, failing as {@link #awaitReport} does, {@code what} naming the report. The child
     * reports through its stdout file only (a pipe loses lines at a SIGKILL), so there is no event to wait on: the poll
     * every 5 ms is the wait, bounded by {@link #REPORT_TIMEOUT_NANOS}.
     */
    private void awaitStdout(String what, Callable<Boolean> reported) throws Exception {
        long started = System.nanoTime();
        while (!reported.call()) {
            boolean alive = writer.isAlive();
            if (!alive || System.nanoTime() - started > REPORT_TIMEOUT_NANOS) {
                throw new AssertionError(notReported(what, alive, started));
            }
            Thread.sleep(5);
        }
    }

    /**
     * Why {@link #awaitReport} failed, then kills the child. One alive at the deadline is first asked for a thread dump
     * (SIGQUIT: the JVM writes it to its stdout), so that a hang says where it hangs; a dead one's exit status tells a
     * kill (137) from a crash, whose header a JVM also writes to stdout. So both outputs are quoted: a CI run that
     * failed here showed only an empty stderr, and its cause could not be found.
     */
    private String notReported(String word, boolean alive, long started) throws Exception {
        String state;
        if (alive) {
            state = "still running after " + TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started) + " s (its threads"
                    + " are in its stdout)";
            new ProcessBuilder("kill", "-QUIT", Long.toString(pid())).inheritIO().start().waitFor(10, TimeUnit.SECONDS);
            // Up to 10 s for the dump to be written, then on with what is there: this is a failure report, not a wait
            // the test's outcome depends on.
            Await.within(() -> reportedUnchecked("JNI global refs"), 10, TimeUnit.SECONDS); // the line that ends a dump
            writer.destroyForcibly();
        } else {
            state = "dead, found " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started) + " ms into the wait";
            try {
                state += ", exit status " + exitValue();
            } catch (IOException | RuntimeException unknown) {
                state += ", exit status unknown (" + unknown + ")";
            }
        }
        return "the child (pid " + pid() + ") did not report '" + word.trim() + "': " + state
                + ".\nIts stdout (" + stdoutFile + "):\n" + tail(stdoutFile, 1000)
                + "\nIts stderr (" + stderrFile + "):\n" + tail(stderrFile, 100);
    }

    /**
     * Kills the writer with SIGKILL, waits for it to be dead (reaped, or a zombie if {@link #unreaped})
     * and reads what it reported.
     */
    void kill() throws Exception {
        writer.destroyForcibly();
        awaitDeath();
    }

    private void awaitDeath() throws Exception {
        boolean dead;
        if (reaped) {
            dead = process.waitFor(30, TimeUnit.SECONDS);
        } else {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!(dead = zombie(writer.pid())) && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
        }
        if (!dead) {
            throw new AssertionError("the child did not die within 30 s of SIGKILL");
        }
        parseStdout();
    }

    /**
     * True if every thread of {@code pid} has exited (so its files, store.lock included, are closed)
     * and it awaits its parent's wait: state Z in /proc/<pid>/stat, and no thread left but the leader.
     * The leader alone turns Z as soon as it exits, while the other threads may still be exiting.
     */
    static boolean zombie(long pid) throws IOException {
        Path proc = Path.of("/proc", Long.toString(pid));
        try (java.util.stream.Stream<Path> tasks = Files.list(proc.resolve("task"))) {
            return statFields(pid)[0].equals("Z") && tasks.count() == 1;
        } catch (java.nio.file.NoSuchFileException gone) {
            return false;
        }
    }

    /** The fields of /proc/<pid>/stat after the command name: field 3 (state) onwards. */
    private static String[] statFields(long pid) throws IOException {
        String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
        return stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
    }

    /** Ends the parent of an {@link #unreaped} writer, so that its zombie is reaped. */
    @Override
    public void close() {
        if (!reaped) {
            process.destroyForcibly();
        }
    }

    /**
     * Waits for the first confirm, then kills the child with SIGKILL from another thread {@code runMillis}
     * later, while it appends, confirms and acks, and waits for it to be dead.
     */
    void killAfterFirstConfirm(long runMillis) throws Exception {
        killAfterReport("confirmed ", runMillis);
    }

    /** As {@link #killAfterFirstConfirm}, after the first line containing {@code word}. */
    void killAfterReport(String word, long runMillis) throws Exception {
        awaitReport(word);
        killIn(runMillis);
    }

    /**
     * Kills the writer {@code runMillis} after it reported every message up to sequence {@code seq} confirmed: a random
     * moment of its work that still comes after the volume a test needs, however slow the machine (on a loaded one a
     * fixed time after the first confirm held a few hundred messages).
     */
    void killAfterConfirmedThrough(long seq, long runMillis) throws Exception {
        awaitStdout("confirmed " + seq, () -> {
            parseStdout();
            return confirmed >= seq;
        });
        killIn(runMillis);
    }

    /** Kills the writer from another thread {@code runMillis} from now, while it works, and waits for its death. */
    private void killIn(long runMillis) throws Exception {
        Thread killer = new Thread(() -> {
            try {
                Thread.sleep(runMillis); // the kill point: a random moment of the child's work, not a wait for a state
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            writer.destroyForcibly();
        }, "child-killer");
        killer.start();
        killer.join(TimeUnit.SECONDS.toMillis(30) + runMillis);
        awaitDeath();
    }

    /** The writer's exit status as a shell reports it (137 for SIGKILL); for an unreaped writer, from /proc. */
    int exitValue() throws IOException {
        if (reaped) {
            return process.exitValue();
        }
        int status = Integer.parseInt(statFields(writer.pid())[49]); // field 52, exit_code, as waitpid(2) reports it
        return (status & 0x7f) != 0 ? 128 + (status & 0x7f) : status >> 8;
    }

    /** The last {@code max} lines of {@code file}; empty if it does not exist. */
    private static String tail(Path file, int max) throws IOException {
        if (!Files.exists(file)) {
            return "";
        }
        List<String> lines = Files.readAllLines(file, StandardCharsets.ISO_8859_1);
        return String.join("\n", lines.subList(Math.max(0, lines.size() - max), lines.size()));
    }
}
