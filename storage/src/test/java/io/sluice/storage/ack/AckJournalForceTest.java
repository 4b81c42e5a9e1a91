package io.sluice.storage.ack;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The storage flusher forces the journal without the queue's lock, while checkpoints close journals under it. */
class AckJournalForceTest {
    @TempDir
    Path dir;

    @Test
    void shouldForceWhileAnotherThreadAppendsAndClosesJournalsWithoutEverTouchingAnUnmappedOne() throws Exception {
        for (int round = 0; round < 50; round++) {
            AckJournal journal = AckJournal.create(dir.resolve("journal-" + round), round, 64 * 1024);
            CountDownLatch forcing = new CountDownLatch(1);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread flusher = new Thread(() -> {
                try {
                    forcing.countDown();
                    for (int i = 0; i < 200; i++) {
                        journal.force(); // after close() this must return quietly, not touch the unmapped buffer
                    }
                } catch (Throwable t) {
                    failure.set(t);
                }
            });
            flusher.start();
            assertTrue(forcing.await(10, TimeUnit.SECONDS));
            for (int i = 0; i < 100; i++) {
                journal.appendAckRange(i * 10L, i * 10L + 5);
            }
            journal.close();
            flusher.join(TimeUnit.SECONDS.toMillis(30));
            assertNull(failure.get(), () -> "force failed: " + failure.get());
        }
    }

    @Test
    void shouldKeepWhatWasAppendedBeforeAForceAndCloseWithoutLosingIt() throws Exception {
        Path file = dir.resolve("journal");
        AckJournal journal = AckJournal.create(file, 7, 64 * 1024);
        journal.appendAckRange(1, 3);
        journal.force();
        int position = journal.position();
        journal.close();
        journal.force(); // closed: nothing to do
        assertEquals(32 + 21, position, "header plus one ACK_RANGE record");
    }
}
