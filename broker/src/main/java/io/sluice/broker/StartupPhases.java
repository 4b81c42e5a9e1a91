package io.sluice.broker;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.OptionalLong;

/**
 * How long each phase of the broker's start took, for its "started in" line (docs/performance.md, "Restart after
 * kill -9"): the phases run one after another on the thread that starts the broker, each ended by {@link #end};
 * work done beside them on start-up threads shows as the time a phase waited for it.
 *
 * <p>Threads: used by the starting thread only.
 */
final class StartupPhases {
    private final long startedNanos;
    private final Map<String, Long> millis = new LinkedHashMap<>();
    private long phaseStartedNanos;

    /** Phases from {@code startedNanos} ({@code System.nanoTime()}), the start of the command line. */
    StartupPhases(long startedNanos) {
        this.startedNanos = startedNanos;
        this.phaseStartedNanos = startedNanos;
    }

    long startedNanos() {
        return startedNanos;
    }

    /** Ends the phase running since the last call (or since the start) and names it. */
    void end(String phase) {
        long now = System.nanoTime();
        millis.merge(phase, (now - phaseStartedNanos) / 1_000_000, Long::sum);
        phaseStartedNanos = now;
    }

    /** Milliseconds since the start. */
    long elapsedMillis() {
        return (System.nanoTime() - startedNanos) / 1_000_000;
    }

    /**
     * The phases as "name N ms, ...", led by the JVM's own start up to {@code main} when {@code /proc} says how old
     * the process is.
     */
    String describe() {
        StringBuilder text = new StringBuilder();
        OptionalLong processAge = processAgeMillis(Path.of("/proc/self/stat"), Path.of("/proc/uptime"));
        if (processAge.isPresent()) {
            text.append("process start to main ").append(Math.max(0, processAge.getAsLong() - elapsedMillis())).append(" ms");
        }
        millis.forEach((phase, ms) -> text.append(text.length() == 0 ? "" : ", ").append(phase).append(' ').append(ms).append(" ms"));
        return text.toString();
    }

    /**
     * How long ago this process started, to the clock tick, or empty where {@code /proc} cannot say. Not
     * {@code ProcessHandle.info().startInstant()}: on Linux the JDK adds the start's ticks to the boot time of
     * {@code /proc/stat}, which is in whole seconds, so that instant is early by up to a second. Both figures here
     * count from the boot: the system's uptime (in hundredths of a second) less the process's start (in ticks).
     */
    static OptionalLong processAgeMillis(Path stat, Path uptime) {
        try {
            return processAgeMillis(Files.readString(stat), Files.readString(uptime));
        } catch (IOException | RuntimeException e) {
            return OptionalLong.empty();
        }
    }

    /**
     * The same from the two files' text. The start is field 22 of {@code stat}, counted after the command's name,
     * which is in parentheses and may itself hold spaces and parentheses; a tick is 10 ms (USER_HZ is 100 on every
     * architecture Linux exports it for).
     */
    static OptionalLong processAgeMillis(String stat, String uptime) {
        String[] afterName = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
        long startTicks = Long.parseLong(afterName[22 - 3]);
        String[] up = uptime.trim().split("[ .]");
        long uptimeMillis = Long.parseLong(up[0]) * 1000 + Long.parseLong(up[1]) * 10;
        long age = uptimeMillis - startTicks * 10;
        return age >= 0 ? OptionalLong.of(age) : OptionalLong.empty();
    }
}
