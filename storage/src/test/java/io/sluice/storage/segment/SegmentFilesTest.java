package io.sluice.storage.segment;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SegmentFilesTest {
    @Test
    void shouldNameSegmentsSoThatNamesSortInSegmentOrder() {
        assertEquals("19700101-000000.cq4", SegmentFiles.fileName(0));
        assertEquals("19700101-000003.cq4", SegmentFiles.fileName(3));
        assertEquals("19700102-000000.cq4", SegmentFiles.fileName(86_400));
        String previous = SegmentFiles.fileName(0);
        for (int s = 1; s < 200_000; s += 997) {
            String name = SegmentFiles.fileName(s);
            assertTrue(name.compareTo(previous) > 0, name + " sorts after " + previous);
            previous = name;
        }
    }

    @Test
    void shouldParseTheSegmentNumberBackFromTheName() {
        for (int s : new int[] {0, 1, 59, 3600, 86_399, 1_000_000, Integer.MAX_VALUE}) {
            assertEquals(s, SegmentFiles.segmentOf(SegmentFiles.fileName(s)));
        }
        assertEquals(-1, SegmentFiles.segmentOf("metadata.cq4t"));
        assertEquals(-1, SegmentFiles.segmentOf("garbage.cq4"));
        assertEquals(-1, SegmentFiles.segmentOf("19700101-000003.cq4.deleting"));
    }
}
