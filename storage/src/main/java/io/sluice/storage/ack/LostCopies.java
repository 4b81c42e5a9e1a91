package io.sluice.storage.ack;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongPredicate;
import java.util.function.Supplier;

/**
 * Rule "a lost copy gives its message back" (docs/storage.md, "Reclaim", R4): recovery, before it replays the journal,
 * finds every relocation in the checkpoint whose copy is not on disk and gives the message back to the slot it was
 * relocated from.
 *
 * <p>Rule R4 orders a relocation's writes so that its RELOCATED record reaches the disk only after its copy. But a
 * journal rotation between the copy and its force (an ack, a delivery, the relocation's own record filling the
 * journal) folds the relocation into a checkpoint, which is fsynced at once: the source slot acknowledged, the message
 * named by the copy. A machine crash then leaves the copy lost and the source, which R4 keeps until the copy's force,
 * on disk. Dropping the mapping to the lost slot and keeping the source slot acknowledged would never deliver the
 * message again (a confirmed message lost), so recovery gives the message back its source slot. The slot it was
 * relocated from is its original's if that is still on disk, else the newest earlier copy of it on disk, found by
 * {@link EarlierCopies} (a message relocated twice, its original segment reclaimed after the first move was forced).
 * Done before replay, the journal's later records apply to the message where it is: an ack of it by its id
 * acknowledges that slot, a later relocation moves it on.
 */
public final class LostCopies {
    private static final Logger LOG = LoggerFactory.getLogger(LostCopies.class);

    /** Finds earlier copies of messages whose newest copy was lost, by reading the segments. */
    @FunctionalInterface
    public interface EarlierCopies {
        /** Reads nothing: only a message whose original is on disk gets it back. */
        EarlierCopies NONE = (lostCopyByOriginal, holds) -> Map.of();

        /**
         * For each message of {@code lostCopyByOriginal} (its original id to its lost copy's id), the id of the newest
         * intact relocated copy of it below the lost copy among the slots {@code holds} accepts; a message with none is
         * left out.
         */
        Map<Long, Long> find(Map<Long, Long> lostCopyByOriginal, LongPredicate holds);
    }

    private LostCopies() {
    }

    /**
     * Gives back every message of {@code tracker} (a checkpoint's state) relocated to a slot that the segment files,
     * {@code reported} (segment to its record count), do not hold. Returns how many were given back.
     */
    static int restore(AckTracker tracker, Map<Integer, Long> reported, Supplier<Set<Integer>> reclaimedInJournal,
                       EarlierCopies earlier) {
        LongPredicate onDisk = id -> {
            Long count = reported.get(AckTracker.segmentOf(id));
            return count != null && AckTracker.seqOf(id) < count;
        };
        // A holder is a slot on disk that the checkpoint knows (a live segment), not a reclaimed segment's left-over file.
        LongPredicate holds = id -> onDisk.test(id) && tracker.isLive(AckTracker.segmentOf(id));
        List<long[]> lost = new ArrayList<>();
        tracker.forEachRelocation((original, copy) -> {
            if (!onDisk.test(copy)) {
                lost.add(new long[] {original, copy});
            }
        });
        if (lost.stream().anyMatch(pair -> !reported.containsKey(AckTracker.segmentOf(pair[1])))) {
            // A copy's segment that the journal reclaims after the checkpoint was deleted, not lost: every message in it
            // was acknowledged first (by its id, or by a range over the copy's slot, which only the mapping resolves).
            Set<Integer> reclaimed = reclaimedInJournal.get();
            lost.removeIf(pair -> reclaimed.contains(AckTracker.segmentOf(pair[1])));
        }
        if (lost.isEmpty()) {
            return 0;
        }
        Map<Long, Long> toFind = new HashMap<>();
        int restored = 0;
        for (long[] pair : lost) {
            if (holds.test(pair[0])) {
                tracker.restoreHolder(pair[0], pair[1], pair[0]);
                restored++;
            } else {
                toFind.put(pair[0], pair[1]);
            }
        }
        Map<Long, Long> found = toFind.isEmpty() ? Map.of() : earlier.find(toFind, holds);
        for (Map.Entry<Long, Long> entry : toFind.entrySet()) {
            Long holder = found.get(entry.getKey());
            if (holder != null && holds.test(holder) && holder < entry.getValue()) {
                tracker.restoreHolder(entry.getKey(), entry.getValue(), holder);
                restored++;
            } else {
                LOG.warn("The copy at 0x{} of message 0x{} is not on disk, and no earlier copy of it is.",
                        Long.toHexString(entry.getValue()), Long.toHexString(entry.getKey()));
            }
        }
        LOG.warn("{} relocated copies named by the ack checkpoint are not on disk (a machine crash took them before their "
                + "force); {} of their messages are back where they were relocated from.", lost.size(), restored);
        return restored;
    }
}
