package io.sluice.broker.queue;

import io.sluice.protocol.IdRange;
import io.sluice.protocol.PublishFrame;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.StoredMessage;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * A cluster's replicated log, played by a test, for the leader's own decisions (rules R5, R7, R9 of docs/replication.md):
 * it records what a queue submits (a purge's ids, a drop, the publishes it admitted, a consumer's acks) and answers
 * nothing by itself: the test applies, refuses or leaves each entry.
 */
final class LogStub implements Replication {
    /** A purge's or a drop's entries as submitted: their ids, and the future the test completes once they are applied (or refused). */
    record Submitted(List<IdRange> ids, CompletableFuture<Void> applied) {
    }

    final BlockingQueue<Submitted> purges = new LinkedBlockingQueue<>();
    final BlockingQueue<Submitted> drops = new LinkedBlockingQueue<>();
    /** The message count of each PUBLISH frame the queue admitted and submitted (the frame itself is released). */
    final BlockingQueue<Integer> publishes = new LinkedBlockingQueue<>();
    final BlockingQueue<List<IdRange>> acks = new LinkedBlockingQueue<>();

    @Override
    public CompletableFuture<Void> purged(BrokerQueue queue, List<IdRange> ids) {
        CompletableFuture<Void> applied = new CompletableFuture<>();
        purges.add(new Submitted(List.copyOf(ids), applied));
        return applied;
    }

    @Override
    public CompletableFuture<Void> dropped(BrokerQueue queue, long id) {
        CompletableFuture<Void> applied = new CompletableFuture<>();
        drops.add(new Submitted(List.of(IdRange.single(id)), applied));
        return applied;
    }

    /** The queue's quota check, as the leader runs it before it submits (R9); what it admits is recorded, not applied. */
    @Override
    public void publish(BrokerQueue queue, ProducerLink link, PublishFrame frame) {
        queue.admit(link, frame, 1L << 30, (admitted, epochs) -> {
            publishes.add(admitted.messageCount());
            admitted.release();
        });
    }

    @Override
    public void acked(BrokerQueue queue, List<IdRange> ids) {
        acks.add(List.copyOf(ids));
    }

    @Override
    public String notLeader() {
        return null;
    }

    @Override
    public boolean awaitingLeader(long askedAtNanos) {
        return false;
    }

    @Override
    public long leaderWaitMillis() {
        return 0;
    }

    @Override
    public CompletableFuture<BrokerQueue> declare(String name, QueueSettings settings) {
        throw new UnsupportedOperationException("no declare in these tests");
    }

    @Override
    public CompletableFuture<Boolean> delete(String name) {
        throw new UnsupportedOperationException("no delete in these tests");
    }

    @Override
    public CompletableFuture<Void> deadLetter(BrokerQueue source, StoredMessage original, String deadLetterQueue, ByteBuffer headers) {
        throw new UnsupportedOperationException("no dead-letter in these tests");
    }

    @Override
    public CompletableFuture<ProducerRegistry.Registered> registerProducer(BrokerQueue queue, ClientConnection connection,
                                                                           String producerName, long producerId, int requestedEpoch) {
        throw new UnsupportedOperationException("no named producer in these tests");
    }

    @Override
    public void delivered(BrokerQueue queue, long[] ids, int[] counts, int n) {
    }
}
