package io.sluice.broker.queue;

import io.sluice.storage.StagedRecordVisitor;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The unacknowledged records transactions had staged in a queue, by transaction number, as the pass
 * that opens the queue found them (rule T4 of {@link QueueTransactions}): what recovery resolves. The
 * commit records among them (T5) are kept apart: they tell recovery which transactions committed.
 * Memory is the ids of those records, until recovery is over. Filled on the thread that opens the
 * queue, then read on the queue's executor; not thread-safe.
 */
final class StagedAtOpen implements StagedRecordVisitor {
    /** Receives one transaction's records. */
    interface Visitor {
        /** {@code sizes[i]}: headers plus payload of {@code ids[i]}; {@code bytes}, their sum. */
        void transaction(long number, long[] ids, int[] sizes, int count, long bytes);
    }

    private static final class Records {
        long[] ids = new long[16];
        /** Each record's headers plus payload: recovery may discard some of a committed transaction's (X4). */
        int[] sizes = new int[16];
        int count;
        long bytes;
    }

    private final Map<Long, Records> byTransaction = new LinkedHashMap<>();
    /** A commit record found: its id here and its bytes (headers plus payload). */
    record CommitRecordAt(long id, int bytes) {
    }

    /** The commit records found (a transaction's, in its one target queue), by transaction number. */
    private final Map<Long, CommitRecordAt> commitRecords = new LinkedHashMap<>();

    @Override
    public void staged(long id, long transaction, boolean commitRecord, int bytes) {
        if (commitRecord) {
            commitRecords.put(transaction, new CommitRecordAt(id, bytes));
            return;
        }
        Records r = byTransaction.computeIfAbsent(transaction, n -> new Records());
        if (r.count == r.ids.length) {
            r.ids = Arrays.copyOf(r.ids, r.count * 2);
            r.sizes = Arrays.copyOf(r.sizes, r.count * 2);
        }
        r.sizes[r.count] = bytes;
        r.ids[r.count++] = id;
        r.bytes += bytes;
    }

    /** The commit records found, by transaction number: their ids in this queue. */
    Map<Long, CommitRecordAt> commitRecords() {
        return commitRecords;
    }

    /**
     * The highest transaction number among the records found, staged messages and commit records alike, or -1 if none:
     * a number the coordinator must not hand out again while its records are on disk (X4).
     */
    long highestTransaction() {
        long highest = -1;
        for (long number : byTransaction.keySet()) {
            highest = Math.max(highest, number);
        }
        for (long number : commitRecords.keySet()) {
            highest = Math.max(highest, number);
        }
        return highest;
    }

    void forEach(Visitor visitor) {
        byTransaction.forEach((number, r) -> visitor.transaction(number, r.ids, r.sizes, r.count, r.bytes));
    }
}
