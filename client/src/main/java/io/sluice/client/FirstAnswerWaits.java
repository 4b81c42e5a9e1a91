package io.sluice.client;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The application calls of one {@link Connection} waiting for the first answer to a request the network thread sends
 * for them, once per network connection until one is answered: subscribe() for its consumer's SUBSCRIBE
 * ({@link ConsumerSubscriptions}), createProducer for its named producer's PRODUCER_INIT
 * ({@link NamedProducerRegistrations}), each under the key {@code K} of what it registers. A request lost with its
 * network connection is sent again by the next handshake, unless the connection does not reconnect.
 *
 * <p>Threads: owned by the network thread; each call's future completes where callbacks run.
 */
final class FirstAnswerWaits<K, R> {
    private final Connection connection;
    private final Map<K, CompletableFuture<R>> waiting = new HashMap<>();

    FirstAnswerWaits(Connection connection) {
        this.connection = connection;
    }

    /** {@code call} waits for the first answer to {@code key}'s request. */
    void add(K key, CompletableFuture<R> call) {
        waiting.put(key, call);
    }

    boolean contains(K key) {
        return waiting.containsKey(key);
    }

    /**
     * Whether the call for {@code key} gave up (its future completed by the caller) and its work to forget what it
     * registered, queued behind, has not run yet: a handshake meanwhile must send nothing for it, or its SUBSCRIBE or
     * PRODUCER_INIT would register a consumer or producer nobody holds.
     */
    boolean givenUp(K key) {
        CompletableFuture<R> call = waiting.get(key);
        return call != null && call.isDone();
    }

    /** The call for {@code key} gave up, and what it registered is forgotten: its request's answer is not taken. */
    void remove(K key) {
        waiting.remove(key);
    }

    /** The keys whose calls wait, those that gave up left out. */
    List<K> keys() {
        return waiting.entrySet().stream().filter(entry -> !entry.getValue().isDone()).map(Map.Entry::getKey).toList();
    }

    /** The connection closed: every call still waiting fails with {@code closed}. */
    void failAll(ConnectionLostException closed) {
        for (CompletableFuture<R> call : List.copyOf(waiting.values())) {
            connection.completeOnDispatch(call, null, closed);
        }
        waiting.clear();
    }

    /**
     * Takes the outcome of {@code key}'s request, {@code failure} null if it was answered: answered, the call returns
     * what {@code onAnswered} gives; lost with its network connection while the connection reconnects, nothing (the
     * next handshake sends it again); refused or unanswered, the call fails with the reason, after {@code onRefused}.
     * Nothing either for a call that gave up: its own work forgets what it registered.
     *
     * <p>This runs in a continuation on the network thread, where what it throws would stay in a future nobody reads:
     * so an {@code onAnswered} that throws fails the call with that exception, and the call refused fails with its
     * reason whatever {@code onRefused} does.
     */
    void take(K key, Throwable failure, Supplier<R> onAnswered, Consumer<Throwable> onRefused) {
        CompletableFuture<R> call = waiting.get(key);
        if (call == null || call.isDone()) {
            return;
        }
        Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
        if (cause == null) {
            waiting.remove(key);
            R answer;
            try {
                answer = onAnswered.get();
            } catch (RuntimeException | Error e) {
                connection.completeOnDispatch(call, null, e);
                return;
            }
            connection.completeOnDispatch(call, answer, null);
            return;
        }
        if (cause instanceof ConnectionLostException && connection.resendsAfterLoss()) {
            return;
        }
        waiting.remove(key);
        try {
            onRefused.accept(cause);
        } finally {
            connection.completeOnDispatch(call, null, cause);
        }
    }
}
