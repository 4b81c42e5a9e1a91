package io.sluice.storage.files;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
        List<String> args = new ArrayList<>(List.of(dataDir.toString(), Integer.toString(queues)));
        args.addAll(List.of(mode));
        return FileLimitedChild.run(dir, OPEN_FILE_LIMIT, 120, FileLimitedStore.class, args.toArray(String[]::new));
    }

    private static List<String> matching(List<String> lines, String prefix) {
        return lines.stream().filter(l -> l.startsWith(prefix)).toList();
    }

    private static long millis(String line) {
        return Long.parseLong(line.split(" ")[2]);
    }
}
