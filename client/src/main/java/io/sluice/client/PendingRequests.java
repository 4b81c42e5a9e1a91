package io.sluice.client;

import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.ScheduledFuture;
import io.sluice.client.internal.OwingTask;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.Frame;
import io.sluice.protocol.FrameType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The requests of one {@link Connection} waiting for their answer, by request id, each with its timeout and the one
 * type of frame that answers it besides ERROR ({@link #answerTypeOf}): any other fails it with
 * {@link UnexpectedAnswerException}. Owned by the connection's network thread: every method runs there.
 * Futures are completed through {@link Completer}, which puts callbacks where the connection runs them, or, for the
 * requests whose answer the client takes itself ({@link #ON_LOOP}), on the network thread. A completer that throws
 * fails its request with what it threw ({@link #settle}).
 */
final class PendingRequests {
    /** The connection's logger: applications filter the client's connection lines on it. */
    private static final Logger LOG = LoggerFactory.getLogger(Connection.class);

    /** Completes a request's future (where callbacks run); exactly one of {@code answer} and {@code failure} is set. */
    interface Completer {
        void complete(CompletableFuture<Frame> future, Frame answer, Throwable failure);
    }

    /** Completes on the network thread, where the answer arrives: for requests whose outcome the client itself takes. */
    static final Completer ON_LOOP = (future, answer, failure) -> {
        if (failure == null) {
            future.complete(answer);
        } else {
            future.completeExceptionally(failure);
        }
    };

    private record Pending(String description, FrameType expected, CompletableFuture<Frame> future,
                           ScheduledFuture<?> timeout, Completer completer) {
    }

    private final EventExecutor loop;
    private final Completer completer;
    private final Map<Long, Pending> byId = new HashMap<>();
    private long nextRequestId = 1;

    PendingRequests(EventExecutor loop, Completer completer) {
        this.loop = loop;
        this.completer = completer;
    }

    /**
     * Rule "one answer type": the frame that answers a request of type {@code request}, ERROR aside (a refusal answers
     * any request; docs/protocol.md, "Queue management"). Were any frame under a request's id to complete it, the
     * caller's code would cast it and fail with a ClassCastException, or take it for success.
     */
    static FrameType answerTypeOf(FrameType request) {
        return switch (request) {
            case DECLARE_QUEUE, DELETE_QUEUE, PURGE_QUEUE, SUBSCRIBE, UNSUBSCRIBE, TX_COMMIT, TX_ROLLBACK -> FrameType.OK;
            case PRODUCER_INIT -> FrameType.PRODUCER_OK;
            default -> throw new IllegalArgumentException(request + " is not a request: nothing answers it");
        };
    }

    /**
     * Registers a request of type {@code request} and returns its id; it fails with {@link SluiceTimeoutException} after
     * {@code timeoutMs}. Its outcome is handed over by {@code by}.
     */
    long add(FrameType request, String description, CompletableFuture<Frame> future, long timeoutMs, String peer,
             Completer by) {
        long requestId = nextId();
        add(requestId, request, description, future, timeoutMs, peer, by);
        return requestId;
    }

    /**
     * A fresh request id, for a frame built before its request is registered with
     * {@link #add(long, FrameType, String, CompletableFuture, long, String)}.
     */
    long nextId() {
        return nextRequestId++;
    }

    /**
     * Registers request {@code requestId} ({@link #nextId()}) of type {@code request}; it fails with
     * {@link SluiceTimeoutException} after {@code timeoutMs}.
     */
    void add(long requestId, FrameType request, String description, CompletableFuture<Frame> future, long timeoutMs, String peer) {
        add(requestId, request, description, future, timeoutMs, peer, completer);
    }

    /** As {@link #add(long, FrameType, String, CompletableFuture, long, String)}, its outcome handed over by {@code by}. */
    void add(long requestId, FrameType request, String description, CompletableFuture<Frame> future, long timeoutMs,
             String peer, Completer by) {
        FrameType expected = answerTypeOf(request);
        ScheduledFuture<?> timeout = loop.schedule(() -> {
            Pending unanswered = byId.remove(requestId);
            if (unanswered != null) {
                settle(unanswered, null, new SluiceTimeoutException(description
                        + " got no answer from " + peer + " within " + timeoutMs + " ms"));
            }
        }, timeoutMs, TimeUnit.MILLISECONDS);
        byId.put(requestId, new Pending(description, expected, future, timeout, by));
    }

    /**
     * Hands {@code request}'s outcome to its completer; if that throws, the request fails with what it threw, logged.
     * The request is removed by then. Thrown on, a timeout's exception would go to Netty's log, an answer's or a loss's
     * into the pipeline, and the request's future would never complete.
     */
    private static void settle(Pending request, Frame answer, Throwable failure) {
        OwingTask.run(LOG, "completing " + request.description(), "the request fails with the exception",
                thrown -> request.future().completeExceptionally(thrown),
                () -> request.completer().complete(request.future(), answer, failure));
    }

    /**
     * An answer to request {@code requestId} arrived (an answer to no pending request is dropped). One of another type
     * than the request accepts fails it with the {@link UnexpectedAnswerException} returned, for the caller to close the
     * connection with; null if none.
     */
    UnexpectedAnswerException answered(long requestId, Frame answer) {
        Pending request = byId.remove(requestId);
        if (request == null) {
            return null;
        }
        request.timeout().cancel(false);
        if (answer.type() != request.expected()) {
            UnexpectedAnswerException unexpected = new UnexpectedAnswerException(request.description(), requestId,
                    request.expected(), answer.type());
            settle(request, null, unexpected);
            return unexpected;
        }
        settle(request, answer, null);
        return null;
    }

    /**
     * Request {@code requestId} could not be written ({@code failure}, the encoder's): it fails at once, if still pending,
     * rather than wait out its timeout and report that the broker did not answer.
     */
    void unwritten(long requestId, Throwable failure) {
        Pending request = byId.remove(requestId);
        if (request != null) {
            request.timeout().cancel(false);
            Throwable cause = failure.getCause() != null ? failure.getCause() : failure;
            settle(request, null, new SluiceException(request.description() + " could not be sent: " + cause.getMessage(), failure));
        }
    }

    /** An ERROR arrived; false if it answers no pending request (an error about the connection itself). */
    boolean refused(ErrorFrame error) {
        Pending request = byId.remove(error.requestId());
        if (request == null) {
            return false;
        }
        request.timeout().cancel(false);
        settle(request, null, new SluiceException(error.errorCode(), error.message(),
                request.description() + " failed: " + error.errorCode() + ": " + error.message()));
        return true;
    }

    /** Fails every pending request with {@code failure} (the connection was lost or closed). */
    void failAll(SluiceException failure) {
        List<Pending> pending = new ArrayList<>(byId.values());
        byId.clear();
        for (Pending request : pending) {
            request.timeout().cancel(false);
            settle(request, null, failure);
        }
    }
}
