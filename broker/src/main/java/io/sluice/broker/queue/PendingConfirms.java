package io.sluice.broker.queue;

import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.IdRange;
import io.sluice.storage.dedup.ProducerTable;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongConsumer;

/**
 * The publishes a queue stored and has not yet confirmed, one entry per PUBLISH frame, in arrival
 * order; releasing an entry confirms its messages and gives the producer its publish window back.
 * Confined to the queue's executor.
 *
 * <p>Rules: C1 a confirm waits until its messages are durable; C2 while the queue is slowed,
 * confirms are released only as consumers acknowledge, one message for one ({@link Backlog#mayConfirm}),
 * so producers, whose in-flight windows fill up, run at the consumers' pace. (Blocked producers are
 * told to stop; what they had in flight is confirmed as stored.) A resend the producer table
 * recognised (P1) added nothing to the backlog, so it spends no token: a frame of resends alone goes
 * as soon as the frames before it went.
 *
 * <p>A TX_PUBLISH's messages are not confirmed (their commit is), but their publish window comes
 * back through here too ({@link #addWindow}), in arrival order with the PUBLISH frames: so C2 paces a
 * transactional publisher as it paces a plain one (docs/flow-control.md, "Transactions").
 *
 * <p>Counts what it released: the stored messages confirmed, and apart from them the resends
 * confirmed without being stored, so a message is counted once, as one or the other.
 */
final class PendingConfirms {
    /** Tells the store that a confirm waits for this id (its rule "force what is awaited"): without it, no force comes. */
    private final LongConsumer demandDurable;
    private final ArrayDeque<Entry> entries = new ArrayDeque<>();
    private final FlushList<ProducerLink> touchedLinks = new FlushList<>();
    private long confirmedStored;
    private long confirmedResends;
    /** The queue's producer table, told which producers have publishes waiting here (it does not expire them); may be null. */
    private ProducerTable producers;

    /** {@code demandDurable}: the queue's store's {@code demandDurable}. */
    PendingConfirms(LongConsumer demandDurable) {
        this.demandDurable = demandDurable;
    }

    /**
     * The sequences of one PUBLISH frame that were stored, per producer, as ranges; built while storing it.
     * Most frames hold one run of one producer's consecutive sequences, so the map and lists are made
     * only when a second run closes: a frame of one run costs an immutable one-entry map.
     */
    static final class StoredRanges {
        private Map<Long, List<IdRange>> ranges; // from the second closed run on
        private long firstProducer;
        private IdRange firstRange;
        private long runProducer;
        /**
         * Whether a run is open: any sequence may be confirmed, those below 1 too (no identity, stored every time), so
         * none can mark "no run" (-1 did: a negative sequence's run was dropped, never confirmed, and its window never
         * given back).
         */
        private boolean inRun;
        private long runFrom;
        private long runTo;

        /** One more stored message: extends the current run of consecutive sequences of one producer, or starts one. */
        void stored(long producerId, long sequence) {
            if (inRun && producerId == runProducer && runTo != Long.MAX_VALUE && sequence == runTo + 1) {
                runTo = sequence;
                return;
            }
            closeRun();
            runProducer = producerId;
            inRun = true;
            runFrom = sequence;
            runTo = sequence;
        }

        private void closeRun() {
            if (!inRun) {
                return;
            }
            if (firstRange == null) {
                firstProducer = runProducer;
                firstRange = new IdRange(runFrom, runTo);
            } else {
                if (ranges == null) {
                    ranges = new LinkedHashMap<>();
                    ranges.computeIfAbsent(firstProducer, p -> new ArrayList<>()).add(firstRange);
                }
                List<IdRange> list = ranges.computeIfAbsent(runProducer, p -> new ArrayList<>());
                IdRange last = list.isEmpty() ? null : list.get(list.size() - 1);
                if (last != null && last.to() != Long.MAX_VALUE && last.to() + 1 == runFrom) {
                    list.set(list.size() - 1, new IdRange(last.from(), runTo));
                } else {
                    list.add(new IdRange(runFrom, runTo));
                }
            }
            inRun = false;
        }

        /** The ranges per producer, in the order their producers first stored; not to be modified. */
        Map<Long, List<IdRange>> build() {
            closeRun();
            if (ranges != null) {
                return ranges;
            }
            return firstRange == null ? Map.of() : Map.of(firstProducer, List.of(firstRange));
        }
    }

    /**
     * {@code messages} of one frame to confirm, {@code resends} of them not stored (P1); {@code bytes} the publish window
     * they took ({@link ProducerLink#windowBytes}), {@code heldBytes} their headers and payloads (W2 of {@link ProducerLink}).
     * {@code ranges} null: a TX_PUBLISH's window alone, nothing to confirm or count.
     */
    private record Entry(long lastId, ProducerLink connection, Map<Long, List<IdRange>> ranges,
                         int messages, int resends, long bytes, long heldBytes, long receivedAtNanos) {
    }

    /** Tells {@code table} of the producers whose publishes wait here, from now on ({@link ProducerTable#awaitingConfirm}). */
    void tellProducers(ProducerTable table) {
        this.producers = table;
    }

    private void waiting(Entry e) {
        if (producers != null && e.ranges != null) {
            for (Long producerId : e.ranges.keySet()) {
                producers.awaitingConfirm(producerId);
            }
        }
    }

    private void settled(Entry e) {
        if (producers != null && e.ranges != null) {
            for (Long producerId : e.ranges.keySet()) {
                producers.confirmSettled(producerId);
            }
        }
    }

    /**
     * One PUBLISH frame's messages to confirm once record {@code lastId} is durable: {@code messages}
     * in all, of which {@code resends} were recognised and not stored.
     */
    void add(long lastId, ProducerLink connection, Map<Long, List<IdRange>> ranges, int messages, int resends, long bytes,
             long heldBytes, long receivedAtNanos) {
        Entry e = new Entry(lastId, connection, ranges, messages, resends, bytes, heldBytes, receivedAtNanos);
        entries.add(e);
        waiting(e);
        demandDurable.accept(lastId);
    }

    /**
     * One TX_PUBLISH frame of {@code messages} ({@code bytes} of publish window, {@link ProducerLink#windowBytes}; {@code heldBytes}
     * of headers and payload, W2), {@code staged} of them stored: its
     * publish window goes back once the backlog lets that many go (C2), with no CONFIRM. Not C1: a staged
     * message is confirmed by its commit, which waits for its durability.
     */
    void addWindow(ProducerLink connection, int messages, int staged, long bytes, long heldBytes) {
        entries.add(new Entry(-1, connection, null, messages, messages - staged, bytes, heldBytes, 0));
    }

    /**
     * Releases, in order, the entries whose messages are durable ({@code durableId}) while the
     * backlog lets their stored messages go (C2); records one publish-to-confirm latency sample per
     * frame. Flushes what it wrote.
     */
    void release(long durableId, Backlog backlog, LongConsumer latencyNanos) {
        FlushList<ProducerLink> touched = touchedLinks.begin();
        long now = 0;
        while (!entries.isEmpty()) {
            Entry e = entries.peek();
            if (e.lastId > durableId || !backlog.mayConfirm(e.messages - e.resends)) {
                break;
            }
            entries.poll();
            settled(e);
            if (e.ranges != null) {
                if (now == 0) {
                    now = System.nanoTime();
                }
                latencyNanos.accept(now - e.receivedAtNanos);
                confirmedStored += e.messages - e.resends;
                confirmedResends += e.resends;
                e.ranges.forEach(e.connection::confirm);
            }
            e.connection.publishCredit(e.messages, e.bytes, e.heldBytes);
            touched.add(e.connection);
        }
        touched.flushAll(ProducerLink::flush);
    }

    /** Stored messages confirmed so far ({@code sluice_queue_confirmed_messages_total}). */
    long confirmedStored() {
        return confirmedStored;
    }

    /** Resends confirmed without being stored so far ({@code sluice_queue_duplicates_total}). */
    long confirmedResends() {
        return confirmedResends;
    }

    /**
     * Refuses every entry still waiting (the store failed, or the queue was deleted): each producer
     * gets a PUBLISH_ERROR per range and its publish window back.
     */
    void refuseAll(ErrorCode code, String message) {
        FlushList<ProducerLink> touched = touchedLinks.begin();
        while (!entries.isEmpty()) {
            Entry e = entries.poll();
            settled(e);
            if (e.ranges != null) { // null: a TX_PUBLISH's window; its commit meets the failure and answers it
                e.ranges.forEach((producer, ranges) -> ranges.forEach(range -> e.connection.refuse(producer, range, code, message)));
            }
            e.connection.publishCredit(e.messages, e.bytes, e.heldBytes);
            touched.add(e.connection);
        }
        touched.flushAll(ProducerLink::flush);
    }

    int size() {
        return entries.size();
    }
}
