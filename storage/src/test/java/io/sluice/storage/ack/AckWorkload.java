package io.sluice.storage.ack;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Random operations applied to a model and to the class under test, comparing every return value.
 * Driven by a seed so that a failure prints something to replay.
 */
final class AckWorkload {
    /** The mutating calls shared by {@link AckTracker} and {@link AckLog}. */
    interface Target {
        void segmentGrew(int segment, long messageCount);

        AckResult ack(long id);

        long ackRange(long fromId, long toIdInclusive);

        /** Acknowledges each id in turn; returns how many were newly acknowledged. */
        int ackAll(long[] ids, int count);

        boolean recordDelivery(long id, int count);

        /** Records each delivery in turn, as one dispatch does. */
        void recordDeliveries(long[] ids, int[] counts, int count);

        void relocate(long originalId, long newId);

        void removeSegment(int segment);
    }

    private final Random random;
    private final AckModel model;
    private final int maxSegmentGrowth;

    AckWorkload(long seed, AckModel model, int maxSegmentGrowth) {
        this.random = new Random(seed);
        this.model = model;
        this.maxSegmentGrowth = maxSegmentGrowth;
    }

    static Target of(AckTracker tracker) {
        return new Target() {
            public void segmentGrew(int segment, long messageCount) {
                tracker.segmentGrew(segment, messageCount);
            }

            public AckResult ack(long id) {
                return tracker.ack(id);
            }

            public long ackRange(long fromId, long toIdInclusive) {
                return tracker.ackRange(fromId, toIdInclusive);
            }

            public int ackAll(long[] ids, int count) {
                int newly = 0;
                for (int i = 0; i < count; i++) {
                    newly += tracker.ack(ids[i]) == AckResult.NEWLY_ACKED ? 1 : 0;
                }
                return newly;
            }

            public boolean recordDelivery(long id, int count) {
                return tracker.recordDelivery(id, count);
            }

            public void recordDeliveries(long[] ids, int[] counts, int count) {
                for (int i = 0; i < count; i++) {
                    tracker.recordDelivery(ids[i], counts[i]);
                }
            }

            public void relocate(long originalId, long newId) {
                tracker.relocate(originalId, newId);
            }

            public void removeSegment(int segment) {
                tracker.removeSegment(segment);
            }
        };
    }

    void run(Target target, int operations) {
        for (int i = 0; i < operations; i++) {
            step(target);
        }
    }

    void step(Target target) {
        if (model.highest < 0) {
            newSegment(target);
            return;
        }
        int dice = random.nextInt(100);
        if (dice < 20) {
            int top = model.highest;
            if (model.counts.containsKey(top)) {
                long count = model.counts.get(top) + 1 + random.nextInt(maxSegmentGrowth);
                model.segmentGrew(top, count);
                target.segmentGrew(top, count);
            } else {
                newSegment(target);
            }
        } else if (dice < 25) {
            newSegment(target);
        } else if (dice < 40) {
            long id = randomId();
            assertEquals(model.ack(id), target.ack(id), "ack " + id);
        } else if (dice < 50) {
            // As the broker acknowledges an ACK frame: runs of consecutive ids, now and then a relocated
            // message's original name or an id already acknowledged among them.
            long[] ids = new long[1 + random.nextInt(40)];
            long next = randomId();
            for (int i = 0; i < ids.length; i++) {
                ids[i] = random.nextInt(8) == 0 && !model.relocatedTo.isEmpty()
                        ? pick(new ArrayList<>(model.relocatedTo.keySet())) : next++;
                if (random.nextInt(6) == 0) {
                    next += 1 + random.nextInt(3);
                }
            }
            int newly = 0;
            for (long id : ids) {
                newly += model.ack(id) == AckResult.NEWLY_ACKED ? 1 : 0;
            }
            assertEquals(newly, target.ackAll(ids, ids.length), "ackAll " + java.util.Arrays.toString(ids));
        } else if (dice < 65) {
            long from = randomId();
            long to = random.nextInt(10) == 0 ? from + (1L << 32) + random.nextInt(50) : from + random.nextInt(300);
            assertEquals(model.ackRange(from, to), target.ackRange(from, to), "ackRange " + from + ".." + to);
        } else if (dice < 71) {
            // As the broker records a dispatch: mostly runs of consecutive ids delivered for the same
            // count, now and then a redelivery, a relocated message's original name or an acked id.
            long[] ids = new long[1 + random.nextInt(40)];
            int[] counts = new int[ids.length];
            long next = randomId();
            int count = 1;
            for (int i = 0; i < ids.length; i++) {
                boolean relocated = random.nextInt(8) == 0 && !model.relocatedFrom.isEmpty();
                ids[i] = relocated ? pick(new ArrayList<>(model.relocatedFrom.keySet())) : next++;
                if (random.nextInt(6) == 0) {
                    next += random.nextInt(3);
                    count = 1 + random.nextInt(3);
                }
                counts[i] = count;
                model.recordDelivery(ids[i], counts[i]);
            }
            target.recordDeliveries(ids, counts, ids.length);
        } else if (dice < 77) {
            long id = random.nextBoolean() || model.relocatedFrom.isEmpty() ? randomId() : pick(new ArrayList<>(model.relocatedFrom.keySet()));
            int count = 1 + random.nextInt(5);
            assertEquals(model.recordDelivery(id, count), target.recordDelivery(id, count), "recordDelivery " + id);
        } else if (dice < 90) {
            relocate(target);
        } else {
            List<Integer> candidates = model.counts.keySet().stream()
                    .filter(s -> s != model.highest && model.isFullyAcked(s)).toList();
            if (!candidates.isEmpty()) {
                int segment = pick(candidates);
                model.removeSegment(segment);
                target.removeSegment(segment);
            }
        }
    }

    private void newSegment(Target target) {
        int segment = model.highest + 1 + (random.nextInt(4) == 0 ? 1 : 0);
        long count = 1 + random.nextInt(maxSegmentGrowth * 3);
        model.segmentGrew(segment, count);
        target.segmentGrew(segment, count);
    }

    /** Copies a straggler forward the way the store does: append to the top segment, then relocate. */
    private void relocate(Target target) {
        if (model.unacked.isEmpty() || !model.counts.containsKey(model.highest)) {
            return;
        }
        long original = pick(new ArrayList<>(model.unacked));
        if (random.nextInt(3) == 0 && !model.relocatedTo.isEmpty()) {
            original = pick(new ArrayList<>(model.relocatedTo.keySet()));
        }
        int top = model.highest;
        long count = model.counts.get(top);
        long newId = random.nextInt(10) == 0 ? original : AckModel.id(top, count);
        model.segmentGrew(top, count + 1);
        target.segmentGrew(top, count + 1);
        if (model.canRelocate(original, newId)) {
            model.relocate(original, newId);
            target.relocate(original, newId);
        } else {
            long from = original;
            assertThrows(IllegalArgumentException.class, () -> target.relocate(from, newId));
        }
    }

    private long randomId() {
        int segment = Math.max(0, model.highest - 2 - random.nextInt(3) + random.nextInt(6));
        long count = model.counts.getOrDefault(segment, 10L);
        return AckModel.id(segment, random.nextInt((int) count + 3));
    }

    private <T> T pick(List<T> list) {
        return list.get(random.nextInt(list.size()));
    }
}
