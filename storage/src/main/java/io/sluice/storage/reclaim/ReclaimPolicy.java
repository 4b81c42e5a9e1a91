package io.sluice.storage.reclaim;

import java.util.ArrayList;
import java.util.List;

/**
 * Decides which segments to delete and which to empty by relocating stragglers. A pure function of
 * the segments' ack figures; the store carries the decisions out.
 *
 * <p>Rules, in order (cited in the code as R1..R3):
 * <ol>
 *   <li>R1: never touch the segment being written, nor any segment at or after the oldest segment a
 *       reader is positioned in (a reader mid-file would otherwise keep the deleted file mapped, and
 *       Chronicle logs an error when a tailer's file disappears beneath it). Chronicle also needs
 *       the newest segment to stay, or it would reuse indexes.</li>
 *   <li>R2: a segment whose every message is acknowledged is deleted.</li>
 *   <li>R3: a segment sealed for at least {@code relocateAfterNanos} whose unacknowledged messages are
 *       at most {@code maxLiveRatio} of its messages and at most {@code maxLiveMessages} has them
 *       relocated: copied forward to the segment being written, keeping their identity and delivery
 *       count, so that a few stragglers cannot pin a whole file. The cost is bounded: at most
 *       {@code maxLiveMessages} copies per segment, each freeing at least {@code 1/maxLiveRatio}
 *       messages' worth of disk. The wait spares the messages that were merely in flight when the
 *       segment was sealed, acknowledged milliseconds later (storage.relocate-after-ms, 1 s by
 *       default): copying them at every roll held the
 *       store's lock, and so the appends, for 3–8 ms under W1, for nothing.</li>
 * </ol>
 */
public final class ReclaimPolicy {
    private final double maxLiveRatio;
    private final long maxLiveMessages;
    private final long relocateAfterNanos;

    public ReclaimPolicy(double maxLiveRatio, long maxLiveMessages, long relocateAfterNanos) {
        this.maxLiveRatio = maxLiveRatio;
        this.maxLiveMessages = maxLiveMessages;
        this.relocateAfterNanos = relocateAfterNanos;
    }

    /**
     * @param segments      segments on disk, oldest first
     * @param writeSegment  the segment appends go to
     * @param oldestReaderSegment the lowest segment any reader is positioned in, or Integer.MAX_VALUE
     */
    public List<ReclaimDecision> decide(List<SegmentState> segments, int writeSegment, int oldestReaderSegment) {
        List<ReclaimDecision> decisions = new ArrayList<>();
        int limit = Math.min(writeSegment, oldestReaderSegment);
        for (SegmentState s : segments) {
            if (s.segment() >= limit) { // R1
                break;
            }
            if (s.unackedMessages() == 0) { // R2
                decisions.add(new ReclaimDecision(s.segment(), ReclaimDecision.Action.DELETE));
            } else if (maxLiveRatio > 0
                    && s.sealedForNanos() >= relocateAfterNanos
                    && s.unackedMessages() <= maxLiveMessages
                    && s.unackedMessages() <= maxLiveRatio * s.messageCount()) { // R3
                decisions.add(new ReclaimDecision(s.segment(), ReclaimDecision.Action.RELOCATE));
            }
        }
        return decisions;
    }
}
