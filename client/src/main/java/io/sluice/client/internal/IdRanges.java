package io.sluice.client.internal;

import io.sluice.protocol.IdRange;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** Turns a set of ids into the fewest inclusive ranges, as ACK and NACK frames carry them. Stateless. */
public final class IdRanges {
    private IdRanges() {
    }

    /** Sorts {@code ids[0..count)} in place and merges runs of consecutive ids; duplicates collapse. */
    public static List<IdRange> of(long[] ids, int count) {
        Arrays.sort(ids, 0, count);
        List<IdRange> ranges = new ArrayList<>();
        int i = 0;
        while (i < count) {
            long from = ids[i];
            long to = from;
            i++;
            while (i < count && (ids[i] == to || ids[i] == to + 1)) {
                to = ids[i];
                i++;
            }
            ranges.add(new IdRange(from, to));
        }
        return ranges;
    }
}
