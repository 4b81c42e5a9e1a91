package io.sluice.client;

import io.netty.util.concurrent.EventExecutor;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.NackAction;
import io.sluice.protocol.NackFrame;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.SubscribeFrame;
import io.sluice.protocol.UnsubscribeFrame;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the application does while a close or a handshake is under way, against the fake broker: settling after
 * Consumer.close(), closing from two threads at once, subscribing while a reconnect's HELLO_OK is on its way. Defects
 * found by a review of the client.
 */
class CloseAndHandshakeRacesTest {
    /**
     * An ack or a nack after Consumer.close() fails at the call and never reaches the broker, which would answer the ack
     * of a consumer it no longer knows with ERROR UNKNOWN_CONSUMER (and log it); an ack made before close() is written
     * before the UNSUBSCRIBE although its batch was not full; an ack in a transaction fails at the call too. Before, the
     * settlements made after close() were written after the UNSUBSCRIBE.
     */
    @Test
    void aSettlementAfterTheConsumerClosedFailsAtTheCallAndNeverReachesTheBroker() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = broker.connectReconnecting()) {
            // A batch of 2 and a minute's delay: one ack waits in the consumer, two are written at once.
            Consumer consumer = connection.subscribe("orders", new ConsumerOptions(1000, 2, Duration.ofMinutes(1)));
            broker.deliver(consumer.consumerTag(), 1, 2, 3, 4);
            Message first = consumer.receive(Duration.ofSeconds(10));
            Message second = consumer.receive(Duration.ofSeconds(10));
            Message third = consumer.receive(Duration.ofSeconds(10));
            Message fourth = consumer.receive(Duration.ofSeconds(10));
            first.ack();
            consumer.close();
            Throwable secondAck = thrownBy(second::ack);
            Throwable thirdNack = thrownBy(() -> third.nack(NackAction.REQUEUE));
            try (Transaction transaction = connection.transaction()) {
                // Its TX_ACK, written at the commit, would name a consumer the broker no longer knows.
                assertThrows(IllegalStateException.class, () -> transaction.ack(fourth));
            }
            connection.declareQueue("orders", QueueSettings.EMPTY); // a round trip: whatever those wrote arrived before
            assertEquals(List.of("ACK 1", "UNSUBSCRIBE"), settlementsAndUnsubscribes(broker),
                    "the ack made before close() goes before the UNSUBSCRIBE; nothing after it");
            assertInstanceOf(IllegalStateException.class, secondAck);
            assertEquals("cannot ack message 2: its consumer of queue orders is closed (the broker takes the message back)",
                    secondAck.getMessage());
            assertInstanceOf(IllegalStateException.class, thirdNack);
            // Not marked settled by the refused call, so refused for the same reason again, not as "already settled".
            assertEquals(secondAck.getMessage(), assertThrows(IllegalStateException.class, second::ack).getMessage());
        }
    }

    /**
     * Two threads closing the connection at once: the second returns only once the close is complete, its network
     * thread stopped and its callbacks (a handler busy with a message) returned, as after the first. Before, the second
     * close() returned at once, while the first was still closing and the handler still ran.
     */
    @Test
    void aSecondCloseReturnsOnlyOnceTheConnectionIsClosed() throws Exception {
        try (FakeBroker broker = new FakeBroker()) {
            Connection connection = broker.connectReconnecting();
            HeldHandler handler = new HeldHandler();
            Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT, handler);
            broker.deliver(consumer.consumerTag(), 1);
            assertTrue(handler.busy.await(10, TimeUnit.SECONDS));
            Thread first = new Thread(connection::close, "test-first-close");
            first.start();
            TestWait.until(connection::isClosed); // the first close is under way: it waits for the handler
            CompletableFuture<String> secondSaw = new CompletableFuture<>();
            Thread second = new Thread(() -> {
                connection.close();
                secondSaw.complete("handler returned: " + (handler.returned.getCount() == 0) + ", network thread stopped: "
                        + ((EventExecutor) connection.loopExecutor()).isTerminated());
            }, "test-second-close");
            second.start();
            TestWait.until(() -> second.getState() == Thread.State.WAITING || second.getState() == Thread.State.TIMED_WAITING
                    || second.getState() == Thread.State.TERMINATED);
            handler.release.countDown();
            first.join(TimeUnit.SECONDS.toMillis(20));
            assertEquals("handler returned: true, network thread stopped: true", secondSaw.get(20, TimeUnit.SECONDS));
        }
    }

    /**
     * Consumer.close() from two threads at once: the second returns only once the broker answered the UNSUBSCRIBE (it
     * delivers nothing more), as the first does. Before, the second returned at once.
     */
    @Test
    void aSecondConsumerCloseReturnsOnlyOnceUnsubscribed() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = broker.connectReconnecting()) {
            Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT);
            broker.answerUnsubscribes = false;
            Thread first = new Thread(consumer::close, "test-first-consumer-close");
            first.start();
            TestWait.until(() -> broker.count(UnsubscribeFrame.class) == 1);
            AtomicBoolean answered = new AtomicBoolean();
            CompletableFuture<Boolean> secondSawAnswer = new CompletableFuture<>();
            Thread second = new Thread(() -> {
                consumer.close();
                secondSawAnswer.complete(answered.get());
            }, "test-second-consumer-close");
            second.start();
            TestWait.until(() -> second.getState() == Thread.State.WAITING || second.getState() == Thread.State.TIMED_WAITING
                    || second.getState() == Thread.State.TERMINATED);
            answered.set(true);
            broker.send(new OkFrame(broker.frames(UnsubscribeFrame.class).get(0).requestId()));
            first.join(TimeUnit.SECONDS.toMillis(10));
            assertTrue(secondSawAnswer.get(10, TimeUnit.SECONDS), "the second close() returned before the UNSUBSCRIBE was answered");
            assertEquals(1, broker.count(UnsubscribeFrame.class), "one UNSUBSCRIBE for both");
        }
    }

    /** Each ACK's ids as "ACK id", each NACK's as "NACK id", and each UNSUBSCRIBE, in the order the broker read them. */
    private static List<String> settlementsAndUnsubscribes(FakeBroker broker) {
        List<String> seen = new ArrayList<>();
        for (Object frame : broker.received) {
            if (frame instanceof AckFrame ack) {
                ack.messageIds().forEach(range -> ids(range, "ACK", seen));
            } else if (frame instanceof NackFrame nack) {
                nack.messageIds().forEach(range -> ids(range, "NACK", seen));
            } else if (frame instanceof UnsubscribeFrame) {
                seen.add("UNSUBSCRIBE");
            }
        }
        return seen;
    }

    private static void ids(IdRange range, String type, List<String> into) {
        for (long id = range.from(); id <= range.to(); id++) {
            into.add(type + " " + id);
        }
    }

    private static Throwable thrownBy(Runnable call) {
        try {
            call.run();
            return null;
        } catch (Throwable t) {
            return t;
        }
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Holds the first message until released, and counts down {@link #returned} as it returns. */
    private static final class HeldHandler implements MessageHandler {
        final CountDownLatch busy = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        final CountDownLatch returned = new CountDownLatch(1);

        @Override
        public void onMessage(Message message) {
            busy.countDown();
            awaitQuietly(release);
            returned.countDown();
        }
    }
}
