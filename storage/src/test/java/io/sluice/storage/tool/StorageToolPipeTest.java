package io.sluice.storage.tool;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code dump ... | head -n 1} in a real shell pipeline with the tool in a child JVM: once head has
 * its line and closes the pipe, the tool stops, quietly, with status 141 (128 + SIGPIPE, what a Unix
 * tool stopped by a closed pipe reports), instead of writing the rest of the queue into nothing and
 * exiting 0 as if it had finished. With standard output on a full disk instead, it says so and exits 1.
 */
@Tag("slow")
@Timeout(120)
class StorageToolPipeTest {
    private static final int MESSAGES = 20_000; // about 3 MB of dump lines, far more than a pipe holds

    @TempDir
    Path dir;

    @BeforeEach
    void fillAQueue() {
        StoreConfig config = StoreConfig.builder().durability(DurabilityMode.NEVER).segmentBytes(StoreConfig.MIN_SEGMENT_BYTES)
                .maxMessageBytes(64 << 10).build();
        try (MessageStore store = MessageStore.open(dir.resolve("data"), config)) {
            QueueStore q = store.createQueue("orders");
            byte[] payload = new byte[100];
            for (int i = 0; i < MESSAGES; i++) {
                q.append(1, i, null, ByteBuffer.wrap(payload));
            }
        }
    }

    /** The tool's command line: {@code dump} of the queue, in a JVM of its own. */
    private List<String> dumpCommand() {
        List<String> java = new ArrayList<>();
        java.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        for (String arg : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (arg.startsWith("--add-") || arg.startsWith("-Dchronicle.")) {
                java.add(arg);
            }
        }
        java.addAll(List.of("-Xmx256m", "-Dsluice.log.target=System.err", "-cp", System.getProperty("java.class.path"), StorageTool.class.getName(),
                "dump", dir.resolve("data").toString(), "orders"));
        return java;
    }

    /** Standard output on a full disk ({@code /dev/full}: ENOSPC on every write) is not a closed pipe: 1, and why. */
    @Test
    void shouldExitOneNamingTheErrorWhenStandardOutputIsOnAFullDisk() throws Exception {
        Path stderr = dir.resolve("tool.stderr");
        Process tool = new ProcessBuilder(dumpCommand()).redirectOutput(new File("/dev/full")).redirectError(stderr.toFile()).start();
        assertTrue(tool.waitFor(60, TimeUnit.SECONDS), "the tool ended");
        String said = Files.readString(stderr);
        assertEquals(StorageTool.EXIT_DAMAGED, tool.exitValue(), said);
        assertTrue(said.contains("error: cannot write the report to standard output: No space left on device"), said);
    }

    @Test
    void shouldStopQuietlyWhenTheReaderClosesThePipe() throws Exception {
        List<String> java = dumpCommand();
        // "$@" is the JVM's command; the shell reports the tool's own status, not head's.
        List<String> command = new ArrayList<>(List.of("bash", "-c",
                "\"$@\" 2>\"$STDERR\" | head -n 1; echo \"tool exit ${PIPESTATUS[0]}\"", "pipeline"));
        command.addAll(java);
        Path stderr = dir.resolve("tool.stderr");
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().put("STDERR", stderr.toString());
        Process shell = builder.start();
        String output = new String(shell.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(shell.waitFor(60, TimeUnit.SECONDS), "the pipeline ended");
        List<String> lines = output.lines().toList();
        assertEquals(2, lines.size(), output);
        assertTrue(lines.get(0).startsWith("Queue 'orders'"), output);
        assertEquals("tool exit " + StorageTool.EXIT_OUTPUT_CLOSED, lines.get(1), "stopped by the closed pipe: " + output);
        String said = Files.readString(stderr);
        assertFalse(said.contains("error") || said.contains("Exception") || said.contains("Broken pipe"),
                "nothing said about the closed pipe: " + said);
    }
}
