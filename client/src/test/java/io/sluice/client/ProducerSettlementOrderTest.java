package io.sluice.client;

import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.IdRange;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Where and in which order a producer's futures settle with the client's default callbacks (the dispatch pool): one
 * after the other, in the order the broker settled them, as Kafka's producer callbacks of one partition and RabbitMQ's
 * confirm listeners of one channel run. Were each CONFIRM frame and each failure a task of its own on the cached
 * dispatch pool, a confirm would overtake an earlier one whose callback was still running, and a connection lost with
 * 1,000 messages unsettled would start a dispatch thread for nearly every one of them.
 */
class ProducerSettlementOrderTest {
    /** A later confirm waits for the callbacks of an earlier one to return, even when they take their time. */
    @Test
    void aConfirmDoesNotOvertakeAnEarlierOneWhoseCallbackIsStillRunning() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = broker.connectReconnecting()) {
            broker.confirmPublishes = false;
            Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT);
            List<String> events = new CopyOnWriteArrayList<>();
            CountDownLatch firstCallbackRunning = new CountDownLatch(1);
            CompletableFuture<Void> first = producer.sendAsync(new byte[] {1});
            CompletableFuture<Void> second = producer.sendAsync(new byte[] {2});
            first.whenComplete((ignored, failure) -> {
                firstCallbackRunning.countDown();
                // The second confirm arrives while this callback runs; it must not complete its future meanwhile.
                events.add(completesWithin(second, 500) ? "second completed during the first's callback" : "first done");
            });
            second.whenComplete((ignored, failure) -> events.add("second done"));
            TestWait.until(() -> broker.publishedSequences.size() == 2);

            broker.send(new ConfirmFrame(producer.producerId(), List.of(IdRange.single(1))));
            assertTrue(firstCallbackRunning.await(5, TimeUnit.SECONDS));
            broker.send(new ConfirmFrame(producer.producerId(), List.of(IdRange.single(2))));
            TestWait.until(() -> events.size() == 2);
            assertEquals(List.of("first done", "second done"), events);
        }
    }

    /**
     * A connection lost for good with 1,000 messages unsettled fails them all, in send order, on one dispatch thread;
     * the confirm of an earlier message is not overtaken by those failures.
     */
    @Test
    void aConnectionLostForGoodFailsEveryUnsettledMessageInOrderOnOneThread() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = Connection.connect(ConnectionOptions.builder()
                .host("127.0.0.1").port(broker.port()).reconnectPolicy(ReconnectPolicy.DISABLED).build())) {
            broker.confirmPublishes = false;
            Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT);
            int messages = 1_000;
            List<CompletableFuture<Void>> futures = new ArrayList<>();
            List<Integer> settledInOrder = new CopyOnWriteArrayList<>();
            Set<Thread> settlingThreads = ConcurrentHashMap.newKeySet();
            for (int i = 1; i <= messages; i++) {
                int index = i;
                CompletableFuture<Void> future = producer.sendAsync(new byte[] {(byte) i});
                future.whenComplete((ignored, failure) -> {
                    if (failure != null) { // the failures come in one task; the first message's confirm in another
                        settlingThreads.add(Thread.currentThread());
                    }
                    settledInOrder.add(index);
                });
                futures.add(future);
            }
            TestWait.until(() -> broker.publishedSequences.size() == messages);
            broker.send(new ConfirmFrame(producer.producerId(), List.of(IdRange.single(1))));
            broker.dropConnections();

            // Waited for through the callbacks, not get(): a thread waiting in get() may run a future's callbacks itself.
            TestWait.until(() -> settledInOrder.size() == messages);
            futures.get(0).get(5, TimeUnit.SECONDS);
            for (CompletableFuture<Void> future : futures.subList(1, messages)) {
                ExecutionException failure = assertThrows(ExecutionException.class, () -> future.get(5, TimeUnit.SECONDS));
                assertInstanceOf(ConnectionLostException.class, failure.getCause());
            }
            int firstOutOfOrder = -1;
            for (int i = 0; i < messages && firstOutOfOrder < 0; i++) {
                if (settledInOrder.get(i) != i + 1) {
                    firstOutOfOrder = i;
                }
            }
            int outOfOrderAt = firstOutOfOrder;
            assertEquals(-1, outOfOrderAt, () -> "settled out of send order from position " + outOfOrderAt + ": "
                    + settledInOrder.subList(Math.max(0, outOfOrderAt - 3), Math.min(messages, outOfOrderAt + 7)));
            assertEquals(1, settlingThreads.size(), "threads that settled the 999 failures: " + settlingThreads);
            assertFalse(settlingThreads.iterator().next().getName().startsWith("sluice-client-io"),
                    "settled on a dispatch thread, not the network thread");
        }
    }

    /**
     * A blocking send from a callback of the same producer's futures would wait for a confirm queued behind that very
     * callback: it is refused, saying so. A send through another producer from there works.
     */
    @Test
    void aSendFromACallbackOfTheSameProducersFutureIsRefusedAndAnotherProducersWorks() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = broker.connectReconnecting()) {
            Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT);
            Producer other = connection.createProducer("audit", ProducerOptions.DEFAULT);
            CompletableFuture<String> outcome = new CompletableFuture<>();
            // Held, so that the callback is registered before the confirm comes and runs where the futures complete.
            HeldNetworkThread held = HeldNetworkThread.hold(connection);
            producer.sendAsync(new byte[] {1}).whenComplete((ignored, failure) -> {
                try {
                    producer.send(new byte[] {2});
                    outcome.complete("sent");
                } catch (IllegalStateException refused) {
                    other.send(new byte[] {3}); // another producer's confirm is not queued behind this callback
                    outcome.complete(refused.getMessage());
                } catch (RuntimeException e) {
                    outcome.completeExceptionally(e);
                }
            });
            held.release();
            assertEquals("Producer.send to queue orders was called from a callback of this producer's own futures, which"
                    + " complete one after the other: the confirm it would wait for comes only after that callback returns."
                    + " Use sendAsync there, or another producer", outcome.get(10, TimeUnit.SECONDS));
            producer.send(new byte[] {4}); // the same call from an ordinary thread
        }
    }

    /**
     * A callback that takes its time holds the settlements behind it, and the sender feels it: with maxInFlight 4, a
     * thread that keeps sending stops once 4 settlements wait behind the callback (at most 8 messages published, the
     * first included), and goes on once it returns; every future then completes, in order. It fails if a confirm frees
     * its slot at once: the queue of completed-but-not-yet-told futures would grow with every message sent (100 here).
     */
    @Test
    void settlementsQueuedBehindASlowCallbackStopTheSender() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = broker.connectReconnecting()) {
            Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT.withMaxInFlight(4));
            CountDownLatch callbackMayReturn = new CountDownLatch(1);
            CountDownLatch callbackRunning = new CountDownLatch(1);
            HeldNetworkThread held = HeldNetworkThread.hold(connection); // so that the callback runs where it settles
            producer.sendAsync(new byte[] {0}).whenComplete((ignored, failure) -> {
                callbackRunning.countDown();
                HeldNetworkThread.awaitQuietly(callbackMayReturn);
            });
            held.release();
            assertTrue(callbackRunning.await(10, TimeUnit.SECONDS));

            int messages = 100;
            List<CompletableFuture<Void>> futures = new CopyOnWriteArrayList<>();
            List<Integer> settledInOrder = new CopyOnWriteArrayList<>();
            Thread sender = new Thread(() -> {
                for (int i = 1; i <= messages; i++) {
                    int index = i;
                    CompletableFuture<Void> future = producer.sendAsync(new byte[] {(byte) i});
                    future.whenComplete((ignored, failure) -> settledInOrder.add(index));
                    futures.add(future);
                }
            }, "test-sender");
            sender.start();
            TestWait.until(() -> sender.getState() == Thread.State.TERMINATED
                    || sender.getState() == Thread.State.WAITING && broker.publishedSequences.size() >= 5);
            connection.declareQueue("orders", io.sluice.protocol.QueueSettings.EMPTY); // the confirms sent are handled
            assertEquals(Thread.State.WAITING, sender.getState(), () -> "the sender went on: "
                    + broker.publishedSequences.size() + " messages published while the first one's callback ran");
            int published = broker.publishedSequences.size();
            assertTrue(published >= 5 && published <= 8, published + " published: 4 settlements queued stop the sender,"
                    + " with up to 4 more in flight meanwhile");

            callbackMayReturn.countDown();
            sender.join(10_000);
            TestWait.until(() -> settledInOrder.size() == messages);
            for (int i = 0; i < messages; i++) {
                assertEquals(i + 1, settledInOrder.get(i));
                futures.get(i).get(5, TimeUnit.SECONDS);
            }
        }
    }

    /**
     * Sends from a producer's own callbacks never wait for the settlements queued behind them: a chain of sends, each
     * from the callback of the one before, with maxInFlight 1, completes; a callback that keeps sending meets the bound
     * of twice maxInFlight settlements queued behind it, and its sendAsync then fails at once, saying why.
     */
    @Test
    void sendsFromTheProducersOwnCallbacksDoNotWaitForThemselves() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = broker.connectReconnecting()) {
            Producer chained = connection.createProducer("orders", ProducerOptions.DEFAULT.withMaxInFlight(1));
            CompletableFuture<Integer> chainEnd = new CompletableFuture<>();
            sendChained(chained, 1, 20, chainEnd);
            assertEquals(20, chainEnd.get(10, TimeUnit.SECONDS));

            Producer fanning = connection.createProducer("audit", ProducerOptions.DEFAULT.withMaxInFlight(2));
            CompletableFuture<String> refusal = new CompletableFuture<>();
            HeldNetworkThread held = HeldNetworkThread.hold(connection); // so that the callback below runs where it settles
            fanning.sendAsync(new byte[] {0}).whenComplete((ignored, failure) -> {
                for (int i = 1; i <= 50 && !refusal.isDone(); i++) {
                    fanning.sendAsync(new byte[] {(byte) i}).whenComplete((none, refused) -> {
                        if (refused != null) {
                            refusal.complete(refused.getMessage());
                        }
                    });
                }
                refusal.complete("every send went");
            });
            held.release();
            assertEquals("sendAsync to queue audit from a callback of this producer's own futures found twice maxInFlight"
                    + " 2 settlements queued for this producer: it cannot wait there for them to complete, as they may do"
                    + " only after that callback returns", refusal.get(10, TimeUnit.SECONDS));
        }
    }

    /**
     * Two producers whose callbacks each send through the other, at the same time, with maxInFlight 1: neither waits
     * for the other's settlements, queued behind the other callback, which waits in turn; both sends complete.
     */
    @Test
    void callbacksOfTwoProducersSendingThroughEachOtherDoNotWaitForEachOther() throws Exception {
        try (FakeBroker broker = new FakeBroker(); Connection connection = broker.connectReconnecting()) {
            Producer a = connection.createProducer("a", ProducerOptions.DEFAULT.withMaxInFlight(1));
            Producer b = connection.createProducer("b", ProducerOptions.DEFAULT.withMaxInFlight(1));
            CountDownLatch inA = new CountDownLatch(1);
            CountDownLatch inB = new CountDownLatch(1);
            CompletableFuture<CompletableFuture<Void>> fromA = new CompletableFuture<>();
            CompletableFuture<CompletableFuture<Void>> fromB = new CompletableFuture<>();
            HeldNetworkThread held = HeldNetworkThread.hold(connection); // both callbacks registered before the confirms
            a.sendAsync(new byte[] {1}).whenComplete((ignored, failure) -> {
                inA.countDown();
                HeldNetworkThread.awaitQuietly(inB); // each callback sends once the other one runs too
                fromA.complete(b.sendAsync(new byte[] {2}));
            });
            b.sendAsync(new byte[] {3}).whenComplete((ignored, failure) -> {
                inB.countDown();
                HeldNetworkThread.awaitQuietly(inA);
                fromB.complete(a.sendAsync(new byte[] {4}));
            });
            held.release();
            fromA.get(10, TimeUnit.SECONDS).get(10, TimeUnit.SECONDS);
            fromB.get(10, TimeUnit.SECONDS).get(10, TimeUnit.SECONDS);
        }
    }

    /** Sends message {@code index} of {@code last}, and the next from its future's callback. */
    static void sendChained(Producer producer, int index, int last, CompletableFuture<Integer> end) {
        producer.sendAsync(new byte[] {(byte) index}).whenComplete((ignored, failure) -> {
            if (failure != null) {
                end.completeExceptionally(failure);
            } else if (index == last) {
                end.complete(index);
            } else {
                sendChained(producer, index + 1, last, end);
            }
        });
    }

    private static boolean completesWithin(CompletableFuture<Void> future, long millis) {
        try {
            future.get(millis, TimeUnit.MILLISECONDS);
            return true;
        } catch (TimeoutException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } catch (ExecutionException e) {
            return true;
        }
    }
}
