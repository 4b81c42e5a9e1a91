package io.sluice.broker;

import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.TxAbortedFrame;
import io.sluice.protocol.TxBeginFrame;
import io.sluice.protocol.TxCommitFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static io.sluice.broker.TransactionFrames.count;
import static io.sluice.broker.TransactionFrames.declare;
import static io.sluice.broker.TransactionFrames.txPublish;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * docs/protocol.md: a transaction's timeout runs "from its TX_BEGIN to the arrival of its TX_COMMIT". Found by a review:
 * the timeout was cancelled only when the coordinator took the commit in, after the TX_PUBLISH before it completed, so a
 * TX_COMMIT that arrived in time was answered TRANSACTION_TIMED_OUT while its queue was busy.
 */
class TransactionTimeoutAtCommitTest {
    @TempDir
    Path dir;

    /**
     * A TX_COMMIT arrives while the TX_PUBLISH before it waits behind its queue's busy executor; the connection's loop
     * holds the commit for it past the timeout. The transaction commits, and no TX_ABORTED comes.
     */
    @Test
    void aTransactionWhoseCommitArrivedInTimeIsNotTimedOutWhileItsStagingCompletes() throws Exception {
        int timeoutMs = 1000;
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient c = RawClient.connected(broker.port())) {
            declare(c, "invoices");
            declare(c, "other");
            CountDownLatch held = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            broker.queues().get("invoices").executor().execute(() -> {
                held.countDown();
                try {
                    release.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            assertTrue(held.await(10, TimeUnit.SECONDS));
            try {
                long begun = System.nanoTime();
                c.send(new TxBeginFrame(1, timeoutMs));
                txPublish(c, 1, "invoices", "i1"); // waits behind the busy executor
                c.send(new TxCommitFrame(9, 1));
                // Frames are handled in order: the answer to this declare shows the TX_COMMIT was handled on the loop.
                assertEquals(0, count(c, "other"));
                long commitArrivedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - begun);
                assertTrue(commitArrivedMs < timeoutMs / 2, "the TX_COMMIT arrived after " + commitArrivedMs + " ms");
                // Past the timeout (bounded), with the staging still held: no TX_ABORTED may come for it.
                Object frame = c.received.poll(timeoutMs + 1500, TimeUnit.MILLISECONDS);
                if (frame instanceof TxAbortedFrame aborted) {
                    fail("TX_COMMIT arrived " + commitArrivedMs + " ms after TX_BEGIN (timeout " + timeoutMs
                            + " ms), yet the broker aborted it: " + aborted.errorCode() + " " + aborted.message());
                }
            } finally {
                release.countDown();
            }
            Object answer = c.received.poll(10, TimeUnit.SECONDS);
            if (answer instanceof ErrorFrame error) {
                fail("the commit was refused: " + error.code() + " " + error.message());
            }
            assertTrue(answer instanceof OkFrame, "expected OK to the commit, got " + answer);
            assertEquals(1, count(c, "invoices"));
            assertEquals(0, broker.transactions().counts().timeouts());
        }
    }
}
