package io.sluice.client;

import io.sluice.protocol.NackAction;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * Settling a message once its consumer or its connection closed, or while it closes, against the fake broker: what the
 * call does and what reaches the broker in which order.
 */
class SettlementsAfterCloseTest {
    /**
     * An ack, a nack or an ack in a transaction after Connection.close() fails at the call, as after Consumer.close(),
     * and leaves the message unsettled (the broker took it back with the connection), rather than return and drop the
     * settlement unseen: the application would take the message for settled.
     */
    @Test
    void aSettlementAfterTheConnectionClosedFailsAtTheCall() throws Exception {
        try (FakeBroker broker = new FakeBroker()) {
            Connection connection = broker.connectReconnecting();
            Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT);
            broker.deliver(consumer.consumerTag(), 1, 2, 3);
            Message first = consumer.receive(Duration.ofSeconds(10));
            Message second = consumer.receive(Duration.ofSeconds(10));
            Message third = consumer.receive(Duration.ofSeconds(10));
            Transaction transaction = connection.transaction();
            connection.close();
            IllegalStateException ack = assertThrows(IllegalStateException.class, first::ack);
            assertEquals("cannot ack message 1: the connection of its consumer of queue orders is closed (the broker takes"
                    + " the message back)", ack.getMessage());
            assertEquals("cannot nack message 2: the connection of its consumer of queue orders is closed (the broker takes"
                    + " the message back)", assertThrows(IllegalStateException.class, () -> second.nack(NackAction.REQUEUE))
                    .getMessage());
            assertEquals("cannot ack in transaction " + transaction.id() + " message 3: the connection of its consumer of"
                    + " queue orders is closed (the broker takes the message back)",
                    assertThrows(IllegalStateException.class, () -> transaction.ack(third)).getMessage());
            // Not marked settled by the refused call, so refused for the same reason again, not as "already settled".
            assertEquals(ack.getMessage(), assertThrows(IllegalStateException.class, first::ack).getMessage());
        }
    }

    /**
     * A settlement after the consumer ended on its own, its connection lost with reconnecting off, fails at the call as
     * after Connection.close(), saying why it ended, rather than be dropped unseen.
     */
    @Test
    void aSettlementAfterTheConsumerEndedOnItsOwnFailsAtTheCall() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = Connection.connect(ConnectionOptions.builder()
                .host("127.0.0.1").port(broker.port()).reconnectPolicy(ReconnectPolicy.DISABLED).build())) {
            Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT);
            broker.deliver(consumer.consumerTag(), 1, 2);
            Message first = consumer.receive(Duration.ofSeconds(10));
            Message second = consumer.receive(Duration.ofSeconds(10));
            broker.dropConnections();
            TestWait.until(() -> consumer.failure() != null);
            assertEquals("cannot ack message 1: its consumer of queue orders ended (the broker takes the message back): "
                    + consumer.failure().getMessage(), assertThrows(IllegalStateException.class, first::ack).getMessage());
            assertThrows(IllegalStateException.class, () -> second.nack(NackAction.REJECT_TO_DEAD_LETTER));
        }
    }

    /**
     * An ack in a transaction made before Consumer.close() goes before its UNSUBSCRIBE, though the network thread takes
     * the transaction's work after the consumer's (here held until both were queued, the consumer's first), and the
     * transaction commits it. It fails if the TX_ACK waits in the transaction's batch and goes after the UNSUBSCRIBE:
     * the broker, which took the message back, would refuse it and abort the transaction.
     */
    @Test
    void anAckInATransactionBeforeItsConsumerClosedIsWrittenBeforeTheUnsubscribe() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = broker.connectReconnecting()) {
            Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT);
            broker.deliver(consumer.consumerTag(), 1, 2);
            Message first = consumer.receive(Duration.ofSeconds(10));
            Message second = consumer.receive(Duration.ofSeconds(10));
            Transaction transaction = connection.transaction();
            HeldNetworkThread loop = HeldNetworkThread.hold(connection);
            first.ack();
            transaction.ack(second);
            Thread closer = new Thread(consumer::close, "test-consumer-close");
            closer.start();
            // Waiting for the UNSUBSCRIBE's answer: its settlements, close()'s marker last, are queued.
            TestWait.until(() -> closer.getState() == Thread.State.TIMED_WAITING);
            loop.release();
            closer.join(TimeUnit.SECONDS.toMillis(10));
            transaction.commit();
            assertEquals(List.of("ACK 1", "TX_ACK 2", "UNSUBSCRIBE", "TX_COMMIT"), broker.settlementsInOrder());
        }
    }
}
