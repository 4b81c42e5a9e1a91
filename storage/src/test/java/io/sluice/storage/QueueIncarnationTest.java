package io.sluice.storage;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link QueueIncarnation}: a queue keeps its incarnation across restarts, a queue created again under a deleted one's
 * name has another, and a directory without one (made before incarnations) is given one at its open, marked as
 * predating incarnations only if it holds messages.
 */
class QueueIncarnationTest {
    @TempDir
    Path temp;

    private MessageStore open() {
        return MessageStore.open(temp.resolve("data"), StoreConfig.builder().reservedDiskBytes(64L << 20).build());
    }

    @Test
    void aQueueKeepsItsIncarnationAcrossARestartAndOneCreatedAgainUnderItsNameHasAnother() {
        QueueIncarnation first;
        try (MessageStore store = open()) {
            first = store.createQueue("orders").incarnation();
            assertFalse(first.predatesIncarnations());
        }
        try (MessageStore store = open()) {
            assertEquals(first, store.queue("orders").incarnation());
            store.deleteQueue("orders");
            QueueIncarnation again = store.createQueue("orders").incarnation();
            assertNotEquals(first.id(), again.id());
            assertFalse(again.predatesIncarnations());
        }
    }

    @Test
    void aDirectoryWithoutOneIsGivenOneAtItsOpenMarkedAsPredatingIncarnationsIfItHoldsMessages() throws Exception {
        try (MessageStore store = open()) {
            store.createQueue("old").append(new byte[0], "m".getBytes(StandardCharsets.UTF_8));
            store.createQueue("empty");
        }
        Path queues = temp.resolve("data").resolve("queues");
        Files.delete(queues.resolve("old").resolve(QueueIncarnation.FILE));
        Files.delete(queues.resolve("empty").resolve(QueueIncarnation.FILE));
        QueueIncarnation old;
        try (MessageStore store = open()) {
            old = store.queue("old").incarnation();
            assertTrue(old.predatesIncarnations(), "a queue with messages and no incarnation was made before them");
            assertFalse(store.queue("empty").incarnation().predatesIncarnations(), "an empty one may be a creation a crash cut short");
        }
        assertTrue(Files.exists(queues.resolve("old").resolve(QueueIncarnation.FILE)));
        try (MessageStore store = open()) {
            assertEquals(old, store.queue("old").incarnation(), "given once, kept");
        }
    }
}
