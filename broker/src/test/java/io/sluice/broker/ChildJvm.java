package io.sluice.broker;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Starts a class of the test classpath in a child JVM with this JVM's own flags (which carry the
 * Chronicle --add-opens/--add-exports flags), its output going to a file.
 */
final class ChildJvm {
    private ChildJvm() {
    }

    static Process start(Path output, Class<?> mainClass, String... args) throws IOException {
        return start(output, List.of(), mainClass, args);
    }

    /** As {@link #start(Path, Class, String...)}, with {@code jvmFlags} after this JVM's own (e.g. a {@code -D} of the test's). */
    static Process start(Path output, List<String> jvmFlags, Class<?> mainClass, String... args) throws IOException {
        return start(output, List.of(), jvmFlags, mainClass, args);
    }

    /**
     * As {@link #start(Path, List, Class, String...)}, the java command run by {@code prefix} (e.g. {@code ip netns exec NS},
     * which execs it: the process is the JVM itself, so that a kill kills the JVM).
     */
    static Process start(Path output, List<String> prefix, List<String> jvmFlags, Class<?> mainClass, String... args) throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> command = new ArrayList<>(prefix);
        command.add(java);
        for (String flag : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (!flag.startsWith("-agentlib:jdwp") && !flag.startsWith("-javaagent")) {
                command.add(flag);
            }
        }
        command.addAll(jvmFlags);
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(mainClass.getName());
        command.addAll(List.of(args));
        return new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(output.toFile()))
                .start();
    }

    /**
     * Polls until the port accepts a TCP connection, up to 90 s (a broker recovering on 2 shared cores at load
     * average 30 took more than 30 s to listen); fails early if the process died.
     */
    static void awaitListening(Process process, int port, Path output) throws InterruptedException {
        awaitListening(process, port, output, Duration.ofSeconds(90));
    }

    static void awaitListening(Process process, int port, Path output, Duration timeout) throws InterruptedException {
        awaitListening(process, "127.0.0.1", port, output, timeout);
    }

    static void awaitListening(Process process, String host, int port, Path output, Duration timeout) throws InterruptedException {
        TestAwait.until("a child JVM listening on " + host + ":" + port, timeout, () -> {
            if (!process.isAlive()) {
                throw new AssertionError("the child JVM exited with " + process.exitValue() + ": " + tail(output));
            }
            try (Socket ignored = new Socket(host, port)) {
                return true;
            } catch (IOException e) {
                return false;
            }
        });
    }

    /** Polls the output file until a line satisfies the test; fails early if the process died. */
    static void awaitOutput(Process process, Path output, String what, java.util.function.Predicate<String> line)
            throws InterruptedException {
        TestAwait.until(what, Duration.ofSeconds(30), () -> {
            for (String l : lines(output)) {
                if (line.test(l)) {
                    return true;
                }
            }
            if (!process.isAlive()) {
                throw new AssertionError("the child JVM exited with " + process.exitValue() + ": " + tail(output));
            }
            return false;
        });
    }

    static List<String> lines(Path output) {
        try {
            return Files.exists(output) ? Files.readAllLines(output) : List.of();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static String tail(Path output) {
        List<String> all = lines(output);
        return String.join("\n", all.subList(Math.max(0, all.size() - 30), all.size()));
    }

    /** Kills the process as kill -9 would and waits for it to be gone. */
    static void kill(Process process) throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(20, java.util.concurrent.TimeUnit.SECONDS)) {
            throw new AssertionError("child JVM " + process.pid() + " did not die within 20 s");
        }
    }

    /** Kills every process of {@code processes} still alive (a test's clean-up). */
    static void killAll(Process[] processes) throws InterruptedException {
        for (Process p : processes) {
            if (p != null && p.isAlive()) {
                kill(p);
            }
        }
    }
}
