package io.sluice.storage.crash;

import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.durability.FileForcer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An open that fails part-way (one queue cannot be recovered) closes the store. That close must not write
 * {@code clean-shutdown}: the queues after the failing one were never opened, so after an unclean stop never forced,
 * and the next open would serve their unforced records as durable (rule "recovery serves only what is on disk",
 * docs/storage.md). Found by a review; fails on the build before the fix at the first assertion.
 */
class FailedOpenCleanShutdownTest {
    @TempDir
    Path temp;

    @Test
    void anOpenThatFailsPartWayDoesNotMarkTheStoreClean() throws Exception {
        Path data = temp.resolve("data");
        StoreConfig config = StoreConfig.builder().segmentBytes(1 << 20).maxMessageBytes(64 << 10).build();
        try (MessageStore store = MessageStore.open(data, config)) {
            for (String name : new String[] {"a", "b"}) {
                QueueStore q = store.createQueue(name);
                long last = -1;
                for (int i = 0; i < 10; i++) {
                    last = q.append(null, new byte[100]);
                }
                q.whenDurable(last).get(10, TimeUnit.SECONDS);
            }
        }
        Files.delete(data.resolve("clean-shutdown")); // what a kill -9 leaves (b's unforced tail in the page cache)

        // Queue 'a' cannot be recovered this time (here: its ack directory is a file).
        Path acks = data.resolve("queues").resolve("a").resolve("acks");
        Path aside = temp.resolve("a-acks");
        Files.move(acks, aside);
        Files.createFile(acks);
        assertThrows(RuntimeException.class, () -> MessageStore.open(data, config));
        assertFalse(Files.exists(data.resolve("clean-shutdown")),
                "queue 'b' was never opened, so never forced: the failed open must not mark the store clean");

        Files.delete(acks);
        Files.move(aside, acks);
        CountingForcer forces = new CountingForcer();
        try (MessageStore reopened = MessageStore.open(data, config, forces)) {
            assertTrue(forces.queueB.get() > 0, "after the unclean stop queue 'b''s segment is forced at open");
        }
    }

    private static final class CountingForcer implements FileForcer {
        final AtomicInteger queueB = new AtomicInteger();

        @Override
        public void force(FileChannel channel, Path file) throws java.io.IOException {
            if (file.getFileName().toString().endsWith(".cq4") && file.toString().contains("/queues/b/")) {
                queueB.incrementAndGet();
            }
            channel.force(false);
        }
    }
}
