package io.sluice.broker.net;

import io.netty.buffer.ByteBufAllocator;
import io.sluice.broker.TestAwait;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.QueueCore;
import io.sluice.protocol.AckFrame;
import io.sluice.protocol.ConfirmFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.IdRange;
import io.sluice.protocol.NackAction;
import io.sluice.protocol.NackFrame;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.QueueSettings;
import io.sluice.protocol.SubscribeFrame;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A consumer's ACK or NACK whose message the queue's store fails to read (docs/broker-core.md, "Damaged records and
 * failed storage") is answered on the wire: one ERROR STORAGE_FAILED to no request, naming the queue and the cause, through
 * a real {@link ClientSessionAdapter} in front of a real queue core, with a store read that throws
 * ({@link QueueCore#failReadsOf}). The connection goes on, and so does a queue whose store reads. Before, only the operator
 * log said so, and the client's application took what it settled for taken.
 */
class SettlementReadFailureAnsweredTest {
    private static final int TAG = 5;

    @TempDir
    Path dir;
    private QueueCore core;
    private LocalConnection connection;

    @AfterEach
    void close() {
        if (connection != null) {
            connection.close();
        }
        if (core != null) {
            core.close();
        }
    }

    @Test
    void aLateAckTheStoreCannotReadIsAnsweredStorageFailed() throws Exception {
        open();
        BrokerQueue q = core.queues.declare("late", QueueSettings.builder().ackTimeoutMs(300).build());
        List<Long> ids = publishAndSubscribe(q);
        // Nothing goes out to the consumer again for now, so the ack timeout's take-back leaves both due, still its to ack late.
        writable(false);
        TestAwait.until("both taken back by the ack timeout", () -> redelivered(q) == 2);
        QueueCore.failReadsOf(q, ids.get(0));

        connection.send(new AckFrame(TAG, List.of(new IdRange(ids.get(0), ids.get(1)))));
        ErrorFrame error = connection.await(ErrorFrame.class, 1).get(0);
        assertEquals(0, error.requestId());
        assertEquals(ErrorCode.STORAGE_FAILED, error.errorCode(), error.message());
        assertEquals("ack of message " + ids.get(0) + " on consumer " + TAG + " of queue 'late' was not applied: the queue's"
                + " storage failed to read it (a read of queue 'late' faulted (injected)); it stays in the queue and is"
                + " delivered again", error.message());
        TestAwait.until("the other late ack is stored", () -> unacked(q) == 1);

        QueueCore.readsAgain(q);
        writable(true); // unwritable, the connection was read no further either (rule H4)
        TestAwait.until("the unreadable one is delivered again", () -> outWithTheConsumer(q) == 1);
        theConnectionAndAnotherQueueGoOn();
    }

    @Test
    void aRejectionToTheDeadLetterQueueTheStoreCannotReadIsAnsweredStorageFailed() throws Exception {
        open();
        BrokerQueue q = core.queues.declare("jobs", QueueSettings.EMPTY);
        List<Long> ids = publishAndSubscribe(q);
        QueueCore.failReadsOf(q, ids.get(1));

        connection.send(new NackFrame(TAG, NackAction.REJECT_TO_DEAD_LETTER, 0, List.of(new IdRange(ids.get(0), ids.get(1)))));
        ErrorFrame error = connection.await(ErrorFrame.class, 1).get(0);
        assertEquals(ErrorCode.STORAGE_FAILED, error.errorCode(), error.message());
        assertTrue(error.message().startsWith("nack to the dead-letter queue of message " + ids.get(1) + " on consumer " + TAG
                + " of queue 'jobs' was not applied: the queue's storage failed to read it (a read of queue 'jobs' faulted"
                + " (injected)); it stays in the queue and is delivered again in "), error.message());
        TestAwait.until("the other one is moved", () -> unacked(q) == 1);
        theConnectionAndAnotherQueueGoOn();
    }

    private void open() throws Exception {
        core = new QueueCore(dir, Map.of("storage.durability", "never"));
        connection = LocalConnection.inFrontOf(core, HelloFrame.KNOWN_CAPABILITIES);
    }

    /** Makes the broker's end of the connection writable or not, as its outbound buffer's water marks would. */
    private void writable(boolean writable) {
        connection.onLoop(() -> {
            connection.broker.unsafe().outboundBuffer().setUserDefinedWritability(1, writable);
            return null;
        });
    }

    /** Publishes two messages to {@code q} and subscribes to it with credit for both: returns their ids, once out. */
    private List<Long> publishAndSubscribe(BrokerQueue q) throws Exception {
        connection.send(publish(q.name(), 1));
        connection.await(ConfirmFrame.class, 1);
        connection.send(new SubscribeFrame(1, TAG, q.name(), 2));
        connection.await(OkFrame.class, 1);
        TestAwait.until("both delivered", () -> outWithTheConsumer(q) == 2);
        List<Long> ids = new ArrayList<>();
        QueueCore.onLoop(q, () -> {
            q.store().forEachUnacked(ids::add);
            return null;
        });
        return ids;
    }

    /** The connection takes more frames, and a queue whose store reads stores and confirms. */
    private void theConnectionAndAnotherQueueGoOn() throws Exception {
        BrokerQueue other = core.queues.declare("other", QueueSettings.EMPTY);
        connection.send(publish(other.name(), 2));
        List<ConfirmFrame> confirms = connection.await(ConfirmFrame.class, 2);
        assertEquals(2, confirms.get(1).producerId());
        TestAwait.until("the other queue stored both", () -> unacked(other) == 2);
        assertEquals(1, connection.received(ErrorFrame.class).size(), "and no other error");
    }

    private static PublishFrame publish(String queue, long producerId) {
        PublishFrameBuilder frame = new PublishFrameBuilder(ByteBufAllocator.DEFAULT, queue);
        frame.add(producerId, 1, List.of(), new byte[] {1});
        frame.add(producerId, 2, List.of(), new byte[] {2});
        return frame.build();
    }

    private static long redelivered(BrokerQueue q) {
        return figure(() -> q.counters().get().redelivered());
    }

    private static long unacked(BrokerQueue q) {
        return figure(() -> QueueCore.onLoop(q, q.store()::unackedMessages));
    }

    private static long outWithTheConsumer(BrokerQueue q) {
        return figure(() -> (long) q.snapshot().get().consumers().get(0).unackedMessages());
    }

    private static long figure(java.util.concurrent.Callable<Long> read) {
        try {
            return read.call();
        } catch (Exception e) {
            throw new AssertionError("reading a queue's figure failed", e);
        }
    }
}
