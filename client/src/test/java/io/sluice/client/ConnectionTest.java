package io.sluice.client;

import io.sluice.protocol.AckFrame;
import io.sluice.protocol.CreditFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.FlowFrame;
import io.sluice.protocol.FlowState;
import io.sluice.protocol.HeartbeatFrame;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.NackAction;
import io.sluice.protocol.NackFrame;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.SubscribeFrame;
import io.sluice.protocol.UnsubscribeFrame;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ConnectionTest {
    /** 70,000 ASCII bytes: above the wire's 65,535-byte limit for a string (docs/protocol.md, "Primitive types"). */
    private static final String TOO_LONG_QUEUE = "q".repeat(70_000);

    private FakeBroker broker;
    private Connection connection;

    @BeforeEach
    void start() {
        broker = new FakeBroker();
        connection = broker.connectReconnecting();
    }

    @AfterEach
    void stop() {
        connection.close();
        broker.close();
    }

    @Test
    void shouldHandshakeAndDeclareQueue() {
        assertEquals("fake", connection.brokerName());
        assertEquals(1, broker.count(HelloFrame.class));
        assertEquals(0L, connection.declareQueue("orders", QueueSettings.EMPTY));
        assertEquals(0L, connection.purgeQueue("orders"));
        assertEquals(0L, connection.deleteQueue("orders"));
    }

    /**
     * A queue name the wire cannot carry (above 65,535 UTF-8 bytes) is refused where it is passed: the frame's
     * constructor would throw on the network thread after the request was registered, and the caller would wait out the
     * whole request timeout to hear "no answer".
     */
    @Test
    void shouldRefuseAQueueNameTheWireCannotCarryAtTheCall() {
        List<CompletableFuture<Long>> requests = List.of(connection.declareQueueAsync(TOO_LONG_QUEUE, QueueSettings.EMPTY),
                connection.deleteQueueAsync(TOO_LONG_QUEUE), connection.purgeQueueAsync(TOO_LONG_QUEUE));
        for (CompletableFuture<Long> request : requests) {
            assertTrue(request.isCompletedExceptionally(), "failed before it returned");
            ExecutionException failure = assertThrows(ExecutionException.class, request::get);
            assertInstanceOf(IllegalArgumentException.class, failure.getCause());
        }
        assertThrows(IllegalArgumentException.class, () -> connection.declareQueue(TOO_LONG_QUEUE, QueueSettings.EMPTY));
        assertThrows(IllegalArgumentException.class, () -> connection.deleteQueue(TOO_LONG_QUEUE));
        assertThrows(IllegalArgumentException.class, () -> connection.purgeQueue(TOO_LONG_QUEUE));
        assertThrows(IllegalArgumentException.class, () -> connection.subscribe(TOO_LONG_QUEUE, ConsumerOptions.DEFAULT));
        assertThrows(IllegalArgumentException.class, () -> connection.createProducer(TOO_LONG_QUEUE, ProducerOptions.DEFAULT));
        ExecutionException noName = assertThrows(ExecutionException.class,
                () -> connection.declareQueueAsync(null, QueueSettings.EMPTY).get());
        assertInstanceOf(NullPointerException.class, noName.getCause());
        assertEquals(0L, connection.declareQueue("orders", QueueSettings.EMPTY)); // the connection carries on
        assertEquals(0, broker.count(SubscribeFrame.class));
        assertEquals(1, broker.count(io.sluice.protocol.DeclareQueueFrame.class));
    }

    /** A request frame that cannot be built on the network thread fails its request with the reason, not a timeout. */
    @Test
    void shouldFailARequestWhoseFrameCannotBeBuiltWithTheReason() {
        CompletableFuture<Long> declared = connection.declareQueueAsync("orders", null); // DeclareQueueFrame refuses it
        ExecutionException failure = assertThrows(ExecutionException.class, () -> declared.get(4, TimeUnit.SECONDS),
                "failed with the reason, before the request timeout of 5 s");
        assertInstanceOf(NullPointerException.class, failure.getCause());
        assertEquals("settings", failure.getCause().getMessage());
        assertEquals(0L, connection.declareQueue("orders", QueueSettings.EMPTY));
    }

    /**
     * A producer whose PUBLISH frames cannot be built (its queue name is too long for the wire; createProducer refuses
     * that now, so it is opened past it here) ends on its own: its sends fail with the reason, and the connection and
     * its other producers go on. It fails if its send stays pending for ever, or if the exception, thrown out of the
     * PUBLISH_CREDIT that flushes every producer, closes the connection, and again each handshake after.
     */
    @Test
    void shouldEndOnlyTheProducerWhosePublishFramesCannotBeBuilt() throws Exception {
        Producer bad = connection.open(new Producer(connection, TOO_LONG_QUEUE, ProducerOptions.DEFAULT));
        Producer good = connection.createProducer("orders", ProducerOptions.DEFAULT);
        CompletableFuture<Void> sent = bad.sendAsync(new byte[] {1});
        ExecutionException failure = assertThrows(ExecutionException.class, () -> sent.get(10, TimeUnit.SECONDS));
        SluiceException reason = assertInstanceOf(SluiceException.class, failure.getCause());
        assertInstanceOf(IllegalArgumentException.class, reason.getCause());
        assertTrue(reason.getMessage().contains("was closed"), reason.getMessage());
        ExecutionException later = assertThrows(ExecutionException.class, () -> bad.sendAsync(new byte[] {2}).get(10, TimeUnit.SECONDS));
        assertInstanceOf(SluiceException.class, later.getCause());
        broker.send(new io.sluice.protocol.PublishCreditFrame(1, 1)); // flushes every producer of the connection
        assertEquals(0L, connection.declareQueue("orders", QueueSettings.EMPTY)); // answered after the PUBLISH_CREDIT
        good.send(new byte[] {3});
        assertEquals(1, broker.count(HelloFrame.class), "the connection was not made again");
        broker.dropConnections();
        TestWait.until(() -> broker.count(HelloFrame.class) == 2 && connection.isConnected());
        good.send(new byte[] {4});
        assertEquals(List.of(1L, 2L), List.copyOf(broker.publishedSequences));
    }

    @Test
    void shouldCompleteEveryFutureWhenAllPublishesAreConfirmed() throws Exception {
        Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT);
        List<CompletableFuture<Void>> futures = new ArrayList<>();
        for (int i = 0; i < 2000; i++) {
            futures.add(producer.sendAsync(("payload " + i).getBytes(StandardCharsets.UTF_8)));
        }
        CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);
        assertEquals(LongStream.rangeClosed(1, 2000).boxed().toList(), List.copyOf(broker.publishedSequences));
        producer.send("blocking".getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void shouldConfirmTheSendsOfSeveralThreadsWithOneSequenceEachInEveryThreadsOrder() throws Exception {
        Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT);
        int threads = 4;
        int perThread = 2500;
        List<List<CompletableFuture<Void>>> sent = inParallel(threads, thread -> {
            List<CompletableFuture<Void>> futures = new ArrayList<>();
            for (int i = 0; i < perThread; i++) {
                futures.add(producer.sendAsync((thread + " " + i).getBytes(StandardCharsets.UTF_8)));
            }
            return futures;
        });
        for (List<CompletableFuture<Void>> futures : sent) {
            CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
        }
        // The broker saw sequences 1..n in order, each once: no gap, no duplicate.
        assertEquals(LongStream.rangeClosed(1, (long) threads * perThread).boxed().toList(),
                List.copyOf(broker.publishedSequences));
        Map<String, Integer> next = new HashMap<>();
        for (String payload : broker.publishedPayloads) {
            String[] parts = payload.split(" ");
            int expected = next.getOrDefault(parts[0], 0);
            assertEquals(expected, Integer.parseInt(parts[1]), "thread " + parts[0] + " out of send order");
            next.put(parts[0], expected + 1);
        }
        assertEquals(Map.of("0", perThread, "1", perThread, "2", perThread, "3", perThread), next);
    }

    @Test
    void shouldConfirmSendsMadeJustBeforeTheProducerIsClosedAndRefuseSendsAfter() throws Exception {
        for (int round = 0; round < 20; round++) {
            Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT);
            List<CompletableFuture<Void>> futures = new ArrayList<>();
            for (int i = 0; i < 50; i++) {
                futures.add(producer.sendAsync(new byte[] {(byte) i}));
            }
            producer.close();
            CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).get(10, TimeUnit.SECONDS);
            ExecutionException refused = assertThrows(ExecutionException.class,
                    () -> producer.sendAsync(new byte[] {1}).get(5, TimeUnit.SECONDS));
            assertInstanceOf(ConnectionLostException.class, refused.getCause());
        }
    }

    @Test
    void shouldSettleEverySendWhenTheConnectionClosesWhileSeveralThreadsSend() throws Exception {
        Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT);
        ExecutorService senders = Executors.newFixedThreadPool(4);
        try {
            List<Future<List<CompletableFuture<Void>>>> sending = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                sending.add(senders.submit(() -> {
                    List<CompletableFuture<Void>> futures = new ArrayList<>();
                    for (int i = 0; i < 20_000; i++) {
                        futures.add(producer.sendAsync(new byte[16]));
                    }
                    return futures;
                }));
            }
            TestWait.until(() -> broker.publishedSequences.size() >= 1000);
            connection.close();
            for (Future<List<CompletableFuture<Void>>> thread : sending) {
                for (CompletableFuture<Void> future : thread.get(30, TimeUnit.SECONDS)) {
                    try {
                        future.get(10, TimeUnit.SECONDS);
                    } catch (ExecutionException e) {
                        assertInstanceOf(ConnectionLostException.class, e.getCause());
                    }
                }
            }
        } finally {
            senders.shutdownNow();
        }
    }

    @Test
    void shouldFailExactlyThePublishTheBrokerRejected() throws Exception {
        broker.failSequence = 3;
        Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT);
        List<CompletableFuture<Void>> futures = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            futures.add(producer.sendAsync(new byte[] {(byte) i}));
        }
        for (int i = 0; i < 5; i++) {
            CompletableFuture<Void> future = futures.get(i);
            if (i == 2) {
                ExecutionException failure = assertThrows(ExecutionException.class,
                        () -> future.get(5, TimeUnit.SECONDS));
                SluiceException cause = assertInstanceOf(SluiceException.class, failure.getCause());
                assertEquals(ErrorCode.QUEUE_BLOCKED, cause.errorCode());
                assertTrue(cause.getMessage().contains("sequence 3"), cause.getMessage());
            } else {
                future.get(5, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void shouldFreeInFlightSlotsWhenMessagesSettleAndOnlyThen() throws Exception {
        broker.confirmPublishes = false;
        broker.failSequence = 1;
        Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT.withMaxInFlight(2));
        CompletableFuture<Void> refused = producer.sendAsync(new byte[] {1});
        ExecutionException failure = assertThrows(ExecutionException.class, () -> refused.get(5, TimeUnit.SECONDS));
        assertInstanceOf(SluiceException.class, failure.getCause());

        ExecutorService sender = Executors.newSingleThreadExecutor();
        try {
            // The refused message gave its slot back: both slots are free.
            List<CompletableFuture<Void>> unconfirmed = sender.submit(() -> List.of(
                    producer.sendAsync(new byte[] {2}), producer.sendAsync(new byte[] {3}))).get(5, TimeUnit.SECONDS);
            TestWait.until(() -> broker.publishedSequences.size() == 3);
            // Two unconfirmed messages hold both slots: a third send waits...
            Future<CompletableFuture<Void>> third = sender.submit(() -> producer.sendAsync(new byte[] {4}));
            assertThrows(java.util.concurrent.TimeoutException.class, () -> third.get(200, TimeUnit.MILLISECONDS));
            // ...and cancelling a sent message's future does not free its slot (it is still out with the broker).
            unconfirmed.get(0).cancel(false);
            assertThrows(java.util.concurrent.TimeoutException.class, () -> third.get(200, TimeUnit.MILLISECONDS));
            // One CONFIRM for both frees both slots.
            broker.send(new io.sluice.protocol.ConfirmFrame(producer.producerId(), List.of(new IdRange(2, 3))));
            unconfirmed.get(1).get(5, TimeUnit.SECONDS);
            CompletableFuture<Void> fourth = third.get(5, TimeUnit.SECONDS);
            TestWait.until(() -> broker.publishedSequences.size() == 4);
            assertEquals(List.of(1L, 2L, 3L, 4L), List.copyOf(broker.publishedSequences));
            broker.send(new io.sluice.protocol.ConfirmFrame(producer.producerId(), List.of(IdRange.single(4))));
            fourth.get(5, TimeUnit.SECONDS);
        } finally {
            sender.shutdownNow();
        }
    }

    @Test
    void shouldDropAMessageCancelledBeforeItWasWrittenAndLetTheClosedProducerGo() throws Exception {
        // Callbacks on the network thread: a FLOW's listener runs before the frames after it are read, so
        // "no listener call" below is certain once the later CONFIRM has arrived.
        connection.close();
        connection = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .requestTimeout(Duration.ofSeconds(5)).callbacksOnNetworkThread(true).build());
        List<String> flows = new CopyOnWriteArrayList<>();
        Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT.withMaxInFlight(1)
                .withFlowListener((queue, state, reason) -> flows.add(state.name())));
        broker.send(new FlowFrame("orders", FlowState.BLOCKED, "quotaHardMessages: 10 ready, limit 10"));
        TestWait.until(() -> flows.equals(List.of("BLOCKED")));
        CompletableFuture<Void> cancelled = producer.sendAsync(new byte[] {1}); // held back: the queue is blocked
        assertTrue(cancelled.cancel(false));
        producer.close();
        broker.send(new FlowFrame("orders", FlowState.FREE, ""));
        TestWait.until(() -> flows.equals(List.of("BLOCKED", "FREE")));
        // The producer let go of its last message, and with it of its registration: no more FLOW reaches it.
        broker.send(new FlowFrame("orders", FlowState.SLOWED, "quotaSoftMessages: 2 ready, limit 1"));
        Producer other = connection.createProducer("orders", ProducerOptions.DEFAULT.withMaxInFlight(1));
        other.send(new byte[] {2}); // its CONFIRM comes after the SLOWED frame
        assertEquals(List.of("BLOCKED", "FREE"), flows);
        assertEquals(List.of(1L), List.copyOf(broker.publishedSequences), "only the other producer's message was sent");
    }

    @Test
    void shouldSendHeartbeatsWhileIdleAndReconnectWhenTheBrokerStaysSilent() {
        connection.close();
        broker.heartbeatIntervalMs = 200;
        connection = Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .requestTimeout(Duration.ofSeconds(5))
                .reconnectPolicy(new ReconnectPolicy(true, Duration.ofMillis(20), Duration.ofMillis(200), 2.0, 0.2))
                .build());
        long hellosBefore = broker.count(HelloFrame.class);
        // Idle: the client writes a HEARTBEAT every interval without a write; the fake broker answers none,
        // so after two intervals of silence the client drops the connection and connects again.
        TestWait.until(() -> broker.count(HeartbeatFrame.class) >= 2);
        TestWait.until(() -> broker.count(HelloFrame.class) > hellosBefore);
    }

    @Test
    void shouldTellTheFlowListenerOfItsQueueOnly() {
        List<String> events = new CopyOnWriteArrayList<>();
        connection.createProducer("orders", ProducerOptions.DEFAULT.withFlowListener(
                (queue, state, reason) -> events.add(queue + " " + state + " " + reason)));
        broker.send(new FlowFrame("other", FlowState.BLOCKED, "quotaHardBytes: 2 stored, limit 1"));
        broker.send(new FlowFrame("orders", FlowState.BLOCKED, "quotaHardBytes: 2 stored, limit 1"));
        broker.send(new FlowFrame("orders", FlowState.FREE, ""));
        TestWait.until(() -> events.size() == 2);
        assertEquals(List.of("orders BLOCKED quotaHardBytes: 2 stored, limit 1", "orders FREE "), events);
    }

    @Test
    void shouldTimeOutBlockingSendWhenNoConfirmArrives() {
        broker.confirmPublishes = false;
        Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT);
        SluiceTimeoutException timeout = assertThrows(SluiceTimeoutException.class,
                () -> producer.send(new byte[] {1}, Duration.ofMillis(200)));
        assertTrue(timeout.getMessage().contains("did not confirm within 200 ms"), timeout.getMessage());
    }

    @Test
    void shouldDeliverInOrderAckInRangesAndTopUpCredit() {
        List<Long> handled = new CopyOnWriteArrayList<>();
        Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT.withCredit(80), message -> {
            assertEquals("m" + message.id(), new String(message.payload(), StandardCharsets.UTF_8));
            handled.add(message.id());
            message.ack();
        });
        SubscribeFrame subscribe = broker.frames(SubscribeFrame.class).get(0);
        assertEquals(80, subscribe.initialCredit());
        broker.deliver(consumer.consumerTag(), 1, 2, 3, 4);
        broker.deliver(consumer.consumerTag(), 5, 6, 7, 8, 9, 10);
        TestWait.until(() -> handled.size() == 10);
        assertEquals(LongStream.rangeClosed(1, 10).boxed().toList(), handled);
        TestWait.until(() -> ackedIds().size() == 10);
        assertEquals(LongStream.rangeClosed(1, 10).boxed().toList(), ackedIds());
        // Credit comes back once an eighth of the window (10 of 80) is settled: these 10 settled
        // messages give back exactly 10, in one top-up once all ten acks were written together, or
        // in top-ups of at least 10 otherwise - never more than was settled.
        TestWait.until(() -> broker.frames(CreditFrame.class).stream().mapToInt(CreditFrame::credit).sum() >= 10);
        assertEquals(10, broker.frames(CreditFrame.class).stream().mapToInt(CreditFrame::credit).sum(),
                "credit given back is what was settled: " + broker.frames(CreditFrame.class));
        for (CreditFrame credit : broker.frames(CreditFrame.class)) {
            assertEquals(consumer.consumerTag(), credit.consumerTag());
        }
        consumer.close();
        assertEquals(1, broker.count(UnsubscribeFrame.class));
    }

    @Test
    void shouldReceiveByPulling() throws Exception {
        Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT);
        broker.deliver(consumer.consumerTag(), 7, 8);
        Message first = consumer.receive(Duration.ofSeconds(5));
        Message second = consumer.receive(Duration.ofSeconds(5));
        assertNotNull(first);
        assertNotNull(second);
        assertEquals(List.of(7L, 8L), List.of(first.id(), second.id()));
        first.ack();
        assertThrows(IllegalStateException.class, first::ack);
        second.ack();
        TestWait.until(() -> ackedIds().equals(List.of(7L, 8L)));
        assertEquals(null, consumer.receive(Duration.ofMillis(10)));
    }

    @Test
    void shouldWriteTheAcksOfSeveralThreadsEachOnceAndTopUpCreditForThem() throws Exception {
        Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT.withCredit(400));
        for (int frame = 0; frame < 8; frame++) {
            broker.deliver(consumer.consumerTag(), LongStream.rangeClosed(frame * 50L + 1, frame * 50L + 50).toArray());
        }
        List<Message> messages = new ArrayList<>();
        for (int i = 0; i < 400; i++) {
            Message message = consumer.receive(Duration.ofSeconds(5));
            assertNotNull(message, "message " + i);
            messages.add(message);
        }
        inParallel(4, thread -> {
            for (int i = thread; i < messages.size(); i += 4) {
                messages.get(i).ack();
            }
            return null;
        });
        TestWait.until(() -> ackedIds().size() >= 400);
        assertEquals(LongStream.rangeClosed(1, 400).boxed().toList(), ackedIds().stream().sorted().toList());
        TestWait.until(() -> broker.frames(CreditFrame.class).stream().mapToInt(CreditFrame::credit).sum() >= 200);
        assertTrue(broker.frames(CreditFrame.class).stream().mapToInt(CreditFrame::credit).sum() <= 400);
    }

    @Test
    void shouldWriteTheAcksBeforeTheNackThatFollowsThem() throws Exception {
        Consumer consumer = connection.subscribe("orders", new ConsumerOptions(100, 100, Duration.ofSeconds(30)));
        broker.deliver(consumer.consumerTag(), 1, 2, 3, 4, 5, 6);
        List<Message> messages = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            messages.add(consumer.receive(Duration.ofSeconds(5)));
        }
        for (int i = 0; i < 5; i++) {
            messages.get(i).ack();
        }
        messages.get(5).nack(NackAction.REQUEUE);
        TestWait.until(() -> broker.count(NackFrame.class) == 1);
        List<Object> settlements = broker.received.stream()
                .filter(frame -> frame instanceof AckFrame || frame instanceof NackFrame)
                .map(frame -> frame instanceof AckFrame ack ? (Object) ack.messageIds() : frame).toList();
        assertEquals(List.of(List.of(new IdRange(1, 5)),
                new NackFrame(consumer.consumerTag(), NackAction.REQUEUE, 0, List.of(IdRange.single(6)))), settlements);
    }

    /**
     * A nack's arguments are checked where they are passed, before the message counts as settled: a bad one would throw
     * on the network thread after that, unseen, and the message could be settled neither by the broker nor again by the
     * application.
     */
    @Test
    void shouldRefuseANackWithBadArgumentsAtTheCallAndLeaveTheMessageToSettle() throws Exception {
        Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT);
        broker.deliver(consumer.consumerTag(), 1);
        Message message = consumer.receive(Duration.ofSeconds(5));
        assertNotNull(message);
        IllegalArgumentException negative = assertThrows(IllegalArgumentException.class,
                () -> message.nack(NackAction.REQUEUE_AFTER_DELAY, Duration.ofMillis(-1)));
        assertTrue(negative.getMessage().contains("delay"), negative.getMessage());
        NullPointerException noDelay = assertThrows(NullPointerException.class,
                () -> message.nack(NackAction.REQUEUE_AFTER_DELAY, null));
        assertEquals("delay", noDelay.getMessage());
        NullPointerException noAction = assertThrows(NullPointerException.class, () -> message.nack(null));
        assertEquals("action", noAction.getMessage());
        message.nack(NackAction.REQUEUE_AFTER_DELAY, Duration.ofMillis(250)); // still the application's to settle
        TestWait.until(() -> broker.count(NackFrame.class) == 1);
        assertEquals(new NackFrame(consumer.consumerTag(), NackAction.REQUEUE_AFTER_DELAY, 250, List.of(IdRange.single(1))),
                broker.frames(NackFrame.class).get(0));
    }

    @Test
    void shouldHandleTheRestOfAFrameWhenTheHandlerFailsOnOneMessage() {
        List<Long> handled = new CopyOnWriteArrayList<>();
        Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT, message -> {
            handled.add(message.id());
            if (message.id() == 3) {
                throw new IllegalStateException("handler failure on purpose");
            }
            message.ack();
        });
        broker.deliver(consumer.consumerTag(), 1, 2, 3, 4, 5);
        broker.deliver(consumer.consumerTag(), 6);
        TestWait.until(() -> handled.size() == 6);
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L, 6L), handled);
        TestWait.until(() -> ackedIds().size() == 5);
        assertEquals(List.of(1L, 2L, 4L, 5L, 6L), ackedIds().stream().sorted().toList());
    }

    @Test
    void shouldResubscribeAndResendAfterTheBrokerDropsTheConnection() throws Exception {
        List<Long> handled = new CopyOnWriteArrayList<>();
        Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT, message -> {
            handled.add(message.id());
            message.ack();
        });
        broker.confirmPublishes = false;
        Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT);
        CompletableFuture<Void> unconfirmed = producer.sendAsync(new byte[] {1});
        TestWait.until(() -> broker.publishedSequences.size() == 1);

        broker.confirmPublishes = true;
        broker.dropConnections();
        TestWait.until(() -> broker.count(HelloFrame.class) == 2 && broker.count(SubscribeFrame.class) == 2);
        unconfirmed.get(5, TimeUnit.SECONDS);
        assertEquals(List.of(1L, 1L), List.copyOf(broker.publishedSequences));
        TestWait.until(connection::isConnected);

        broker.deliver(consumer.consumerTag(), 42);
        TestWait.until(() -> handled.contains(42L));
        TestWait.until(() -> ackedIds().contains(42L));
    }

    /** A consumer the broker will not take back after a reconnect ends and says why, rather than only log it. */
    @Test
    void aConsumerRefusedForGoodAfterAReconnectEndsAndSaysWhy() throws Exception {
        Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT);
        broker.refuseSubscribes = io.sluice.protocol.ErrorCode.UNKNOWN_QUEUE;
        broker.subscribeRefusals.set(1);
        broker.dropConnections();
        TestWait.until(() -> consumer.failure() != null);
        assertEquals(io.sluice.protocol.ErrorCode.UNKNOWN_QUEUE, consumer.failure().errorCode());
        SluiceException thrown = assertThrows(SluiceException.class, () -> consumer.receive(Duration.ofMillis(1)));
        assertTrue(thrown.getMessage().contains("queue orders ended"), thrown.getMessage());
        assertEquals(2, broker.count(SubscribeFrame.class), "not tried again: the queue is gone");
    }

    /** A receive waiting when the consumer ends is woken and throws the failure, rather than wait out its timeout. */
    @Test
    void aReceiveWaitingWhenTheConsumerEndsThrowsTheFailure() {
        Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT);
        WaitingReceive first = new WaitingReceive(consumer);
        WaitingReceive second = new WaitingReceive(consumer);
        broker.refuseSubscribes = io.sluice.protocol.ErrorCode.UNKNOWN_QUEUE;
        broker.subscribeRefusals.set(1);
        broker.dropConnections();
        for (WaitingReceive waiting : List.of(first, second)) {
            SluiceException ended = assertInstanceOf(SluiceException.class, waiting.thrown());
            assertEquals(io.sluice.protocol.ErrorCode.UNKNOWN_QUEUE, ended.errorCode());
        }
        assertNotNull(consumer.failure());
    }

    /**
     * After Connection.close(), its consumers end with ConnectionLostException, a waiting receive too, rather than
     * return null as if the queue were empty.
     */
    @Test
    void receiveOnAConsumerOfAClosedConnectionThrows() {
        Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT);
        WaitingReceive waiting = new WaitingReceive(consumer);
        connection.close();
        assertInstanceOf(ConnectionLostException.class, waiting.thrown());
        assertInstanceOf(ConnectionLostException.class, consumer.failure());
        assertThrows(ConnectionLostException.class, () -> consumer.receive(Duration.ofMillis(100)));
    }

    /**
     * After Consumer.close(), receive throws IllegalStateException, a waiting receive too, rather than return null as
     * if the queue were empty. Closed from two threads at once, the consumer sends one UNSUBSCRIBE.
     */
    @Test
    void receiveOnAClosedConsumerThrows() throws Exception {
        Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT);
        WaitingReceive waiting = new WaitingReceive(consumer);
        inParallel(2, thread -> {
            consumer.close();
            return null;
        });
        IllegalStateException thrown = assertInstanceOf(IllegalStateException.class, waiting.thrown());
        assertEquals("consumer of queue orders is closed", thrown.getMessage());
        assertThrows(IllegalStateException.class, () -> consumer.receive(Duration.ofMillis(100)));
        assertEquals(null, consumer.failure());
        assertEquals(1, broker.count(UnsubscribeFrame.class));
    }

    /** A refusal that may pass (RESOURCE_LIMIT) is tried again until the broker takes the consumer back. */
    @Test
    void aConsumerRefusedForNowAfterAReconnectIsSubscribedAgainOnceTheBrokerTakesIt() throws Exception {
        List<Long> handled = new CopyOnWriteArrayList<>();
        Consumer consumer = connection.subscribe("orders", ConsumerOptions.DEFAULT, message -> {
            handled.add(message.id());
            message.ack();
        });
        broker.refuseSubscribes = io.sluice.protocol.ErrorCode.RESOURCE_LIMIT;
        broker.subscribeRefusals.set(2);
        broker.dropConnections();
        TestWait.until(() -> broker.count(SubscribeFrame.class) == 4); // the first, two refused, the one taken
        broker.deliver(consumer.consumerTag(), 7);
        TestWait.until(() -> handled.contains(7L));
        assertEquals(null, consumer.failure());
    }

    /**
     * A named producer's resume after a reconnect refused for now (RESOURCE_LIMIT: the broker's named producers at their
     * bound) is tried again, as a consumer's SUBSCRIBE is, and its unconfirmed message goes out once resumed: it used to
     * fail every unsettled message and close the producer at the first refusal.
     */
    @Test
    void aNamedProducersResumeRefusedForNowIsTriedAgainAndItsMessagesConfirmed() throws Exception {
        broker.confirmPublishes = false;
        Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT.withName("billing"));
        CompletableFuture<Void> pending = producer.sendAsync(new byte[] {1});
        TestWait.until(() -> broker.publishedSequences.size() == 1);
        broker.refuseProducerResumes = io.sluice.protocol.ErrorCode.RESOURCE_LIMIT;
        broker.producerInitRefusals.set(2);
        broker.confirmPublishes = true;
        broker.dropConnections();
        pending.get(30, TimeUnit.SECONDS);
        assertEquals(4, broker.count(io.sluice.protocol.ProducerInitFrame.class), "the first, two refused, the one taken");
        assertEquals(List.of(1L, 1L), List.copyOf(broker.publishedSequences), "sent again, with its sequence, once resumed");
    }

    @Test
    void shouldFailInFlightPublishesAndStopThreadsOnClose() throws Exception {
        broker.confirmPublishes = false;
        Producer producer = connection.createProducer("orders", ProducerOptions.DEFAULT);
        CompletableFuture<Void> pending = producer.sendAsync(new byte[] {1});
        TestWait.until(() -> broker.publishedSequences.size() == 1);
        connection.close();
        ExecutionException failure = assertThrows(ExecutionException.class, () -> pending.get(5, TimeUnit.SECONDS));
        assertInstanceOf(ConnectionLostException.class, failure.getCause());
        TestWait.until(() -> Thread.getAllStackTraces().keySet().stream()
                .noneMatch(thread -> thread.isAlive() && thread.getName().startsWith("sluice-client")));
        assertThrows(ConnectionLostException.class, () -> connection.declareQueue("orders", QueueSettings.EMPTY));
    }

    private List<Long> ackedIds() {
        List<Long> ids = new ArrayList<>();
        for (AckFrame ack : broker.frames(AckFrame.class)) {
            for (IdRange range : ack.messageIds()) {
                LongStream.rangeClosed(range.from(), range.to()).forEach(ids::add);
            }
        }
        return ids;
    }

    /** Runs {@code work} on {@code threads} threads at once and returns each thread's result, in thread order. */
    private static <T> List<T> inParallel(int threads, java.util.function.IntFunction<T> work) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            java.util.concurrent.CountDownLatch start = new java.util.concurrent.CountDownLatch(1);
            List<Future<T>> results = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                results.add(pool.submit(() -> {
                    start.await();
                    return work.apply(thread);
                }));
            }
            start.countDown();
            List<T> values = new ArrayList<>();
            for (Future<T> result : results) {
                values.add(result.get(60, TimeUnit.SECONDS));
            }
            return values;
        } finally {
            pool.shutdownNow();
        }
    }
}
