package io.sluice.broker.cluster;

import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.ClientConnection;
import io.sluice.broker.queue.ProducerRegistry;
import io.sluice.broker.queue.ProducerLink;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The entries this node submitted and has not applied yet, by call number: who waits for each. When the
 * node applies an entry it submitted, the waiting client gets its answer; an entry this node did not submit,
 * or whose submission it gave up on, is applied for nobody ({@link ReplicaLink}).
 *
 * <p>Rule S1: a submission is forgotten when its entry is applied or when Raft refuses it, whichever comes
 * first. If Raft refused it and the entry is committed after all (a leader change can do that), it is
 * applied for nobody: its client, whose connection was closed, resends and the producer table deduplicates.
 *
 * <p>Threads: thread-safe; added on connections' event loops, taken on the Raft state machine's thread.
 */
final class Submissions {
    private final AtomicLong calls = new AtomicLong();
    private final Map<Long, Object> waiting = new ConcurrentHashMap<>();

    /** A new call number, unique in this process (Raft's retry cache keys on it with this node's client id). */
    long nextCall() {
        return calls.incrementAndGet();
    }

    /** A PUBLISH entry's producer: confirms go to it once the entry is applied here. */
    void publish(long call, ProducerLink link) {
        waiting.put(call, link);
    }

    /** A declare entry's answer. */
    void declare(long call, CompletableFuture<BrokerQueue> answer) {
        waiting.put(call, answer);
    }

    /** A DELETE_QUEUE entry's answer: whether the queue existed. */
    void delete(long call, CompletableFuture<Boolean> answer) {
        waiting.put(call, new DeleteAnswer(answer));
    }

    /** An ACK entry of the ids a purge removed (rule R7) or of a drop (R9), or a dead-letter entry (R8): completed once it is applied here. */
    void applied(long call, CompletableFuture<Void> applied) {
        waiting.put(call, new Applied(applied));
    }

    /** A PRODUCER_INIT entry's registration (rule R11): the connection it registers on, and its answer. */
    void registration(long call, ClientConnection connection, CompletableFuture<ProducerRegistry.Registered> answer) {
        waiting.put(call, new Registration(connection, answer));
    }

    /** Who waits for {@code call}'s registration, forgetting it; null if nobody. */
    Registration takeRegistration(long call) {
        return waiting.remove(call) instanceof Registration registration ? registration : null;
    }

    /** Who waits for {@code call}'s delete, forgetting it; null if nobody. */
    CompletableFuture<Boolean> takeDelete(long call) {
        return waiting.remove(call) instanceof DeleteAnswer answer ? answer.future() : null;
    }

    /** Who waits for {@code call}'s ACK entry of a purge or a drop, or its dead-letter, forgetting it; null if nobody (a consumer's acks). */
    CompletableFuture<Void> takeApplied(long call) {
        return waiting.remove(call) instanceof Applied applied ? applied.future() : null;
    }

    /** Who waits for {@code call}'s PUBLISH, forgetting it; {@link ReplicaLink} if nobody. */
    ProducerLink takePublish(long call) {
        return waiting.remove(call) instanceof ProducerLink link ? link : ReplicaLink.INSTANCE;
    }

    /** Who waits for {@code call}'s declare, forgetting it; null if nobody. */
    @SuppressWarnings("unchecked")
    CompletableFuture<BrokerQueue> takeDeclare(long call) {
        return waiting.remove(call) instanceof CompletableFuture<?> answer ? (CompletableFuture<BrokerQueue>) answer : null;
    }

    /** Rule S1: Raft refused the call; true if it was still waiting (not applied meanwhile). */
    boolean forget(long call) {
        return waiting.remove(call) != null;
    }

    int size() {
        return waiting.size();
    }

    /** Typed holders, so that a call's waiter is never mistaken for another kind's. */
    private record DeleteAnswer(CompletableFuture<Boolean> future) {
    }

    private record Applied(CompletableFuture<Void> future) {
    }

    /** A named producer's registration waiting for its entry: the connection it registers, and who gets the answer. */
    record Registration(ClientConnection connection, CompletableFuture<ProducerRegistry.Registered> answer) {
    }
}
