package io.sluice.storage.crash;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
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
    private final Process process;
    private final Path stdoutFile;
    private final Path stderrFile;

    ChildWriter(Path dataDir, String mode, long firstSeq, Path stderrFile) throws IOException {
        this.stderrFile = stderrFile;
        // The child's stdout goes to a file, not a pipe: after a SIGKILL, Java's process pipe may be
        // closed under a reader still draining it, and lines the child had written would be lost.
        this.stdoutFile = stderrFile.resolveSibling(stderrFile.getFileName() + ".stdout");
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
                .redirectOutput(stdoutFile.toFile())
                .redirectError(ProcessBuilder.Redirect.appendTo(stderrFile.toFile()))
                .start();
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
                default -> throw new IllegalStateException("unexpected line from the child: " + line);
            }
        }
    }

    private boolean confirmedAny() throws IOException {
        return Files.exists(stdoutFile) && Files.readString(stdoutFile, StandardCharsets.US_ASCII).contains("confirmed ");
    }

    /** Waits for the first confirm, lets the child run {@code runMillis} more, then kills it with SIGKILL. */
    void killAfterFirstConfirm(long runMillis) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!confirmedAny()) {
            if (System.nanoTime() > deadline || !process.isAlive()) {
                process.destroyForcibly().waitFor();
                throw new AssertionError("the child confirmed nothing within 30 s; its stderr:\n" + stderr());
            }
            Thread.sleep(5);
        }
        if (process.waitFor(runMillis, TimeUnit.MILLISECONDS)) {
            throw new AssertionError("the child exited by itself with status " + process.exitValue() + "; its stderr:\n" + stderr());
        }
        process.destroyForcibly();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            throw new AssertionError("the child did not die within 30 s of SIGKILL");
        }
        parseStdout();
    }

    int exitValue() {
        return process.exitValue();
    }

    String stderr() throws IOException {
        List<String> lines = Files.readAllLines(stderrFile);
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
    }
}
