package io.sluice.broker.txn;

import io.sluice.broker.queue.AckBatch;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.StoredMessage;
import io.sluice.storage.durability.FileForcer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The broker-wide transaction log: a store of its own under {@code <data>/transactions}, one log in
 * it, forced by group commit like a queue. Its records are commits ({@link #KIND_COMMIT}, a
 * {@link CommitRecord}), each carrying its transaction's number as its producer id. A commit record
 * is the commit point: once it is durable the transaction is committed. It is acknowledged
 * (finished) once nothing depends on it any more (X3 of {@link TransactionCoordinator}): so the
 * records still unacknowledged at a start are the commits whose staged messages may still be in
 * their queues, and the log's segments are reclaimed (and its stragglers relocated) as a queue's are.
 *
 * <p>Threads: the coordinator's thread appends, reads and acknowledges; the store's flusher reports
 * durability.
 */
public final class TransactionLog implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(TransactionLog.class);
    static final String DIRECTORY = "transactions";
    static final String LOG_NAME = "log";
    static final long KIND_COMMIT = 2;
    /** Room for a commit record: the ids of a transaction at its caps, and its queues' names. */
    private static final int MIN_RECORD_BYTES = 4 << 20;

    private final MessageStore store;
    private final QueueStore log;
    /** A finish was acknowledged in memory only (the log's ack state failed), and the log said so. Coordinator's thread. */
    private boolean finishedInMemory;

    private TransactionLog(MessageStore store, QueueStore log) {
        this.store = store;
        this.log = log;
    }

    /**
     * Opens (creating if need be) the log under {@code dataDirectory}, with the queues' storage settings but room for a
     * commit record. Its store is independent of the queues' (a directory, a lock and files of its own), so a broker opens
     * it on a start-up thread while the queues' store recovers; {@link TransactionCoordinator#open} then recovers the
     * transactions in it.
     */
    public static TransactionLog open(Path dataDirectory, StoreConfig queues, FileForcer forcer) {
        int recordBytes = (int) Math.min(queues.segmentBytes() / 4, Math.max(queues.maxMessageBytes() + 1024L, MIN_RECORD_BYTES));
        StoreConfig config = queues.toBuilder().maxMessageBytes(recordBytes).build();
        MessageStore store = MessageStore.open(dataDirectory.resolve(DIRECTORY), config, forcer);
        try {
            QueueStore log = store.hasQueue(LOG_NAME) ? store.queue(LOG_NAME) : store.createQueue(LOG_NAME);
            // No producer registry owns the log, and it keeps no producer state: reopened with segments, it would
            // otherwise keep all of them, and every later one, waiting for a producer checkpoint (rule R6).
            log.producerStateCoveredThrough(Long.MAX_VALUE);
            return new TransactionLog(store, log);
        } catch (RuntimeException e) {
            store.close();
            throw e;
        }
    }

    /** The largest commit record the log takes. */
    int maxRecordBytes() {
        return store.config().maxMessageBytes();
    }

    /** Appends the commit record of transaction {@code number}; it is committed once {@link #whenDurable} completes for the id. */
    long commit(long number, CommitRecord record) {
        return log.append(number, KIND_COMMIT, null, record.encode());
    }

    CompletableFuture<Long> whenDurable(long id) {
        return log.whenDurable(id);
    }

    /**
     * The transaction no longer needs these records: acknowledged. A log whose ack state cannot be written (its storage
     * failed, docs/storage.md) acknowledges them in memory and throws; that is a finish all the same, as a queue's acks in
     * that state are ({@link AckBatch#ackAll}): the next start finds the records again and finishes them again, which
     * changes nothing. Not thrown, since a throw left its caller half done (a recovery stopped at the first transaction
     * it rolled back, and the broker did not start); said once, as the log's failure is final until a restart.
     * Throws only if the log took none (closed).
     */
    void finished(long[] ids) {
        RuntimeException notWritten = AckBatch.ackAll(log, ids, ids.length);
        if (notWritten != null && !finishedInMemory) {
            finishedInMemory = true;
            LOG.warn("The transaction log cannot write its acknowledgements ({}): finished commit records are acknowledged in "
                    + "memory only from now on, and the next start finishes them again.", notWritten.toString());
        }
    }

    /** Records not yet finished. */
    long records() {
        return log.unackedMessages();
    }

    /**
     * A transaction whose records are still in the log: their ids, and its commit if that is readable
     * (records without one are of an earlier broker's format, or damaged: the transaction is rolled back).
     */
    record Interrupted(long number, List<Long> records, CommitRecord commit) {
    }

    /**
     * The transactions whose records are still unacknowledged, in log order of their first record.
     * A commit record that cannot be read is reported and its transaction taken as rolled back.
     * Records of other kinds were written by the broker that staged publishes in the log (format 1):
     * reported once, and returned with the rest, so that they are finished.
     */
    List<Interrupted> interrupted() {
        List<Long> ids = new ArrayList<>();
        log.forEachUnacked(ids::add);
        Map<Long, List<Long>> records = new LinkedHashMap<>();
        Map<Long, CommitRecord> commits = new LinkedHashMap<>();
        long earlierFormat = 0;
        for (long id : ids) {
            StoredMessage m;
            try {
                m = log.read(id);
            } catch (RuntimeException e) {
                LOG.error("Transaction log record {} cannot be read ({}); it is skipped.", id, e.getMessage());
                continue;
            }
            if (m == null) {
                continue;
            }
            records.computeIfAbsent(m.producerId(), n -> new ArrayList<>()).add(id);
            if (m.producerSequence() != KIND_COMMIT) {
                earlierFormat++;
            } else {
                try {
                    commits.put(m.producerId(), CommitRecord.decode(m.payload()));
                } catch (IllegalArgumentException e) {
                    LOG.error("Transaction {}: its commit record {} is damaged ({}); the transaction is taken as rolled back.",
                            m.producerId(), id, e.getMessage());
                }
            }
        }
        if (earlierFormat > 0) {
            LOG.error("The transaction log holds {} staged publishes of an earlier broker, which this one does not apply; "
                    + "their transactions are rolled back. Stop a broker cleanly before upgrading it.", earlierFormat);
        }
        List<Interrupted> result = new ArrayList<>();
        records.forEach((number, list) -> result.add(new Interrupted(number, list, commits.get(number))));
        return result;
    }

    @Override
    public void close() {
        store.close();
    }
}
