package io.sluice.broker.txn;

import io.netty.util.concurrent.SingleThreadEventExecutor;
import io.sluice.broker.Broker;
import io.sluice.broker.TestAwait;
import io.sluice.client.Connection;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.Transaction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.reflect.Field;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static io.sluice.broker.txn.OrderWorker.bytes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * X3: a commit record is finished once the acknowledgements it applied are durable and what it published is consumed.
 * What follows a commit's apply "rides along" (up to a sweep later); if the queue the commit acknowledged in is deleted
 * meanwhile, {@code whenAcksDurable} of its closed store fails, {@code CommitRecordFinishing.finishOnceDurable} logs
 * "could not be made durable" and gives up: the record is never finished (until a restart), though its
 * acknowledgements went with their queue and what it published is consumed.
 */
class CommitRecordSourceDeletedTest {
    @TempDir
    Path dir;

    @Test
    void aCommitRecordIsFinishedWhenTheQueueItAcknowledgedInIsDeletedRightAfterTheCommit() throws Exception {
        try (OrderWorker worker = OrderWorker.start(dir, Duration.ofSeconds(40))) {
            Broker broker = worker.broker();
            Connection connection = worker.connection();
            Consumer orders = worker.orders();
            Message order = worker.order();
            Transaction transaction = connection.transaction();
            transaction.ack(order);
            transaction.publish("invoices", bytes("i1"));
            transaction.commit(); // its record in 'invoices' (T5), its acknowledgement in 'orders'
            orders.close();

            // The commit's finishing waits for the coordinator's next turn; the thread is held until 'orders' is deleted.
            SingleThreadEventExecutor coordinator = (SingleThreadEventExecutor) broker.transactions().executor();
            CountDownLatch release = new CountDownLatch(1);
            TestAwait.hold(coordinator, release);
            CompletableFuture<Long> deleted;
            try {
                Field f = TransactionCoordinator.class.getDeclaredField("deferred");
                f.setAccessible(true);
                Queue<?> deferred = (Queue<?>) f.get(broker.transactions());
                TestAwait.until("the commit's finishing deferred to the coordinator's next turn", Duration.ofSeconds(10),
                        () -> !deferred.isEmpty());
                // The delete's X5 wait needs this thread too: it gives up after 10 s and the store is closed and deleted
                // while the commit's finishing still waits. In production the same happens to a delete that comes within
                // the up to 100 ms before the coordinator's next turn.
                deleted = connection.deleteQueueAsync("orders");
                deleted.get(30, TimeUnit.SECONDS);
            } finally {
                release.countDown();
            }

            Consumer invoices = connection.subscribe("invoices", new ConsumerOptions(10, 1, Duration.ofMillis(1)));
            Message invoice = invoices.receive(Duration.ofSeconds(5));
            assertNotNull(invoice);
            invoice.ack();
            assertEquals(0L, TestAwait.value("the commit record finished (its acknowledgement went with 'orders', its "
                    + "invoice consumed)", Duration.ofSeconds(10), () -> broker.transactions().logRecords(), n -> n == 0));
        }
    }

}
