package io.sluice.storage;

/**
 * Receives the unacknowledged records a transaction staged ({@link StoredMessage#transactional()}),
 * found by the pass that opens a queue's byte count ({@link QueueStore#unackedMessageBytes}): the
 * broker's recovery discards those whose transaction never committed.
 */
@FunctionalInterface
public interface StagedRecordVisitor {
    StagedRecordVisitor NONE = (id, transaction, bytes) -> { };

    /** Record {@code id} (its original id if relocated), staged by transaction {@code transaction}, of {@code bytes} headers plus payload. */
    void staged(long id, long transaction, int bytes);
}
