package io.sluice.broker.txn;

import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.StoredMessage;
import io.sluice.storage.durability.FileForcer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The broker-wide transaction log: a store of its own under {@code <data>/transactions}, one log in
 * it, forced by group commit like a queue. Two kinds of record, each carrying its transaction's
 * number as its producer id:
 * <ul>
 *   <li>a staged publish ({@link #KIND_STAGED}): a message a transaction published, headers and
 *       payload as received, appended at TX_PUBLISH and not forced then;</li>
 *   <li>a commit ({@link #KIND_COMMIT}): the {@link CommitRecord}. It is the commit point: once it is
 *       durable the transaction is committed.</li>
 * </ul>
 * A transaction's records are acknowledged once its end no longer depends on them: after a
 * rollback at once, after a commit once what it applied is durable in its queues. So the records
 * still unacknowledged at a start are exactly the transactions a crash interrupted, and the log's
 * segments are reclaimed as a queue's are.
 *
 * <p>Threads: the coordinator's thread appends, reads and acknowledges; the store's flusher reports
 * durability.
 */
final class TransactionLog implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(TransactionLog.class);
    static final String DIRECTORY = "transactions";
    static final String LOG_NAME = "log";
    static final long KIND_STAGED = 1;
    static final long KIND_COMMIT = 2;
    /** Room for a commit record: the ids of a transaction at its caps, and its queues' names. */
    private static final int MIN_RECORD_BYTES = 4 << 20;

    private final MessageStore store;
    private final QueueStore log;

    private TransactionLog(MessageStore store, QueueStore log) {
        this.store = store;
        this.log = log;
    }

    /** Opens (creating if need be) the log under {@code dataDirectory}, with the queues' storage settings but room for a commit record. */
    static TransactionLog open(Path dataDirectory, StoreConfig queues, FileForcer forcer) {
        int recordBytes = (int) Math.min(queues.segmentBytes() / 4, Math.max(queues.maxMessageBytes() + 1024L, MIN_RECORD_BYTES));
        StoreConfig config = queues.toBuilder().maxMessageBytes(recordBytes).build();
        MessageStore store = MessageStore.open(dataDirectory.resolve(DIRECTORY), config, forcer);
        try {
            QueueStore log = store.hasQueue(LOG_NAME) ? store.queue(LOG_NAME) : store.createQueue(LOG_NAME);
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

    /** Appends a staged publish of transaction {@code number}: headers and payload are regions of {@code source}. */
    long stage(long number, ByteBuffer source, int headersOffset, int headersLength, int payloadOffset, int payloadLength) {
        return log.append(number, KIND_STAGED, source, headersOffset, headersLength, payloadOffset, payloadLength);
    }

    /** Appends the commit record of transaction {@code number}; it is committed once {@link #whenDurable} completes for the id. */
    long commit(long number, CommitRecord record) {
        return log.append(number, KIND_COMMIT, null, record.encode());
    }

    CompletableFuture<Long> whenDurable(long id) {
        return log.whenDurable(id);
    }

    /** A staged publish, or null if it is acknowledged. */
    StoredMessage read(long id) {
        return log.read(id);
    }

    /** The transaction no longer needs these records. */
    void finished(long[] ids) {
        log.ackAll(ids, ids.length);
    }

    /** Records not yet finished. */
    long records() {
        return log.unackedMessages();
    }

    /** A transaction a crash interrupted: its records, and its commit if that was written. */
    record Interrupted(long number, List<Long> records, CommitRecord commit) {
    }

    /**
     * The transactions whose records are still unacknowledged, in log order of their first record.
     * A commit record that cannot be read is reported and its transaction taken as rolled back.
     */
    List<Interrupted> interrupted() {
        List<Long> ids = new ArrayList<>();
        log.forEachUnacked(ids::add);
        Map<Long, List<Long>> records = new LinkedHashMap<>();
        Map<Long, CommitRecord> commits = new LinkedHashMap<>();
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
            if (m.producerSequence() == KIND_COMMIT) {
                try {
                    commits.put(m.producerId(), CommitRecord.decode(m.payload()));
                } catch (IllegalArgumentException e) {
                    LOG.error("Transaction {}: its commit record {} is damaged ({}); the transaction is taken as rolled back.",
                            m.producerId(), id, e.getMessage());
                }
            }
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
