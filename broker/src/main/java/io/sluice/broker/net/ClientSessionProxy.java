package io.sluice.broker.net;

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
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.Frame;
import io.sluice.protocol.OkFrame;
import io.sluice.protocol.PublishCreditFrame;
import io.sluice.protocol.TxAbortedFrame;

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
 * ({@link InboundGate}, H2).
 */
final class ClientSessionProxy extends FrameLink implements TransactionLink {
    private final ChannelHandlerContext ctx;
    private final String clientName;
    private final int maxFrameBytes;
    private final PublishWindow window;
    private final InboundGate gate;
    private final LoopBatcher<Frame> outbound;

    ClientSessionProxy(ChannelHandlerContext ctx, String clientName, int maxFrameBytes, PublishWindow window, InboundGate gate) {
        this.ctx = ctx;
        this.clientName = clientName;
        this.maxFrameBytes = maxFrameBytes;
        this.window = window;
        this.gate = gate;
        this.outbound = new LoopBatcher<>(ctx.executor(), new OutboundFrames());
    }

    // ------------------------------------------------------------------ the links (frames: FrameLink)

    @Override
    public int maxFrameBytes() {
        return maxFrameBytes;
    }

    @Override
    public boolean isWritable() {
        return ctx.channel().isWritable();
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
        return ctx.channel().remoteAddress() + " (client '" + clientName + "')";
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
            outbound.submit(frame);
        }
    }

    /** On the loop; a PUBLISH_CREDIT gives its window back as it goes out (W1). */
    private void writeOnLoop(Frame frame) {
        ctx.write(frame, ctx.voidPromise());
        if (frame instanceof PublishCreditFrame credit) {
            window.giveBack(credit.messages(), credit.bytes());
            if (window.within()) {
                gate.windowWithin();
            }
        }
    }

    /** Frames from queue executors, written on the connection's loop in one task per drain. */
    private final class OutboundFrames implements LoopBatcher.Sink<Frame> {
        @Override
        public void onLoop(Frame frame) {
            writeOnLoop(frame);
        }

        @Override
        public void endOfBatch() {
            ctx.flush();
        }

        @Override
        public void rejected(Frame frame) {
            ReferenceCountUtil.release(frame); // the connection's loop is gone: so is the connection
        }
    }
}
