package io.sluice.storage.files;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * A store in a child JVM whose open-file limit ({@code RLIMIT_NOFILE}, set with {@code prlimit}) runs
 * out: the queue that cannot open its files is refused with {@code StorageFilesExhaustedException},
 * which names the limit, at once; the queues opened before it keep confirming, none is failed for
 * good, and the refused one works once descriptors are free again. Issue 14, section 3.
 */
@Tag("slow")
class FileLimitTest {
    private static final int OPEN_FILE_LIMIT = 160;

    @TempDir
    Path dir;

    @Test
    void aQueueThatCannotOpenItsFilesIsRefusedClearlyAndTheOthersGoOn() throws Exception {
        List<String> lines = runChild(dir.resolve("data"), 200);
        List<String> appends = matching(lines, "append ");
        String last = appends.get(appends.size() - 1);
        assertTrue(last.contains("refused io.sluice.storage.StorageFilesExhaustedException"),
                "the queue that ran out of descriptors is refused with the files-exhausted error: " + last);
        assertTrue(last.contains("open-file limit " + OPEN_FILE_LIMIT), "the error names the limit: " + last);
        assertTrue(appends.size() > 10, "queues worked before the limit was reached: " + appends.size());
        for (String line : appends.subList(1, appends.size())) { // the first one loads and compiles the classes
            assertTrue(millis(line) < 2_000, "no append stalls, the refused one included: " + line);
        }
        List<String> after = matching(lines, "after ");
        assertEquals(appends.size() - 1, after.size(), "every queue that worked was tried again");
        for (String line : after) {
            assertTrue(line.endsWith(" ok"), "a queue that worked keeps confirming once the limit is reached: " + line);
            assertTrue(millis(line) < 2_000, "and is not held up: " + line);
        }
        List<String> retry = matching(lines, "retry ");
        assertEquals(1, retry.size(), String.join("\n", lines));
        assertTrue(retry.get(0).endsWith(" ok"), "the refused queue works once descriptors are free: " + retry.get(0));
        assertTrue(lines.contains("done"), String.join("\n", lines));
    }

    @Test
    void declaredQueuesThatCannotOpenASegmentAreRefusedClearlyAndTheOthersGoOn() throws Exception {
        List<String> lines = runChild(dir.resolve("data"), 60, "declare-first");
        assertTrue(lines.contains("declared 60"), String.join("\n", lines));
        List<String> appends = matching(lines, "append ");
        assertEquals(60, appends.size(), String.join("\n", lines));
        List<String> refused = appends.stream().filter(l -> !l.endsWith(" ok")).toList();
        assertTrue(!refused.isEmpty() && refused.size() < 50, "some queues were refused, not all: " + refused.size());
        for (String line : refused) {
            assertTrue(line.contains("refused io.sluice.storage.StorageFilesExhaustedException"),
                    "a queue that cannot open its segment is refused with the files-exhausted error: " + line);
        }
        for (String line : appends.subList(1, appends.size())) { // the first one loads and compiles the classes
            assertTrue(millis(line) < 2_000, "no append stalls, the refused ones included: " + line);
        }
        List<String> again = matching(lines, "again ");
        assertEquals(refused.size(), again.size(), String.join("\n", lines));
        for (String line : again) {
            assertTrue(line.contains("refused io.sluice.storage.StorageFilesExhaustedException") && millis(line) < 2_000,
                    "a refused queue asked again at once is refused again at once: " + line);
        }
        long attempts = lines.stream().filter(l -> l.contains("unable to create a file")).count();
        assertTrue(attempts <= refused.size(), "Chronicle tried to create a segment file " + attempts + " times for "
                + refused.size() + " refused queues asked twice: a refused queue backs off instead of trying per append");
        List<String> after = matching(lines, "after ");
        assertEquals(60 - refused.size(), after.size(), String.join("\n", lines));
        for (String line : after) {
            assertTrue(line.endsWith(" ok"), "a queue that worked keeps confirming, never failed for good: " + line);
        }
        List<String> retry = matching(lines, "retry ");
        assertEquals(2, retry.size(), String.join("\n", lines));
        for (String line : retry) {
            assertTrue(line.endsWith(" ok"), "a refused queue works once descriptors are free: " + line);
        }
    }

    private List<String> runChild(Path dataDir, int queues, String... mode) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of("prlimit", "--nofile=" + OPEN_FILE_LIMIT + ":" + OPEN_FILE_LIMIT,
                Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        for (String arg : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (arg.startsWith("--add-") || arg.startsWith("-Dchronicle.")) {
                command.add(arg);
            }
        }
        command.addAll(List.of("-Xmx256m", "-cp", System.getProperty("java.class.path"), FileLimitedStore.class.getName(),
                dataDir.toString(), Integer.toString(queues)));
        command.addAll(List.of(mode));
        Path out = dir.resolve("child.stdout");
        Path err = dir.resolve("child.stderr");
        Process child = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        if (!child.waitFor(120, TimeUnit.SECONDS)) {
            child.destroyForcibly();
            fail("the child did not finish within 120 s; its output: " + Files.readString(out, StandardCharsets.UTF_8));
        }
        List<String> lines = Files.readAllLines(out, StandardCharsets.UTF_8);
        assertEquals(0, child.exitValue(), "child exit status; stdout:\n" + String.join("\n", lines)
                + "\nstderr (end):\n" + tail(Files.readString(err, StandardCharsets.UTF_8)));
        return lines;
    }

    private static List<String> matching(List<String> lines, String prefix) {
        return lines.stream().filter(l -> l.startsWith(prefix)).toList();
    }

    private static long millis(String line) {
        return Long.parseLong(line.split(" ")[2]);
    }

    private static String tail(String text) {
        return text.length() < 4000 ? text : text.substring(text.length() - 4000);
    }
}
