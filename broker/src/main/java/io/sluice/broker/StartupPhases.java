package io.sluice.broker;

import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;

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
     * The phases as "name N ms, ...", led by the JVM's own start up to {@code main} when the operating system says
     * when the process started (to the clock tick, 10 ms on Linux).
     */
    String describe() {
        StringBuilder text = new StringBuilder();
        Instant processStart = ProcessHandle.current().info().startInstant().orElse(null);
        if (processStart != null) {
            Instant commandLineStart = Instant.now().minusNanos(System.nanoTime() - startedNanos);
            text.append("process start to main ").append(Math.max(0, Duration.between(processStart, commandLineStart).toMillis()))
                    .append(" ms");
        }
        millis.forEach((phase, ms) -> text.append(text.length() == 0 ? "" : ", ").append(phase).append(' ').append(ms).append(" ms"));
        return text.toString();
    }
}
