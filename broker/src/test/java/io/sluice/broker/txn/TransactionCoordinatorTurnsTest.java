package io.sluice.broker.txn;

import io.netty.util.concurrent.SingleThreadEventExecutor;
import io.sluice.broker.Broker;
import io.sluice.broker.TestAwait;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.QueueSnapshot;
import io.sluice.client.Connection;
import io.sluice.client.Consumer;
import io.sluice.client.Message;
import io.sluice.client.ProducerOptions;
import io.sluice.client.Transaction;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static io.sluice.broker.txn.OrderWorker.bytes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * How often a transaction brings the coordinator's thread round (docs/transactions.md, "Crossings"): TX_BEGIN is done
 * on the connection's loop, and a TX_PUBLISH or TX_ACK that its queue completed without a refusal and within the caps
 * is taken in by the commit (rule "taken in when needed"), so neither queues a task for that thread; a commit whose
 * record goes to its one target queue (T5) is applied once that record is durable without a further turn of it (rule
 * "applied where durable"). The thread is held by the test meanwhile, and its queue of tasks looked at.
 */
class TransactionCoordinatorTurnsTest {
    @TempDir
    Path dir;

    @Test
    void beginPublishAndAckQueueNoTaskForTheCoordinatorOnlyTheCommitDoesAndItsDurableRecordNeedsNoTurn() throws Exception {
        try (OrderWorker worker = OrderWorker.start(dir, Duration.ofSeconds(10))) {
            Broker broker = worker.broker();
            Connection connection = worker.connection();
            Consumer orders = worker.orders();
            Message order = worker.order();

            SingleThreadEventExecutor coordinator = (SingleThreadEventExecutor) broker.transactions().executor();
            CountDownLatch turnTaken = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            TestAwait.hold(coordinator, turnTaken);
            try {
                Transaction transaction = connection.transaction();
                transaction.ack(order);
                int published = ProducerOptions.DEFAULT.maxBatchMessages(); // a full batch: written at once
                for (int i = 0; i < published; i++) {
                    transaction.publish("invoices", bytes("i" + i));
                }
                BrokerQueue invoices = broker.queues().get("invoices");
                BrokerQueue ordersQueue = broker.queues().get("orders");
                TestAwait.until("the TX_PUBLISH staged in 'invoices'", Duration.ofSeconds(10),
                        () -> invoices.store().unackedMessages() == published);
                TestAwait.until("the TX_ACK took the order off its consumer", Duration.ofSeconds(10),
                        () -> consumerUnacked(ordersQueue) == 0);
                assertEquals(0, coordinator.pendingTasks(), "TX_BEGIN, TX_PUBLISH and TX_ACK, done in their queues, queued "
                        + "tasks for the coordinator's thread");

                CompletableFuture<Void> committed = transaction.commitAsync();
                TestAwait.until("the TX_COMMIT reached the coordinator", Duration.ofSeconds(10), () -> coordinator.pendingTasks() == 1);
                assertFalse(committed.isDone());
                // Rule "applied where durable": once the commit's turn has written its record (in 'invoices', T5), the
                // commit completes without another turn. The thread is held again right after that turn.
                CountDownLatch heldAgain = TestAwait.holdLater(coordinator, release);
                turnTaken.countDown();
                assertTrue(heldAgain.await(5, TimeUnit.SECONDS));
                committed.get(10, TimeUnit.SECONDS); // with the coordinator's thread held
                release.countDown();
                assertEquals(published, connection.declareQueue("invoices", QueueSettings.EMPTY));
                assertEquals(0, connection.declareQueue("orders", QueueSettings.EMPTY));
            } finally {
                turnTaken.countDown();
                release.countDown();
            }
        }
    }

    private static int consumerUnacked(BrokerQueue queue) {
        try {
            QueueSnapshot snapshot = queue.snapshot().get(5, TimeUnit.SECONDS);
            return snapshot.consumers().stream().mapToInt(QueueSnapshot.ConsumerFigures::unackedMessages).sum();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

}
