package io.sluice.broker.queue;

import io.sluice.protocol.AckFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.StorageFailedException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A late ack (D5: of a delivery the ack timeout took back and did not send again) reads its message for the bytes it
 * takes off the backlog. A read that fails otherwise than on a damaged record (the store failed) leaves that message
 * unacknowledged and due again, still its consumer's to ack late; the frame's other acks are applied, stored and
 * counted, and its consumer's deliveries settled. Found by a review: the failure left the frame half applied. The acks
 * before it were neither stored nor counted, the consumer's settled deliveries still held the connection's credit, and
 * the message that failed was out of the ready list, out of every consumer's hands, until a restart. Likewise a late
 * TX_ACK, which holds such a delivery for its transaction. The consumer of an ACK is told, with one ERROR STORAGE_FAILED
 * for the frame (found by a later review: only the operator log said so, and the application took its ack for taken);
 * a TX_ACK's transaction is aborted, saying so.
 */
class LateAckReadFailureTest {
    private static final int TAG = 5;
    private static final int BIG = 300 << 10; // past a DELIVER frame's 256 KiB: written at once, alone
    @TempDir
    Path dir;

    @Test
    void theOtherAcksOfTheFrameAreAppliedAndTheUnreadableOneStaysDue() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            OneOutTwoTakenBack s = oneOutTwoTakenBack(core, (sub, ids) -> sub.ack(new AckFrame(TAG, ranges(ids))));
            s.acted.get(30, TimeUnit.SECONDS);

            assertEquals(1L, (long) QueueCore.onLoop(s.q, s.q.store()::unackedMessages), "the two others are acknowledged");
            assertEquals(2L, s.q.counters().get().acked());
            assertEquals(1L, (long) QueueCore.onLoop(s.q, s.q::backlogBytes), "the unreadable one's byte is still counted");
            assertEquals(2L, s.account.outstanding(), "the delivery acked out of the consumer's hands is settled");
            assertEquals(0, s.q.snapshot().get().consumers().get(0).unackedMessages());
            List<ErrorFrame> errors = s.consumer.all(ErrorFrame.class);
            assertEquals(1, errors.size(), "the consumer is told, once for the frame: " + errors);
            assertEquals(ErrorCode.STORAGE_FAILED, errors.get(0).errorCode());
            assertEquals("ack of message " + s.ids[1] + " on consumer " + TAG + " of queue 'late' was not applied: the queue's"
                    + " storage failed to read it (a read of queue 'late' faulted (injected)); it stays in the queue and is"
                    + " delivered again", errors.get(0).message());

            s.readsAgain();
            s.consumer.writable(true);
            s.sub.writable();
            FakeConnection.Delivery again = s.consumer.await(FakeConnection.Delivery.class, 5, Duration.ofSeconds(30)).get(4);
            assertEquals(s.ids[1], again.id(), "the unreadable one is delivered again");
            QueueCore.onLoop(s.q, () -> null);
            assertEquals(5, s.consumer.deliveries().size(), "and nothing else");
            s.sub.ack(QueueCore.ack(TAG, s.ids[1]));
            QueueCore.awaitOnLoop(s.q, s.q.store()::unackedMessages, 0L);
            assertEquals(0L, (long) QueueCore.onLoop(s.q, s.q::backlogBytes));
        }
    }

    @Test
    void aLateAckOfTheUnreadableOneCountsOnceItCanBeRead() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            OneOutTwoTakenBack s = oneOutTwoTakenBack(core, (sub, ids) -> sub.ack(new AckFrame(TAG, ranges(ids))));
            s.acted.get(30, TimeUnit.SECONDS);
            s.readsAgain();

            s.sub.ack(QueueCore.ack(TAG, s.ids[1])); // still taken back from this consumer: a late ack
            QueueCore.awaitOnLoop(s.q, s.q.store()::unackedMessages, 0L);
            assertEquals(3L, s.q.counters().get().acked());
            assertEquals(List.of(ErrorCode.STORAGE_FAILED), s.consumer.all(ErrorFrame.class).stream().map(ErrorFrame::errorCode)
                    .toList(), "the first frame's failure alone: the late ack that followed is taken");
        }
    }

    @Test
    void aLateTxAckThatCannotReadOneMessageHoldsTheOthersAndSaysWhy() throws Exception {
        try (QueueCore core = new QueueCore(dir, Map.of("storage.durability", "never"))) {
            CompletableFuture<HeldAcks> hold = new CompletableFuture<>();
            OneOutTwoTakenBack s = oneOutTwoTakenBack(core, (sub, ids) -> sub.hold(ranges(ids)).whenComplete((h, failed) -> {
                if (failed != null) {
                    hold.completeExceptionally(failed);
                } else {
                    hold.complete(h);
                }
            }));
            s.acted.get(30, TimeUnit.SECONDS);
            HeldAcks held = hold.get(30, TimeUnit.SECONDS);

            assertEquals(List.of(s.ids[0], s.ids[2]), Arrays.stream(held.ids()).boxed().toList());
            assertNotNull(held.problem(), "the transaction is told it could not hold them all");
            assertTrue(held.problem().contains("message " + s.ids[1] + " of queue 'late' could not be read"), held.problem());
            assertEquals(io.sluice.protocol.ErrorCode.STORAGE_FAILED, held.problemCode());
            assertEquals(2L, s.account.outstanding(), "the delivery held out of the consumer's hands is settled");

            s.q.transactions().release(held).get(30, TimeUnit.SECONDS); // the coordinator rolls the transaction back
            s.readsAgain();
            s.sub.credit(1); // as the client tops up for the one it settled
            s.consumer.writable(true);
            s.sub.writable();
            List<FakeConnection.Delivery> again = s.consumer.await(FakeConnection.Delivery.class, 7, Duration.ofSeconds(30));
            assertEquals(List.of(s.ids[0], s.ids[1], s.ids[2]),
                    again.subList(4, 7).stream().map(FakeConnection.Delivery::id).sorted().toList(), "all three are delivered again");
            QueueCore.onLoop(s.q, () -> null);
            assertEquals(7, s.consumer.deliveries().size());
        }
    }

    private static List<IdRange> ranges(long[] ids) {
        return Arrays.stream(ids).mapToObj(IdRange::single).toList();
    }

    /** What the consumer sends once the first message is out with it again and the other two wait, taken back from it. */
    private interface Settlement {
        void send(Subscription sub, long[] ids);
    }

    /**
     * Queue "late": its consumer received its three messages, the ack timeout took them back, and the first (large enough
     * to fill a DELIVER frame alone) went out to it again alone. {@code acted} completes once {@code settlement}, sent for all
     * three then, has been applied; reads of the second fail until {@link #readsAgain}.
     */
    private record OneOutTwoTakenBack(BrokerQueue q, FakeConnection consumer, Subscription sub, ConnectionCredit account,
                                      long[] ids, CompletableFuture<Void> acted) {
        void readsAgain() throws Exception {
            QueueCore.onLoop(q, () -> {
                q.readsThrough(q.store()::read);
                return null;
            });
        }
    }

    private static OneOutTwoTakenBack oneOutTwoTakenBack(QueueCore core, Settlement settlement) throws Exception {
        BrokerQueue q = core.queues.declare("late", QueueSettings.builder().ackTimeoutMs(300).build());
        core.publish(q, new FakeConnection("producer"), 1, 0, new byte[BIG], new byte[] {2}, new byte[] {3});
        FakeConnection consumer = new FakeConnection("consumer");
        ConnectionCredit account = new ConnectionCredit(100, () -> { });
        // Slow from the third delivery on (set in the dispatch itself): nothing goes out again for now.
        consumer.onDeliveries(3, () -> consumer.writable(false));
        Subscription sub = Subscription.open(q, consumer, TAG, 3, account);
        long[] ids = consumer.await(FakeConnection.Delivery.class, 3, Duration.ofSeconds(30)).stream()
                .mapToLong(FakeConnection.Delivery::id).toArray();
        QueueCore.awaitOnLoop(q, q::redelivered, 3L); // all three taken back; their credit is the consumer's again
        QueueCore.onLoop(q, () -> {
            q.readsThrough(id -> {
                if (id == ids[1]) {
                    throw new StorageFailedException("a read of queue 'late' faulted (injected)", null);
                }
                return q.store().read(id);
            });
            return null;
        });
        CompletableFuture<Void> acted = new CompletableFuture<>();
        // The first goes out again alone, in a frame of its own, written mid-dispatch: the consumer is slow from then on,
        // so the dispatch stops there; the settlement is queued then, behind that dispatch, long before any ack timeout.
        consumer.onDeliveries(4, () -> {
            consumer.writable(false);
            settlement.send(sub, ids);
            q.executor().execute(() -> acted.complete(null));
        });
        consumer.writable(true);
        sub.writable();
        return new OneOutTwoTakenBack(q, consumer, sub, account, ids, acted);
    }
}
