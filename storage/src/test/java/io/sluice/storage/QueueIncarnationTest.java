package io.sluice.storage;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
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

    /**
     * Rule "an incarnation is checked": a digit of the id flipped (it read as another id) or the file cut short (it did
     * not read, and a fresh id replaced it) made the queue another incarnation of its name, so a commit record pending
     * for it no longer applied. The open is refused, naming the file, which is left as it is.
     */
    @Test
    void aDamagedFileRefusesTheQueueNamingTheFile() throws Exception {
        QueueIncarnation created;
        try (MessageStore store = open()) {
            created = store.createQueue("orders").incarnation();
        }
        Path file = temp.resolve("data").resolve("queues").resolve("orders").resolve(QueueIncarnation.FILE);
        byte[] good = Files.readAllBytes(file);
        int digit = new String(good, StandardCharsets.UTF_8).indexOf(" created") - 1; // the id's last digit
        assertTrue(Character.isDigit(good[digit]));

        byte[] flipped = good.clone();
        flipped[digit] ^= 0x01; // another digit
        byte[] torn = java.util.Arrays.copyOf(good, good.length / 2);
        for (byte[] damaged : List.of(flipped, torn)) {
            Files.write(file, damaged);
            RuntimeException refused = assertThrows(RuntimeException.class, this::open);
            assertTrue(refused.getMessage().contains("incarnation file " + file.toAbsolutePath() + " is damaged"),
                    refused.getMessage());
            assertArrayEquals(damaged, Files.readAllBytes(file), "left as it is, for the operator");
        }

        Files.write(file, good); // restored from a backup
        try (MessageStore store = open()) {
            assertEquals(created, store.queue("orders").incarnation());
        }
    }

    /**
     * The refusal says the queue's files stay as they are, and so they do, byte for byte: the ack state's recovery (a
     * checkpoint and a new journal) and its close after the refusal (another checkpoint) used to rewrite the ack files of
     * the refused queue, whose incarnation is checked after the recovery.
     */
    @Test
    void aRefusedOpenLeavesEveryFileOfTheQueueAsItWas() throws Exception {
        try (MessageStore store = open()) {
            QueueStore orders = store.createQueue("orders");
            for (int i = 0; i < 100; i++) {
                orders.append(null, ("message-" + i).getBytes(StandardCharsets.UTF_8));
            }
        }
        try (MessageStore store = open()) {
            QueueStore orders = store.queue("orders");
            try (QueueReader reader = orders.openReader()) {
                orders.ack(reader.next().id()); // a record in the journal, which a recovery would fold into a checkpoint
            }
        }
        Path queue = temp.resolve("data").resolve("queues").resolve("orders");
        Path file = queue.resolve(QueueIncarnation.FILE);
        Files.write(file, "not an incarnation\n".getBytes(StandardCharsets.UTF_8));
        Map<Path, String> before = FileTrees.contents(queue);

        RuntimeException refused = assertThrows(RuntimeException.class, this::open);
        assertTrue(refused.getMessage().contains("incarnation file " + file.toAbsolutePath() + " is damaged"), refused.getMessage());
        assertEquals(before, FileTrees.contents(queue), "the refused queue's files, byte for byte");
    }

    /** A file of version 1 (no checksum) reads as it did, and is given its checksum at the open. */
    @Test
    void aFileOfVersionOneStillReadsAndIsRewrittenWithAChecksum() throws Exception {
        try (MessageStore store = open()) {
            store.createQueue("orders");
        }
        Path file = temp.resolve("data").resolve("queues").resolve("orders").resolve(QueueIncarnation.FILE);
        Files.writeString(file, "-4627392305413219614 found\n", StandardCharsets.UTF_8);
        QueueIncarnation expected = new QueueIncarnation(-4627392305413219614L, true);
        try (MessageStore store = open()) {
            assertEquals(expected, store.queue("orders").incarnation());
        }
        assertTrue(Files.readString(file, StandardCharsets.UTF_8).startsWith("v2 -4627392305413219614 found "),
                Files.readString(file, StandardCharsets.UTF_8));
        try (MessageStore store = open()) {
            assertEquals(expected, store.queue("orders").incarnation());
        }
    }
}
