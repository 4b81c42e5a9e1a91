package io.sluice.broker;

import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.QueueCore;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.ProducerOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.NackAction;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A consumer's settlement that the queue's storage fails to apply reaches the Java client's application, through the
 * connection's {@code ErrorListener}: here a rejection to the dead-letter queue of a message whose store read throws
 * ({@link QueueCore#failReadsOf}). The message comes again, the broker serves the same connection and another queue on.
 * Before, only the operator log said so, and the application took the message for dead-lettered.
 */
@Timeout(60)
class SettlementStorageFailureClientTest {
    @TempDir
    Path dir;

    @Test
    void aRejectionTheStorageFailsToApplyReachesTheApplication() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of("queues.redelivery-delay-ms", "10",
                "queues.max-redelivery-delay-ms", "200"))) {
            broker.queues().declare("jobs", QueueSettings.EMPTY);
            BlockingQueue<String> heard = new LinkedBlockingQueue<>();
            try (Connection c = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                    .reconnectPolicy(ReconnectPolicy.DISABLED).errorListener((code, message) -> heard.add(code + " " + message))
                    .build())) {
                c.createProducer("jobs", ProducerOptions.DEFAULT).send(Payloads.of(1));
                Consumer consumer = c.subscribe("jobs", ConsumerOptions.DEFAULT);
                Message first = consumer.receive(Duration.ofSeconds(30));
                assertNotNull(first, "the message is delivered");
                BrokerQueue jobs = broker.queues().get("jobs");
                QueueCore.failReadsOf(jobs, first.id());

                first.nack(NackAction.REJECT_TO_DEAD_LETTER);
                String error = heard.poll(30, TimeUnit.SECONDS);
                assertNotNull(error, "the application hears of the failure");
                assertTrue(error.startsWith(ErrorCode.STORAGE_FAILED + " nack to the dead-letter queue of message " + first.id()
                        + " on consumer "), error);
                assertTrue(error.contains(" of queue 'jobs' was not applied: the queue's storage failed to read it (a read of"
                        + " queue 'jobs' faulted (injected)); it stays in the queue and is delivered again in 200 ms"), error);

                QueueCore.readsAgain(jobs);
                Message again = consumer.receive(Duration.ofSeconds(30));
                assertNotNull(again, "the message comes again after the retry's delay");
                assertEquals(first.id(), again.id());
                assertArrayEquals(first.payload(), again.payload());
                again.ack();
                TestAwait.until("acknowledged", () -> jobs.messageCount() == 0);

                broker.queues().declare("other", QueueSettings.EMPTY); // another queue on the same connection is served
                c.createProducer("other", ProducerOptions.DEFAULT).send(Payloads.of(2));
                assertEquals(1, broker.queues().get("other").messageCount());
                assertNull(heard.poll(), "no other error");
            }
        }
    }
}
