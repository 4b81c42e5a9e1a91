package io.sluice.storage.tool;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.function.LongSupplier;

/**
 * A progress line for long runs of {@code verify} and {@code dump}, on standard error and only when
 * that is a terminal: nothing during the first {@link #FIRST_AFTER_NANOS}, then one line rewritten in
 * place (carriage return) at most every {@link #EVERY_NANOS}, erased when the run ends, so that the
 * report on standard output and anything redirected stays free of it. Single thread: the tool's.
 */
final class Progress {
    static final long FIRST_AFTER_NANOS = 1_000_000_000L;
    static final long EVERY_NANOS = 500_000_000L;
    /** Reads the clock once per this many calls of {@link #show}: a call per record must stay cheap. */
    private static final int CALLS_PER_CLOCK_READ = 256;

    static final Progress NONE = new Progress(null, () -> 0);

    private final PrintStream terminal;
    private final LongSupplier nanoClock;
    private final long startNanos;
    private long nextNanos;
    private int calls;
    private int shownLength;

    /** Writes to {@code terminal} (null: never), timed by {@code nanoClock}. */
    Progress(PrintStream terminal, LongSupplier nanoClock) {
        this.terminal = terminal;
        this.nanoClock = nanoClock;
        this.startNanos = terminal == null ? 0 : nanoClock.getAsLong();
        this.nextNanos = startNanos + FIRST_AFTER_NANOS;
    }

    /**
     * Progress on {@code System.err} if it is a terminal, else {@link #NONE}; also {@link #NONE} when
     * standard output is that same terminal unless {@code besideReport} (the caller erases the line
     * with {@link #done} before it prints).
     */
    static Progress onStandardError(boolean besideReport) {
        String err = terminalOf(2);
        if (err == null || (!besideReport && err.equals(terminalOf(1)))) {
            return NONE;
        }
        return new Progress(System.err, System::nanoTime);
    }

    /**
     * The terminal device file descriptor {@code fd} is open on, or null if it is not a terminal. On
     * Linux from /proc; elsewhere {@code System.console()}, which says that standard input and output
     * are terminals (the best Java offers without native code).
     */
    static String terminalOf(int fd) {
        try {
            String target = Files.readSymbolicLink(Path.of("/proc/self/fd/" + fd)).toString();
            return target.startsWith("/dev/pts/") || target.startsWith("/dev/tty") ? target : null;
        } catch (IOException | UnsupportedOperationException | SecurityException e) {
            return System.console() != null ? "console" : null;
        }
    }

    /** Reports {@code records} done in {@code phase} (e.g. "queue 'orders' (2 of 5)"), if it is time to. */
    void show(String phase, long records) {
        if (terminal == null || ++calls % CALLS_PER_CLOCK_READ != 0) {
            return;
        }
        long now = nanoClock.getAsLong();
        if (now - nextNanos < 0) {
            return;
        }
        nextNanos = now + EVERY_NANOS;
        String line = String.format(Locale.ROOT, "%s: %,d records, %d s", phase, records, (now - startNanos) / 1_000_000_000L);
        terminal.print("\r" + line + " ".repeat(Math.max(0, shownLength - line.length())));
        terminal.flush();
        shownLength = line.length();
    }

    /** Erases the line, if one is shown. */
    void done() {
        if (terminal != null && shownLength > 0) {
            terminal.print("\r" + " ".repeat(shownLength) + "\r");
            terminal.flush();
            shownLength = 0;
        }
    }
}
