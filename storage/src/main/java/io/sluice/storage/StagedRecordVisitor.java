package io.sluice.storage;

/**
 * Receives the unacknowledged records a transaction staged ({@link StoredMessage#transactional()}),
 * found by the pass that opens a queue's byte count ({@link QueueStore#unackedMessageBytes}): the
 * broker's recovery discards those whose transaction never committed.
 */
@FunctionalInterface
public interface StagedRecordVisitor {
    StagedRecordVisitor NONE = (id, transaction, commitRecord, bytes) -> { };

    /**
     * Record {@code id} (its original id if relocated), staged by transaction {@code transaction}, of
     * {@code bytes} headers plus payload; {@code commitRecord} if it is that transaction's commit record
     * ({@link QueueStore#appendStagedCommitRecord}), else a message it published.
     */
    void staged(long id, long transaction, boolean commitRecord, int bytes);
}
