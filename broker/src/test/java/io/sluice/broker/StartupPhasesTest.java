package io.sluice.broker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.OptionalLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class StartupPhasesTest {

    @Test
    void processAgeIsTheUptimeLessTheStartTicksWhateverTheCommandsName() {
        String stat = "1991 (a (b) c) R 1948 1948 1122 0 -1 4194304 101 0 0 0 0 0 0 0 20 0 1 0 20283 3133440 415 0\n";
        assertEquals(OptionalLong.of(203_810 - 202_830),
                StartupPhases.processAgeMillis(stat, "203.81 308.69\n"));
        assertEquals(OptionalLong.empty(), StartupPhases.processAgeMillis(stat, "202.00 1.00\n"),
                "a start after the uptime is no age");
    }

    @Test
    void noProcFilesNoAge() {
        assertEquals(OptionalLong.empty(),
                StartupPhases.processAgeMillis(Path.of("/nonexistent/stat"), Path.of("/nonexistent/uptime")));
    }

    /**
     * The JVM was created after the process started and before this test ran, so the process is at least as old as
     * the JVM's uptime (less a tick for the two clocks' rounding), and the launcher before the JVM's creation takes
     * far less than a second. The JDK's own start instant, which the line used before, counts from a boot time in
     * whole seconds and read up to a second more.
     */
    @Test
    void theLinesProcessStartToMainAgreesWithTheJvmsUptime() {
        long jvmUptimeBefore = ManagementFactory.getRuntimeMXBean().getUptime();
        StartupPhases phases = new StartupPhases(System.nanoTime());
        String line = phases.describe();
        long jvmUptimeAfter = ManagementFactory.getRuntimeMXBean().getUptime();
        Matcher m = Pattern.compile("^process start to main (\\d+) ms").matcher(line);
        assertTrue(m.find(), line);
        long toMain = Long.parseLong(m.group(1));
        assertTrue(toMain >= jvmUptimeBefore - 20, line + " against the JVM's uptime " + jvmUptimeBefore + " ms");
        // The launcher's time before the JVM's creation is not bounded on a loaded machine (235 ms once in a CI run with
        // other work beside it): the margin only rules out an error of the order of a second; the exact arithmetic is
        // the first test's.
        assertTrue(toMain <= jvmUptimeAfter + 600, line + " against the JVM's uptime " + jvmUptimeAfter + " ms");
    }
}
