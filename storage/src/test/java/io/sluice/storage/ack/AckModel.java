package io.sluice.storage.ack;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/** The obviously-correct ack state the real classes are compared with: a set of unacked ids and hash maps. */
final class AckModel {
    final TreeMap<Integer, Long> counts = new TreeMap<>();
    final TreeSet<Long> unacked = new TreeSet<>();
    final Map<Long, Long> relocatedTo = new HashMap<>();
    final Map<Long, Long> relocatedFrom = new HashMap<>();
    final Map<Long, Integer> deliveries = new HashMap<>();
    int highest = -1;

    static long id(int segment, long seq) {
        return ((long) segment << 32) | seq;
    }

    boolean canGrow(int segment, long count) {
        Long old = counts.get(segment);
        return old != null ? count >= old : segment > highest;
    }

    void segmentGrew(int segment, long count) {
        long old = counts.getOrDefault(segment, 0L);
        for (long seq = old; seq < count; seq++) {
            unacked.add(id(segment, seq));
        }
        counts.put(segment, count);
        highest = Math.max(highest, segment);
    }

    AckResult ack(long id) {
        Long target = relocatedTo.get(id);
        if (target != null) {
            return ackSlot(id, target);
        }
        return ackSlot(relocatedFrom.getOrDefault(id, id), id);
    }

    private AckResult ackSlot(long original, long physical) {
        int segment = (int) (physical >>> 32);
        Long count = counts.get(segment);
        if (count == null) {
            return segment <= highest ? AckResult.ALREADY_ACKED : AckResult.UNKNOWN;
        }
        if ((physical & 0xFFFFFFFFL) >= count) {
            return AckResult.UNKNOWN;
        }
        if (!unacked.remove(physical)) {
            return AckResult.ALREADY_ACKED;
        }
        deliveries.remove(original);
        if (original != physical) {
            relocatedTo.remove(original);
            relocatedFrom.remove(physical);
        }
        return AckResult.NEWLY_ACKED;
    }

    long ackRange(long from, long to) {
        List<Long> names = new ArrayList<>();
        relocatedTo.keySet().stream().filter(o -> o >= from && o <= to).forEach(names::add);
        names.addAll(unacked.subSet(from, true, to, true));
        long newly = 0;
        for (long name : names) {
            if (ack(name) == AckResult.NEWLY_ACKED) {
                newly++;
            }
        }
        return newly;
    }

    long physicalId(long id) {
        return relocatedTo.getOrDefault(id, id);
    }

    boolean recordDelivery(long id, int count) {
        long original = relocatedFrom.getOrDefault(id, id);
        if (!unacked.contains(physicalId(original))) {
            return false;
        }
        deliveries.put(original, count);
        return true;
    }

    boolean canRelocate(long originalId, long newId) {
        long original = relocatedFrom.getOrDefault(originalId, originalId);
        long current = physicalId(original);
        return unacked.contains(current) && newId != current && unacked.contains(newId) && !relocatedFrom.containsKey(newId);
    }

    void relocate(long originalId, long newId) {
        long original = relocatedFrom.getOrDefault(originalId, originalId);
        long current = physicalId(original);
        unacked.remove(current);
        if (current != original) {
            relocatedFrom.remove(current);
        }
        relocatedTo.put(original, newId);
        relocatedFrom.put(newId, original);
    }

    boolean isFullyAcked(int segment) {
        long count = counts.get(segment);
        return count > 0 && unacked.subSet(id(segment, 0), true, id(segment, count - 1), true).isEmpty();
    }

    long unackedIn(int segment) {
        long count = counts.getOrDefault(segment, 0L);
        return count == 0 ? 0 : unacked.subSet(id(segment, 0), true, id(segment, count - 1), true).size();
    }

    void removeSegment(int segment) {
        counts.remove(segment);
    }

    boolean isAcked(long id) {
        long physical = physicalId(id);
        int segment = (int) (physical >>> 32);
        Long count = counts.get(segment);
        if (count == null) {
            return segment <= highest;
        }
        return (physical & 0xFFFFFFFFL) < count && !unacked.contains(physical);
    }

    int deliveryCount(long id) {
        return deliveries.getOrDefault(relocatedFrom.getOrDefault(id, id), 0);
    }

    private static List<String> describe(TreeSet<Long> ids) {
        return ids.stream().limit(10).map(id -> (id >>> 32) + ":" + (id & 0xFFFFFFFFL)).toList();
    }

    /** Compares every observable of {@code actual} with the model. */
    void assertMatches(AckStateReader actual) {
        if (unacked.size() != actual.unackedCount()) {
            TreeSet<Long> actualIds = new TreeSet<>();
            for (long id = actual.firstUnackedId(); id >= 0; id = actual.nextUnackedId(id + 1)) {
                actualIds.add(id);
            }
            TreeSet<Long> extra = new TreeSet<>(actualIds);
            extra.removeAll(unacked);
            TreeSet<Long> missing = new TreeSet<>(unacked);
            missing.removeAll(actualIds);
            assertEquals(unacked.size(), actual.unackedCount(), "unackedCount; unacked only in actual "
                    + describe(extra) + ", only in model " + describe(missing) + ", relocations " + relocatedTo);
        }
        assertEquals(unacked.isEmpty() ? -1 : unacked.first(), actual.firstUnackedId(), "firstUnackedId");
        List<Long> iterated = new ArrayList<>();
        for (long id = actual.firstUnackedId(); id >= 0; id = actual.nextUnackedId(id + 1)) {
            iterated.add(id);
        }
        assertEquals(new ArrayList<>(unacked), iterated, "unacked ids walked with nextUnackedId");
        assertEquals(highest, actual.highestKnownSegment(), "highestKnownSegment");
        assertEquals(counts.keySet().stream().mapToInt(Integer::intValue).boxed().toList(),
                java.util.Arrays.stream(actual.liveSegments()).boxed().toList(), "live segments");
        assertEquals(counts.keySet().stream().filter(this::isFullyAcked).toList(),
                java.util.Arrays.stream(actual.fullyAckedSegments()).boxed().toList(), "fully acked segments");
        for (Map.Entry<Integer, Long> entry : counts.entrySet()) {
            int segment = entry.getKey();
            assertEquals(entry.getValue(), actual.messageCount(segment), "messageCount of segment " + segment);
            assertEquals(unackedIn(segment), actual.unackedCount(segment), "unackedCount of segment " + segment);
            for (long seq = 0; seq < entry.getValue() + 2; seq++) {
                long id = id(segment, seq);
                assertEquals(isAcked(id), actual.isAcked(id), "isAcked " + segment + ":" + seq);
                assertEquals(deliveryCount(id), actual.deliveryCount(id), "deliveryCount " + segment + ":" + seq);
                assertEquals(physicalId(id), actual.physicalId(id), "physicalId " + segment + ":" + seq);
                assertEquals(relocatedTo.containsKey(id), actual.isRelocated(id), "isRelocated " + segment + ":" + seq);
            }
        }
        for (Map.Entry<Long, Long> entry : relocatedTo.entrySet()) {
            assertEquals(entry.getValue(), actual.physicalId(entry.getKey()), "physicalId of relocated " + entry.getKey());
            assertEquals(deliveryCount(entry.getKey()), actual.deliveryCount(entry.getKey()), "deliveryCount of relocated");
        }
    }
}
