package io.sluice.storage.crash;

import io.sluice.storage.Await;
import io.sluice.storage.DurabilityMode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueReader;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.StoredMessage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A queue that {@code createQueue} or {@code createQueues} returned survives a machine crash, on a disk image
 * built from exactly what was forced, directory entries included ({@link ForcedDiskImage}). The store used to
 * force a new queue's directory entries only with its first segment, so a queue declared and answered, but
 * not yet written to, was gone after a power cut. The image keeps a new queue's ack files and Chronicle's
 * metadata file only as their creation forced them (empty if it never did, though their names are
 * durable), so these tests fail if the grouped creation skips a force of files or of directories.
 */
class CreatedQueueMachineCrashTest {
    @TempDir
    Path temp;

    private final StoreConfig config = StoreConfig.builder().durability(DurabilityMode.ALWAYS).reservedDiskBytes(64L << 20).build();

    @Test
    void aCreatedQueueWithNoMessageSurvivesAMachineCrash() throws Exception {
        Path data = temp.resolve("data");
        ForcedDiskImage disk = new ForcedDiskImage(data);
        try (MessageStore store = MessageStore.open(data, config, disk)) {
            store.createQueue("empty");
            Path image = temp.resolve("image");
            disk.build(image); // the power fails here
            try (MessageStore recovered = MessageStore.open(image, config)) {
                assertEquals(List.of("empty"), recovered.listQueues());
                QueueStore q = recovered.queue("empty");
                q.whenDurable(q.append(null, "after".getBytes(StandardCharsets.UTF_8))).get(10, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void everyQueueCreatedTogetherSurvivesAMachineCrash() throws Exception {
        Path data = temp.resolve("data");
        ForcedDiskImage disk = new ForcedDiskImage(data);
        List<String> names = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            names.add("q-" + i);
        }
        List<String> asked = new ArrayList<>(names);
        asked.add("q-3"); // a name twice: the same queue
        try (MessageStore store = MessageStore.open(data, config, disk)) {
            List<CompletableFuture<QueueStore>> created = store.createQueues(asked);
            assertEquals(asked.size(), created.size());
            for (CompletableFuture<QueueStore> f : created) {
                assertTrue(f.isDone() && !f.isCompletedExceptionally(), "every future is complete when createQueues returns");
            }
            assertSame(created.get(3).join(), created.get(asked.size() - 1).join());
            Path image = temp.resolve("image");
            disk.build(image);
            try (MessageStore recovered = MessageStore.open(image, config)) {
                assertEquals(names.stream().sorted().toList(), recovered.listQueues());
            }
        }
    }

    /**
     * The acks of a queue created in a group and then written to survive a machine crash once the journal
     * was forced: its entry, made durable with the queue's creation, holds them (a journal whose name
     * were not durable would take them with it, and the acknowledged messages would come back).
     */
    @Test
    void acksInACreatedQueueSurviveAMachineCrashOnceTheJournalIsForced() throws Exception {
        Path data = temp.resolve("data");
        ForcedDiskImage disk = new ForcedDiskImage(data);
        try (MessageStore store = MessageStore.open(data, config, disk)) {
            QueueStore q = store.createQueues(List.of("acked", "other")).get(0).join();
            List<Long> ids = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                ids.add(q.append(null, ("m" + i).getBytes(StandardCharsets.UTF_8)));
            }
            q.whenDurable(ids.get(ids.size() - 1)).get(10, TimeUnit.SECONDS);
            int forcesBefore = disk.journalForces("acked");
            for (int i = 0; i < 5; i++) {
                q.ack(ids.get(i));
            }
            Await.until("the ack journal is forced after the acks", () -> disk.journalForces("acked") > forcesBefore);
            Path image = temp.resolve("image");
            disk.build(image);
            try (MessageStore recovered = MessageStore.open(image, config)) {
                List<Long> read = new ArrayList<>();
                try (QueueReader reader = recovered.queue("acked").openReader()) {
                    for (StoredMessage m = reader.next(); m != null; m = reader.next()) {
                        read.add(m.id());
                    }
                }
                assertEquals(ids.subList(5, 10), read);
            }
        }
    }

    @Test
    void anInvalidNameFailsOnlyItsOwnFuture() {
        try (MessageStore store = MessageStore.open(temp.resolve("data"), config)) {
            List<CompletableFuture<QueueStore>> created = store.createQueues(List.of("good", "bad name/"));
            assertEquals("good", created.get(0).join().name());
            assertTrue(created.get(1).isCompletedExceptionally());
            assertEquals(List.of("good"), store.listQueues());
        }
    }
}
