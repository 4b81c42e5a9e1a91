package io.sluice.storage;

import io.sluice.storage.ack.AckCheckpoint;
import io.sluice.storage.ack.AckFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A queue whose open fails after its recovery succeeded (here: its incarnation cannot be written, as when the process is
 * out of descriptors or the disk fails while a store made before incarnations is opened) must close what recovery
 * opened, as a failed recovery does ({@code QueueRecovery.closeAfterFailure}): no descriptor and no mapping of the
 * queue's files may stay behind; and it writes no checkpoint more than the recovery's, whose journal the next open replays.
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
        Path checkpoint = queue.resolve("acks").resolve(AckFiles.CHECKPOINT);
        long generation = AckCheckpoint.read(checkpoint).generation();
        Files.delete(queue.resolve(QueueIncarnation.FILE)); // a queue made before incarnations
        // Fault injection: the incarnation's temporary file cannot be replaced, so its write fails after recovery.
        Files.createDirectories(queue.resolve(QueueIncarnation.FILE + ".tmp").resolve("blocker"));

        RuntimeException refused = assertThrows(RuntimeException.class, this::open);
        assertTrue(String.valueOf(refused.getMessage()).contains(QueueIncarnation.FILE), "refused for its incarnation: " + refused);

        // Chronicle may close what the first store's close released on a thread of its own: a bounded wait, then the check.
        Await.within(() -> OpenFiles.descriptorsUnder(queue).isEmpty(), 10, java.util.concurrent.TimeUnit.SECONDS);
        assertEquals(List.of(), OpenFiles.descriptorsUnder(queue), "descriptors of the queue's files left open by the failed open");
        assertEquals(List.of(), OpenFiles.mappingsUnder(queue), "mappings of the queue's files left by the failed open");
        // The recovery's checkpoint, and no other: the ack state's close after the failure writes nothing more.
        assertEquals(generation + 1, AckCheckpoint.read(checkpoint).generation(), "the checkpoints written by the failed open");
    }
}
