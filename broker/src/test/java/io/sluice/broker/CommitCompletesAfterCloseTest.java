package io.sluice.broker;

import io.netty.channel.Channel;
import io.netty.util.concurrent.EventExecutor;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.TxBeginFrame;
import io.sluice.protocol.TxCommitFrame;
import io.sluice.protocol.TxPublishFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static io.sluice.broker.TransactionFrames.count;
import static io.sluice.broker.TransactionFrames.declare;
import static io.sluice.broker.TransactionFrames.sendInOneWrite;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * docs/transactions.md, "The connection is the owner": a TX_COMMIT the broker received is carried out though its
 * connection closes before the commit could be handed to the coordinator (it waits there for the TX_PUBLISH before it
 * to be staged); the client that lost the answer finds the outcome on reconnecting. Before (found by a review), the
 * close rolled the transaction back, since the coordinator still saw it open, while the code's comment said a commit
 * under way completes. Here the target queue's executor is held while the connection sends its frames and closes,
 * and let go only once the broker has handled the close, so the commit's wait spans it every time.
 */
class CommitCompletesAfterCloseTest {
    private static final int MESSAGES = 10;

    @TempDir
    Path dir;

    @Test
    void aTxCommitReceivedBeforeTheConnectionClosedIsCarriedOut() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of("broker.io-threads", "2"));
             RawClient admin = RawClient.connected(broker.port())) {
            declare(admin, "invoices");
            EventExecutor queueExecutor = broker.queues().get("invoices").executor();
            List<RawClient> passed = new ArrayList<>();
            RawClient worker = RawClient.connected(broker.port());
            Channel served = TestBrokers.servedChannel(broker, worker);
            while (served.eventLoop() == queueExecutor) { // the worker's loop must run while the queue's is held
                passed.add(worker);
                worker = RawClient.connected(broker.port());
                served = TestBrokers.servedChannel(broker, worker);
            }
            passed.forEach(RawClient::close);
            int connections = broker.limits().openConnections();
            CountDownLatch release = new CountDownLatch(1);
            TestAwait.hold(queueExecutor, release);
            try {
                PublishFrameBuilder b = new PublishFrameBuilder(worker.alloc(), "invoices");
                for (int i = 0; i < MESSAGES; i++) {
                    b.add(0, 0, List.of(), ("invoice-" + i).getBytes(StandardCharsets.UTF_8));
                }
                sendInOneWrite(worker, new TxBeginFrame(1, 0), new TxPublishFrame(1, b.build()), new TxCommitFrame(9, 1));
                worker.close();
                TestAwait.until("the broker saw the worker's connection close", Duration.ofSeconds(10),
                        () -> broker.limits().openConnections() == connections - 1);
                served.eventLoop().submit(() -> { }).get(10, TimeUnit.SECONDS); // behind the rest of the close there
                broker.transactions().drain(10_000); // and behind what the close handed to the coordinator
            } finally {
                release.countDown();
            }
            TestAwait.until("the transaction ended", Duration.ofSeconds(10), () -> broker.transactions().open() == 0);
            assertEquals(MESSAGES, count(admin, "invoices"), "the commit received before the close was not carried out");
            assertEquals(1, broker.transactions().counts().commits());
        }
    }
}
