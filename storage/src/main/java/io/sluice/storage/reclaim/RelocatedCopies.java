package io.sluice.storage.reclaim;

import io.sluice.storage.ack.AckLog;
import io.sluice.storage.ack.AckStateReader;
import io.sluice.storage.segment.SegmentRollCycle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;

/**
 * Rule R5 (docs/storage.md): what to do with an unacknowledged relocated copy that the ack state does
 * not name as its message's holder. Such a copy was written by a relocation whose journal record a
 * machine crash lost. Applied by recovery to every copy that can be in that state, and by readers and
 * the reclaimer to any copy they meet, before it is delivered or relocated again.
 * <ul>
 *   <li>the message has a live, unacknowledged slot (its original, or a later copy): the copy is a
 *       duplicate and is discarded (acknowledged);</li>
 *   <li>its slot's segment is still on disk and the slot is acknowledged: it was consumed, and the copy
 *       is discarded;</li>
 *   <li>its slot's segment is gone: the source was deleted without the relocation being durable (a
 *       store without rule R4 did that), so the copy is the only one left and is adopted: journaled
 *       as the message's holder, acknowledgeable by the message's id.</li>
 * </ul>
 * Stateless; call under the queue's lock.
 */
public final class RelocatedCopies {
    private static final Logger LOG = LoggerFactory.getLogger(RelocatedCopies.class);

    /** What {@link #resolve} decided. */
    public enum Outcome {
        /** The ack state already names the copy as the message's holder. */
        HOLDER,
        /** The copy was a duplicate or consumed, and is now acknowledged. */
        DISCARDED,
        /** The copy is now the message's holder. */
        ADOPTED
    }

    private RelocatedCopies() {
    }

    /** Resolves the unacknowledged relocated copy at {@code copyId} of the message {@code originalId}. */
    public static Outcome resolve(String queueName, AckLog ackLog, long copyId, long originalId) throws IOException {
        AckStateReader acks = ackLog.state();
        long holder = acks.physicalId(originalId);
        if (holder == copyId) {
            return Outcome.HOLDER;
        }
        boolean holderSegmentOnDisk = acks.messageCount(SegmentRollCycle.INSTANCE.toCycle(holder)) > 0;
        if (!acks.isAcked(holder) || holderSegmentOnDisk) {
            LOG.warn("Queue '{}': discarding the copy at 0x{} of message 0x{}: its relocation never reached the journal, and the "
                    + "message is {} at 0x{}.", queueName, Long.toHexString(copyId), Long.toHexString(originalId),
                    acks.isAcked(holder) ? "acknowledged" : "still stored", Long.toHexString(holder));
            ackLog.ack(copyId);
            return Outcome.DISCARDED;
        }
        LOG.warn("Queue '{}': adopting the copy at 0x{} of message 0x{}: the message's segment was deleted before its relocation "
                + "reached the journal, so this copy is the only one left.", queueName, Long.toHexString(copyId),
                Long.toHexString(originalId));
        ackLog.adopt(originalId, copyId);
        return Outcome.ADOPTED;
    }
}
