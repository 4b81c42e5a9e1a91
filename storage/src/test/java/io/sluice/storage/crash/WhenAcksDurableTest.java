package io.sluice.storage.crash;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StorageException;
import io.sluice.storage.StorageFailedException;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.durability.FileForcer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;

import static io.sluice.storage.Await.until;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link QueueStore#whenAcksDurable(boolean)}: once it completes, a machine crash keeps every ack and delivery
 * made before the call, on a disk image built from exactly what was forced ({@link ForcedDiskImage}),
 * and it completes by an early force of the ack journal, not at the sync interval (a minute here, so
 * only an early force can complete it within the test's wait). It fails once the queue closed or failed.
 */
class WhenAcksDurableTest {
    private static final long SYNC_INTERVAL_MS = 60_000;

    @TempDir
    Path temp;

    private static StoreConfig config(DurabilityMode mode) {
        return StoreConfig.builder().durability(mode).syncIntervalMs(SYNC_INTERVAL_MS).reservedDiskBytes(64L << 20).build();
    }

    @ParameterizedTest
    @EnumSource(DurabilityMode.class)
    void theAcksAndDeliveriesMadeBeforeTheCallSurviveAMachineCrashOnceItCompletes(DurabilityMode mode) throws Exception {
        Path data = temp.resolve("data");
        ForcedDiskImage disk = new ForcedDiskImage(data);
        try (MessageStore store = MessageStore.open(data, config(mode), disk)) {
            QueueStore q = store.createQueue("q");
            long[] ids = new long[3];
            for (int i = 0; i < ids.length; i++) {
                ids[i] = q.append(null, ("m" + i).getBytes(StandardCharsets.UTF_8));
            }
            q.whenDurable(ids[2]).get(10, TimeUnit.SECONDS);
            // The flusher's first turn forces the journal at once; after it the next periodic force is a minute away.
            until("the journal's first periodic force", () -> disk.journalForces("q") >= 1);
            q.ack(ids[0]);
            q.recordDelivery(ids[1], 1);
            int forcesBefore = disk.journalForces("q");

            Path unforced = temp.resolve("before");
            buildWithSegmentsWrittenBack(disk, data, unforced);
            try (MessageStore crashed = MessageStore.open(unforced, config(mode))) {
                assertFalse(crashed.queue("q").isAcked(ids[0]), "without a force the ack is lost in a machine crash");
            }

            q.whenAcksDurable(true).get(10, TimeUnit.SECONDS);
            assertEquals(forcesBefore + 1, disk.journalForces("q"), "one early force of the journal");

            Path forced = temp.resolve("after");
            buildWithSegmentsWrittenBack(disk, data, forced); // the power fails here: the live store is never closed into the image
            try (MessageStore crashed = MessageStore.open(forced, config(mode))) {
                QueueStore recovered = crashed.queue("q");
                assertTrue(recovered.isAcked(ids[0]), "the ack made before the call");
                assertEquals(1, recovered.deliveryCount(ids[1]), "the delivery recorded before the call");
                assertFalse(recovered.isAcked(ids[1]));
                assertFalse(recovered.isAcked(ids[2]));
            }

            CompletableFuture<Void> again = q.whenAcksDurable(true);
            assertTrue(again.isDone() && !again.isCompletedExceptionally(), "nothing acknowledged since: durable already");
            assertEquals(forcesBefore + 1, disk.journalForces("q"), "and no force for it");
        }
    }

    /** The lazy form asks for no force: it completes with the next one, here one an eager caller asked for. */
    @Test
    void theLazyFormCompletesWithTheNextForceAndAsksForNone() throws Exception {
        Path data = temp.resolve("data");
        ForcedDiskImage disk = new ForcedDiskImage(data);
        try (MessageStore store = MessageStore.open(data, config(DurabilityMode.ALWAYS), disk)) {
            QueueStore q = store.createQueue("q");
            long id = q.append(null, "m".getBytes(StandardCharsets.UTF_8));
            q.whenDurable(id).get(10, TimeUnit.SECONDS);
            until("the journal's first periodic force", () -> disk.journalForces("q") >= 1);
            q.ack(id);
            int forcesBefore = disk.journalForces("q");
            CompletableFuture<Void> lazy = q.whenAcksDurable(false);
            // A flusher turn that forces a segment passes by without forcing the journal for the lazy one.
            long next = q.append(null, "n".getBytes(StandardCharsets.UTF_8));
            q.whenDurable(next).get(10, TimeUnit.SECONDS);
            assertFalse(lazy.isDone(), "no force of its own");
            assertEquals(forcesBefore, disk.journalForces("q"));
            q.whenAcksDurable(true).get(10, TimeUnit.SECONDS);
            lazy.get(10, TimeUnit.SECONDS);
            assertEquals(forcesBefore + 1, disk.journalForces("q"), "one force served both; the lazy one asked for none");
        }
    }

    /**
     * The image of what was forced, but with the segments as they are now: the ack journal is what this
     * test is about, and under {@code never} nothing forces a segment (the OS writes it back, at a time
     * of its choosing; here it did).
     */
    private static void buildWithSegmentsWrittenBack(ForcedDiskImage disk, Path data, Path image) throws IOException {
        disk.build(image);
        Path segments = Path.of("queues", "q", "segments");
        try (Stream<Path> files = Files.list(data.resolve(segments))) {
            for (Path file : (Iterable<Path>) files::iterator) {
                Files.copy(file, image.resolve(segments).resolve(file.getFileName()), StandardCopyOption.REPLACE_EXISTING);
            }
        }
    }

    @Test
    void itFailsOnceTheQueueIsClosed() throws Exception {
        QueueStore q;
        try (MessageStore store = MessageStore.open(temp.resolve("data"), config(DurabilityMode.ALWAYS))) {
            q = store.createQueue("q");
            q.ack(q.append(null, "m".getBytes(StandardCharsets.UTF_8)));
        }
        ExecutionException e = assertThrows(ExecutionException.class, () -> q.whenAcksDurable(true).get(10, TimeUnit.SECONDS));
        assertInstanceOf(StorageException.class, e.getCause());
        assertTrue(e.getCause().getMessage().contains("queue 'q' is closed"), e.getCause().getMessage());
    }

    @Test
    void itFailsWhenTheJournalsForceFailsAndSoDoesEveryLaterOne() throws Exception {
        AtomicBoolean failForces = new AtomicBoolean();
        FileForcer failing = new FileForcer() {
            @Override
            public void force(FileChannel channel, Path file) throws IOException {
                channel.force(false);
            }

            @Override
            public void forcingMapped(Path file) {
                if (failForces.get()) {
                    throw new IllegalStateException("EIO forcing " + file.getFileName());
                }
            }
        };
        try (MessageStore store = MessageStore.open(temp.resolve("data"), config(DurabilityMode.ALWAYS), failing)) {
            QueueStore q = store.createQueue("q");
            long id = q.append(null, "m".getBytes(StandardCharsets.UTF_8));
            q.whenDurable(id).get(10, TimeUnit.SECONDS);
            failForces.set(true);
            q.ack(id);
            ExecutionException e = assertThrows(ExecutionException.class, () -> q.whenAcksDurable(true).get(10, TimeUnit.SECONDS));
            assertInstanceOf(StorageFailedException.class, e.getCause());
            assertTrue(e.getCause().getMessage().contains("forcing its ack journal to disk failed (EIO forcing acks.journal)"),
                    e.getCause().getMessage());
            ExecutionException later = assertThrows(ExecutionException.class, () -> q.whenAcksDurable(true).get(10, TimeUnit.SECONDS));
            assertInstanceOf(StorageFailedException.class, later.getCause(), "the failure is final (rule \"a failed force is final\")");
        }
    }
}
