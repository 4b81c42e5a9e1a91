package io.sluice.storage.dedup;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;

/**
 * What one queue knows of its producers, to store each {@code (producer id, sequence)} once: per
 * producer, its epoch, the highest sequence stored, the sequences at or below it that were never
 * stored (gaps: refused, expired in the client, or skipped), and when it was last seen.
 *
 * <p><b>Verdicts.</b> For a publish of {@code sequence} by producer {@code id} with {@code epoch}:
 * <ul>
 *   <li>producer id 0, or a sequence below 1, is no identity: always {@link Verdict#NEW}, never tracked;</li>
 *   <li>an epoch below the producer's is {@link Verdict#FENCED} (a newer instance registered);</li>
 *   <li>above the highest stored: {@link Verdict#NEW} (a forward jump of any size is allowed, the
 *       skipped sequences become gaps);</li>
 *   <li>{@code window} or more below the highest: {@link Verdict#OUT_OF_WINDOW}, because the table
 *       no longer knows whether it was stored;</li>
 *   <li>otherwise {@link Verdict#NEW} if it is a gap, else {@link Verdict#DUPLICATE}.</li>
 * </ul>
 * A verdict changes nothing; {@link #stored} records a sequence once it is in the log.
 *
 * <p><b>Bounds.</b> At most {@code maxProducers} of the clients' producers are tracked (the broker's own,
 * {@link #isBrokers}, apart): adding one more evicts the least recently seen. A producer not seen for {@code idleExpiryMillis} is dropped. Either way its next
 * publish starts afresh: a resend after that is stored again. Gaps older than the window are
 * forgotten.
 *
 * <p><b>Held until marked</b> (a cluster node, {@link #holdUntilMarked}; rule R4 of docs/replication.md). A node that
 * restarts replays the replicated log after its last snapshot marker into stores that may already hold those entries,
 * and this table is what tells it so; a producer it forgot (evicted, or expired, as every producer is at a start after
 * more than {@code idleExpiryMillis} down) would have its replayed publishes stored twice. So such a table forgets a
 * producer only once a marker was written after the producer was last seen ({@link #marked}): the marker covers every
 * entry of it, and none is replayed. Until then it is kept beyond {@code maxProducers}, up to twice that; past twice,
 * the least recently seen is evicted regardless and counted ({@link #evictionsBeforeMarker}). Its entries the queue
 * stored are not decided again after a crash ({@link #CLUSTER_PUBLISHES_PRODUCER_ID}); only a resend of it in an entry
 * decided again (one that stored nothing in the queue after its last stored message) would be stored once more.
 *
 * <p><b>Epochs</b> (named producers, {@link #register}). Rule E1: a new instance gets an epoch above
 * every epoch granted in this table, forgotten producers' included, so no instance still running
 * holds one as high. Rule E2: an instance resumes only with an epoch at least its producer's; of a
 * producer the table no longer knows (or knows of no registration), at least the highest epoch of
 * the producers it forgot, because the table cannot tell that producer's newest instance from an
 * older one. Both marks are kept across evictions and expiries, and in the checkpoint.
 *
 * <p>Not thread-safe: one thread (the queue's) owns a table.
 */
public final class ProducerTable {
    /**
     * The producer id under which the broker's transaction coordinator applies committed
     * transactions' publishes (no client may publish under it). Its sequences are applied in
     * increasing order, so the table keeps only its highest, no gaps; and it is never evicted nor
     * expired, because a restart decides by it which publishes of a committed transaction are
     * already stored.
     */
    public static final long TRANSACTIONS_PRODUCER_ID = Long.MIN_VALUE;

    /**
     * The producer id under which a cluster node stores the leader's dead-letter copies in a dead-letter queue, with
     * the replicated log's index of the dead-letter as the sequence (rule R8 of docs/replication.md; no client may
     * publish under it). Copies are applied in log order, so, as for {@link #TRANSACTIONS_PRODUCER_ID}, the table
     * keeps only the highest index, and it is never evicted nor expired: a node replaying its log decides by it,
     * exactly, whether a copy is already stored.
     */
    public static final long DEAD_LETTER_COPIES_PRODUCER_ID = Long.MIN_VALUE + 1;

    /**
     * The producer id under which a cluster node stores what a committed transaction published (docs/transactions.md,
     * "On a cluster"; no client may publish under it), with a sequence made of the transaction's log index and the
     * message's place in it. Applied in log order like {@link #DEAD_LETTER_COPIES_PRODUCER_ID}, never evicted nor
     * expired: a node replaying its log decides by it, exactly, which of a transaction's messages are already stored.
     */
    public static final long CLUSTER_TRANSACTIONS_PRODUCER_ID = Long.MIN_VALUE + 2;

    /**
     * Not a producer: on a cluster node, the position in the replicated log (the entry's index and its place in a batch)
     * of the last named producer's registration this queue applied, as its "highest sequence" (rule R11 of
     * docs/replication.md; no client may publish under it). Registrations are applied in log order, and the table never
     * forgets it and checkpoints it with the epochs they granted, so a node replaying its log skips exactly the
     * registrations whose epochs its table holds already: a new instance's, replayed, would be granted one epoch more.
     */
    public static final long CLUSTER_REGISTRATIONS_PRODUCER_ID = Long.MIN_VALUE + 3;

    /**
     * Not a producer: on a cluster node, one more than the position in the replicated log of the last PUBLISH entry this
     * queue stored a message of, as its "highest sequence" (rule R4a of docs/replication.md, "The restart is exact"; no
     * client may publish under it). Each such record carries its entry's position too, so the table learns it again from
     * the records after its checkpoint; never forgotten, so a restart skips exactly the entries the queue holds.
     */
    public static final long CLUSTER_PUBLISHES_PRODUCER_ID = Long.MIN_VALUE + 4;

    /**
     * Not a producer: one more than the id of the first message stored from the entry {@link #CLUSTER_PUBLISHES_PRODUCER_ID}
     * names, where a restart reads which of that entry's messages are stored (the node may have been killed in the middle
     * of its appends).
     */
    public static final long CLUSTER_PUBLISH_RUN_PRODUCER_ID = Long.MIN_VALUE + 5;

    /** True for the broker's own producers, whose sequences come in order and which are never evicted nor expired. */
    public static boolean isBrokers(long producerId) {
        return producerId >= TRANSACTIONS_PRODUCER_ID && producerId <= CLUSTER_PUBLISH_RUN_PRODUCER_ID;
    }

    /** What to do with a publish. */
    public enum Verdict { NEW, DUPLICATE, FENCED, OUT_OF_WINDOW }

    /** A producer's state: the live object, read on the thread that owns the table. */
    public static final class Producer {
        final long id;
        int epoch;
        /** Highest sequence stored; 0 when none was. */
        long highest;
        long lastSeenMillis;
        /** The table's {@link #markGeneration} when it was last seen: forgettable once a marker came after. */
        int seenGeneration;
        /** Sequences at or below {@link #highest} never stored, as sorted, disjoint ranges. */
        final Gaps gaps = new Gaps();

        Producer(long id, int epoch, long lastSeenMillis) {
            this.id = id;
            this.epoch = epoch;
            this.lastSeenMillis = lastSeenMillis;
        }

        public long id() {
            return id;
        }

        public int epoch() {
            return epoch;
        }

        public long highest() {
            return highest;
        }

        public long lastSeenMillis() {
            return lastSeenMillis;
        }

        /** The gaps as {@code [from0, to0, from1, to1, ...]}, inclusive, increasing. */
        public long[] gapRanges() {
            return gaps.toArray();
        }
    }

    private final int maxProducers;
    private final long idleExpiryMillis;
    private final long window;
    /** Access order: the eldest entry is the least recently seen producer. */
    private final LinkedHashMap<Long, Producer> producers = new LinkedHashMap<>(16, 0.75f, true);
    /** The producer of the last lookup: a batch is usually one producer's, so one map lookup serves it. */
    private Producer last;

    /** The highest epoch granted or resumed (E1): the next new instance gets one more. */
    private int highestEpochGranted;
    /** The highest epoch of a producer forgotten, evicted or expired (E2). */
    private int highestEpochForgotten;
    /**
     * The epoch marks may be below epochs granted before: the table was rebuilt without them (its checkpoint did not
     * read, or held none). Kept in every checkpoint from then on, since nothing tells later which epochs were granted.
     */
    private boolean epochMarksLost;

    private long evictions;
    /** The broker's own producers tracked ({@link #isBrokers}): the cap counts the clients' alone. */
    private int brokersTracked;
    private long expiries;
    /**
     * Per producer, the publishes of it its queue stored (or recognised as resends) and has not yet confirmed nor
     * refused, counted by their owner ({@link #awaitingConfirm}, {@link #confirmSettled}): such a producer is not
     * idle, it waits for the broker (a slowed queue holds confirms until consumers acknowledge, C2), and its client
     * resends them after a reconnect, so {@link #expire} keeps it however long ago it was last seen: forgotten, those
     * resends would be stored twice.
     */
    private final HashMap<Long, int[]> unconfirmed = new HashMap<>();

    /** Forget a producer only once a marker covers it (see the class comment); set on a cluster node before use. */
    private boolean holdUntilMarked;
    /** Markers written since this table was made ({@link #marked}). */
    private int markGeneration;
    /**
     * Held tables: the clients' producers not seen since the last marker, which alone may be forgotten. At 0 (after a
     * start, until the first marker; or every producer seen since the last one) expiry and eviction need not walk the
     * table to find none, which each new producer would otherwise pay.
     */
    private int forgettableCount;
    /** Producers evicted at twice the cap though no marker covered them yet. */
    private long evictionsBeforeMarker;

    /**
     * @param maxProducers     producers tracked at most (at least 1)
     * @param idleExpiryMillis a producer not seen for this long is forgotten (at least 1)
     * @param window           how far below the highest stored sequence a resend is still told apart
     *                         (at least 1); must cover the messages a producer can have unconfirmed
     */
    public ProducerTable(int maxProducers, long idleExpiryMillis, long window) {
        if (maxProducers < 1 || idleExpiryMillis < 1 || window < 1) {
            throw new IllegalArgumentException("maxProducers " + maxProducers + ", idleExpiryMillis "
                    + idleExpiryMillis + " and window " + window + " must all be at least 1");
        }
        this.maxProducers = maxProducers;
        this.idleExpiryMillis = idleExpiryMillis;
        this.window = window;
    }

    /**
     * Makes this table a cluster node's: from now on it forgets a producer only once {@link #marked} was called after
     * the producer was last seen (the class comment's "held until marked"). Call before the table is filled.
     */
    public void holdUntilMarked() {
        holdUntilMarked = true;
    }

    /**
     * A marker was written covering every entry applied so far, with the stores durable through them: every producer
     * seen until now may be forgotten from now on.
     */
    public void marked() {
        markGeneration++;
        forgettableCount = 0;
        for (Producer p : producers.values()) {
            if (!isBrokers(p.id)) {
                forgettableCount++;
            }
        }
    }

    /** {@code p} was seen now: it is held until the next marker. */
    private void seen(Producer p) {
        if (holdUntilMarked && p.seenGeneration != markGeneration && !isBrokers(p.id)) {
            forgettableCount--;
        }
        p.seenGeneration = markGeneration;
    }

    /** Producers evicted at twice the cap before a marker covered them: see the class comment. */
    public long evictionsBeforeMarker() {
        return evictionsBeforeMarker;
    }

    private boolean forgettable(Producer p) {
        return !holdUntilMarked || p.seenGeneration != markGeneration;
    }

    /** Producers tracked at most. */
    public int maxProducers() {
        return maxProducers;
    }

    public long window() {
        return window;
    }

    /** Publishes of {@code producerId} were stored (or recognised) and wait for their confirm: see {@link #unconfirmed}. */
    public void awaitingConfirm(long producerId) {
        if (producerId != 0) {
            unconfirmed.computeIfAbsent(producerId, id -> new int[1])[0]++;
        }
    }

    /** Publishes {@link #awaitingConfirm} counted for {@code producerId} were confirmed or refused. */
    public void confirmSettled(long producerId) {
        int[] count = unconfirmed.get(producerId);
        if (count != null && --count[0] <= 0) {
            unconfirmed.remove(producerId);
        }
    }

    /** What to do with {@code sequence} of {@code producerId} publishing with {@code epoch}; marks the producer seen. */
    public Verdict check(long producerId, int epoch, long sequence, long nowMillis) {
        if (producerId == 0 || sequence < 1) {
            return Verdict.NEW;
        }
        Producer p = find(producerId);
        if (p == null) {
            return Verdict.NEW;
        }
        p.lastSeenMillis = Math.max(p.lastSeenMillis, nowMillis);
        seen(p);
        if (epoch < p.epoch) {
            return Verdict.FENCED;
        }
        if (sequence > p.highest) {
            return Verdict.NEW;
        }
        if (p.highest - sequence >= window) {
            return Verdict.OUT_OF_WINDOW;
        }
        if (p.gaps.contains(sequence)) {
            return Verdict.NEW;
        }
        return Verdict.DUPLICATE;
    }

    /** Records that {@code sequence} of {@code producerId} (publishing with {@code epoch}) is in the log. */
    public void stored(long producerId, int epoch, long sequence, long nowMillis) {
        if (producerId == 0 || sequence < 1) {
            return;
        }
        Producer p = findOrAdd(producerId, epoch, nowMillis);
        p.epoch = Math.max(p.epoch, epoch);
        p.lastSeenMillis = Math.max(p.lastSeenMillis, nowMillis);
        seen(p);
        if (isBrokers(producerId)) {
            p.highest = Math.max(p.highest, sequence); // applied in order: below the highest, everything is stored
            return;
        }
        if (sequence > p.highest) {
            // What lies between the highest stored and this one was skipped; below a producer's first
            // stored sequence the table knows nothing, so those count as skipped too (stored again
            // rather than confirmed unseen).
            long gapFrom = Math.max(Math.max(1, p.highest + 1), sequence - window + 1);
            if (gapFrom <= sequence - 1) {
                p.gaps.add(gapFrom, sequence - 1);
            }
            p.highest = sequence;
            p.gaps.dropBelow(sequence - window + 1);
        } else {
            p.gaps.remove(sequence);
        }
    }

    /**
     * Registers an instance of a named producer: with {@code requestedEpoch} -1, a new instance, whose
     * epoch is one above every epoch granted (E1); with an epoch, the instance that holds it resuming
     * (after a reconnect), allowed only from {@link #resumeFloor} on (E2). Returns the epoch granted,
     * or -1 if {@code requestedEpoch} is fenced; a fenced registration changes nothing.
     */
    public int register(long producerId, int requestedEpoch, long nowMillis) {
        if (producerId == 0) {
            throw new IllegalArgumentException("producer id 0 is no identity and cannot be registered");
        }
        int epoch;
        if (requestedEpoch < 0) {
            if (highestEpochGranted == Integer.MAX_VALUE) {
                throw new ProducerEpochsExhaustedException("every producer epoch up to " + Integer.MAX_VALUE
                        + " was granted on this queue, so no new instance of a named producer can register (producer id "
                        + producerId + "); an instance may still resume with its epoch");
            }
            epoch = highestEpochGranted + 1; // E1
        } else if (requestedEpoch < resumeFloor(producerId)) {
            return -1; // E2
        } else {
            epoch = requestedEpoch;
        }
        Producer p = findOrAdd(producerId, epoch, nowMillis);
        p.epoch = epoch;
        p.lastSeenMillis = Math.max(p.lastSeenMillis, nowMillis);
        seen(p);
        highestEpochGranted = Math.max(highestEpochGranted, epoch);
        return epoch;
    }

    /**
     * The lowest epoch an instance of {@code producerId} may resume with (E2): the producer's own, or
     * if the table knows no registration of it, the highest epoch of the producers it forgot.
     */
    public int resumeFloor(long producerId) {
        Producer p = find(producerId);
        return p != null && p.epoch > 0 ? p.epoch : highestEpochForgotten;
    }

    /**
     * Undoes a registration that granted {@code granted} and was never answered (its checkpoint
     * failed), when nothing registered since: the producer's epoch goes back to {@code previousEpoch}
     * and the highest epoch granted to {@code previousHighest}, as they were before it.
     */
    public void undoRegistration(long producerId, int granted, int previousEpoch, int previousHighest) {
        Producer p = find(producerId);
        if (p != null && p.epoch == granted) {
            p.epoch = previousEpoch;
        }
        if (highestEpochGranted == granted) {
            highestEpochGranted = previousHighest;
        }
    }

    /** The highest epoch granted or resumed in this table (E1), forgotten producers' included. */
    public int highestEpochGranted() {
        return highestEpochGranted;
    }

    /** The highest epoch of the producers this table forgot (E2). */
    public int highestEpochForgotten() {
        return highestEpochForgotten;
    }

    /**
     * The table was rebuilt without its epoch marks (a checkpoint set aside as damaged, one that held none, or none
     * where stored records say there was one): an instance may hold an epoch above {@link #highestEpochGranted} that
     * this queue granted before. For good: the checkpoints say so from then on.
     */
    public void loseEpochMarks() {
        epochMarksLost = true;
    }

    /** True if the epoch marks may be below epochs granted before ({@link #loseEpochMarks}). */
    public boolean epochMarksLost() {
        return epochMarksLost;
    }

    /** The highest sequence of {@code producerId} stored, 0 if none or if the producer is not tracked. */
    public long lastStoredSequence(long producerId) {
        Producer p = find(producerId);
        return p == null ? 0 : p.highest;
    }

    /** The producer's epoch, 0 if it is not tracked. */
    public int epoch(long producerId) {
        Producer p = find(producerId);
        return p == null ? 0 : p.epoch;
    }

    /**
     * Drops producers not seen since {@code nowMillis - idleExpiryMillis} (held ones only once a marker covers them);
     * returns how many.
     */
    public int expire(long nowMillis) {
        if (holdUntilMarked && forgettableCount == 0) {
            return 0;
        }
        int dropped = 0;
        Iterator<Producer> oldestFirst = producers.values().iterator();
        while (oldestFirst.hasNext()) {
            Producer p = oldestFirst.next();
            if (isBrokers(p.id)) {
                continue;
            }
            if (nowMillis - p.lastSeenMillis < idleExpiryMillis) {
                break;
            }
            if (!forgettable(p) || !unconfirmed.isEmpty() && unconfirmed.containsKey(p.id)) {
                continue;
            }
            oldestFirst.remove();
            forget(p);
            dropped++;
        }
        expiries += dropped;
        return dropped;
    }

    public int tracked() {
        return producers.size();
    }

    public long evictions() {
        return evictions;
    }

    public long expiries() {
        return expiries;
    }

    /** The producers, least recently seen first (the order {@link #restore} keeps). Live objects: read them on the owning thread. */
    public List<Producer> snapshot() {
        return new ArrayList<>(producers.values());
    }

    /** Adds a producer read back from a checkpoint; call in least-recently-seen-first order. */
    public void restore(long producerId, int epoch, long highest, long lastSeenMillis, long[] gapRanges) {
        Producer p = findOrAdd(producerId, epoch, lastSeenMillis);
        p.epoch = epoch;
        highestEpochGranted = Math.max(highestEpochGranted, epoch);
        p.highest = highest;
        p.lastSeenMillis = lastSeenMillis;
        seen(p);
        p.gaps.clear();
        for (int i = 0; i + 1 < gapRanges.length; i += 2) {
            p.gaps.add(gapRanges[i], gapRanges[i + 1]);
        }
        p.gaps.dropBelow(highest - window + 1);
    }

    private Producer find(long producerId) {
        Producer p = last;
        if (p != null && p.id == producerId) {
            return p;
        }
        p = producers.get(producerId);
        if (p != null) {
            last = p;
        }
        return p;
    }

    private Producer findOrAdd(long producerId, int epoch, long nowMillis) {
        Producer p = find(producerId);
        if (p != null) {
            return p;
        }
        expire(nowMillis);
        if (isBrokers(producerId)) {
            brokersTracked++; // never evicted nor expired, and not counted against the clients' room
        } else if (producers.size() - brokersTracked >= maxProducers && !evictEldest(false)
                && producers.size() - brokersTracked >= 2L * maxProducers) {
            evictEldest(true);
        }
        p = new Producer(producerId, epoch, nowMillis);
        p.seenGeneration = markGeneration;
        producers.put(producerId, p);
        last = p;
        return p;
    }

    /**
     * Evicts the least recently seen of the clients' producers that may be forgotten, or with {@code evenIfHeld} the
     * least recently seen of them all; false if there was none.
     */
    private boolean evictEldest(boolean evenIfHeld) {
        if (!evenIfHeld && holdUntilMarked && forgettableCount == 0) {
            return false;
        }
        Iterator<Producer> eldest = producers.values().iterator();
        while (eldest.hasNext()) {
            Producer evicted = eldest.next();
            if (isBrokers(evicted.id) || !evenIfHeld && !forgettable(evicted)) {
                continue;
            }
            if (!forgettable(evicted)) {
                evictionsBeforeMarker++;
            }
            forget(evicted);
            eldest.remove();
            evictions++;
            return true;
        }
        return false;
    }

    /** Sets the epochs' marks read back from a checkpoint (E1, E2); they only ever rise. */
    public void restoreEpochs(int granted, int forgotten) {
        highestEpochGranted = Math.max(highestEpochGranted, granted);
        highestEpochForgotten = Math.max(highestEpochForgotten, forgotten);
    }

    private void forget(Producer p) {
        if (holdUntilMarked && p.seenGeneration != markGeneration && !isBrokers(p.id)) {
            forgettableCount--;
        }
        highestEpochForgotten = Math.max(highestEpochForgotten, p.epoch);
        if (last == p) {
            last = null;
        }
    }

    /**
     * Sorted, disjoint, inclusive ranges of sequences, usually none or a few: a small array of pairs.
     */
    static final class Gaps {
        private static final long[] NONE = new long[0];
        private long[] ranges = NONE;
        private int count;

        /** The bounds held: two per range. */
        int boundCount() {
            return 2 * count;
        }

        void clear() {
            count = 0;
            ranges = NONE;
        }

        boolean contains(long sequence) {
            for (int i = 0; i < count; i++) {
                long from = ranges[2 * i];
                if (sequence < from) {
                    return false;
                }
                if (sequence <= ranges[2 * i + 1]) {
                    return true;
                }
            }
            return false;
        }

        /** Appends a range above every range held (or merges it with the last). */
        void add(long from, long to) {
            if (count > 0 && from <= ranges[2 * count - 1] + 1) {
                ranges[2 * count - 1] = Math.max(ranges[2 * count - 1], to);
                return;
            }
            if (2 * count == ranges.length) {
                ranges = java.util.Arrays.copyOf(ranges, Math.max(4, ranges.length * 2));
            }
            ranges[2 * count] = from;
            ranges[2 * count + 1] = to;
            count++;
        }

        void remove(long sequence) {
            for (int i = 0; i < count; i++) {
                long from = ranges[2 * i];
                long to = ranges[2 * i + 1];
                if (sequence < from) {
                    return;
                }
                if (sequence > to) {
                    continue;
                }
                if (from == to) {
                    removeRange(i);
                } else if (sequence == from) {
                    ranges[2 * i] = from + 1;
                } else if (sequence == to) {
                    ranges[2 * i + 1] = to - 1;
                } else {
                    insertRange(i + 1, sequence + 1, to);
                    ranges[2 * i + 1] = sequence - 1;
                }
                return;
            }
        }

        /** Forgets every sequence below {@code floor}. */
        void dropBelow(long floor) {
            int drop = 0;
            while (drop < count && ranges[2 * drop + 1] < floor) {
                drop++;
            }
            if (drop > 0) {
                System.arraycopy(ranges, 2 * drop, ranges, 0, 2 * (count - drop));
                count -= drop;
            }
            if (count > 0 && ranges[0] < floor) {
                ranges[0] = floor;
            }
        }

        long[] toArray() {
            return java.util.Arrays.copyOf(ranges, 2 * count);
        }

        private void removeRange(int i) {
            System.arraycopy(ranges, 2 * (i + 1), ranges, 2 * i, 2 * (count - i - 1));
            count--;
        }

        private void insertRange(int i, long from, long to) {
            if (2 * count == ranges.length) {
                ranges = java.util.Arrays.copyOf(ranges, ranges.length * 2);
            }
            System.arraycopy(ranges, 2 * i, ranges, 2 * (i + 1), 2 * (count - i));
            ranges[2 * i] = from;
            ranges[2 * i + 1] = to;
            count++;
        }
    }
}
