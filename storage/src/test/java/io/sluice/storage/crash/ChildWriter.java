package io.sluice.storage.crash;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A {@link CrashingWriter} run in a child JVM with this JVM's flags (Chronicle's --add-opens and
 * friends) and class path, with what it reported on stdout collected as it arrives.
 */
final class ChildWriter {
    final Set<Long> acking = ConcurrentHashMap.newKeySet();
    final Set<Long> acked = ConcurrentHashMap.newKeySet();
    /** Sequence to id of messages reported "kept" (reclaim mode). */
    final Map<Long, Long> kept = new ConcurrentHashMap<>();
    volatile long confirmed = -1;
    private final CountDownLatch firstConfirm = new CountDownLatch(1);
    private final Process process;
    private final Thread stdoutReader;
    private final Path stderrFile;

    ChildWriter(Path dataDir, String mode, long firstSeq, Path stderrFile) throws IOException {
        this.stderrFile = stderrFile;
        List<String> command = new ArrayList<>();
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
                .redirectError(ProcessBuilder.Redirect.appendTo(stderrFile.toFile()))
                .start();
        stdoutReader = new Thread(this::readStdout, "child-stdout");
        stdoutReader.setDaemon(true);
        stdoutReader.start();
    }

    private void readStdout() {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.US_ASCII))) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                String[] f = line.split(" ");
                switch (f[0]) {
                    case "confirmed" -> {
                        confirmed = Long.parseLong(f[1]);
                        firstConfirm.countDown();
                    }
                    case "kept" -> kept.put(Long.parseLong(f[1]), Long.parseLong(f[2]));
                    case "acking" -> acking.add(Long.parseLong(f[1]));
                    case "acked" -> acked.add(Long.parseLong(f[1]));
                    default -> throw new IllegalStateException("unexpected line from the child: " + line);
                }
            }
        } catch (IOException e) {
            // The child was killed mid-line: what was read before stands.
        }
    }

    /** Waits for the first confirm, lets the child run {@code runMillis} more, then kills it with SIGKILL. */
    void killAfterFirstConfirm(long runMillis) throws Exception {
        if (!firstConfirm.await(30, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor();
            throw new AssertionError("the child confirmed nothing within 30 s; its stderr:\n" + stderr());
        }
        if (process.waitFor(runMillis, TimeUnit.MILLISECONDS)) {
            throw new AssertionError("the child exited by itself with status " + process.exitValue() + "; its stderr:\n" + stderr());
        }
        process.destroyForcibly();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            throw new AssertionError("the child did not die within 30 s of SIGKILL");
        }
        stdoutReader.join(TimeUnit.SECONDS.toMillis(30));
        if (stdoutReader.isAlive()) {
            throw new AssertionError("the child's stdout did not close after it died");
        }
    }

    int exitValue() {
        return process.exitValue();
    }

    String stderr() throws IOException {
        List<String> lines = Files.readAllLines(stderrFile);
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
    }
}
