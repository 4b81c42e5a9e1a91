package io.sluice.storage;

import io.sluice.storage.durability.FileForcer;
import io.sluice.storage.segment.SegmentFiles;
import io.sluice.storage.segment.FileReleaser;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A failed force is final for the queue whose file failed (PostgreSQL's "fsyncgate"): after an EIO,
 * Linux reports the writeback error once and marks the pages clean, so a retry on the same file
 * succeeds although the data never reached the disk. The forcer here fails the way the kernel does:
 * once, then succeeds. Nothing written before the failure and not yet durable may ever be confirmed;
 * new appends are refused, naming the queue and the cause; other queues go on; a restart, which reads
 * the files back, clears it.
 */
class FailedForceTest {
    private static final String EIO = "Input/output error (injected)";

    @TempDir
    Path dir;
    private MessageStore store;

    @AfterEach
    void close() {
        if (store != null) {
            store.close();
        }
    }

    /** Fails a force of a segment of queue {@code queue} while {@code armed}; {@code once} disarms it at the first failure. */
    private static FileForcer failing(String queue, AtomicBoolean armed, boolean once) {
        return (channel, file) -> {
            if (armed.get() && file.toString().contains("/queues/" + queue + "/") && file.toString().endsWith(SegmentFiles.SUFFIX)) {
                if (once) {
                    armed.set(false);
                }
                throw new IOException(EIO);
            }
            FileForcer.FSYNC.force(channel, file);
        };
    }

    private MessageStore open(FileForcer forcer) {
        return MessageStore.open(dir, StoreConfig.builder().durability(DurabilityMode.ALWAYS).build(), System::currentTimeMillis,
                new FileReleaser(), forcer);
    }

    private static long append(QueueStore q, String text) {
        return q.append(null, text.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void aFailedForceFailsTheWaitingConfirmsAndIsFinalForThatQueueUntilARestart() throws Exception {
        AtomicBoolean armed = new AtomicBoolean();
        store = open(failing("bad", armed, true));
        QueueStore bad = store.createQueue("bad");
        long first = append(bad, "m1");
        assertEquals(first, bad.whenDurable(first).get(10, TimeUnit.SECONDS));

        armed.set(true);
        long second = append(bad, "m2");
        CompletableFuture<Long> confirm = bad.whenDurable(second);
        ExecutionException failed = assertThrows(ExecutionException.class, () -> confirm.get(10, TimeUnit.SECONDS),
                "the confirm of a message whose force failed must fail, even though a retry of the force would succeed");
        StorageException cause = assertInstanceOf(StorageException.class, failed.getCause());
        assertTrue(cause.getMessage().contains("'bad'") && cause.getMessage().contains(EIO), cause.getMessage());
        assertTrue(bad.durableIndex() < second, "durable index " + bad.durableIndex() + " passed the unforced id " + second);
        assertNotNull(bad.failure(), "the queue reports its failure");

        StorageException refused = assertThrows(StorageException.class, () -> append(bad, "m3"));
        assertTrue(refused.getMessage().contains("'bad'") && refused.getMessage().contains(EIO), refused.getMessage());
        assertThrows(ExecutionException.class, () -> bad.whenDurable(second).get(5, TimeUnit.SECONDS),
                "a later wait for the same id fails too");

        store.close();
        store = open(FileForcer.FSYNC);
        QueueStore reopened = store.queue("bad");
        assertNull(reopened.failure(), "a restart clears the failure");
        long third = append(reopened, "m3");
        assertEquals(third, reopened.whenDurable(third).get(10, TimeUnit.SECONDS));
        List<String> read = new ArrayList<>();
        try (QueueReader reader = reopened.openReader()) {
            for (StoredMessage m = reader.next(); m != null; m = reader.next()) {
                read.add(new String(m.payloadBytes(), StandardCharsets.UTF_8));
            }
        }
        assertEquals(List.of("m1", "m2", "m3"), read, "nothing stored is lost; the unconfirmed m2 is read back from the page cache");
    }

    @Test
    void oneQueuesFailedForceNeverHoldsBackAnotherQueuesConfirms() throws Exception {
        store = open(failing("bad", new AtomicBoolean(true), false));
        QueueStore bad = store.createQueue("bad");
        List<QueueStore> good = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            good.add(store.createQueue("good-" + i));
        }
        CompletableFuture<Long> failing = bad.whenDurable(append(bad, "doomed"));
        assertThrows(ExecutionException.class, () -> failing.get(10, TimeUnit.SECONDS));
        for (QueueStore q : good) {
            long id = append(q, "fine");
            assertEquals(id, q.whenDurable(id).get(10, TimeUnit.SECONDS), "queue " + q.name() + " is confirmed");
            assertNull(q.failure());
        }
    }

    @Test
    void closingAfterAFailedForceDoesNotReportTheUnforcedMessagesDurable() throws Exception {
        store = open(failing("bad", new AtomicBoolean(true), false));
        QueueStore bad = store.createQueue("bad");
        CompletableFuture<Long> confirm = bad.whenDurable(append(bad, "doomed"));
        store.close();
        store = null;
        assertTrue(confirm.isDone(), "closing settles every waiting confirm");
        assertTrue(confirm.isCompletedExceptionally(), "a message whose final force failed is not reported durable");
    }
}
