package io.sluice.broker;

import ch.qos.logback.classic.Level;
import io.netty.channel.Channel;
import io.netty.util.concurrent.EventExecutor;
import io.sluice.broker.txn.ConnectionTransactions;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionLostException;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Transaction;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A TX_COMMIT still waiting for the TX_PUBLISH before it to be staged when the broker shuts down is neither carried out
 * nor answered (nothing of it is durable; the next start rolls it back, X4): its client must hear that its connection
 * closed, as for any lost answer (docs/transactions.md, "A lost answer"), and not wait for its request timeout. The
 * target queue's executor is held across the shutdown so that the commit waits for its staging all the while.
 */
@Timeout(60)
class CommitAtShutdownTest {
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(30);

    @TempDir
    Path dir;

    @Test
    void aCommitWaitingForItsFramesAtShutdownFailsAsAConnectionLost() throws Exception {
        Broker broker = TestBrokers.start(dir, Map.of("broker.io-threads", "2", "broker.shutdown-timeout-ms", "500"));
        CountDownLatch release = new CountDownLatch(1);
        CompletableFuture<Void> closed = null;
        try (LogCapture log = LogCapture.of(ConnectionTransactions.class);
             Connection connection = Connection.connect(ConnectionOptions.builder().host("127.0.0.1")
                .port(broker.port()).requestTimeout(REQUEST_TIMEOUT).build())) {
            Channel served = broker.connections().iterator().next();
            String queue = queueOffTheLoopOf(connection, broker, served);
            EventExecutor queueExecutor = broker.queues().get(queue).executor();
            TestAwait.hold(queueExecutor, release);
            Transaction transaction = connection.transaction();
            transaction.publish(queue, "invoice".getBytes(StandardCharsets.UTF_8));
            CompletableFuture<Void> commit = transaction.commitAsync();
            TestAwait.until("the broker received the TX_COMMIT", () -> broker.transactions().open() == 1
                    && served.eventLoop().submit(() -> { }).awaitUninterruptibly(1000));

            closed = CompletableFuture.runAsync(broker::close);
            long start = System.nanoTime();
            ExecutionException failed = assertThrows(ExecutionException.class,
                    () -> commit.get(REQUEST_TIMEOUT.toMillis() / 3, TimeUnit.MILLISECONDS));
            long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(tookMs < REQUEST_TIMEOUT.toMillis() / 3, "the commit failed after " + tookMs + " ms");
            ConnectionLostException lost = assertInstanceOf(ConnectionLostException.class, failed.getCause());
            assertTrue(lost.getMessage().contains("the broker is shutting down"), lost.getMessage());

            // Its staging completes only once the coordinator has stopped, which refuses the commit's hand-over: the
            // outcome is right (no commit record; the next start rolls it back), and the log says so, once, naming
            // the transaction. Before (found by a review), nothing did.
            closed.get(30, TimeUnit.SECONDS); // the coordinator stopped; the held queue's loop is left running
            release.countDown();
            String[] line = {"transaction 1 of", "TX_COMMIT", "after the transactions stopped", "rolls it back"};
            TestAwait.until("the refused hand-over logged", Duration.ofSeconds(30), () -> log.count(Level.INFO, line) > 0);
            assertEquals(1, log.count(Level.INFO, line));
            assertNull(log.events().get(log.events().size() - 1).getThrowableProxy(), "a line, not a stack trace");
        } finally {
            release.countDown();
            if (closed != null) {
                closed.get(30, TimeUnit.SECONDS);
            }
            broker.close();
        }
    }

    /** Declares queues until one runs on the other loop than {@code served}'s, which must keep running while it is held. */
    private static String queueOffTheLoopOf(Connection connection, Broker broker, Channel served) {
        for (int i = 0; ; i++) {
            String queue = "invoices-" + i;
            connection.declareQueue(queue, QueueSettings.EMPTY);
            if (broker.queues().get(queue).executor() != served.eventLoop()) {
                return queue;
            }
        }
    }
}
