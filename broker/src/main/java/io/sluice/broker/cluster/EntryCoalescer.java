package io.sluice.broker.cluster;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.BooleanSupplier;

/**
 * Coalesces the entries this node submits into fewer Raft entries ({@link EntryBatch}), without a timer: an entry
 * is sent at once when nothing is in flight, so a lone publish waits for nobody; while a submission is in flight,
 * entries wait and go together when it returns, or as soon as {@code sendBytes} of them wait (so that a busy node
 * keeps several submissions in flight, as it did with one entry each). A Raft entry holds at most {@code capBytes}
 * of entries (an entry larger than that, and a dead-letter, goes alone, as it is), so every buffer sized for one
 * PUBLISH frame holds a batch ({@link RaftSettings}). Entries are sent in the order they were added, which keeps
 * each producer's order (its frames are added in order by its queue's executor) and Raft's log order. While the
 * cluster's entry level is below {@value EntryBatch#VERSION} (rule R12: a node that does not read batches is still in
 * the cluster), nothing is batched: each entry is sent at once as a Raft entry of its own, as before batches.
 *
 * <p>Threads: {@link #add} on any thread (connections' event loops, queues' executors); replies on whichever thread
 * completes them (Ratis's, or the queue's executor whose work ended an apply).
 * The pending entries and the count in flight are guarded by this object; sending happens outside the lock, by one
 * thread at a time (the one that found nobody else {@code draining}), so that sends keep the order of the adds and
 * no lock of ours is held while Ratis runs (a reply completed inside a send only counts down and returns).
 */
final class EntryCoalescer {
    /** Sends one Raft entry; completes with Raft's refusal, or null once the entry is committed and applied here. */
    interface Sender {
        CompletableFuture<Throwable> send(byte[] entry, String what);
    }

    private record Pending(byte[] entry, String what, CompletableFuture<Throwable> outcome) {
    }

    private final Sender sender;
    private final int capBytes;
    private final int sendBytes;
    /** Whether batches may be written now: the cluster's entry level allows them (read at each send). */
    private final BooleanSupplier batching;
    private final ArrayDeque<Pending> pending = new ArrayDeque<>();
    private long pendingBytes;
    private int inFlight;
    private boolean draining;

    EntryCoalescer(Sender sender, int capBytes, int sendBytes) {
        this(sender, capBytes, sendBytes, () -> true);
    }

    EntryCoalescer(Sender sender, int capBytes, int sendBytes, BooleanSupplier batching) {
        if (sendBytes > capBytes) {
            throw new IllegalArgumentException("sendBytes " + sendBytes + " > capBytes " + capBytes);
        }
        this.sender = sender;
        this.capBytes = capBytes;
        this.sendBytes = sendBytes;
        this.batching = batching;
    }

    /** Submits {@code entry}; completes as its Raft entry's submission does (with the refusal, or null). */
    CompletableFuture<Throwable> add(byte[] entry, String what) {
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        synchronized (this) {
            pending.add(new Pending(entry, what, outcome));
            pendingBytes += entry.length;
            if (draining) {
                return outcome;
            }
            draining = true;
        }
        drain();
        return outcome;
    }

    /** Submissions in flight (for tests). */
    synchronized int inFlight() {
        return inFlight;
    }

    /** Sends what may be sent now, in order, until nothing may; only the thread that set {@code draining}. */
    private void drain() {
        while (true) {
            List<Pending> batch;
            synchronized (this) {
                batch = next();
                if (batch == null) {
                    draining = false;
                    return;
                }
                inFlight++;
            }
            send(batch);
        }
    }

    /** The next Raft entry's entries, or null if none is due: nothing waits, or one is in flight and few bytes wait. */
    private List<Pending> next() {
        if (pending.isEmpty()) {
            return null;
        }
        if (!batching.getAsBoolean()) {
            Pending head = pending.poll();
            pendingBytes -= head.entry().length;
            return List.of(head);
        }
        if (inFlight > 0 && pendingBytes < sendBytes) {
            return null;
        }
        List<Pending> batch = new ArrayList<>();
        long bytes = 0;
        while (!pending.isEmpty() && batch.size() < EntryBatch.MAX_ENTRIES) {
            Pending head = pending.peek();
            boolean alone = head.entry().length > capBytes || !EntryBatch.batchable(head.entry());
            if (!batch.isEmpty() && (alone || bytes + head.entry().length > capBytes)) {
                break;
            }
            batch.add(pending.poll());
            bytes += head.entry().length;
            pendingBytes -= head.entry().length;
            if (alone) {
                break;
            }
        }
        return batch;
    }

    private void send(List<Pending> batch) {
        CompletableFuture<Throwable> reply;
        try {
            if (batch.size() == 1) {
                reply = sender.send(batch.get(0).entry(), batch.get(0).what());
            } else {
                List<byte[]> entries = new ArrayList<>(batch.size());
                for (Pending p : batch) {
                    entries.add(p.entry());
                }
                reply = sender.send(EntryBatch.encode(entries), batch.size() + " entries (the first " + batch.get(0).what() + ")");
            }
        } catch (RuntimeException e) {
            reply = CompletableFuture.completedFuture(e);
        }
        reply.whenComplete((refusal, failure) -> {
            Throwable outcome = failure != null ? failure : refusal;
            for (Pending p : batch) {
                p.outcome().complete(outcome);
            }
            boolean drainHere;
            synchronized (this) {
                inFlight--;
                drainHere = !draining && !pending.isEmpty();
                if (drainHere) {
                    draining = true;
                }
            }
            if (drainHere) {
                drain();
            }
        });
    }
}
