package io.sluice.broker.net;

import io.netty.channel.ChannelHandlerContext;
import io.netty.util.ReferenceCountUtil;
import io.sluice.protocol.DeclareQueueFrame;

import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/**
 * When a connection reads and handles its frames. Four things stop it, and reading (Netty's
 * {@code autoRead}) resumes only once none does:
 * <ul>
 *   <li>H1 requests on the declare thread (a DECLARE of a new queue, a DELETE): the frames that
 *       follow are held and handled, in order, once every such request of the connection is
 *       answered, so a client may send DECLARE and then PUBLISH to that queue without waiting.
 *       Rule "declares do not wait for declares": a DECLARE (not passive) arriving while only
 *       declares are in flight and nothing is held yet is handled at once, so that declares
 *       pipelined on one connection reach the declare thread together and share its group
 *       (docs/protocol.md, "Queue management"). What is held is at most what one read had already
 *       decoded.</li>
 *   <li>H2 a client past its {@link PublishWindow}, or whose unsettled publishes hold more headers and payload
 *       than the bound of {@link HeldPublishBytes}: reading is paused until enough is given back for both
 *       (docs/flow-control.md, "Producer credit", W1 and W2).</li>
 *   <li>H3 the broker is stopping ({@link StopReading}): reading stops for good, so that the publishes
 *       already read can be confirmed before the stop's timeout, however fast the client sends;
 *       what it sent later is not read, not confirmed, and sent again after it reconnects.</li>
 *   <li>H4 the client does not read what the broker writes: while the connection's outbound buffer is above its high
 *       water mark (the channel is not writable) nothing more is read, so the answers a client's frames make (ERRORs,
 *       confirms, PUBLISH_CREDIT) are bounded by that mark and one read's frames, however fast it sends and however
 *       slowly it reads. Deliveries stop at the same mark (the dispatcher's own check). While the client does read
 *       (the broker reads it again only once it drained the kernel's send queue and the buffer below its low mark, which
 *       a slow reader takes long to do), its frames wait unread in its socket: two heartbeat intervals without a frame
 *       are then the broker's silence, not the client's ({@link ClientSessionAdapter#silenceIsTheBrokers}).</li>
 * </ul>
 * Confined to the connection's event loop.
 */
final class InboundGate {
    private final ChannelHandlerContext ctx;
    /** Handles one frame as a read would (it may be held again behind a request it starts). */
    private final Consumer<Object> reader;
    /** Reports a failure as the pipeline would: the connection's exceptionCaught. */
    private final Consumer<Throwable> failure;
    /** Frames waiting behind requests on the declare thread (H1); null when none is in flight. */
    private ArrayDeque<Object> held;
    /** Requests of this connection on the declare thread, not yet answered; of them, declares. */
    private int offLoopInFlight;
    private int declaresInFlight;
    private boolean pausedForWindow;
    private boolean pausedForOutbound;
    private boolean stopped;

    InboundGate(ChannelHandlerContext ctx, Consumer<Object> reader, Consumer<Throwable> failure) {
        this.ctx = ctx;
        this.reader = reader;
        this.failure = failure;
    }

    /** True if {@code msg} must wait behind the requests in progress (H1): it is kept, in order. */
    boolean hold(Object msg) {
        if (held == null || passesHeldDeclares(msg)) {
            return false;
        }
        held.add(msg);
        return true;
    }

    /** Rule "declares do not wait for declares" (H1). */
    private boolean passesHeldDeclares(Object msg) {
        return held.isEmpty() && offLoopInFlight == declaresInFlight
                && msg instanceof DeclareQueueFrame declare && !declare.passive();
    }

    /**
     * Holds the connection's later frames until {@code work} (on the declare thread) completes, then
     * runs {@code answer} on this loop if the connection is still open (H1).
     */
    <T> void afterOffLoop(CompletableFuture<T> work, boolean isDeclare, BiConsumer<T, Throwable> answer) {
        if (held == null) {
            held = new ArrayDeque<>();
            ctx.channel().config().setAutoRead(false);
        }
        offLoopInFlight++;
        if (isDeclare) {
            declaresInFlight++;
        }
        work.whenComplete((result, error) -> ctx.executor().execute(() -> {
            offLoopInFlight--;
            if (isDeclare) {
                declaresInFlight--;
            }
            try {
                if (ctx.channel().isActive()) {
                    answer.accept(result, error);
                }
            } catch (RuntimeException e) {
                failure.accept(e);
            } finally {
                if (offLoopInFlight == 0) {
                    handleHeld();
                }
            }
        }));
    }

    /** Handles the frames held during a request, in order; one of them may be a request that holds the rest again. */
    private void handleHeld() {
        ArrayDeque<Object> frames = held;
        held = null;
        if (frames == null) {
            return; // the connection closed meanwhile and released them
        }
        while (!frames.isEmpty()) {
            Object msg = frames.poll();
            if (!ctx.channel().isActive()) {
                ReferenceCountUtil.release(msg); // closed meanwhile, before channelInactive ran
            } else {
                try {
                    reader.accept(msg);
                } catch (RuntimeException e) {
                    failure.accept(e); // as the pipeline would have done
                }
            }
        }
        resumeIfFree();
    }

    /** The client is past its window or its held bytes' bound (H2): stops reading; returns true if this paused it. */
    boolean pauseForWindow() {
        if (pausedForWindow) {
            return false;
        }
        pausedForWindow = true;
        ctx.channel().config().setAutoRead(false);
        return true;
    }

    /** Whether reading is paused for H2: the client is past its window or its held bytes' bound. */
    boolean pausedForWindow() {
        return pausedForWindow;
    }

    /** Whether reading is paused for H4: the connection's outbound buffer is above its high water mark. */
    boolean pausedForOutbound() {
        return pausedForOutbound;
    }

    /** The client is back within its window and that bound (H2): reading resumes unless another rule holds it (H1, H3, H4). */
    void windowWithin() {
        if (pausedForWindow) {
            pausedForWindow = false;
            resumeIfFree();
        }
    }

    /** The channel's writability changed (H4): reading pauses while it is not writable, resumes once it is. */
    void writabilityChanged(boolean writable) {
        if (!writable && !pausedForOutbound) {
            pausedForOutbound = true;
            ctx.channel().config().setAutoRead(false);
        } else if (writable && pausedForOutbound) {
            pausedForOutbound = false;
            resumeIfFree();
        }
    }

    /** The broker is stopping (H3): no more reads on this connection. */
    void stopReading() {
        stopped = true;
        ctx.channel().config().setAutoRead(false);
    }

    private void resumeIfFree() {
        if (held == null && !pausedForWindow && !pausedForOutbound && !stopped && ctx.channel().isActive()) {
            ctx.channel().config().setAutoRead(true);
            ctx.read();
        }
    }

    /** The connection closed: releases what is held. */
    void close() {
        if (held != null) {
            held.forEach(ReferenceCountUtil::release);
            held = null;
        }
    }
}
