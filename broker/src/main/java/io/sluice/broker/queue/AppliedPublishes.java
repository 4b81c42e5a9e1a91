package io.sluice.broker.queue;

import io.sluice.storage.QueueStore;
import io.sluice.storage.dedup.ProducerTable;

import java.util.ArrayList;
import java.util.List;

/**
 * Which replicated PUBLISH entries one queue of a cluster node holds already (rule R4a of docs/replication.md, "The restart
 * is exact"). A node restarts by replaying its log after its last snapshot marker into stores that may hold some of those
 * entries; the producer table alone told them apart, and forgot producers it evicted. Here every message a node stores
 * from a PUBLISH entry carries the entry's position in its record ({@link QueueStore#appendReplicated}), so what is
 * stored and what is known applied are the same bytes, forced by the same group commit: a restart can neither find a
 * message without its position nor a position without its message. The queue's producer table keeps the position of
 * the last such entry and where its messages start ({@link ProducerTable#CLUSTER_PUBLISHES_PRODUCER_ID},
 * {@link ProducerTable#CLUSTER_PUBLISH_RUN_PRODUCER_ID}), checkpointed with the producers and learnt again from the
 * records after the checkpoint, so reclaim deleting the records loses nothing. An entry replayed below that position
 * was applied whole; one at it may have been cut by a kill in the middle of its appends, and its messages are matched
 * against the records stored from it: those up to the last one stored were decided before the restart and are skipped,
 * the rest are decided now. Queue positions are apart, so an entry touching several queues (a batch) is skipped in
 * those that hold it and applied in those that do not.
 *
 * <p>Threads: the queue's executor, as its {@link ProducerRegistry}.
 */
final class AppliedPublishes {
    private static final long UNREAD = Long.MIN_VALUE;

    private final ProducerTable table;
    private final QueueStore store;
    /**
     * The table's position, read from it once it is restored: each message stored would otherwise look it up, and take
     * the table's one-producer cache from the message's own producer.
     */
    private long last = UNREAD;

    AppliedPublishes(ProducerTable table, QueueStore store) {
        this.table = table;
        this.store = store;
    }

    /**
     * A message of the PUBLISH entry at {@code position} is stored as record {@code id}: on a node applying the entry, and
     * for every such record a start reads after the producer checkpoint. Before the producer table learns of the record
     * itself, since that may take a checkpoint covering it.
     */
    void stored(long position, long id) {
        if (position > last()) {
            table.stored(ProducerTable.CLUSTER_PUBLISH_RUN_PRODUCER_ID, 0, id + 1, 0);
            table.stored(ProducerTable.CLUSTER_PUBLISHES_PRODUCER_ID, 0, position + 1, 0);
            last = position;
        }
    }

    /** The position of the last PUBLISH entry this queue stored a message of, -1 if none. */
    private long last() {
        if (last == UNREAD) {
            last = table.lastStoredSequence(ProducerTable.CLUSTER_PUBLISHES_PRODUCER_ID) - 1;
        }
        return last;
    }

    /** What of the PUBLISH entry at {@code position} this queue holds already: null if nothing, as for a new entry. */
    Replay replayOf(long position) {
        long last = last();
        if (position > last) {
            return null;
        }
        if (position < last) {
            return Replay.WHOLE;
        }
        List<long[]> run = new ArrayList<>();
        long first = table.lastStoredSequence(ProducerTable.CLUSTER_PUBLISH_RUN_PRODUCER_ID) - 1;
        store.forEachRecordFrom(first, (id, record) -> {
            if (record.logPosition() == position) {
                run.add(new long[] {record.producerId(), record.producerSequence()});
            }
        });
        // None left: acknowledged by later entries and reclaimed since, so the entry was applied whole.
        return run.isEmpty() ? Replay.WHOLE : new Replay(run);
    }

    /** The messages of a replayed entry that were decided before the restart, asked about in the entry's order. */
    static final class Replay {
        /** An entry below the last one stored from: every message of it was decided. */
        static final Replay WHOLE = new Replay(null);

        /** The producer id and sequence of each message stored from the entry, in order; null for {@link #WHOLE}. */
        private final List<long[]> stored;
        private int matched;

        private Replay(List<long[]> stored) {
            this.stored = stored;
        }

        /**
         * True if the entry's next message, of {@code producerId} and {@code sequence}, was decided before the restart:
         * it is at or before the last message stored from the entry (stored then, or found a duplicate or refused).
         */
        boolean decided(long producerId, long sequence) {
            if (stored == null) {
                return true;
            }
            if (matched == stored.size()) {
                return false;
            }
            long[] next = stored.get(matched);
            if (next[0] == producerId && next[1] == sequence) {
                matched++;
            }
            return true;
        }
    }
}
