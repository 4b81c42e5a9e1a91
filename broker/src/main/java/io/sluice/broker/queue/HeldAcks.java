package io.sluice.broker.queue;

import java.util.Arrays;

/**
 * Deliveries a transaction acknowledged (TX_ACK) and holds until it ends: taken off their consumer
 * (so neither its ack timeout nor its leaving sends them again, and its credit is settled), still
 * unacknowledged in the store. A commit acknowledges them ({@link QueueTransactions#commitHeld}); a
 * rollback returns them to the front of their queue ({@link QueueTransactions#release}).
 *
 * <p>Threads: filled on the queue's executor, then handed to the transaction coordinator, which only
 * reads it and hands it back to the queue. Immutable once handed over.
 */
public final class HeldAcks {
    private final BrokerQueue queue;
    private long[] ids = new long[8];
    private int[] bytes = new int[8];
    private int count;
    /** Why part of the TX_ACK could not be held (a range with nothing outstanding on the consumer), or null. */
    private String problem;

    HeldAcks(BrokerQueue queue) {
        this.queue = queue;
    }

    void add(long id, int messageBytes) {
        if (count == ids.length) {
            ids = Arrays.copyOf(ids, count * 2);
            bytes = Arrays.copyOf(bytes, count * 2);
        }
        ids[count] = id;
        bytes[count] = messageBytes;
        count++;
    }

    void problem(String problem) {
        if (this.problem == null) {
            this.problem = problem;
        }
    }

    public BrokerQueue queue() {
        return queue;
    }

    public int count() {
        return count;
    }

    public long id(int i) {
        return ids[i];
    }

    int bytes(int i) {
        return bytes[i];
    }

    /** The ids held, in the order they were taken. */
    public long[] ids() {
        return Arrays.copyOf(ids, count);
    }

    public String problem() {
        return problem;
    }
}
