package io.sluice.broker;

import io.netty.buffer.ByteBuf;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.config.ConfigLoader;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.CloseFrame;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.NackAction;
import io.sluice.protocol.NackFrame;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.SubscribeFrame;
import io.sluice.protocol.CreditFrame;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class BrokerEndToEndTest {
    @TempDir
    Path dataDir;
    private Broker broker;

    @BeforeEach
    void start() {
        broker = Broker.start(config(Map.of()));
    }

    private BrokerConfig config(Map<String, String> extra) {
        Map<String, String> overrides = new java.util.HashMap<>(Map.of(
                "broker.data-dir", dataDir.toString(),
                "broker.port", "0",
                "metrics.port", "0",
                "storage.reserved-disk-bytes", "67108864"));
        overrides.putAll(extra);
        return new ConfigLoader().load(null, overrides);
    }

    @AfterEach
    void stop() {
        if (broker != null) {
            broker.close();
        }
    }

    /** Occupies the broker's declare thread, as a slow disk would, until the returned latch is counted down. */
    private java.util.concurrent.CountDownLatch holdDeclareThread() {
        java.util.concurrent.CountDownLatch slowDisk = new java.util.concurrent.CountDownLatch(1);
        broker.queues().onDeclareThread(() -> {
            try {
                return slowDisk.await(30, java.util.concurrent.TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        return slowDisk;
    }

    private static void publish(RawClient c, String queue, long producer, int from, int count) {
        PublishFrameBuilder b = new PublishFrameBuilder(c.alloc(), queue);
        for (int i = from; i < from + count; i++) {
            b.add(producer, i, List.of(), ("m" + i).getBytes(StandardCharsets.UTF_8));
        }
        c.send(b.build());
    }

    private static long confirmedCount(RawClient c, int expected) throws InterruptedException {
        long n = 0;
        while (n < expected) {
            ConfirmFrame f = c.expect(ConfirmFrame.class);
            for (IdRange r : f.sequences()) {
                n += r.to() - r.from() + 1;
            }
        }
        return n;
    }

    /** Declares {@code queue}, publishes {@code count} messages to it and waits for their confirms, then subscribes as consumer 1. */
    private static void storeThenSubscribe(RawClient c, String queue, QueueSettings settings, int count, int credit)
            throws InterruptedException {
        c.send(new DeclareQueueFrame(1, queue, settings));
        c.expect(OkFrame.class);
        publish(c, queue, 1, 0, count);
        confirmedCount(c, count);
        c.send(new SubscribeFrame(2, 1, queue, credit));
        c.expect(OkFrame.class);
    }

    @Test
    void shouldDeliverExactlyThePublishedMessagesInOrderAndAcceptAcks() throws Exception {
        try (RawClient producer = RawClient.connected(broker.port()); RawClient consumer = RawClient.connected(broker.port())) {
            producer.send(new DeclareQueueFrame(1, "work", QueueSettings.EMPTY));
            producer.expect(OkFrame.class);
            publish(producer, "work", 42, 0, 500);
            assertEquals(500, confirmedCount(producer, 500));

            consumer.send(new SubscribeFrame(2, 7, "work", 1000));
            consumer.expect(OkFrame.class);
            List<RawClient.Delivery> got = consumer.deliveries(500);
            for (int i = 0; i < 500; i++) {
                assertEquals("m" + i, new String(got.get(i).payload(), StandardCharsets.UTF_8));
                assertEquals(1, got.get(i).deliveryCount());
            }
            consumer.send(new AckFrame(7, List.of(new IdRange(got.get(0).id(), got.get(499).id()))));
            TestAwait.until("all acked", () -> broker.store().queue("work").unackedMessages() == 0);
        }
    }

    @Test
    void shouldHandleFramesSentRightBehindADeclareOfANewQueueInOrder() throws Exception {
        try (RawClient c = RawClient.connected(broker.port())) {
            // No waiting for the declare's answer: the publish and the subscribe need the queue.
            c.send(new DeclareQueueFrame(1, "pipelined", QueueSettings.EMPTY));
            publish(c, "pipelined", 5, 0, 20);
            c.send(new SubscribeFrame(2, 3, "pipelined", 100));
            assertEquals(1, c.expect(OkFrame.class).requestId(), "the declare is answered first");
            // Then, in whatever order they come: the confirms, the subscribe's OK, the deliveries.
            long confirmed = 0;
            boolean subscribed = false;
            List<String> delivered = new ArrayList<>();
            while (confirmed < 20 || !subscribed || delivered.size() < 20) {
                Object o = c.received.poll(10, java.util.concurrent.TimeUnit.SECONDS);
                if (o instanceof ConfirmFrame f) {
                    for (IdRange r : f.sequences()) {
                        confirmed += r.to() - r.from() + 1;
                    }
                } else if (o instanceof OkFrame ok && ok.requestId() == 2) {
                    subscribed = true;
                } else if (o instanceof RawClient.Delivery d) {
                    delivered.add(new String(d.payload(), StandardCharsets.UTF_8));
                } else {
                    throw new AssertionError("unexpected " + o);
                }
            }
            List<String> expected = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                expected.add("m" + i);
            }
            assertEquals(expected, delivered);
        }
    }

    @Test
    void shouldAnswerPipelinedDeclaresAndDeletesInTheOrderSent() throws Exception {
        try (RawClient c = RawClient.connected(broker.port())) {
            c.send(new DeclareQueueFrame(1, "first", QueueSettings.EMPTY));
            c.send(new DeclareQueueFrame(2, "second", QueueSettings.EMPTY)); // held, then holds the rest again
            publish(c, "second", 4, 0, 10);
            c.send(new io.sluice.protocol.DeleteQueueFrame(3, "first"));
            c.send(new DeclareQueueFrame(4, "first", QueueSettings.EMPTY, true)); // passive: gone by now
            List<String> answers = new ArrayList<>();
            long confirmed = 0;
            while (answers.size() < 4 || confirmed < 10) {
                Object o = c.received.poll(10, java.util.concurrent.TimeUnit.SECONDS);
                if (o instanceof OkFrame ok) {
                    answers.add("ok " + ok.requestId());
                } else if (o instanceof ErrorFrame e) {
                    answers.add(e.code() + " " + e.requestId());
                } else if (o instanceof ConfirmFrame f) {
                    for (IdRange r : f.sequences()) {
                        confirmed += r.to() - r.from() + 1;
                    }
                } else {
                    throw new AssertionError("unexpected " + o);
                }
            }
            assertEquals(List.of("ok 1", "ok 2", "ok 3", ErrorCode.UNKNOWN_QUEUE.code() + " 4"), answers);
            assertEquals(10, broker.store().queue("second").unackedMessages());
        }
    }

    @Test
    void shouldKeepServingOtherConnectionsOnTheLoopWhileANewQueueIsCreated() throws Exception {
        broker.close();
        broker = Broker.start(config(Map.of("broker.io-threads", "1"))); // every connection on one loop
        try (RawClient busy = RawClient.connected(broker.port()); RawClient other = RawClient.connected(broker.port())) {
            other.send(new DeclareQueueFrame(1, "existing", QueueSettings.EMPTY));
            other.expect(OkFrame.class);
            // Hold the declare thread, as a slow disk would while a queue's files are created.
            java.util.concurrent.CountDownLatch slowDisk = holdDeclareThread();
            busy.send(new DeclareQueueFrame(7, "new-queue", QueueSettings.EMPTY));
            publish(busy, "new-queue", 9, 0, 3);
            // The other connection, on the same event loop, publishes and is confirmed meanwhile.
            publish(other, "existing", 1, 0, 50);
            assertEquals(50, confirmedCount(other, 50));
            assertEquals(null, busy.received.poll(0, java.util.concurrent.TimeUnit.MILLISECONDS), "the declare is not answered yet");
            slowDisk.countDown();
            assertEquals(7, busy.expect(OkFrame.class).requestId());
            assertEquals(3, confirmedCount(busy, 3));
        }
    }

    @Test
    void shouldFinishADeclareWhoseConnectionClosedAndDropWhatItHeld() throws Exception {
        java.util.concurrent.CountDownLatch slowDisk = holdDeclareThread();
        try (RawClient gone = RawClient.connected(broker.port())) {
            gone.send(new DeclareQueueFrame(1, "orphan", QueueSettings.EMPTY));
            publish(gone, "orphan", 1, 0, 5); // held behind the declare, then dropped with the connection
        }
        TestAwait.until("the connection is gone", () -> broker.limits().openConnections() == 0);
        slowDisk.countDown();
        TestAwait.until("the queue is declared", () -> broker.queues().get("orphan") != null);
        // With epoll the hang-up is seen although the broker is not reading; NIO sees it only once it
        // reads again, and then handles the publish first, as the client sent it before closing.
        org.junit.jupiter.api.Assumptions.assumeTrue(io.netty.channel.epoll.Epoll.isAvailable(), "epoll transport");
        try (RawClient c = RawClient.connected(broker.port())) {
            c.send(new DeclareQueueFrame(2, "orphan", QueueSettings.EMPTY));
            assertEquals(0, c.expect(OkFrame.class).messageCount().getAsLong(), "the held publish was not handled");
        }
    }

    @Test
    void shouldNeverExceedTheConsumersCredit() throws Exception {
        try (RawClient c = RawClient.connected(broker.port())) {
            storeThenSubscribe(c, "q", QueueSettings.EMPTY, 100, 10);
            List<RawClient.Delivery> first = c.deliveries(10);
            assertEquals(null, c.received.poll(300, java.util.concurrent.TimeUnit.MILLISECONDS), "nothing beyond the credit of 10");
            c.send(new CreditFrame(1, 5));
            c.deliveries(5);
            assertEquals(10, first.size());
        }
    }

    @Test
    void shouldRedeliverUnackedMessagesOfAConsumerThatDisconnects() throws Exception {
        try (RawClient producer = RawClient.connected(broker.port())) {
            producer.send(new DeclareQueueFrame(1, "q", QueueSettings.EMPTY));
            producer.expect(OkFrame.class);
            publish(producer, "q", 1, 0, 20);
            confirmedCount(producer, 20);
            Set<Long> ackedIds = new HashSet<>();
            try (RawClient first = RawClient.connected(broker.port())) {
                first.send(new SubscribeFrame(2, 1, "q", 20));
                first.expect(OkFrame.class);
                List<RawClient.Delivery> got = first.deliveries(20);
                for (int i = 0; i < 5; i++) {
                    ackedIds.add(got.get(i).id());
                }
                first.send(new AckFrame(1, List.of(new IdRange(got.get(0).id(), got.get(4).id()))));
                TestAwait.until("5 acked", () -> broker.store().queue("q").unackedMessages() == 15);
            }
            try (RawClient second = RawClient.connected(broker.port())) {
                second.send(new SubscribeFrame(3, 1, "q", 100));
                second.expect(OkFrame.class);
                List<RawClient.Delivery> again = second.deliveries(15);
                List<String> payloads = new ArrayList<>();
                for (RawClient.Delivery d : again) {
                    assertTrue(!ackedIds.contains(d.id()), "acked message came back");
                    assertEquals(2, d.deliveryCount(), "second delivery");
                    payloads.add(new String(d.payload(), StandardCharsets.UTF_8));
                }
                List<String> expected = new ArrayList<>();
                for (int i = 5; i < 20; i++) {
                    expected.add("m" + i);
                }
                assertEquals(expected, payloads);
            }
        }
    }

    @Test
    void shouldDeadLetterAMessageAfterMaxDeliveries() throws Exception {
        try (RawClient c = RawClient.connected(broker.port())) {
            storeThenSubscribe(c, "jobs", QueueSettings.builder().set(QueueSettings.MAX_DELIVERIES, 3).build(), 1, 10);
            for (int attempt = 1; attempt <= 3; attempt++) {
                RawClient.Delivery d = c.deliveries(1).get(0);
                assertEquals(attempt, d.deliveryCount());
                c.send(new NackFrame(1, NackAction.REQUEUE_AFTER_DELAY, 0, List.of(IdRange.single(d.id()))));
            }
            TestAwait.until("dead-lettered: moved to jobs.dlq and gone from jobs", () -> broker.queues().get("jobs.dlq") != null
                    && broker.store().queue("jobs.dlq").unackedMessages() == 1
                    && broker.store().queue("jobs").unackedMessages() == 0);
            c.send(new SubscribeFrame(3, 2, "jobs.dlq", 10));
            c.expect(OkFrame.class);
            RawClient.Delivery dead = c.deliveries(1).get(0);
            assertEquals("m0", new String(dead.payload(), StandardCharsets.UTF_8));
            String headers = new String(dead.headers(), StandardCharsets.UTF_8);
            assertTrue(headers.contains("x-dead-letter-from") && headers.contains("jobs") && headers.contains("max-deliveries 3"), headers);
        }
    }

    /**
     * A NACK's delay is capped by {@code queues.max-redelivery-delay-ms}, as the queue's own redelivery delays are:
     * 30 days asked held a timer per message on the queue's event loop for good, and the queue past its delete (found
     * by a review).
     */
    @Test
    void aNacksDelayIsCappedByTheQueuesLongestRedeliveryDelay() throws Exception {
        broker.close();
        broker = Broker.start(config(Map.of("queues.max-redelivery-delay-ms", "200")));
        try (RawClient c = RawClient.connected(broker.port())) {
            storeThenSubscribe(c, "jobs", QueueSettings.EMPTY, 1, 10);
            RawClient.Delivery first = c.deliveries(1).get(0);
            c.send(new NackFrame(1, NackAction.REQUEUE_AFTER_DELAY, java.util.concurrent.TimeUnit.DAYS.toMillis(30), List.of(IdRange.single(first.id()))));
            RawClient.Delivery again = c.deliveries(1).get(0); // within the deliveries' 20 s, not in 30 days
            assertEquals(first.id(), again.id());
            assertEquals(2, again.deliveryCount());
        }
    }

    @Test
    void shouldAnswerBadRequestsWithClearErrorsAndStayUp() throws Exception {
        try (RawClient c = RawClient.connected(broker.port())) {
            publish(c, "nope", 1, 0, 1);
            PublishErrorFrame pe = c.expect(PublishErrorFrame.class);
            assertEquals(ErrorCode.UNKNOWN_QUEUE, pe.errorCode());
            assertTrue(pe.message().contains("nope"), pe.message());
            c.send(new SubscribeFrame(5, 1, "nope", 10));
            assertEquals(ErrorCode.UNKNOWN_QUEUE, c.expect(ErrorFrame.class).errorCode());
            c.send(new DeclareQueueFrame(6, "bad name", QueueSettings.EMPTY));
            ErrorFrame bad = c.expect(ErrorFrame.class);
            assertEquals(ErrorCode.INVALID_QUEUE_NAME, bad.errorCode());
            c.send(new AckFrame(99, List.of(IdRange.single(1))));
            assertEquals(ErrorCode.UNKNOWN_CONSUMER, c.expect(ErrorFrame.class).errorCode());
            assertTrue(c.isOpen(), "operation errors leave the connection usable");
        }
        try (RawClient rude = new RawClient(broker.port())) {
            ByteBuf garbage = rude.alloc().buffer();
            garbage.writeInt(6).writeByte(0x7F).writeByte(0).writeInt(0);
            rude.sendRaw(garbage);
            ErrorFrame e = rude.expect(ErrorFrame.class);
            assertTrue(e.errorCode() == ErrorCode.UNKNOWN_FRAME_TYPE || e.errorCode() == ErrorCode.HANDSHAKE_REQUIRED, e.toString());
            rude.expect(CloseFrame.class);
        }
        try (RawClient fine = RawClient.connected(broker.port())) {
            fine.send(new DeclareQueueFrame(1, "after", QueueSettings.EMPTY));
            fine.expect(OkFrame.class);
        }
    }

    @Test
    void shouldKeepConfirmedMessagesAcrossARestart() throws Exception {
        try (RawClient c = RawClient.connected(broker.port())) {
            c.send(new DeclareQueueFrame(1, "keep", QueueSettings.builder().set(QueueSettings.MAX_DELIVERIES, 5).build()));
            c.expect(OkFrame.class);
            publish(c, "keep", 1, 0, 50);
            confirmedCount(c, 50);
        }
        broker.close();
        broker = Broker.start(config(Map.of()));
        try (RawClient c = RawClient.connected(broker.port())) {
            c.send(new SubscribeFrame(2, 1, "keep", 100));
            c.expect(OkFrame.class);
            List<RawClient.Delivery> got = c.deliveries(50);
            assertEquals("m0", new String(got.get(0).payload(), StandardCharsets.UTF_8));
            assertEquals("m49", new String(got.get(49).payload(), StandardCharsets.UTF_8));
        }
        assertEquals(5, broker.queues().get("keep").options().maxDeliveries(), "declared settings survive a restart");
    }
}
