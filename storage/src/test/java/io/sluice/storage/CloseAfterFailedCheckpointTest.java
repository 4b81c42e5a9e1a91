package io.sluice.storage;

import io.sluice.storage.ack.AckFiles;
import io.sluice.storage.ack.HeldForce;
import io.sluice.storage.durability.FileForcer;
import io.sluice.storage.segment.FileReleaser;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A queue whose close cannot write the ack state's checkpoint still closes its ack journal: the checkpoint's failure
 * is logged, and the journal's mapping is released as on any close. Before, the failed checkpoint skipped the
 * journal's close, so a store that closed that way (a broker shutting down on a full or failing disk, a queue deleted
 * meanwhile) kept the journal mapped for the life of the process.
 *
 * <p>And a force of the journal racing that close (the flusher's, or a reclaim pass's) reports as durable only what
 * an msync or a checkpoint made so: before, a force that reached the journal after the close had released its
 * mapping reported every record as covered without syncing anything, and completed {@code whenAcksDurable} futures
 * (a purge's answer) whose acks were never forced.
 *
 * <p>The checkpoint fails because a non-empty directory stands where its temporary file goes.
 */
class CloseAfterFailedCheckpointTest {
    @TempDir
    Path dir;

    @Test
    void aCloseWhoseCheckpointFailsStillUnmapsTheAckJournal() throws IOException {
        try (FileReleaser releaser = new FileReleaser()) {
            QueueStore queue = QueueStore.open("q", dir, StoreConfig.builder().build(), new DiskSpaceGuard(dir, 0),
                    System::currentTimeMillis, () -> { }, null, releaser, FileForcer.FSYNC, false);
            queue.ack(queue.append(null, new byte[100]));
            Path journal = dir.resolve("acks").resolve(AckFiles.JOURNAL).toRealPath();
            assertTrue(mapped(journal), "the open queue maps its journal");

            Files.createDirectories(dir.resolve("acks").resolve(AckFiles.CHECKPOINT + ".tmp").resolve("blocker"));
            queue.close();

            assertFalse(mapped(journal), "the journal is unmapped although the close's checkpoint failed");
        }
    }

    @Test
    void aForceRacingACloseWhoseCheckpointFailsDoesNotReportTheAcksDurable() throws Exception {
        try (FileReleaser releaser = new FileReleaser()) {
            QueueStore queue = QueueStore.open("q", dir, StoreConfig.builder().build(), new DiskSpaceGuard(dir, 0),
                    System::currentTimeMillis, () -> { }, null, releaser, FileForcer.FSYNC, false);
            queue.ack(queue.append(null, new byte[100]));
            CompletableFuture<Void> acksDurable = queue.whenAcksDurable(true);
            assertFalse(acksDurable.isDone(), "nothing forced the journal yet");

            AtomicReference<Throwable> flusherFailure = new AtomicReference<>();
            Thread flusher = new Thread(() -> {
                try {
                    queue.flush(System.nanoTime());
                } catch (Throwable t) {
                    flusherFailure.set(t);
                }
            }, "test-flusher");
            HeldForce force = HeldForce.of(JournalInForce.journalOf(queue)); // the flusher's force waits behind it, journal in hand
            flusher.start();
            Await.until("the flusher waits in the journal's force", () -> JournalInForce.waits(flusher), 10, TimeUnit.SECONDS);

            // The close's checkpoint fails; once the close has released the journal, and before it settles the
            // futures still waiting, the flusher's force goes on.
            AtomicBoolean closing = new AtomicBoolean(true);
            queue.durabilityListener(durable -> {
                if (closing.compareAndSet(true, false)) {
                    try {
                        force.close();
                        flusher.join(TimeUnit.SECONDS.toMillis(30));
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            });
            Files.createDirectories(dir.resolve("acks").resolve(AckFiles.CHECKPOINT + ".tmp").resolve("blocker"));
            queue.close();
            force.close();
            flusher.join(TimeUnit.SECONDS.toMillis(30));

            assertFalse(closing.get(), "the close told the listener, and the flusher's force ran then");
            assertFalse(flusher.isAlive(), "the flusher's force returned");
            assertTrue(flusherFailure.get() == null, "the flusher's turn threw " + flusherFailure.get());
            assertTrue(acksDurable.isDone(), "the close settled the future");
            ExecutionException failed = assertThrows(ExecutionException.class, acksDurable::get,
                    "the acks were neither forced nor checkpointed, so the future must not complete");
            assertInstanceOf(StorageException.class, failed.getCause());
        }
    }

    private static boolean mapped(Path file) throws IOException {
        return Files.readAllLines(Path.of("/proc/self/maps")).stream().anyMatch(line -> line.endsWith(" " + file));
    }
}
