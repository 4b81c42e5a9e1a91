package io.sluice.broker.net;

import io.sluice.broker.log.Printable;
import io.netty.channel.ChannelHandlerContext;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.ReferenceCountUtil;
import io.sluice.broker.queue.ConsumerLink;
import io.sluice.broker.queue.FrameLink;
import io.sluice.broker.queue.ProducerLink;
import io.sluice.broker.error.Sentences;
import io.sluice.broker.txn.TransactionLink;
import io.sluice.client.internal.LoopBatcher;
import io.sluice.protocol.CloseFrame;
import io.sluice.protocol.DeliverFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.Frame;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.PublishCreditFrame;
import io.sluice.protocol.TxAbortedFrame;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The outbound side of an open connection (Aeron's proxy: calls become frames): the
 * {@link ProducerLink} and {@link ConsumerLink} its queues call back ({@link FrameLink} says which
 * frame each call is), and the answers the {@link ClientSession} gives to requests.
 *
 * <p>Threads: any. On the connection's event loop a frame is written at once. From a queue's
 * executor it joins the frames that executor hands over until the loop drains them, in one task
 * that ends with one flush ({@link LoopBatcher}), instead of a task per write and per flush.
 *
 * <p>Rule W1: as a PUBLISH_CREDIT is written, on the loop, its messages and bytes go back to the
 * connection's {@link PublishWindow}; if that brings the client back within, reading resumes
 * ({@link InboundGate}, H2). Rule W2: the headers and payload those messages held go back to the connection's
 * {@link HeldPublishBytes} as the credit is handed over, on the queue's thread, so the loop writing it sees them gone.
 */
final class ClientSessionProxy extends FrameLink implements TransactionLink {
    private final ChannelHandlerContext ctx;
    private final String clientName;
    private final int maxFrameBytes;
    private final PublishWindow window;
    private final HeldPublishBytes held;
    private final InboundGate gate;
    private final LoopBatcher<Frame> outbound;
    /**
     * DELIVER bytes queues on other threads handed over that this loop has not written to the channel yet. A queue
     * checks {@link #isWritable} for each message, but what it hands over reaches the channel's buffer only when this
     * loop drains it, so the channel stayed writable through a whole dispatch, which could build the consumer's entire
     * credit of messages (credit times message size), not about the high water mark. Counted here,
     * they make the connection unwritable to its queues as the channel's buffer would; once written they are in that
     * buffer, past the high mark, so the channel's writability event wakes the queues again when it drains.
     */
    private final AtomicLong deliverBytesHandedOver = new AtomicLong();
    /**
     * On the loop: a drain took the count back to the mark. If its writes never took the channel's buffer past the
     * mark (a drain split in turns, a client reading fast), no writability event follows: the drain wakes the queues.
     */
    private boolean wakeAfterDrain;
    /** Lets the connection's queues deliver again ({@link ClientSession#writable}); set once the session exists. */
    private Runnable wakeQueues = () -> { };

    ClientSessionProxy(ChannelHandlerContext ctx, String clientName, int maxFrameBytes, PublishWindow window, HeldPublishBytes held,
                       InboundGate gate) {
        this.ctx = ctx;
        this.clientName = clientName;
        this.maxFrameBytes = maxFrameBytes;
        this.window = window;
        this.held = held;
        this.gate = gate;
        this.outbound = new LoopBatcher<>(ctx.executor(), new OutboundFrames());
    }

    // ------------------------------------------------------------------ the links (frames: FrameLink)

    @Override
    public int maxFrameBytes() {
        return maxFrameBytes;
    }

    @Override
    public int windowBytes(int headersLength, int payloadLength) {
        return window.bytesOf(headersLength, payloadLength);
    }

    /** W2: the held bytes go back now, before the frame reaches the loop that may resume reading on writing it. */
    @Override
    public void publishCredit(int messages, long windowBytes, long heldBytes) {
        held.giveBack(heldBytes);
        super.publishCredit(messages, windowBytes, heldBytes);
    }

    @Override
    public boolean isWritable() {
        return ctx.channel().isWritable()
                && deliverBytesHandedOver.get() <= ctx.channel().config().getWriteBufferHighWaterMark();
    }

    /** On the loop, flushes; from elsewhere, nothing to do: the drain of the frames handed over ends with a flush. */
    @Override
    public void flush() {
        if (ctx.executor().inEventLoop()) {
            ctx.flush();
        }
    }

    @Override
    public EventExecutor loop() {
        return ctx.executor();
    }

    @Override
    public String describe() {
        return ctx.channel().remoteAddress() + " (client '" + Printable.escape(clientName) + "')"; // quoted into log lines
    }

    @Override
    public String id() {
        return ctx.channel().id().asShortText();
    }

    @Override
    public boolean isActive() {
        return ctx.channel().isActive();
    }

    /**
     * ERROR (request 0) and CLOSE with the code and the sentence, then the close ({@link LastFrame}); on the loop, behind
     * the frames handed over before. From any thread.
     */
    @Override
    public void closeFor(ErrorCode code, String sentence) {
        String message = Sentences.fit(sentence);
        ctx.executor().execute(() -> {
            if (ctx.channel().isActive()) {
                ctx.write(new ErrorFrame(0, code, message));
                LastFrame.writeAndClose(ctx, new CloseFrame(code, message));
            }
        });
    }

    // ------------------------------------------------------------------ answers of the session

    /** OK to a request, flushed at once; from any thread. */
    @Override
    public void answerOk(long requestId) {
        ctx.writeAndFlush(new OkFrame(requestId));
    }

    /** OK to a request that reports a message count, flushed at once; from any thread. */
    void answerOk(long requestId, long messageCount) {
        ctx.writeAndFlush(new OkFrame(requestId, messageCount));
    }

    /** Another answer to a request (PRODUCER_OK), flushed at once; from any thread. */
    void answer(Frame answer) {
        ctx.writeAndFlush(answer);
    }

    /** ERROR to a request (0: to no request), flushed at once; the connection stays usable. From any thread. */
    @Override
    public void answerError(long requestId, ErrorCode code, String message) {
        ctx.writeAndFlush(new ErrorFrame(requestId, code, Sentences.fit(message)));
    }

    /** TX_ABORTED, flushed at once; from any thread. */
    @Override
    public void transactionAborted(long txnId, ErrorCode code, String message) {
        ctx.writeAndFlush(new TxAbortedFrame(txnId, code, Sentences.fit(message)));
    }

    // ------------------------------------------------------------------ writing

    @Override
    protected void write(Frame frame) {
        if (ctx.executor().inEventLoop()) {
            writeOnLoop(frame);
        } else {
            if (frame instanceof DeliverFrame deliver) {
                deliverBytesHandedOver.addAndGet(deliver.content().readableBytes());
            }
            outbound.submit(frame);
        }
    }

    /** A frame handed over from another thread leaves the count of {@link #deliverBytesHandedOver}, written or not. */
    private void handedOverLeft(Frame frame) {
        if (frame instanceof DeliverFrame deliver) {
            int bytes = deliver.content().readableBytes();
            long left = deliverBytesHandedOver.addAndGet(-bytes);
            long high = ctx.channel().config().getWriteBufferHighWaterMark();
            wakeAfterDrain |= left <= high && left + bytes > high;
        }
    }

    /** On the loop, before any frame is read: what lets the connection's queues deliver again. */
    void wakeQueues(Runnable wake) {
        this.wakeQueues = wake;
    }

    /** On the loop; a PUBLISH_CREDIT gives its window back as it goes out (W1), its held bytes went before it (W2). */
    private void writeOnLoop(Frame frame) {
        ctx.write(frame, ctx.voidPromise());
        if (frame instanceof PublishCreditFrame credit) {
            window.giveBack(credit.messages(), credit.bytes());
            if (window.within() && held.within()) {
                gate.windowWithin();
            }
        }
    }

    /** Frames from queue executors, written on the connection's loop in one task per drain. */
    private final class OutboundFrames implements LoopBatcher.Sink<Frame> {
        @Override
        public void onLoop(Frame frame) {
            handedOverLeft(frame); // before the write, which may release the frame's buffer
            writeOnLoop(frame);
        }

        @Override
        public void endOfBatch() {
            ctx.flush();
            if (wakeAfterDrain) {
                wakeAfterDrain = false;
                if (ctx.channel().isWritable()) { // else the channel's own event wakes them once it drains
                    wakeQueues.run();
                }
            }
        }

        @Override
        public void rejected(Frame frame) {
            handedOverLeft(frame);
            ReferenceCountUtil.release(frame); // the connection's loop is gone: so is the connection
        }
    }
}
