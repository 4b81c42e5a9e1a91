package io.sluice.storage;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A queue whose open fails after its recovery succeeded (here: its incarnation cannot be written, as when the process is
 * out of descriptors or the disk fails while a store made before incarnations is opened) must close what recovery
 * opened, as a failed recovery does ({@code QueueRecovery.closeAfterFailure}): no descriptor and no mapping of the
 * queue's files may stay behind.
 */
class FailedIncarnationOpenLeakTest {
    @TempDir
    Path temp;

    private MessageStore open() {
        return MessageStore.open(temp.resolve("data"), StoreConfig.builder().reservedDiskBytes(64L << 20).build());
    }

    @Test
    void anOpenThatCannotWriteTheIncarnationLeavesNoFileOfTheQueueOpenOrMapped() throws Exception {
        try (MessageStore store = open()) {
            QueueStore q = store.createQueue("old");
            for (int i = 0; i < 10; i++) {
                q.append(new byte[0], ("m" + i).getBytes(StandardCharsets.UTF_8));
            }
        }
        Path queue = temp.resolve("data").resolve("queues").resolve("old");
        Files.delete(queue.resolve(QueueIncarnation.FILE)); // a queue made before incarnations
        // Fault injection: the incarnation's temporary file cannot be replaced, so its write fails after recovery.
        Files.createDirectories(queue.resolve(QueueIncarnation.FILE + ".tmp").resolve("blocker"));

        RuntimeException refused = assertThrows(RuntimeException.class, this::open);
        assertTrue(String.valueOf(refused.getMessage()).contains(QueueIncarnation.FILE), "refused for its incarnation: " + refused);

        // Chronicle may close what the first store's close released on a thread of its own: a bounded wait, then the check.
        Await.within(() -> {
            try {
                return openDescriptorsUnder(queue).isEmpty();
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }, 10, java.util.concurrent.TimeUnit.SECONDS);
        assertEquals(List.of(), openDescriptorsUnder(queue), "descriptors of the queue's files left open by the failed open");
        assertEquals(List.of(), mappingsUnder(queue), "mappings of the queue's files left by the failed open");
    }

    private static List<String> openDescriptorsUnder(Path directory) throws IOException {
        String prefix = directory.toRealPath().toString();
        List<String> found = new ArrayList<>();
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            for (Path fd : (Iterable<Path>) fds::iterator) {
                try {
                    String target = Files.readSymbolicLink(fd).toString();
                    if (target.startsWith(prefix)) {
                        found.add(target);
                    }
                } catch (IOException gone) {
                    // closed meanwhile
                }
            }
        }
        return found;
    }

    private static List<String> mappingsUnder(Path directory) throws IOException {
        String prefix = directory.toRealPath().toString();
        List<String> found = new ArrayList<>();
        for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
            int slash = line.indexOf('/');
            if (slash >= 0 && line.substring(slash).startsWith(prefix)) {
                found.add(line.substring(slash));
            }
        }
        return found.stream().distinct().toList();
    }
}
