package io.sluice.storage;

import io.sluice.storage.ack.AckLog;
import io.sluice.storage.ack.AckStateReader;
import io.sluice.storage.durability.Durability;
import io.sluice.storage.reclaim.RelocatedCopies;
import io.sluice.storage.segment.MappedFileFaultException;
import io.sluice.storage.segment.RecordCodec;
import io.sluice.storage.segment.SegmentFiles;
import io.sluice.storage.segment.SegmentLog;
import io.sluice.storage.segment.SegmentRollCycle;

import java.io.IOException;
import java.nio.file.Path;

/**
 * Turns one queue's records into messages: a read by id (for redelivery) and each record a {@link QueueReader}
 * reaches. Both skip what is acknowledged, discard a damaged record through {@link CorruptRecords} (so it is never
 * delivered), and give a relocated copy its original's delivery count; a reader also skips the copies it must
 * ({@link OpenReaders}) and resolves a relocated copy against its original ({@link RelocatedCopies}).
 *
 * <p>Threads: every method runs under the {@link QueueStore}'s lock, which guards the log, the ack state and the
 * readers' skip sets.
 */
final class RecordReads {
    private final String name;
    private final Path segmentDirectory;
    private final SegmentLog log;
    private final AckLog ackLog;
    private final AckStateReader acks;
    private final Durability durability;
    private final CorruptRecords corruptRecords;

    RecordReads(String name, Path segmentDirectory, SegmentLog log, AckLog ackLog, Durability durability,
                CorruptRecords corruptRecords) {
        this.name = name;
        this.segmentDirectory = segmentDirectory;
        this.log = log;
        this.ackLog = ackLog;
        this.acks = ackLog.state();
        this.durability = durability;
        this.corruptRecords = corruptRecords;
    }

    /** See {@link QueueStore#read}: a detached copy, or null if acknowledged or never stored. */
    StoredMessage readLocked(long id) {
        long physical = acks.physicalId(id);
        if (acks.isAcked(physical)) {
            return null;
        }
        int length;
        try {
            length = log.read(physical);
        } catch (InternalError e) {
            MappedFileFaultException fault = new MappedFileFaultException("a read of queue '" + name + "'",
                    SegmentFiles.file(segmentDirectory, SegmentRollCycle.INSTANCE.toCycle(physical)), e);
            throw durability.fail("reading a segment", fault);
        }
        if (length < 0) {
            return null;
        }
        RecordCodec randomReadCodec = log.randomReadCodec();
        String problem = randomReadCodec.loaded(length);
        if (problem != null) {
            corruptRecords.discardLocked(physical, length, problem); // as a reader does: it can never be delivered
            throw corruptRecords.exception(physical, problem);
        }
        StoredMessage message = new StoredMessage();
        fillLocked(message, randomReadCodec, physical);
        return message.copy();
    }

    /** See {@link QueueStore#fillIfUnacked}. */
    boolean fillIfUnackedLocked(QueueReader reader, StoredMessage message, RecordCodec codec, long physical, String problem) {
        if (!reader.copiesToSkip.isEmpty() && reader.copiesToSkip.remove(physical)) {
            return false;
        }
        if (acks.isSlotAcked(physical)) {
            return false;
        }
        if (problem != null) {
            corruptRecords.discardLocked(physical, codec.length(), problem);
            return false;
        }
        if (codec.relocated() && resolveCopy(physical, codec.originalId()) == RelocatedCopies.Outcome.DISCARDED) {
            return false;
        }
        fillLocked(message, codec, physical);
        return true;
    }

    private RelocatedCopies.Outcome resolveCopy(long physical, long originalId) {
        try {
            return RelocatedCopies.resolve(name, ackLog, physical, originalId);
        } catch (IOException e) {
            throw AckUpdates.failure(name, durability, e);
        }
    }

    private void fillLocked(StoredMessage message, RecordCodec codec, long physical) {
        message.fill(codec, physical, acks.deliveryCount(codec.relocated() ? codec.originalId() : physical));
    }
}
