package io.sluice.storage.ack;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Rule "nothing under the queue's lock waits for an msync" ({@link AckJournal}'s javadoc): a force holds
 * the journal's mapping for as long as its msync takes, and what the queue's lock runs meanwhile
 * (growing the journal, dropping its written pages, closing it at a rotation) must not wait for it.
 * The test stands in for a slow msync by holding the mapping's lock from another thread, as a force does.
 */
class AckJournalForceInProgressTest {
    @TempDir
    Path dir;

    @Test
    void growingDroppingPagesAndClosingDoNotWaitForAForceInProgress() throws Exception {
        AckJournal journal = AckJournal.create(dir.resolve("acks.journal"), 1, AckJournal.INITIAL_BYTES, 1 << 20);
        journal.appendAckRange(1, 10);
        try (HeldForce force = HeldForce.of(journal)) {
            within("grow the journal", () -> {
                journal.grow();
                return null;
            });
            journal.appendAckRange(21, 30); // into the new mapping, while the old one still has its force
            within("drop the journal's written pages", () -> {
                journal.dropWrittenPages();
                return null;
            });
            within("close the journal", () -> {
                journal.close();
                return null;
            });
        }
        List<Long> acked = new ArrayList<>();
        AckJournal.replay(dir.resolve("acks.journal"), 1, new AckJournal.Visitor() {
            @Override
            public void ackRange(long fromId, long toIdInclusive) {
                for (long id = fromId; id <= toIdInclusive; id++) {
                    acked.add(id);
                }
            }

        });
        List<Long> expected = new ArrayList<>();
        for (long id = 1; id <= 10; id++) {
            expected.add(id);
        }
        for (long id = 21; id <= 30; id++) {
            expected.add(id);
        }
        assertEquals(expected, acked, "both records, written before and after the growth, read back");
    }

    private static void within(String what, Callable<Void> step) throws Exception {
        CompletableFuture<Void> done = CompletableFuture.supplyAsync(() -> {
            try {
                return step.call();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        try {
            done.get(5, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            fail("waited over 5 s for a force in progress to " + what + ", which runs under the queue's lock");
        }
    }
}
