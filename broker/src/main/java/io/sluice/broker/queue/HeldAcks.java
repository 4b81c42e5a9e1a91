package io.sluice.broker.queue;

import io.sluice.protocol.ErrorCode;

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
    /**
     * Why part of the TX_ACK could not be held (a range with nothing outstanding on the consumer, a message the store could
     * not read), or null; and its code.
     */
    private String problem;
    private ErrorCode problemCode;

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

    /** A range with nothing outstanding on the consumer: UNKNOWN_MESSAGE_ID. */
    void problem(String problem) {
        problem(ErrorCode.UNKNOWN_MESSAGE_ID, problem);
    }

    void problem(ErrorCode code, String problem) {
        if (this.problem == null) {
            this.problem = problem;
            this.problemCode = code;
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

    /** The code of {@link #problem()}, or null if there is none. */
    public ErrorCode problemCode() {
        return problemCode;
    }
}
