package io.sluice.broker;

import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.ProducerIds;
import io.sluice.protocol.ProducerInitFrame;
import io.sluice.protocol.ProducerOkFrame;
import io.sluice.protocol.PublishErrorFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.SubscribeFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Idempotent publishing over a real socket, in raw frames so that the exact (producer id, sequence) of
 * each resend is the test's: a resend is confirmed and stored once, on the same connection, on another,
 * after a restart, and after the segments that held the originals were reclaimed; named producers are
 * fenced by a newer instance; bad input gets its code.
 */
class IdempotentPublishTest {
    @TempDir
    Path dir;

    private static final long PRODUCER = 0x5EED_0001L;

    private static void publish(RawClient c, String queue, long producer, long... sequences) {
        PublishFrameBuilder b = new PublishFrameBuilder(c.alloc(), queue);
        for (long s : sequences) {
            b.add(producer, s, List.of(), ("m" + s).getBytes(StandardCharsets.UTF_8));
        }
        c.send(b.build());
    }

    /** The sequences the broker confirmed for {@code producer}, collected until {@code count} are. */
    private static List<Long> confirmed(RawClient c, long producer, int count) throws InterruptedException {
        List<Long> out = new ArrayList<>();
        while (out.size() < count) {
            ConfirmFrame confirm = c.expect(ConfirmFrame.class);
            assertEquals(producer, confirm.producerId());
            for (IdRange r : confirm.sequences()) {
                for (long s = r.from(); s <= r.to(); s++) {
                    out.add(s);
                }
            }
        }
        return out;
    }

    private static long declare(RawClient c, String queue) throws InterruptedException {
        c.send(new DeclareQueueFrame(1, queue, QueueSettings.EMPTY));
        return c.expect(OkFrame.class).messageCount().orElseThrow();
    }

    /** Payloads of every message in the queue, consumed without acking. */
    private static List<String> contents(RawClient c, String queue, int expected) throws InterruptedException {
        c.send(new SubscribeFrame(2, 7, queue, 1000));
        c.expect(OkFrame.class);
        List<String> payloads = new ArrayList<>();
        for (RawClient.Delivery d : c.deliveries(expected)) {
            payloads.add(new String(d.payload(), StandardCharsets.UTF_8));
        }
        return payloads;
    }

    @Test
    void aResendIsConfirmedAgainAndStoredOnce() throws Exception {
        long lastRecord;
        Path queueDirectory;
        try (Broker broker = TestBrokers.start(dir, Map.of());
             RawClient c = RawClient.connected(broker.port());
             RawClient other = RawClient.connected(broker.port())) {
            declare(c, "q");
            publish(c, "q", PRODUCER, 1, 2, 3);
            assertEquals(List.of(1L, 2L, 3L), confirmed(c, PRODUCER, 3));
            publish(c, "q", PRODUCER, 2, 3, 4);
            assertEquals(List.of(2L, 3L, 4L), confirmed(c, PRODUCER, 3));
            publish(other, "q", PRODUCER, 1, 4); // as after a reconnect
            assertEquals(List.of(1L, 4L), confirmed(other, PRODUCER, 2));
            assertEquals(4, declare(c, "q"));
            assertEquals(List.of("m1", "m2", "m3", "m4"), contents(c, "q", 4));
            io.sluice.broker.queue.QueueSnapshot figures = broker.queues().get("q").snapshot().get();
            assertEquals(4, figures.counters().duplicates(), "sluice_queue_duplicates_total");
            assertEquals(4, figures.counters().published());
            assertEquals(1, figures.trackedProducers(), "sluice_queue_producers_tracked");
            lastRecord = broker.queues().get("q").store().writtenIndex();
            queueDirectory = broker.queues().get("q").store().directory();
        }
        assertEquals(lastRecord, io.sluice.storage.dedup.ProducerCheckpoint.coveredThrough(queueDirectory),
                "a clean shutdown checkpoints the producer state through the last record, so the next start replays none");
    }

    @Test
    void aRefusedSequenceIsStoredWhenSentAgain() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of("storage.max-message-bytes", "1024"));
             RawClient c = RawClient.connected(broker.port())) {
            declare(c, "q");
            PublishFrameBuilder b = new PublishFrameBuilder(c.alloc(), "q");
            b.add(PRODUCER, 1, List.of(), "m1".getBytes(StandardCharsets.UTF_8));
            b.add(PRODUCER, 2, List.of(), new byte[4096]); // refused: too large
            b.add(PRODUCER, 3, List.of(), "m3".getBytes(StandardCharsets.UTF_8));
            c.send(b.build());
            PublishErrorFrame refused = c.expect(PublishErrorFrame.class);
            assertEquals(ErrorCode.MESSAGE_TOO_LARGE, refused.errorCode());
            assertEquals(List.of(1L, 3L), confirmed(c, PRODUCER, 2));
            publish(c, "q", PRODUCER, 2);
            assertEquals(List.of(2L), confirmed(c, PRODUCER, 1));
            assertEquals(3, declare(c, "q"));
        }
    }

    @Test
    void aRestartAfterTheOriginalsWereReclaimedStillRecognisesTheResends() throws Exception {
        Map<String, String> small = Map.of("storage.segment-bytes", Long.toString(1 << 20), "storage.max-message-bytes", "131072");
        byte[] big = new byte[64 << 10];
        try (Broker broker = TestBrokers.start(dir, small); RawClient c = RawClient.connected(broker.port())) {
            declare(c, "q");
            // 40 messages of 64 KiB: more than two segments of 1 MiB.
            for (long s = 1; s <= 40; s++) {
                PublishFrameBuilder b = new PublishFrameBuilder(c.alloc(), "q");
                b.add(PRODUCER, s, List.of(), big);
                c.send(b.build());
            }
            assertEquals(40, confirmed(c, PRODUCER, 40).size());
            c.send(new SubscribeFrame(2, 7, "q", 1000));
            c.expect(OkFrame.class);
            List<RawClient.Delivery> all = c.deliveries(40);
            c.send(new io.sluice.protocol.AckFrame(7, List.of(new IdRange(all.get(0).id(), all.get(39).id()))));
            TestAwait.until("the first segment was reclaimed", () ->
                    !broker.queues().get("q").store().segmentNumbers().contains(
                            (int) (all.get(0).id() >>> 32)));
        }
        try (Broker broker = TestBrokers.start(dir, small); RawClient c = RawClient.connected(broker.port())) {
            publish(c, "q", PRODUCER, 1, 2, 40);
            assertEquals(List.of(1L, 2L, 40L), confirmed(c, PRODUCER, 3));
            assertEquals(0, declare(c, "q"), "resends of acknowledged, reclaimed messages are not stored again");
            publish(c, "q", PRODUCER, 41);
            assertEquals(List.of(41L), confirmed(c, PRODUCER, 1));
            assertEquals(1, declare(c, "q"));
        }
    }

    @Test
    void aNewInstanceOfANamedProducerFencesTheOldOne() throws Exception {
        long id = ProducerIds.forName("orders-writer");
        try (Broker broker = TestBrokers.start(dir, Map.of());
             RawClient first = RawClient.connected(broker.port());
             RawClient second = RawClient.connected(broker.port())) {
            declare(first, "q");
            first.send(new ProducerInitFrame(5, "q", "orders-writer", ProducerInitFrame.NEW_INSTANCE));
            ProducerOkFrame one = first.expect(ProducerOkFrame.class);
            assertEquals(new ProducerOkFrame(5, id, 1, 0), one);
            publish(first, "q", id, 1, 2);
            assertEquals(List.of(1L, 2L), confirmed(first, id, 2));

            second.send(new ProducerInitFrame(6, "q", "orders-writer", ProducerInitFrame.NEW_INSTANCE));
            assertEquals(new ProducerOkFrame(6, id, 2, 2), second.expect(ProducerOkFrame.class));

            publish(first, "q", id, 3);
            PublishErrorFrame fenced = first.expect(PublishErrorFrame.class);
            assertEquals(ErrorCode.PRODUCER_FENCED, fenced.errorCode());
            assertTrue(fenced.message().contains("fenced") && fenced.message().contains("epoch 2"), fenced.message());

            first.send(new ProducerInitFrame(7, "q", "orders-writer", 1));
            ErrorFrame resume = first.expect(ErrorFrame.class);
            assertEquals(ErrorCode.PRODUCER_FENCED, resume.errorCode());
            assertTrue(resume.message().contains("epoch 1") && resume.message().contains("epoch 2"), resume.message());

            publish(second, "q", id, 3);
            assertEquals(List.of(3L), confirmed(second, id, 1));
            assertEquals(3, declare(second, "q"));
        }
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient c = RawClient.connected(broker.port())) {
            c.send(new ProducerInitFrame(8, "q", "orders-writer", 1));
            assertEquals(ErrorCode.PRODUCER_FENCED, c.expect(ErrorFrame.class).errorCode(), "the fence survives a restart");
            c.send(new ProducerInitFrame(9, "q", "orders-writer", 2));
            assertEquals(new ProducerOkFrame(9, id, 2, 3), c.expect(ProducerOkFrame.class));
            publish(c, "q", id, 3);
            publish(c, "q", 42, 1); // an unnamed producer alongside
            assertEquals(List.of(3L), confirmed(c, id, 1));
            assertEquals(List.of(1L), confirmed(c, 42, 1));
            assertEquals(4, declare(c, "q"));
        }
    }

    /**
     * A resume names the epoch a PRODUCER_OK gave (E2): one naming an epoch the queue never granted is refused with
     * PRODUCER_FENCED and a sentence saying so, and changes nothing. Accepted, one frame from any client allowed to
     * publish took the name from its newest instance, and an epoch of 2,147,483,647 then refused every new instance
     * of every name on the queue for good (the mark is checkpointed).
     */
    @Test
    void aResumeOfAnEpochTheQueueNeverGrantedIsRefusedAndChangesNothing() throws Exception {
        long id = ProducerIds.forName("billing");
        try (Broker broker = TestBrokers.start(dir, Map.of());
             RawClient owner = RawClient.connected(broker.port());
             RawClient other = RawClient.connected(broker.port())) {
            declare(owner, "q");
            owner.send(new ProducerInitFrame(5, "q", "billing", ProducerInitFrame.NEW_INSTANCE));
            assertEquals(new ProducerOkFrame(5, id, 1, 0), owner.expect(ProducerOkFrame.class));

            for (int epoch : new int[] {2, Integer.MAX_VALUE}) {
                other.send(new ProducerInitFrame(6, "q", "billing", epoch));
                ErrorFrame refused = other.expect(ErrorFrame.class);
                assertEquals(ErrorCode.PRODUCER_FENCED, refused.errorCode(), refused.message());
                assertTrue(refused.message().contains("never granted epoch " + epoch)
                        && refused.message().contains("the highest it granted is 1"), refused.message());
            }

            publish(owner, "q", id, 1);
            assertEquals(List.of(1L), confirmed(owner, id, 1), "the newest instance still owns the name");
            other.send(new ProducerInitFrame(7, "q", "shipping", ProducerInitFrame.NEW_INSTANCE));
            assertEquals(new ProducerOkFrame(7, ProducerIds.forName("shipping"), 2, 0), other.expect(ProducerOkFrame.class),
                    "a new instance gets the epoch above the one granted");
            owner.send(new ProducerInitFrame(8, "q", "billing", 1));
            assertEquals(new ProducerOkFrame(8, id, 1, 1), owner.expect(ProducerOkFrame.class), "a granted epoch resumes");
        }
        try (Broker broker = TestBrokers.start(dir, Map.of()); RawClient c = RawClient.connected(broker.port())) {
            c.send(new ProducerInitFrame(9, "q", "billing", 3));
            assertEquals(ErrorCode.PRODUCER_FENCED, c.expect(ErrorFrame.class).errorCode(), "after a restart too");
            c.send(new ProducerInitFrame(10, "q", "invoices", ProducerInitFrame.NEW_INSTANCE));
            assertEquals(3, c.expect(ProducerOkFrame.class).epoch());
        }
    }

    @Test
    void aForgottenNamedProducersOlderInstancesStayFencedAcrossARestart() throws Exception {
        long id = ProducerIds.forName("orders-writer");
        Map<String, String> oneProducer = Map.of("queues.dedup-max-producers", "1");
        try (Broker broker = TestBrokers.start(dir, oneProducer);
             RawClient first = RawClient.connected(broker.port());
             RawClient second = RawClient.connected(broker.port());
             RawClient third = RawClient.connected(broker.port())) {
            declare(first, "q");
            first.send(new ProducerInitFrame(5, "q", "orders-writer", ProducerInitFrame.NEW_INSTANCE));
            assertEquals(1, first.expect(ProducerOkFrame.class).epoch());
            second.send(new ProducerInitFrame(6, "q", "orders-writer", ProducerInitFrame.NEW_INSTANCE));
            assertEquals(2, second.expect(ProducerOkFrame.class).epoch());

            publish(third, "q", 42, 1); // a second producer in a table of one: the named producer is evicted
            assertEquals(List.of(1L), confirmed(third, 42, 1));
            publish(first, "q", id, 1);
            assertEquals(ErrorCode.PRODUCER_FENCED, first.expect(PublishErrorFrame.class).errorCode(),
                    "the old instance's connection is not let in once the table forgot the producer");

            third.send(new ProducerInitFrame(7, "q", "orders-writer", ProducerInitFrame.NEW_INSTANCE));
            assertEquals(3, third.expect(ProducerOkFrame.class).epoch(), "above every epoch granted, forgotten or not");
            second.send(new ProducerInitFrame(8, "q", "orders-writer", 2));
            assertEquals(ErrorCode.PRODUCER_FENCED, second.expect(ErrorFrame.class).errorCode(),
                    "epoch 2 cannot fence epoch 3 by resuming");
            publish(third, "q", id, 1);
            assertEquals(List.of(1L), confirmed(third, id, 1));
            assertEquals(2, declare(third, "q"));
        }
        try (Broker broker = TestBrokers.start(dir, oneProducer);
             RawClient c = RawClient.connected(broker.port());
             RawClient other = RawClient.connected(broker.port())) {
            publish(c, "q", 42, 2); // evicts the named producer again, now from the table read back at start
            assertEquals(List.of(2L), confirmed(c, 42, 1));
            c.send(new ProducerInitFrame(9, "q", "orders-writer", 2));
            assertEquals(ErrorCode.PRODUCER_FENCED, c.expect(ErrorFrame.class).errorCode(), "the fence survives a restart");
            other.send(new ProducerInitFrame(10, "q", "orders-writer", ProducerInitFrame.NEW_INSTANCE));
            assertEquals(4, other.expect(ProducerOkFrame.class).epoch(), "and so does the epochs' high-water mark");
        }
    }

    /**
     * Fences of superseded instances are bounded (twice queues.dedup-max-producers a queue) without refusing a new
     * instance: past the bound, the connection fenced longest gets ERROR and CLOSE PRODUCER_FENCED, naming the producer,
     * the queue and the bound, and is closed (docs/protocol.md, "Named producers").
     */
    @Test
    void theInstanceFencedLongestIsToldAndClosedPastTheFencesBound() throws Exception {
        long id = ProducerIds.forName("orders-writer");
        try (Broker broker = TestBrokers.start(dir, Map.of("queues.dedup-max-producers", "1")); // 2 fences
             RawClient first = RawClient.connected(broker.port());
             RawClient second = RawClient.connected(broker.port());
             RawClient third = RawClient.connected(broker.port());
             RawClient fourth = RawClient.connected(broker.port())) {
            declare(first, "q");
            RawClient[] instances = {first, second, third, fourth};
            for (int i = 0; i < instances.length; i++) {
                instances[i].send(new ProducerInitFrame(5 + i, "q", "orders-writer", ProducerInitFrame.NEW_INSTANCE));
                assertEquals(i + 1, instances[i].expect(ProducerOkFrame.class).epoch(), "a new instance is never refused");
            }
            ErrorFrame error = first.expect(ErrorFrame.class);
            assertEquals(ErrorCode.PRODUCER_FENCED.code(), error.code());
            assertTrue(error.message().contains("queue 'q'") && error.message().contains(Long.toHexString(id))
                    && error.message().contains("queues.dedup-max-producers"), error.message());
            assertEquals(ErrorCode.PRODUCER_FENCED, first.expect(io.sluice.protocol.CloseFrame.class).errorCode());
            assertEquals("closed", first.expect(String.class));

            publish(fourth, "q", id, 1);
            assertEquals(List.of(1L), confirmed(fourth, id, 1));
            publish(third, "q", id, 2);
            assertEquals(ErrorCode.PRODUCER_FENCED, third.expect(PublishErrorFrame.class).errorCode());
        }
    }

    /**
     * A sequence below 1 carries no identity and is stored every time, and so is confirmed like any other: a frame's
     * confirm ranges marked "no run" with -1, so a negative sequence's run was dropped (never confirmed), and a run
     * ending at Long.MAX_VALUE took Long.MIN_VALUE as its next (MAX_VALUE + 1), a range ending before it starts.
     */
    @Test
    void sequencesBelowOneAndAtTheTopOfTheSpaceAreConfirmed() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of());
             RawClient c = RawClient.connected(broker.port())) {
            declare(c, "q");
            publish(c, "q", PRODUCER, -5, -4, -1);
            assertEquals(List.of(-5L, -4L, -1L), confirmed(c, PRODUCER, 3));
            publish(c, "q", PRODUCER + 1, Long.MAX_VALUE - 1, Long.MAX_VALUE, Long.MIN_VALUE);
            List<IdRange> top = new ArrayList<>(); // not walked by sequence: a walk to Long.MAX_VALUE does not end
            for (long count = 0; count < 3; ) {
                ConfirmFrame confirm = c.expect(ConfirmFrame.class);
                assertEquals(PRODUCER + 1, confirm.producerId());
                for (IdRange r : confirm.sequences()) {
                    top.add(r);
                    count += r.to() - r.from() + 1;
                }
            }
            assertEquals(List.of(new IdRange(Long.MAX_VALUE - 1, Long.MAX_VALUE), IdRange.single(Long.MIN_VALUE)), top);
            assertEquals(6, declare(c, "q"));
        }
    }

    @Test
    void badInputGetsItsCodeAndStoresNothing() throws Exception {
        try (Broker broker = TestBrokers.start(dir, Map.of("broker.publish-window-messages", "100"));
             RawClient c = RawClient.connected(broker.port())) {
            declare(c, "q");
            c.send(new ProducerInitFrame(3, "q", "x".repeat(256), ProducerInitFrame.NEW_INSTANCE));
            ErrorFrame tooLong = c.expect(ErrorFrame.class);
            assertEquals(ErrorCode.INVALID_PRODUCER, tooLong.errorCode());
            assertTrue(tooLong.message().contains("256 bytes"), tooLong.message());
            c.send(new ProducerInitFrame(4, "nope", "p", ProducerInitFrame.NEW_INSTANCE));
            assertEquals(ErrorCode.UNKNOWN_QUEUE, c.expect(ErrorFrame.class).errorCode());

            publish(c, "q", PRODUCER, 1, 500);
            assertEquals(List.of(1L, 500L), confirmed(c, PRODUCER, 2));
            publish(c, "q", PRODUCER, 300);
            PublishErrorFrame tooOld = c.expect(PublishErrorFrame.class);
            assertEquals(ErrorCode.SEQUENCE_OUT_OF_WINDOW, tooOld.errorCode());
            assertEquals(IdRange.single(300), tooOld.sequences()); // the range names the sequence, the sentence the window
            assertTrue(tooOld.message().contains("window of 100") && tooOld.message().contains("(500)"), tooOld.message());
            assertEquals(2, declare(c, "q"));
        }
    }
}
