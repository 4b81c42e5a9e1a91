package io.sluice.storage.segment;

import net.openhft.chronicle.core.time.TimeProvider;

/**
 * The clock a queue's Chronicle instance rolls by: it reports the current segment number in
 * logical milliseconds (see {@link SegmentRollCycle}), and moves only when the store seals a segment.
 * Thread-safe: written under the queue's append lock, read by Chronicle on any thread.
 */
public final class SegmentClock implements TimeProvider {
    private volatile int segment;

    public SegmentClock(int segment) {
        this.segment = segment;
    }

    /** The segment that the next append goes to. */
    public int segment() {
        return segment;
    }

    /** Moves to the next segment: the next append rolls to a new file. */
    public void advance() {
        segment = segment + 1;
    }

    /**
     * Recovery only, before any append: moves forward to {@code next}, past segments whose files are
     * gone (reclaimed) but whose ids were handed out, so that no id is ever reused.
     */
    public void moveTo(int next) {
        if (next < segment) {
            throw new IllegalArgumentException("segment clock cannot move back from " + segment + " to " + next);
        }
        segment = next;
    }

    @Override
    public long currentTimeMillis() {
        return (long) segment * SegmentRollCycle.MILLIS_PER_SEGMENT;
    }
}
