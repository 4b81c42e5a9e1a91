package io.sluice.broker.queue;

import io.netty.util.collection.LongObjectHashMap;
import io.netty.util.collection.LongObjectMap;
import io.sluice.broker.log.RateLimitedLog;
import io.sluice.broker.error.BrokerException;
import io.sluice.protocol.ErrorCode;
import io.sluice.storage.QueueStore;
import io.sluice.storage.dedup.CorruptProducerStateException;
import io.sluice.storage.dedup.ProducerCheckpoint;
import io.sluice.storage.dedup.ProducerTable;
import io.sluice.storage.segment.SegmentRollCycle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Collections;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
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
 * <p>Registrations (P2, docs/broker-core.md): the epoch a registration is granted is in the table,
 * and its connection the producer's owner, from the moment it is made, so that the last stored
 * sequence it answers with cannot move under the new instance; if its checkpoint then fails, the
 * registration is undone, unless another registered since (whose epoch may build on it): a
 * registration never answered leaves neither an epoch nor an owner behind.
 *
 * <p>A checkpoint that could not be written is tried again with a bounded backoff ({@link CheckpointRetry}), so that
 * what it holds back from reclaim goes without waiting for traffic to ask for the next one.
 *
 * <p>Threads: owned by the queue's executor, {@code queueThread} (every method but the file write); a
 * checkpoint's image is copied there, written on {@code writer} (one thread for the broker), and
 * {@link #written} is touched only there.
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
    private final Executor queueThread;
    private final Executor writer;
    /** Queue thread: asks for a checkpoint again after one failed (rule "a failed checkpoint is retried"). */
    private final CheckpointRetry retry;
    /** The broker's log of failed checkpoints, shared by the queues: a failing disk fails every queue's, again and again. */
    private final RateLimitedLog failureLog;
    /** Writer thread writes, any reads: checkpoints that could not be written since the queue opened. */
    private volatile long checkpointFailures;
    /**
     * False with {@code queues.dedup-enabled: false}: the table then tracks no producer, and every
     * client publish is new.
     */
    private final boolean deduplicates;
    /** On a cluster node, the replicated PUBLISH entries this queue holds (rule R4a), kept in {@link #table}. */
    private final AppliedPublishes appliedPublishes;

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
    /** Queue thread: {@link ProducerTable#evictionsBeforeMarker} as last logged. */
    private long reportedEvictionsBeforeMarker;
    /** Queue thread: checkpoints taken, each with the next generation. */
    private long generation;
    /** Writer thread: the newest generation written; an older image that comes late is not written over it. */
    private long written;
    /** Queue thread: what the requests made since the checkpoint in flight was taken wait for; null if none. */
    private CompletableFuture<Void> nextCheckpoint;
    /** Queue thread: a checkpoint was taken and is not written (or failed) yet. */
    private boolean checkpointInFlight;
    /**
     * Queue thread: the connection each named producer registered on last, and the epoch it was
     * granted. A publish under a named producer's id from any other connection is fenced: an older
     * instance, or one that never registered; this holds also once the table forgot the producer.
     */
    private final LongObjectMap<Owner> owners = new LongObjectHashMap<>();
    /**
     * Queue thread: per open connection, the named producers it registered whose owner a newer instance then became
     * (on another connection, or on another node): that connection stays fenced for them (P2), also once the newer
     * instance's connection closed and the table forgot the producer, when neither {@link #owners} nor the table's
     * epoch would fence it any more (such a zombie's publishes would be stored). Dropped when the
     * connection closes. Bounded apart from the owners (rule "fences bounded", {@link #keepFencesBounded}), in the
     * order connections were first fenced (a connection's entry goes when its last fence does). Connections never
     * override {@code equals}: keys are by identity.
     */
    private final Map<ClientConnection, Set<Long>> superseded = new LinkedHashMap<>();
    /** Queue thread: the ids held in {@link #superseded}, all connections together. */
    private int supersededCount;
    /**
     * Queue thread: connections whose fences were dropped to keep them bounded ({@link #keepFencesBounded}) and that
     * were told to close: until their {@link #connectionClosed}, every publish from them is fenced but under a named
     * producer they own. One entry a connection, whatever it was fenced for.
     */
    private final Set<ClientConnection> closing = Collections.newSetFromMap(new IdentityHashMap<>());
    /** Queue thread: registrations made, so that a failed one is undone only if none came after it. */
    private long registrations;
    /**
     * Queue thread: the last answer of {@link #epochOf} (none while {@link #resolvedConnection} is
     * null): a frame's messages are usually one producer's, so one lookup in {@link #owners} serves
     * the frame. Cleared whenever {@link #owners} changes.
     */
    private ClientConnection resolvedConnection;
    private long resolvedProducer;
    private int resolvedEpoch;
    /**
     * Queue thread: while a cluster node applies a PUBLISH entry ({@link #withEntryEpochs}), the epochs its leader
     * resolved when it admitted the frame, which decide fencing instead of this node's connections (rule R11 of
     * docs/replication.md); null otherwise.
     */
    private ProducerEpochs entryEpochs;

    /** The connection a named producer's newest instance registered on, and the epoch it holds. */
    private record Owner(ClientConnection connection, int epoch) {
    }

    private ProducerRegistry(String queue, QueueStore store, ProducerTable table, Executor queueThread, Executor writer,
                             CheckpointRetry.Timer retryTimer, boolean deduplicates, RateLimitedLog failureLog) {
        this.queue = queue;
        this.failureLog = failureLog;
        this.retry = new CheckpointRetry(retryTimer, () -> store.isClosed() || store.failure() != null, () -> {
            if (lastCheckpointFailed && !checkpointInFlight) {
                checkpoint();
            }
        });
        this.deduplicates = deduplicates;
        this.store = store;
        this.table = table;
        this.queueThread = queueThread;
        this.writer = writer;
        this.appliedPublishes = new AppliedPublishes(table, store);
    }

    /**
     * Rebuilds the table of the queue in {@code store}: its checkpoint, then every record after the
     * id the checkpoint covers; then takes a checkpoint, so that reclaim may go on. A damaged
     * checkpoint is reported and set aside: the table is then rebuilt from the records still stored
     * (resends of messages already reclaimed are stored again), which carry no epochs, so its epoch
     * marks are lost ({@link ProducerTable#loseEpochMarks}). So they are for a queue holding records and
     * no checkpoint: its first record takes one, as every registration does, so that only a file removed
     * from outside, or a kill before the first was written (nothing registered then), leaves none.
     *
     * @param retryTimer schedules a retry of a failed checkpoint on {@code queueThread}
     * @param failureLog where failed checkpoints are logged (the broker's, rate-limited across its queues)
     */
    static ProducerRegistry open(String queue, QueueStore store, ProducerTable table, Executor queueThread, Executor writer,
                                 CheckpointRetry.Timer retryTimer, boolean deduplicates, RateLimitedLog failureLog) {
        ProducerRegistry registry = new ProducerRegistry(queue, store, table, queueThread, writer, retryTimer, deduplicates,
                failureLog);
        long started = System.nanoTime();
        // Until this registry has a durable checkpoint of its own, reclaim keeps every segment (R6).
        store.producerStateCoveredThrough(-1);
        long covered = -1;
        boolean readable = true;
        boolean absent = false;
        try {
            ProducerCheckpoint.Loaded loaded = ProducerCheckpoint.read(store.directory());
            if (loaded != null) {
                covered = loaded.coveredThroughId();
                loaded.restoreInto(table);
            } else {
                absent = true;
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
            if (record.logPosition() >= 0) {
                registry.appliedPublishes.stored(record.logPosition(), id);
            }
            // Forwarded and transactional records carry no producer of this queue (a transaction's number instead);
            // ProducerTable.TRANSACTIONS_PRODUCER_ID is on records an earlier broker applied for its transactions.
            if (deduplicates && !record.forwarded() && !record.transactional()
                    && record.producerId() != ProducerTable.TRANSACTIONS_PRODUCER_ID) {
                table.stored(record.producerId(), 0, record.producerSequence(), record.timestampMillis());
                replayed[0]++;
            } else if (record.forwarded() && (record.producerId() == ProducerTable.DEAD_LETTER_COPIES_PRODUCER_ID
                    || record.producerId() == ProducerTable.CLUSTER_TRANSACTIONS_PRODUCER_ID)) {
                table.stored(record.producerId(), 0, record.producerSequence(), record.timestampMillis()); // R8's copies, R13's messages
            }
        });
        if (!readable || absent && (seen[0] > 0 || damaged > 0)) {
            table.loseEpochMarks(); // checkGranted: a resume above the marks may be an instance's this queue granted
        }
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

    /**
     * What to do with a publish of {@code sequence} by {@code producerId} arriving on {@code connection}
     * at {@code nowMillis} on the store's clock.
     */
    ProducerTable.Verdict check(ClientConnection connection, long producerId, long sequence, long nowMillis) {
        if (ProducerTable.isBrokers(producerId)) {
            return ProducerTable.Verdict.FENCED; // the transaction coordinator's or the replicated dead-letters', never a client's
        }
        if (!deduplicates) {
            return ProducerTable.Verdict.NEW;
        }
        int epoch = epochOf(connection, producerId);
        return epoch < 0 ? ProducerTable.Verdict.FENCED : table.check(producerId, epoch, sequence, nowMillis);
    }

    /**
     * The epoch {@code connection} holds for {@code producerId}: the one granted if the producer's
     * newest instance registered there, -1 if it registered on another connection, 0 if on none open
     * (the table's epoch then fences every publish, if it knows the producer).
     */
    private int epochOf(ClientConnection connection, long producerId) {
        if (entryEpochs != null) {
            int carried = entryEpochs.epochOf(producerId);
            return carried == ProducerEpochs.ADMITTED_WITHOUT_EPOCH ? table.epoch(producerId) : carried;
        }
        if (owners.isEmpty()) {
            return isSuperseded(connection, producerId) ? -1 : 0;
        }
        if (connection == resolvedConnection && producerId == resolvedProducer) {
            return resolvedEpoch;
        }
        Owner o = owners.get(producerId);
        resolvedEpoch = o == null ? (isSuperseded(connection, producerId) ? -1 : 0) : o.connection == connection ? o.epoch : -1;
        resolvedProducer = producerId;
        resolvedConnection = connection;
        return resolvedEpoch;
    }

    /**
     * On a cluster's leader, at admission: the epoch {@code connection} holds for each named producer of the frame
     * (one the table knows with an epoch, or one registered here), so that every node applying the frame's entry
     * fences its messages alike ({@link #withEntryEpochs}); {@link ProducerEpochs#NONE} for a frame of unnamed producers.
     *
     * <p>What would depend on a node's own table is decided here: a producer this table knows as named and no connection
     * here holds is fenced (-1), not left to each node's table, which one whose marks were lost no longer knows it by; and
     * a table whose marks were lost, which cannot tell a producer no connection here holds from an unnamed one, admits it
     * ({@link ProducerEpochs#ADMITTED_WITHOUT_EPOCH}), where the nodes that kept their marks would have fenced it.
     */
    ProducerEpochs resolveEpochs(ClientConnection connection, io.sluice.protocol.PublishFrame frame) {
        boolean marksLost = table.epochMarksLost();
        if (!deduplicates || !marksLost && owners.isEmpty() && table.highestEpochGranted() == 0) {
            return ProducerEpochs.NONE; // no producer of this queue ever registered: none is named, on any node
        }
        long[] ids = new long[4];
        int[] epochs = new int[4];
        int named = 0;
        io.sluice.protocol.PublishCursor cursor = frame.cursor();
        next:
        while (cursor.next()) {
            long producerId = cursor.producerId();
            for (int i = 0; i < named; i++) {
                if (ids[i] == producerId) {
                    continue next;
                }
            }
            int epoch = epochOf(connection, producerId);
            if (epoch == 0) { // no connection here holds it
                if (table.epoch(producerId) > 0) {
                    epoch = -1; // named: fenced
                } else if (marksLost) {
                    epoch = ProducerEpochs.ADMITTED_WITHOUT_EPOCH;
                } else {
                    continue; // unnamed: epoch 0 on every node
                }
            }
            if (named == ids.length) {
                ids = java.util.Arrays.copyOf(ids, named * 2);
                epochs = java.util.Arrays.copyOf(epochs, named * 2);
            }
            ids[named] = producerId;
            epochs[named++] = epoch;
        }
        return named == 0 ? ProducerEpochs.NONE
                : new ProducerEpochs(java.util.Arrays.copyOf(ids, named), java.util.Arrays.copyOf(epochs, named));
    }

    /** A cluster node applies a PUBLISH entry admitted with {@code epochs} ({@link #resolveEpochs}) by running {@code apply}. */
    void withEntryEpochs(ProducerEpochs epochs, Runnable apply) {
        entryEpochs = epochs;
        try {
            apply.run();
        } finally {
            entryEpochs = null;
        }
    }

    private void ownersChanged() {
        resolvedConnection = null;
    }

    private boolean isSuperseded(ClientConnection connection, long producerId) {
        if (superseded.isEmpty() && closing.isEmpty()) {
            return false;
        }
        if (closing.contains(connection)) {
            return true;
        }
        Set<Long> ids = superseded.get(connection);
        return ids != null && ids.contains(producerId);
    }

    /**
     * {@code previous} owned {@code producerId} and {@code next} (null: no connection of this node) now does: unless it
     * is the same connection, or one no longer open, {@code previous}'s connection stays fenced for the producer.
     * Returns whether it was recorded.
     */
    private boolean supersede(Owner previous, long producerId, ClientConnection next) {
        if (previous == null || previous.connection == next || !previous.connection.isActive()) {
            return false;
        }
        if (closing.contains(previous.connection)) {
            return false; // fenced whole until it closes
        }
        if (superseded.computeIfAbsent(previous.connection, c -> new HashSet<>()).add(producerId)) {
            supersededCount++;
            keepFencesBounded(next);
            return true;
        }
        return false;
    }

    /**
     * Rule "fences bounded": a queue keeps at most {@link #maxFences} fences of superseded instances: a client registering
     * the same names again from connection after connection, each left open, makes a fence per connection and name.
     * A new instance is never refused for them (an attempt that
     * refused it at the bound refused a legitimate restart). Instead, past the bound, the connection fenced longest
     * (first those no longer active) loses its fences, is told why with ERROR and CLOSE PRODUCER_FENCED, and is closed;
     * until its {@link #connectionClosed} it is held in {@link #closing}, one entry whatever it was fenced for, and
     * nothing it publishes is stored, so an older instance never gets a write in once superseded. {@code keep}, the
     * connection of the instance registering, is never the one closed (its fence, if any, was lifted before).
     */
    private void keepFencesBounded(ClientConnection keep) {
        if (supersededCount <= maxFences()) {
            return;
        }
        for (Iterator<Map.Entry<ClientConnection, Set<Long>>> it = superseded.entrySet().iterator();
             it.hasNext() && supersededCount > maxFences(); ) {
            Map.Entry<ClientConnection, Set<Long>> e = it.next();
            if (!e.getKey().isActive()) {
                dropFences(it, e, false);
            }
        }
        for (Iterator<Map.Entry<ClientConnection, Set<Long>>> it = superseded.entrySet().iterator();
             it.hasNext() && supersededCount > maxFences(); ) {
            Map.Entry<ClientConnection, Set<Long>> e = it.next();
            if (e.getKey() != keep) {
                dropFences(it, e, true);
            }
        }
        ownersChanged();
    }

    private void dropFences(Iterator<Map.Entry<ClientConnection, Set<Long>>> it, Map.Entry<ClientConnection, Set<Long>> e,
                            boolean tell) {
        ClientConnection connection = e.getKey();
        Set<Long> ids = e.getValue();
        it.remove();
        supersededCount -= ids.size();
        closing.add(connection);
        if (tell) {
            String sentence = "a newer instance of named producer id " + Long.toHexString(ids.iterator().next())
                    + (ids.size() > 1 ? " (and of " + (ids.size() - 1) + " more this connection registered)" : "")
                    + " registered on queue '" + queue + "' from another connection, and the queue keeps at most "
                    + maxFences() + " fences of superseded instances (twice queues.dedup-max-producers): this connection "
                    + "is closed instead of kept fenced, and nothing it still publishes is stored";
            LOG.info("Closing {}: {}.", connection.describe(), sentence);
            connection.closeFor(ErrorCode.PRODUCER_FENCED, sentence);
        }
    }

    /** {@code connection} registers {@code producerId} again: no longer fenced for it. Returns whether it was. */
    private boolean unsupersede(ClientConnection connection, long producerId) {
        Set<Long> ids = superseded.get(connection);
        if (ids == null || !ids.remove(producerId)) {
            return false;
        }
        supersededCount--;
        if (ids.isEmpty()) {
            superseded.remove(connection);
        }
        return true;
    }

    /** Queue thread: the fences kept for superseded instances, all connections together. */
    int fencesKept() {
        return supersededCount;
    }

    /** {@code connection} closed: the named producers registered on it are no longer anyone's, and it is not held. */
    void connectionClosed(ClientConnection connection) {
        owners.values().removeIf(o -> o.connection == connection);
        Set<Long> ids = superseded.remove(connection);
        if (ids != null) {
            supersededCount -= ids.size();
        }
        closing.remove(connection);
        ownersChanged();
    }

    /** The sentence of a PUBLISH_ERROR for a publish {@link #check} refused. */
    String refusal(ProducerTable.Verdict verdict, long producerId) {
        if (ProducerTable.isBrokers(producerId)) {
            // No sequence in these two sentences: the PUBLISH_ERROR's range names them, and a frame's run is one range (RefusalRun).
            return "producer id " + producerId + " is reserved for the broker's own records;"
                    + " nothing it publishes is stored on queue '" + queue + "'";
        }
        if (verdict == ProducerTable.Verdict.FENCED) {
            return "producer " + producerId + " is fenced on queue '" + queue + "': a newer instance registered under its name "
                    + "(epoch " + table.epoch(producerId) + "), or this connection never registered it, or it is being "
                    + "closed (PRODUCER_FENCED); not stored";
        }
        // Nor here: it names the window and the highest stored, which a frame's refusals share, so they join in one range.
        return "producer " + producerId + " published sequences a window of " + table.window() + " or more below the "
                + "highest it has stored on queue '" + queue + "' (" + table.lastStoredSequence(producerId) + "), too far "
                + "to tell a resend from a new message; not stored";
    }

    /**
     * The answer to a registration: the epoch granted (-1 if fenced), the last stored sequence, and the
     * producer's epoch (if fenced, the lowest epoch that may resume: {@link ProducerTable#resumeFloor}).
     */
    public record Registered(int epoch, long lastSequence, int currentEpoch) {
    }

    /** A publish that {@link #check} found new, at {@code nowMillis}, was appended as record {@code id}. */
    void stored(ClientConnection connection, long producerId, long sequence, long id, long nowMillis) {
        if (deduplicates) {
            table.stored(producerId, Math.max(0, epochOf(connection, producerId)), sequence, nowMillis);
            changed = true;
        }
        recorded(id);
    }

    /** On a cluster node, which replicated PUBLISH entries this queue holds (rule R4a of docs/replication.md). */
    AppliedPublishes appliedPublishes() {
        return appliedPublishes;
    }

    /**
     * Rule R8 of docs/replication.md: whether the dead-letter copy of the replicated log's entry {@code logIndex} is
     * stored in this queue already (a node replaying its log after a crash between the copy and the original's ack).
     * Exact: copies are stored in log order, and the table never forgets their producer.
     */
    boolean holdsDeadLetterCopy(long logIndex) {
        return table.lastStoredSequence(ProducerTable.DEAD_LETTER_COPIES_PRODUCER_ID) >= logIndex;
    }

    /**
     * Rule R13 of docs/replication.md: whether a committed transaction's message of sequence {@code sequence}
     * ({@link ProducerTable#CLUSTER_TRANSACTIONS_PRODUCER_ID}) is stored in this queue already (a node replaying its log).
     * Exact, as {@link #holdsDeadLetterCopy}: they are stored in increasing order, and the table never forgets their producer.
     */
    boolean holdsTransactionMessage(long sequence) {
        return table.lastStoredSequence(ProducerTable.CLUSTER_TRANSACTIONS_PRODUCER_ID) >= sequence;
    }

    /** A committed transaction's message of {@code sequence} was appended as record {@code id} (R13). */
    void transactionMessageStored(long sequence, long id, long nowMillis) {
        table.stored(ProducerTable.CLUSTER_TRANSACTIONS_PRODUCER_ID, 0, sequence, nowMillis);
        changed = true;
        recorded(id);
    }

    /** The dead-letter copy of the log's entry {@code logIndex} was appended as record {@code id}. */
    void deadLetterCopyStored(long logIndex, long id, long nowMillis) {
        table.stored(ProducerTable.DEAD_LETTER_COPIES_PRODUCER_ID, 0, logIndex, nowMillis);
        changed = true;
        recorded(id);
    }

    /**
     * A record the table has nothing to learn from was appended as {@code id} (a forwarded dead
     * letter, a transaction's staged message): the checkpoints still move past it, so reclaim is not held back by it (R6).
     */
    void appended(long id) {
        recorded(id);
    }

    /**
     * Rule R4 of docs/replication.md, on a cluster node: a marker covers every entry applied so far, so the table may
     * forget the producers seen until now ({@link ProducerTable#marked}).
     */
    void marked() {
        table.marked();
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
     * with the answer once a checkpoint holding it is durable, or at once with epoch -1 (and the
     * lowest epoch that may resume) if fenced. If the checkpoint fails, completes exceptionally, on
     * the queue's thread, after undoing the registration (see the class comment).
     */
    CompletableFuture<Registered> register(ClientConnection connection, long producerId, int requestedEpoch) {
        checkGranted(requestedEpoch);
        checkOwnerRoom(producerId);
        int previousEpoch = table.epoch(producerId);
        int previousHighest = table.highestEpochGranted();
        int epoch = table.register(producerId, requestedEpoch, store.nowMillis());
        if (epoch < 0) {
            return CompletableFuture.completedFuture(new Registered(-1, table.lastStoredSequence(producerId),
                    table.resumeFloor(producerId)));
        }
        Registered answer = new Registered(epoch, table.lastStoredSequence(producerId), epoch);
        Owner previousOwner = owners.put(producerId, new Owner(connection, epoch));
        boolean wasFenced = unsupersede(connection, producerId); // first: its fence is not counted as the bound is kept
        boolean fencedPrevious = supersede(previousOwner, producerId, connection);
        ownersChanged();
        long registration = ++registrations;
        return checkpoint().handleAsync((written, failure) -> {
            if (failure == null) {
                return answer;
            }
            if (registration == registrations) {
                table.undoRegistration(producerId, epoch, previousEpoch, previousHighest);
                if (previousOwner != null && previousOwner.connection.isActive()) {
                    owners.put(producerId, previousOwner);
                } else {
                    owners.remove(producerId);
                }
                if (fencedPrevious) {
                    unsupersede(previousOwner.connection, producerId);
                }
                if (wasFenced && connection.isActive()) {
                    supersede(new Owner(connection, epoch), producerId, null);
                }
                ownersChanged();
            }
            throw failure instanceof CompletionException completion ? completion : new CompletionException(failure);
        }, queueThread);
    }

    /**
     * The table forgets producers beyond its cap, but an owner is kept while its connection is open (P2), so a connection
     * registering name after name would grow {@link #owners} without bound: a new named producer is refused
     * once twice {@code queues.dedup-max-producers} are registered on open connections. Owners on connections no longer
     * active (closed, their {@link #connectionClosed} not run yet) do not count: they are dropped first.
     *
     * @throws NamedProducersExhaustedException if there is no room
     */
    /**
     * Rule "a resume names a granted epoch" (E2): a resume ({@code requestedEpoch} 0 or more) names the epoch a
     * PRODUCER_OK gave, so never one above every epoch the queue granted. Accepted, one such frame from any client
     * allowed to publish would take the name from its newest instance, and raise the queue's mark (E1, checkpointed)
     * as far as it liked: at 2,147,483,647 no new instance of any name could register again. Checked where a
     * registration is admitted (here, and by a cluster's leader before it submits one), never when a cluster node
     * applies one, which every node must do alike, entries written before this rule included.
     *
     * <p>Rule "lost marks refuse no resume": only a table whose marks are known can tell an epoch it never granted
     * from one it did. One whose marks were lost ({@link ProducerTable#epochMarksLost}: its checkpoint set aside as
     * damaged, and the records it was rebuilt from carry no epochs) cannot, and refusing would end for good every
     * instance that held an epoch above the marks left (the client takes PRODUCER_FENCED as final). So it accepts
     * such a resume as it did before this rule: the producer's epoch and the queue's mark rise to it, older epochs of
     * the producer are fenced from then on, and a new instance gets one above it. A forged epoch is then let in as
     * it was before this rule; a legitimate producer keeping its name is worth more than that, on a queue that lost
     * what told them apart.
     */
    void checkGranted(int requestedEpoch) {
        int granted = table.highestEpochGranted();
        if (requestedEpoch > granted && !table.epochMarksLost()) {
            throw new BrokerException(ErrorCode.PRODUCER_FENCED, "queue '" + queue + "' never granted epoch " + requestedEpoch
                    + " (the highest it granted is " + granted + "): a resume names the epoch its PRODUCER_OK gave on this "
                    + "queue (not on one of the same name deleted before), and a new instance registers with epoch -1");
        }
    }

    void checkOwnerRoom(long producerId) {
        if (owners.containsKey(producerId) || owners.size() < maxOwners()) {
            return; // fences of superseded instances never refuse one: they have their own bound (keepFencesBounded)
        }
        if (owners.values().removeIf(o -> !o.connection.isActive())) {
            ownersChanged();
        }
        if (owners.size() >= maxOwners()) {
            throw new NamedProducersExhaustedException("queue '" + queue + "' has " + owners.size() + " named producers "
                    + "registered on open connections, at most " + maxOwners() + " (twice queues.dedup-max-producers): close "
                    + "producers or connections, or raise that setting");
        }
    }

    /**
     * Rules R4 and R11 of docs/replication.md: a cluster node applies the registration of the replicated log's entry at
     * {@code position} ({@code index << 16 | place in its batch}), on the node that submitted it for {@code submitter}
     * (the client's connection, which becomes the producer's owner while it is open), on every other node, and for an
     * entry whose submission was given up, for nobody ({@code submitter} null: no owner, the producer's epoch in the
     * table fences it, so nothing is kept that only a closed connection would remove).
     *
     * <p>The outcome depends on nothing of this node's own: no cap on owners (the leader checked it before it submitted,
     * {@link #checkOwnerRoom}; a follower refusing what the leader granted would hold other epochs), and a failed
     * checkpoint does not undo it (the entry is committed, every node holds it; a restart replays it). A registration at
     * or below the position the table holds ({@link ProducerTable#CLUSTER_REGISTRATIONS_PRODUCER_ID}) is a replay of
     * one whose epoch the table holds already: it changes nothing (a new instance's would be granted one epoch more
     * than every other node granted, and the leader's publishes for it fenced here alone).
     */
    CompletableFuture<Registered> registerReplicated(ClientConnection submitter, long producerId, int requestedEpoch, long position) {
        if (table.lastStoredSequence(ProducerTable.CLUSTER_REGISTRATIONS_PRODUCER_ID) >= position) {
            int epoch = table.epoch(producerId);
            return CompletableFuture.completedFuture(new Registered(requestedEpoch < 0 || requestedEpoch == epoch ? epoch : -1,
                    table.lastStoredSequence(producerId), epoch));
        }
        long now = store.nowMillis();
        table.stored(ProducerTable.CLUSTER_REGISTRATIONS_PRODUCER_ID, 0, position, now); // in the registration's checkpoint
        changed = true;
        int epoch = table.register(producerId, requestedEpoch, now);
        if (epoch < 0) {
            return CompletableFuture.completedFuture(new Registered(-1, table.lastStoredSequence(producerId),
                    table.resumeFloor(producerId)));
        }
        Registered answer = new Registered(epoch, table.lastStoredSequence(producerId), epoch);
        Owner previousOwner;
        if (submitter != null && submitter.isActive()) {
            previousOwner = owners.put(producerId, new Owner(submitter, epoch));
            unsupersede(submitter, producerId);
        } else {
            previousOwner = owners.remove(producerId); // a newer instance registered elsewhere: the owner of the older one is none any more
        }
        supersede(previousOwner, producerId, submitter);
        ownersChanged();
        return checkpoint().thenApply(written -> answer);
    }

    /** Any thread: checkpoints that could not be written since the queue opened (a metric). */
    long checkpointFailures() {
        return checkpointFailures;
    }

    /** True if a publish or registration changed the table since the last checkpoint was taken. */
    boolean changedSinceCheckpoint() {
        return changed || lastCheckpointFailed;
    }

    ProducerTable table() {
        return table;
    }

    /** Named producers this queue keeps an owner for at most: twice what its table tracks. */
    private int maxOwners() {
        return (int) Math.min(Integer.MAX_VALUE, 2L * table.maxProducers());
    }

    /** Fences of superseded instances this queue keeps at most, apart from its owners: as many ({@link #keepFencesBounded}). */
    private int maxFences() {
        return maxOwners();
    }

    /**
     * Asks for a checkpoint: the table as it stands when the checkpoint is taken, written once the records it covers are
     * durable; completes when it is written (or a newer one was), exceptionally if it could not be. Rule "one
     * checkpoint in flight": while one is being written, every request waits for the next, taken (one image, one
     * write) once that one is written. An image and a write per request, each with an fsync on the broker's one writer
     * thread, would let a client pipelining PRODUCER_INITs make as many images as frames (quadratic memory at a large
     * table) and hold every other queue's registrations behind their writes.
     */
    CompletableFuture<Void> checkpoint() {
        if (nextCheckpoint == null) {
            nextCheckpoint = new CompletableFuture<>();
        }
        CompletableFuture<Void> done = nextCheckpoint;
        if (!checkpointInFlight) {
            takeCheckpoint();
        }
        return done;
    }

    /** Queue thread: copies the table for {@link #nextCheckpoint} and hands its write to the writer. */
    private void takeCheckpoint() {
        CompletableFuture<Void> done = nextCheckpoint;
        nextCheckpoint = null;
        checkpointInFlight = true;
        table.expire(store.nowMillis());
        if (table.evictionsBeforeMarker() > reportedEvictionsBeforeMarker) {
            LOG.warn("Queue '{}': {} producers were evicted before a snapshot marker covered them (twice "
                    + "queues.dedup-max-producers seen since the last marker); should this node crash before the next "
                    + "marker, a resend of theirs it replays after this queue's last stored message may be stored again "
                    + "on it. Raise queues.dedup-max-producers or "
                    + "lower cluster.snapshot-every-entries.", queue, table.evictionsBeforeMarker() - reportedEvictionsBeforeMarker);
            reportedEvictionsBeforeMarker = table.evictionsBeforeMarker();
        }
        changed = false;
        storedSinceCheckpoint = 0;
        long covered = lastRecordId;
        long thisGeneration = ++generation;
        checkpointedSegment = covered < 0 ? Integer.MIN_VALUE : SegmentRollCycle.INSTANCE.toCycle(covered);
        ByteBuffer image = ProducerCheckpoint.encode(table, covered);
        CompletableFuture<Long> durable = covered < 0 ? CompletableFuture.completedFuture(covered) : store.whenDurable(covered);
        done.whenComplete((ignored, failure) -> queueThread.execute(() -> {
            checkpointInFlight = false;
            if (nextCheckpoint != null) {
                takeCheckpoint();
            } else if (failure != null) {
                retry.failed(); // nothing else may ask for the next one: the queue may have gone quiet
            }
            if (failure == null) {
                retry.succeeded();
            }
        }));
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
                if (lastCheckpointFailed) {
                    failureLog.info(LOG, "Queue '{}': the producer state is checkpointed again; reclaim goes on.", queue);
                }
                lastCheckpointFailed = false;
                store.producerStateCoveredThrough(covered);
                done.complete(null);
            } catch (IOException | RuntimeException e) {
                fail(done, e);
            }
        }, writer);
    }

    private void fail(CompletableFuture<Void> done, Throwable cause) {
        lastCheckpointFailed = true;
        checkpointFailures++; // this thread only
        failureLog.warn(LOG, "Queue '{}': the producer state could not be checkpointed ({}); reclaim keeps the segments it "
                + "does not cover until a checkpoint is written, tried again within {} s while the queue is open and its "
                + "storage has not failed.", queue, cause.toString(), CheckpointRetry.MAX_DELAY_MS / 1000);
        done.completeExceptionally(cause);
    }
}
