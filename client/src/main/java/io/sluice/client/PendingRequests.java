package io.sluice.client;

import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.ScheduledFuture;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.Frame;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The requests of one {@link Connection} waiting for their answer (OK, PRODUCER_OK, ERROR), by request
 * id, each with its timeout. Owned by the connection's network thread: every method runs there.
 * Futures are completed through {@link Completer}, which puts callbacks where the connection runs them, or, for the
 * requests whose answer the client takes itself ({@link #ON_LOOP}), on the network thread.
 */
final class PendingRequests {
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

    private record Pending(String description, CompletableFuture<Frame> future, ScheduledFuture<?> timeout,
                           Completer completer) {
    }

    private final EventExecutor loop;
    private final Completer completer;
    private final Map<Long, Pending> byId = new HashMap<>();
    private long nextRequestId = 1;

    PendingRequests(EventExecutor loop, Completer completer) {
        this.loop = loop;
        this.completer = completer;
    }

    /** Registers a request and returns its id; it fails with {@link SluiceTimeoutException} after {@code timeoutMs}. */
    long add(String description, CompletableFuture<Frame> future, long timeoutMs, String peer) {
        long requestId = nextId();
        add(requestId, description, future, timeoutMs, peer);
        return requestId;
    }

    /** A fresh request id, for a frame built before its request is registered with {@link #add(long, String, CompletableFuture, long, String)}. */
    long nextId() {
        return nextRequestId++;
    }

    /** Registers request {@code requestId} ({@link #nextId()}); it fails with {@link SluiceTimeoutException} after {@code timeoutMs}. */
    void add(long requestId, String description, CompletableFuture<Frame> future, long timeoutMs, String peer) {
        add(requestId, description, future, timeoutMs, peer, completer);
    }

    /** As {@link #add(long, String, CompletableFuture, long, String)}, its outcome handed over by {@code by}. */
    void add(long requestId, String description, CompletableFuture<Frame> future, long timeoutMs, String peer, Completer by) {
        ScheduledFuture<?> timeout = loop.schedule(() -> {
            if (byId.remove(requestId) != null) {
                by.complete(future, null, new SluiceTimeoutException(description
                        + " got no answer from " + peer + " within " + timeoutMs + " ms"));
            }
        }, timeoutMs, TimeUnit.MILLISECONDS);
        byId.put(requestId, new Pending(description, future, timeout, by));
    }

    /** The answer to request {@code requestId} arrived; an answer to no pending request is dropped. */
    void answered(long requestId, Frame answer) {
        Pending request = byId.remove(requestId);
        if (request != null) {
            request.timeout().cancel(false);
            request.completer().complete(request.future(), answer, null);
        }
    }

    /** An ERROR arrived; false if it answers no pending request (an error about the connection itself). */
    boolean refused(ErrorFrame error) {
        Pending request = byId.remove(error.requestId());
        if (request == null) {
            return false;
        }
        request.timeout().cancel(false);
        request.completer().complete(request.future(), null, new SluiceException(error.errorCode(), error.message(),
                request.description() + " failed: " + error.errorCode() + ": " + error.message()));
        return true;
    }

    /** Fails every pending request with {@code failure} (the connection was lost or closed). */
    void failAll(SluiceException failure) {
        List<Pending> pending = new ArrayList<>(byId.values());
        byId.clear();
        for (Pending request : pending) {
            request.timeout().cancel(false);
            request.completer().complete(request.future(), null, failure);
        }
    }
}
