package io.sluice.broker.queue;

import io.sluice.storage.QueueStore;
import io.sluice.storage.dedup.CorruptProducerStateException;
import io.sluice.storage.dedup.ProducerCheckpoint;
import io.sluice.storage.dedup.ProducerTable;
import io.sluice.storage.segment.SegmentRollCycle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * The producers of one queue and what of theirs is stored, so a resend is stored once (docs/storage.md,
 * "Producer state"): the {@link ProducerTable}, rebuilt at open from the queue's producer checkpoint
 * and the records after it, and checkpointed again whenever appends move into a new segment, every
 * {@value #CHECKPOINT_EVERY_RECORDS} records, when a producer registers, and at a clean shutdown.
 *
 * <p>Ordering: a checkpoint covering records up to id X is written only once X is durable (a
 * checkpoint naming a record a machine crash then lost would confirm its resend unstored), and only
 * once it is written may reclaim delete the segments before X's ({@link
 * QueueStore#producerStateCoveredThrough}), so every record the table knows of is either in a durable
 * checkpoint or still in a segment that the next start replays.
 *
 * <p>Threads: owned by the queue's executor (every method but the file write); a checkpoint's image
 * is copied there, written on {@code writer} (one thread for the broker), and {@link #written} is
 * touched only there.
 */
public final class ProducerRegistry {
    private static final Logger LOG = LoggerFactory.getLogger(ProducerRegistry.class);
    /**
     * A checkpoint at least this often, in records stored, besides one per segment: what a start after
     * kill -9 replays stays bounded (a whole segment of small messages took a large part of the
     * restart budget), while a table of many producers is encoded only a few times a second.
     */
    static final int CHECKPOINT_EVERY_RECORDS = 50_000;

    private final String queue;
    private final QueueStore store;
    private final ProducerTable table;
    private final Executor writer;
    /**
     * False with {@code queues.dedup-enabled: false}: the table then tracks only the transaction
     * coordinator ({@link ProducerTable#TRANSACTIONS_PRODUCER_ID}), whose committed publishes a restart
     * must still tell apart, and every client publish is new.
     */
    private final boolean deduplicates;

    /** Queue thread: the id of the last record the table holds, -1 if none. */
    private long lastRecordId;
    /** Queue thread: the segment of the newest checkpoint taken, so a move into a new one takes the next. */
    private int checkpointedSegment = Integer.MIN_VALUE;
    /** Queue thread: a publish or registration changed the table since the last checkpoint was taken. */
    private boolean changed;
    /** Writer thread writes, any reads: the last checkpoint written failed, so the table is not on disk as it stands. */
    private volatile boolean lastCheckpointFailed;
    /** Queue thread: records stored since the last checkpoint was taken. */
    private int storedSinceCheckpoint;
    /** Queue thread: checkpoints taken, each with the next generation. */
    private long generation;
    /** Writer thread: the newest generation written; an older image that comes late is not written over it. */
    private long written;
    /**
     * Queue thread: the connection each named producer registered on last. A publish under a named
     * producer's id from any other connection is fenced: an older instance, or one that never registered.
     */
    private final java.util.Map<Long, ClientConnection> owners = new java.util.HashMap<>();

    private ProducerRegistry(String queue, QueueStore store, ProducerTable table, Executor writer, boolean deduplicates) {
        this.queue = queue;
        this.deduplicates = deduplicates;
        this.store = store;
        this.table = table;
        this.writer = writer;
    }

    /**
     * Rebuilds the table of the queue in {@code store}: its checkpoint, then every record after the
     * id the checkpoint covers; then takes a checkpoint, so that reclaim may go on. A damaged
     * checkpoint is reported and set aside: the table is then rebuilt from the records still stored
     * (resends of messages already reclaimed are stored again).
     */
    static ProducerRegistry open(String queue, QueueStore store, ProducerTable table, Executor writer, boolean deduplicates) {
        ProducerRegistry registry = new ProducerRegistry(queue, store, table, writer, deduplicates);
        long started = System.nanoTime();
        // Until this registry has a durable checkpoint of its own, reclaim keeps every segment (R6).
        store.producerStateCoveredThrough(-1);
        long covered = -1;
        boolean readable = true;
        try {
            ProducerCheckpoint.Loaded loaded = ProducerCheckpoint.read(store.directory());
            if (loaded != null) {
                covered = loaded.coveredThroughId();
                for (ProducerCheckpoint.Entry e : loaded.producers()) {
                    table.restore(e.id(), e.epoch(), e.highest(), e.lastSeenMillis(), e.gapRanges());
                }
            }
        } catch (CorruptProducerStateException e) {
            readable = false;
            LOG.error("Queue '{}': {}; the producer state is rebuilt from the stored records alone, so a resend of a "
                    + "message already reclaimed is stored again.", queue, e.getMessage());
        } catch (IOException e) {
            readable = false;
            LOG.error("Queue '{}': could not read its producer state ({}); it is rebuilt from the stored records alone.",
                    queue, e.toString());
        }
        registry.lastRecordId = covered;
        long[] replayed = new long[1];
        long[] seen = new long[1];
        long damaged = store.forEachRecordAfter(covered, (id, record) -> {
            registry.lastRecordId = id;
            seen[0]++;
            if (!record.forwarded() && (deduplicates || record.producerId() == ProducerTable.TRANSACTIONS_PRODUCER_ID)) {
                table.stored(record.producerId(), 0, record.producerSequence(), record.timestampMillis());
                replayed[0]++;
            }
        });
        table.expire(store.nowMillis());
        if (replayed[0] > 0 || damaged > 0) { // after a clean shutdown there is nothing to replay, and nothing to say
            LOG.info("Queue '{}': producer state of {} producers rebuilt in {} ms, {} records replayed after the checkpoint ({} damaged).",
                    queue, table.tracked(), (System.nanoTime() - started) / 1_000_000, replayed[0], damaged);
        }
        if (readable && seen[0] == 0 && damaged == 0) {
            // Nothing after the checkpoint (a clean shutdown, a new queue): it stands as it is, no write and no fsync.
            store.producerStateCoveredThrough(covered);
        } else {
            registry.checkpoint();
        }
        return registry;
    }

    /** What to do with a publish of {@code sequence} by {@code producerId} arriving on {@code connection}. */
    ProducerTable.Verdict check(ClientConnection connection, long producerId, long sequence) {
        if (producerId == ProducerTable.TRANSACTIONS_PRODUCER_ID) {
            return ProducerTable.Verdict.FENCED; // the coordinator's, never a client's
        }
        if (!deduplicates) {
            return ProducerTable.Verdict.NEW;
        }
        return table.check(producerId, epochOf(connection, producerId), sequence, store.nowMillis());
    }

    /** The epoch {@code connection} holds for {@code producerId}: the table's if it registered there last, else 0. */
    int epochOf(ClientConnection connection, long producerId) {
        if (owners.isEmpty() || owners.get(producerId) != connection) {
            return 0;
        }
        return table.epoch(producerId);
    }

    /** Forgets the connections that closed: the named producers registered on them are no longer anyone's. */
    void forgetClosedConnections() {
        owners.values().removeIf(owner -> !owner.isActive());
    }

    /** The sentence of a PUBLISH_ERROR for a publish {@link #check} refused. */
    String refusal(ProducerTable.Verdict verdict, long producerId, long sequence) {
        if (producerId == ProducerTable.TRANSACTIONS_PRODUCER_ID) {
            return "producer id " + producerId + " is reserved for the broker's transactions; sequence " + sequence
                    + " was not stored on queue '" + queue + "'";
        }
        if (verdict == ProducerTable.Verdict.FENCED) {
            return "producer " + producerId + " is fenced on queue '" + queue + "': a newer instance registered under its name "
                    + "(epoch " + table.epoch(producerId) + "), or this connection never registered it; sequence "
                    + sequence + " was not stored";
        }
        return "sequence " + sequence + " of producer " + producerId + " is " + table.window() + " or more below the highest "
                + "stored on queue '" + queue + "' (" + table.lastStoredSequence(producerId) + "), too far to tell a "
                + "resend from a new message; it was not stored";
    }

    /** The answer to a registration: the epoch granted (-1 if fenced), the last stored sequence, and the current epoch. */
    public record Registered(int epoch, long lastSequence, int currentEpoch) {
    }

    /** A publish that {@link #check} found new was appended as record {@code id}. */
    void stored(ClientConnection connection, long producerId, long sequence, long id) {
        if (deduplicates) {
            table.stored(producerId, epochOf(connection, producerId), sequence, store.nowMillis());
            changed = true;
        }
        recorded(id);
    }

    /**
     * A publish of a committed transaction was appended as record {@code id} under the coordinator's
     * producer id with {@code sequence}; see {@link #transactionsAppliedThrough}.
     */
    void storedByTransaction(long sequence, long id) {
        table.stored(ProducerTable.TRANSACTIONS_PRODUCER_ID, 0, sequence, store.nowMillis());
        changed = true;
        recorded(id);
    }

    /**
     * A record the table has nothing to learn from was appended as {@code id} (a forwarded dead
     * letter): the checkpoints still move past it, so reclaim is not held back by it (R6).
     */
    void appended(long id) {
        recorded(id);
    }

    /**
     * The highest sequence the transaction coordinator applied here (0 if none): the coordinator
     * applies its sequences in increasing order, so every one at or below it is stored.
     */
    long transactionsAppliedThrough() {
        return table.lastStoredSequence(ProducerTable.TRANSACTIONS_PRODUCER_ID);
    }

    /** True unless deduplication is off ({@link #deduplicates}). */
    boolean deduplicates() {
        return deduplicates;
    }

    private void recorded(long id) {
        lastRecordId = id;
        if (++storedSinceCheckpoint >= CHECKPOINT_EVERY_RECORDS || SegmentRollCycle.INSTANCE.toCycle(id) != checkpointedSegment) {
            checkpoint();
        }
    }

    /**
     * Registers an instance of producer {@code producerId} ({@link ProducerTable#register}); completes
     * with the answer once a checkpoint holding it is durable, or at once with epoch -1 if fenced.
     */
    CompletableFuture<Registered> register(ClientConnection connection, long producerId, int requestedEpoch) {
        int epoch = table.register(producerId, requestedEpoch, store.nowMillis());
        Registered answer = new Registered(epoch, table.lastStoredSequence(producerId), table.epoch(producerId));
        if (epoch < 0) {
            return CompletableFuture.completedFuture(answer);
        }
        owners.put(producerId, connection);
        return checkpoint().thenApply(written -> answer);
    }

    /** True if a publish or registration changed the table since the last checkpoint was taken. */
    boolean changedSinceCheckpoint() {
        return changed || lastCheckpointFailed;
    }

    ProducerTable table() {
        return table;
    }

    /**
     * Copies the table now and writes it once the records it covers are durable; completes when it is
     * written (or a newer one was), exceptionally if it could not be.
     */
    CompletableFuture<Void> checkpoint() {
        table.expire(store.nowMillis());
        changed = false;
        storedSinceCheckpoint = 0;
        long covered = lastRecordId;
        long thisGeneration = ++generation;
        checkpointedSegment = covered < 0 ? Integer.MIN_VALUE : SegmentRollCycle.INSTANCE.toCycle(covered);
        ByteBuffer image = ProducerCheckpoint.encode(table, covered);
        CompletableFuture<Long> durable = covered < 0 ? CompletableFuture.completedFuture(covered) : store.whenDurable(covered);
        CompletableFuture<Void> done = new CompletableFuture<>();
        durable.whenCompleteAsync((ignored, notDurable) -> {
            if (notDurable != null) {
                fail(done, notDurable);
                return;
            }
            if (thisGeneration <= written) {
                done.complete(null);
                return;
            }
            try {
                store.writeProducerCheckpoint(image);
                written = thisGeneration;
                lastCheckpointFailed = false;
                store.producerStateCoveredThrough(covered);
                done.complete(null);
            } catch (IOException | RuntimeException e) {
                fail(done, e);
            }
        }, writer);
        return done;
    }

    private void fail(CompletableFuture<Void> done, Throwable cause) {
        lastCheckpointFailed = true;
        LOG.warn("Queue '{}': the producer state could not be checkpointed ({}); reclaim keeps the segments it "
                + "does not cover until a later checkpoint succeeds.", queue, cause.toString());
        done.completeExceptionally(cause);
    }
}
