package io.sluice.client;

import io.netty.channel.Channel;
import io.netty.handler.codec.EncoderException;
import io.sluice.protocol.Frame;
import io.sluice.protocol.FrameType;
import io.sluice.protocol.OkFrame;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongFunction;

/**
 * How one {@link Connection} asks the broker something: a request frame built with a fresh request id, registered in
 * the connection's {@link PendingRequests} with the request timeout, and written to the current network connection.
 * A request that cannot be sent (not connected, a frame that cannot be built, one the encoder refuses) fails at once
 * rather than wait out its timeout. Its future completes where callbacks run, or, for the requests whose answer the
 * client takes itself, on the network thread ({@link PendingRequests#ON_LOOP}).
 *
 * <p>Threads: {@link #request} and {@link #requestFor} run on any thread and hand their work to the network thread;
 * the methods named "on loop" run there. Holds no state of its own: the requests waiting are in
 * {@link PendingRequests}, the network connection is the connection's.
 */
final class RequestSender {
    private final Connection connection;
    private final PendingRequests requests;
    private final Callbacks callbacks;

    RequestSender(Connection connection, PendingRequests requests, Callbacks callbacks) {
        this.connection = connection;
        this.requests = requests;
        this.callbacks = callbacks;
    }

    /** Sends a request frame built with a fresh request id; completes on OK, fails on ERROR or timeout. */
    CompletableFuture<OkFrame> request(LongFunction<Frame> frameFactory, String description) {
        return requestFor(frameFactory, description);
    }

    /** As {@link #request}, for a request whose answer is a frame of type {@code F} (or ERROR). */
    @SuppressWarnings("unchecked")
    <F extends Frame> CompletableFuture<F> requestFor(LongFunction<Frame> frameFactory, String description) {
        CompletableFuture<F> result = new CompletableFuture<>();
        if (connection.isClosed()) {
            result.completeExceptionally(connection.closedException());
            return result;
        }
        connection.runOnLoop(() -> sendRequestOnLoop(frameFactory, description, (CompletableFuture<Frame>) result,
                callbacks::complete), result);
        return result;
    }

    /**
     * On loop: as {@link #requestFor}, written now, its future completed on the network thread, where the caller's
     * continuation takes the answer in the same task (a SUBSCRIBE's, before any later frame or handshake is handled).
     * For the client's own bookkeeping: the application's futures complete where callbacks run.
     */
    @SuppressWarnings("unchecked")
    <F extends Frame> CompletableFuture<F> requestOnLoop(LongFunction<Frame> frameFactory, String description) {
        CompletableFuture<F> result = new CompletableFuture<>();
        sendRequestOnLoop(frameFactory, description, (CompletableFuture<Frame>) result, PendingRequests.ON_LOOP);
        return result;
    }

    /** On loop: as {@link #requestFor}, written now rather than by a task of its own; {@code result} completes where callbacks run. */
    @SuppressWarnings("unchecked")
    void requestNowOnLoop(LongFunction<Frame> frameFactory, String description, CompletableFuture<? extends Frame> result) {
        sendRequestOnLoop(frameFactory, description, (CompletableFuture<Frame>) result, callbacks::complete);
    }

    /**
     * On loop: registers a request of type {@code request} whose frame the caller writes; see {@link PendingRequests#add}.
     * {@code future} completes on the network thread as the answer is read, so that the caller takes an answer of the
     * wrong type before the loss of the connection it closes (a TX_COMMIT's: the commit fails with it, not with the loss).
     */
    long addRequestOnLoop(FrameType request, String description, CompletableFuture<Frame> future, long timeoutMs) {
        return requests.add(request, description, future, timeoutMs, connection.address(), PendingRequests.ON_LOOP);
    }

    /** On loop: builds, registers and writes a request; {@code completer} completes {@code result} with its outcome. */
    private void sendRequestOnLoop(LongFunction<Frame> frameFactory, String description, CompletableFuture<Frame> result,
                                   PendingRequests.Completer completer) {
        Channel current = connection.activeChannel();
        if (current == null) {
            completer.complete(result, null, new ConnectionLostException(description + " failed: not connected to "
                    + connection.address() + (connection.isClosed() ? "" : "; reconnecting")));
            return;
        }
        // Built before the request is registered: a frame that cannot be built fails its request at once, rather
        // than throwing here, unseen, and leaving the caller to wait out the request timeout.
        long requestId = requests.nextId();
        Frame frame;
        try {
            frame = frameFactory.apply(requestId);
        } catch (RuntimeException unbuildable) {
            completer.complete(result, null, unbuildable);
            return;
        }
        long timeoutMs = TimeUnit.MILLISECONDS.convert(connection.options().requestTimeout()); // saturated
        requests.add(requestId, frame.type(), description, result, timeoutMs, connection.address(), completer);
        // A frame the encoder refuses (longer than the broker's maxFrameBytes) fails its request at once, rather than
        // leave it to wait out its timeout for a write that failed unseen. A write that fails
        // because the connection closed is left to the loss, which fails the request with ConnectionLostException.
        current.writeAndFlush(frame).addListener(written -> {
            if (written.cause() instanceof EncoderException refused) {
                requests.unwritten(requestId, refused);
            }
        });
    }
}
