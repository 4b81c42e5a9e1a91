package io.sluice.storage.files;

import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Run in a child JVM under a lowered open-file limit by {@link FileLimitTest}: declares queues and
 * appends to each until the process runs out of file descriptors (with {@code declare-first}: declares
 * them all, then appends to each), then checks that the queues that
 * worked still do, and that a refused queue works once descriptors are free again. Prints one line
 * per step ({@code <step> <queue> <ms> <outcome>}), and {@code done} at the end.
 */
public final class FileLimitedStore {
    private FileLimitedStore() {
    }

    public static void main(String[] args) throws Exception {
        Path dataDir = Path.of(args[0]);
        int queueCount = Integer.parseInt(args[1]);
        boolean declareFirst = args.length > 2 && args[2].equals("declare-first");
        try (MessageStore store = MessageStore.open(dataDir, StoreConfig.builder().build())) {
            if (declareFirst) {
                for (int i = 0; i < queueCount; i++) {
                    store.createQueue("q" + i);
                }
                System.out.println("declared " + queueCount);
            }
            List<QueueStore> working = new ArrayList<>();
            List<Integer> refused = new ArrayList<>();
            for (int i = 0; i < queueCount && (declareFirst || refused.isEmpty()); i++) {
                long started = System.nanoTime();
                try {
                    QueueStore queue = store.createQueue("q" + i);
                    appendDurably(queue, "first " + i);
                    working.add(queue);
                    report("append", i, started, "ok");
                } catch (Throwable e) {
                    refused.add(i);
                    report("append", i, started, "refused " + e.getClass().getName() + ": " + e.getMessage());
                }
            }
            for (int queue : refused) {
                // Straight away again: refused at once, without another attempt to open the file.
                long started = System.nanoTime();
                try {
                    appendDurably(store.createQueue("q" + queue), "again");
                    report("again", queue, started, "ok");
                } catch (Exception e) {
                    report("again", queue, started, "refused " + e.getClass().getName() + ": " + e.getMessage());
                }
            }
            for (int i = 0; i < working.size(); i++) {
                long started = System.nanoTime();
                QueueStore queue = working.get(i);
                try {
                    appendDurably(queue, "after " + i);
                    report("after", i, started, queue.failure() == null ? "ok" : "failed " + queue.failure().getMessage());
                } catch (Throwable e) {
                    report("after", i, started, "refused " + e.getClass().getName() + ": " + e.getMessage());
                }
            }
            if (!refused.isEmpty() && working.size() > 8) {
                // Free descriptors by deleting a few working queues; then the first and the last refused queue
                // must work.
                for (int i = 0; i < 8; i++) {
                    store.deleteQueue(working.get(i).name());
                }
                for (int queue : refused.size() == 1 ? List.of(refused.get(0)) : List.of(refused.get(0), refused.get(refused.size() - 1))) {
                    retry(store, queue);
                }
            }
            System.out.println("done");
        }
    }

    private static void retry(MessageStore store, int queue) throws InterruptedException {
        long started = System.nanoTime();
        long deadline = started + TimeUnit.SECONDS.toNanos(20);
        String outcome = "never";
        while (System.nanoTime() < deadline) {
            try {
                appendDurably(store.createQueue("q" + queue), "retry");
                outcome = "ok";
                break;
            } catch (Exception e) {
                outcome = "refused " + e.getClass().getName() + ": " + e.getMessage() + (e.getCause() == null ? "" : " (" + e.getCause() + ")");
                Thread.sleep(50); // polling the outcome under a deadline: descriptors are closed asynchronously
            }
        }
        report("retry", queue, started, outcome);
    }

    private static void appendDurably(QueueStore queue, String text) throws Exception {
        long id = queue.append(null, text.getBytes(StandardCharsets.UTF_8));
        queue.whenDurable(id).get(10, TimeUnit.SECONDS);
    }

    private static void report(String step, int queue, long startedNanos, String outcome) {
        System.out.println(step + " " + queue + " " + (System.nanoTime() - startedNanos) / 1_000_000 + " " + outcome);
    }
}
