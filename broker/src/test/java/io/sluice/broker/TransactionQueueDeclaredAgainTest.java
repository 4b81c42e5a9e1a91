package io.sluice.broker;

import io.sluice.protocol.DeleteQueueFrame;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.SubscribeFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static io.sluice.broker.TransactionFrames.commitOrdersForAnInvoice;
import static io.sluice.broker.TransactionFrames.count;
import static io.sluice.broker.TransactionFrames.declare;
import static io.sluice.broker.TransactionFrames.payloads;
import static io.sluice.broker.TransactionFrames.publish;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * X6 of docs/transactions.md: a commit record's part applies only to the incarnation of its queue it was written for.
 * Found by a review: recovery applied a record's acknowledgements by queue name, so a queue deleted and declared again
 * (which numbers its messages from the start) lost confirmed messages to an older commit's record at a restart.
 */
class TransactionQueueDeclaredAgainTest {
    @TempDir
    Path dir;

    /**
     * "orders" is deleted after a commit that acknowledged o1 and o2 there, and declared again; its new messages get the
     * ids of the old ones. The commit record is still unfinished (its invoice is not consumed), so the restart applies
     * its acknowledgements again (X4): to the old "orders" only, which is gone, not to the new one.
     */
    @Test
    void recoveryDoesNotAcknowledgeMessagesOfAQueueDeclaredAgainUnderTheNameOfACommitsSource() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient c = RawClient.connected(broker.port())) {
            commitOrdersForAnInvoice(c);

            c.send(new DeleteQueueFrame(5, "orders"));
            assertEquals(5, c.expect(OkFrame.class).requestId());
            declare(c, "orders");
            publish(c, "orders", "n1", "n2", "n3");
            assertEquals(3, count(c, "orders"));
            assertEquals(1, broker.transactions().logRecords(), "the commit record stays while i1 is in its queue");
        }
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient c = RawClient.connected(broker.port())) {
            assertEquals(1, count(c, "invoices"));
            assertEquals(3, count(c, "orders"), "the new 'orders' lost confirmed messages to an old transaction's record");
            c.send(new SubscribeFrame(2, 8, "orders", 10));
            c.expect(OkFrame.class);
            assertEquals(List.of("n1", "n2", "n3"), payloads(c.deliveries(3)));
        }
    }
}
