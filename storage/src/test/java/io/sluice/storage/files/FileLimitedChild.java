package io.sluice.storage.files;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Runs a class's {@code main} in a child JVM whose open-file limit ({@code RLIMIT_NOFILE}) is lowered
 * with {@code prlimit}, with this JVM's class path and Chronicle's flags, and returns what it printed;
 * fails unless it exits 0 within the time given. Its output goes to files in {@code workDirectory}.
 */
final class FileLimitedChild {
    private FileLimitedChild() {
    }

    static List<String> run(Path workDirectory, int openFileLimit, int timeoutSeconds, Class<?> main, String... args)
            throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("prlimit", "--nofile=" + openFileLimit + ":" + openFileLimit,
                Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        for (String arg : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (arg.startsWith("--add-") || arg.startsWith("-Dchronicle.")) {
                command.add(arg);
            }
        }
        command.addAll(List.of("-Xmx256m", "-cp", System.getProperty("java.class.path"), main.getName()));
        command.addAll(List.of(args));
        Path out = workDirectory.resolve("child.stdout");
        Path err = workDirectory.resolve("child.stderr");
        Process child = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        if (!child.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            child.destroyForcibly();
            fail("the child did not finish within " + timeoutSeconds + " s; its output: " + Files.readString(out, StandardCharsets.UTF_8));
        }
        List<String> lines = Files.readAllLines(out, StandardCharsets.UTF_8);
        String errors = Files.readString(err, StandardCharsets.UTF_8);
        assertEquals(0, child.exitValue(), "child exit status; stdout:\n" + String.join("\n", lines)
                + "\nstderr (end):\n" + errors.substring(Math.max(0, errors.length() - 4000)));
        return lines;
    }
}
