package io.sluice.client;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.util.concurrent.ScheduledFuture;
import io.sluice.client.internal.IdRanges;
import io.sluice.protocol.Frame;
import io.sluice.protocol.MessageHeader;
import io.sluice.protocol.NackAction;
import io.sluice.protocol.PublishFrameBuilder;
import io.sluice.protocol.TxAckFrame;
import io.sluice.protocol.TxBeginFrame;
import io.sluice.protocol.TxPublishFrame;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What one {@link Transaction} has staged and not yet written, and the frames that carry it to the broker: its
 * publishes, batched per queue into TX_PUBLISH frames as batches fill ({@link Transaction#MAX_BATCH_MESSAGES},
 * {@link Transaction#MAX_BATCH_BYTES}) and the connection's publish window allows; its acks, batched per consumer into
 * TX_ACK ranges as that consumer batches its own (a full batch, or the flush timer); TX_BEGIN, written right before the
 * transaction's first frame; and the flush of what was written. What a rollback or a failure leaves unwritten is
 * discarded: staged messages are dropped, acks go back to their queue as NACK REQUEUE. Which frames go when, and
 * what ends the transaction, is the transaction's ({@link Transaction}'s phases); a write or an ack flush that fails
 * fails it ({@link Transaction#failOnLoop}).
 *
 * <p>Threads: owned by the connection's network thread; only {@link Publish}, made by the caller of
 * {@link Transaction#publish}, crosses threads, and it is immutable.
 */
final class TransactionBatches {
    /** Frame header, txnId, queue length and messageCount: a TX_PUBLISH's bytes besides queue and messages. */
    private static final int FRAME_OVERHEAD_BYTES = 6 + 8 + 2 + 4;

    private final Transaction transaction;
    private final Connection connection;
    private final long txnId;
    private final int timeoutMs;
    private boolean begun;
    private final Map<String, QueueBatch> publishes = new LinkedHashMap<>();
    private final Map<Consumer, List<Message>> acks = new LinkedHashMap<>();
    private ScheduledFuture<?> ackFlush;
    private boolean wroteUnflushed;
    /** On every frame written but the TX_ROLLBACK of a failing transaction ({@link #writeRollbackOfFailedOnLoop}). */
    private final ChannelFutureListener writeFailed;

    TransactionBatches(Transaction transaction, Connection connection, long txnId, int timeoutMs) {
        this.transaction = transaction;
        this.connection = connection;
        this.txnId = txnId;
        this.timeoutMs = timeoutMs;
        this.writeFailed = future -> {
            if (!future.isSuccess() && future.channel().isActive()) {
                transaction.failOnLoop(new SluiceException("writing a frame of transaction " + txnId + " failed: "
                        + future.cause().getMessage(), future.cause()), true);
            }
        };
    }

    /** Whether TX_BEGIN was written: the broker may hold something of the transaction. */
    boolean begun() {
        return begun;
    }

    /** The largest message, in encoded bytes, a TX_PUBLISH to a queue whose name takes {@code queueBytes} can carry. */
    int publishFrameLimitOnLoop(int queueBytes) {
        return connection.maxFrameBytes() - FRAME_OVERHEAD_BYTES - queueBytes;
    }

    /** On loop: stages a message that fits a frame ({@link #publishFrameLimitOnLoop}); a full batch is written. */
    void stagePublishOnLoop(Publish publish) {
        QueueBatch batch = publishes.computeIfAbsent(publish.queue(), queue -> new QueueBatch(publish.queueBytes()));
        batch.unsent.add(publish);
        batch.unsentPayloadBytes += publish.payload().length;
        if (batch.full()) {
            writePublishesOnLoop(publish.queue(), batch, false);
        }
    }

    /**
     * On loop: writes a queue's waiting messages in TX_PUBLISH frames while the batch is full (or, with
     * {@code all}, until none waits) and the publish window allows; true if no message it should write waits.
     */
    private boolean writePublishesOnLoop(String queue, QueueBatch batch, boolean all) {
        Channel channel = connection.activeChannel();
        int frameLimit = publishFrameLimitOnLoop(batch.queueBytes);
        while (!batch.unsent.isEmpty() && (all || batch.full())) {
            PublishFrameBuilder builder = new PublishFrameBuilder(channel.alloc(), queue);
            int frameBytes = 0;
            while (!batch.unsent.isEmpty() && builder.messageCount() < Transaction.MAX_BATCH_MESSAGES) {
                Publish next = batch.unsent.peek();
                boolean frameFull = frameBytes + next.encodedBytes() > frameLimit
                        || frameBytes >= Transaction.MAX_BATCH_BYTES;
                if ((builder.messageCount() > 0 && frameFull) || !connection.tryTakePublishWindow(next.encodedBytes(), next.payload().length)) {
                    break;
                }
                batch.unsent.poll();
                batch.unsentPayloadBytes -= next.payload().length;
                builder.add(0, 0, next.headers(), next.payload());
                frameBytes += next.encodedBytes();
            }
            if (builder.messageCount() == 0) {
                builder.discard();
                return false; // the window is spent; PUBLISH_CREDIT brings us back
            }
            writeOnLoop(channel, new TxPublishFrame(txnId, builder.build()));
        }
        return batch.unsent.isEmpty() || !all;
    }

    /** On loop: writes each queue's full batches, as the publish window allows. */
    void writeFullPublishesOnLoop() {
        publishes.forEach((queue, batch) -> writePublishesOnLoop(queue, batch, false));
    }

    /** On loop: writes every staged message the publish window allows; true if none waits. */
    boolean writeAllPublishesOnLoop() {
        boolean all = true;
        for (Map.Entry<String, QueueBatch> entry : publishes.entrySet()) {
            all &= writePublishesOnLoop(entry.getKey(), entry.getValue(), true);
        }
        return all;
    }

    /** On loop: stages an ack the transaction took; its consumer's full batch is written, a partial one by the timer. */
    void stageAckOnLoop(Consumer consumer, Message message) {
        List<Message> pending = acks.computeIfAbsent(consumer, ignored -> new ArrayList<>());
        pending.add(message);
        // A consumer closing meanwhile has this batch written just ahead of its UNSUBSCRIBE (writeAcksOfOnLoop).
        if (pending.size() >= consumer.options().ackBatchSize()) {
            writeAcksOnLoop();
        } else if (ackFlush == null) {
            // A flush that throws fails the transaction, as an ack that throws as it is taken does: dropped, its
            // acks would be missing from a commit answered OK.
            ackFlush = connection.scheduleOnLoop(connection.owing("the ack flush timer of transaction " + txnId,
                    "the transaction fails and is rolled back", thrown -> transaction.failOnLoop(new SluiceException(
                            "transaction " + txnId + " failed writing its acks on the client's network thread: " + thrown,
                            thrown), true),
                    this::flushAcksOnLoop), consumer.options().ackFlushDelay().toNanos());
        }
    }

    /** On loop: writes every pending ack as TX_ACK ranges, one frame per consumer, then the credit they free. */
    void writeAcksOnLoop() {
        cancelAckFlushOnLoop();
        Channel channel = connection.activeChannel();
        for (Map.Entry<Consumer, List<Message>> entry : acks.entrySet()) {
            writeAcksOnLoop(channel, entry.getKey(), entry.getValue());
        }
    }

    /** On loop, before {@code consumer}'s UNSUBSCRIBE: its pending acks are written now (the others keep their batch). */
    void writeAcksOfOnLoop(Consumer consumer) {
        List<Message> pending = acks.get(consumer);
        Channel channel = connection.activeChannel();
        if (pending != null && channel != null) {
            writeAcksOnLoop(channel, consumer, pending);
        }
    }

    private void writeAcksOnLoop(Channel channel, Consumer consumer, List<Message> pending) {
        if (pending.isEmpty()) {
            return;
        }
        long[] ids = new long[pending.size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = pending.get(i).id();
        }
        writeOnLoop(channel, new TxAckFrame(txnId, consumer.consumerTag(), IdRanges.of(ids, ids.length)));
        pending.clear();
        consumer.onTransactionalAckOnLoop(ids.length);
    }

    private void flushAcksOnLoop() {
        ackFlush = null;
        if (transaction.writesBatchesOnLoop()) {
            writeAcksOnLoop();
            flushChannelOnLoop();
        }
    }

    /** On loop: writes TX_BEGIN unless it was written. */
    void beginOnLoop(Channel channel) {
        if (!begun) {
            channel.write(new TxBeginFrame(txnId, timeoutMs)).addListener(writeFailed);
            begun = true;
        }
    }

    /** On loop: writes a frame of the transaction, TX_BEGIN first; one whose write fails fails the transaction. */
    void writeOnLoop(Channel channel, Frame frame) {
        beginOnLoop(channel);
        channel.write(frame).addListener(writeFailed);
        wroteUnflushed = true;
    }

    /**
     * On loop: writes the TX_ROLLBACK of a transaction that is failing already, without the listener of
     * {@link #writeOnLoop}: a failed write has nothing left to fail.
     */
    void writeRollbackOfFailedOnLoop(Channel channel, Frame rollback) {
        channel.write(rollback);
        wroteUnflushed = true;
    }

    /**
     * On loop: the transaction ends without writing what waits: staged messages are dropped, and acks go back to their
     * queue, through their consumer, as NACK REQUEUE.
     */
    void discardOnLoop() {
        cancelAckFlushOnLoop();
        for (Map.Entry<Consumer, List<Message>> entry : acks.entrySet()) {
            for (Message message : entry.getValue()) {
                entry.getKey().nack(message, NackAction.REQUEUE, 0);
            }
        }
        acks.clear();
        publishes.clear();
    }

    /** On loop: the network connection closed; the broker took back every delivery of it, so no ack goes back. */
    void forgetAcksOnLoop() {
        acks.clear();
    }

    void cancelAckFlushOnLoop() {
        if (ackFlush != null) {
            ackFlush.cancel(false);
            ackFlush = null;
        }
    }

    /** On loop: flushes what was written since the last flush. */
    void flushChannelOnLoop() {
        Channel channel = connection.activeChannel();
        if (wroteUnflushed && channel != null) {
            channel.flush();
        }
        wroteUnflushed = false;
    }

    /** A message staged for a queue, measured on the caller's thread. */
    record Publish(String queue, int queueBytes, List<MessageHeader> headers, byte[] payload, int encodedBytes) {
    }

    /** One queue's staged messages not yet written. */
    private static final class QueueBatch {
        private final int queueBytes;
        private final ArrayDeque<Publish> unsent = new ArrayDeque<>();
        private long unsentPayloadBytes;

        QueueBatch(int queueBytes) {
            this.queueBytes = queueBytes;
        }

        boolean full() {
            return unsent.size() >= Transaction.MAX_BATCH_MESSAGES || unsentPayloadBytes >= Transaction.MAX_BATCH_BYTES;
        }
    }
}
