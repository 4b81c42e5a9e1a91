package io.sluice.client;

import io.sluice.protocol.ProducerInitFrame;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * How what the application ends (a producer, a consumer, the connection) meets a reconnect or the messages still on
 * their way, against the fake broker; defects found by a review of the client.
 */
class ClientEndingsTest {
    /**
     * A named producer closed while its resume after a reconnect waits for the broker's answer keeps its unconfirmed
     * messages (close() lets them complete as the broker answers): once resumed they are sent again and confirmed.
     * Before, the answer to a closed producer's resume was dropped, the producer held its messages back for good, and
     * their futures never completed.
     */
    @Test
    void aNamedProducerClosedWhileItsResumeWaitsStillResendsItsMessages() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = broker.connectReconnecting()) {
            broker.confirmPublishes = false;
            Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT.withName("billing"));
            CompletableFuture<Void> pending = producer.sendAsync(new byte[] {1});
            TestWait.until(() -> broker.publishedSequences.size() == 1);
            broker.holdProducerResumes = true;
            broker.confirmPublishes = true;
            broker.dropConnections();
            TestWait.until(() -> broker.count(ProducerInitFrame.class) == 2); // the resume, held
            producer.close();
            connection.declareQueue("orders", QueueSettings.EMPTY); // a round trip: the close reached the network thread
            broker.answerHeldProducerResumes();
            pending.get(10, TimeUnit.SECONDS);
            assertEquals(List.of(1L, 1L), List.copyOf(broker.publishedSequences), "sent again, with its sequence, once resumed");
        }
    }
}
