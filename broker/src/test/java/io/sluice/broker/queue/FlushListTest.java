package io.sluice.broker.queue;

import io.sluice.protocol.IdRange;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

class FlushListTest {
    /** Equal but not identical: the list must tell them apart, as it tells two connections apart. */
    private record Link(String name) {
    }

    @Test
    void shouldFlushEachItemOnceByIdentityInTheOrderNoted() {
        FlushList<Link> list = new FlushList<>();
        Link a = new Link("a");
        Link b = new Link("b");
        Link aTwin = new Link("a");
        FlushList<Link> pass = list.begin();
        pass.add(a);
        pass.add(b);
        pass.add(a);
        pass.add(aTwin);
        pass.add(b);
        List<Link> flushed = new ArrayList<>();
        pass.flushAll(flushed::add);
        assertEquals(3, flushed.size());
        assertSame(a, flushed.get(0));
        assertSame(b, flushed.get(1));
        assertSame(aTwin, flushed.get(2));

        List<Link> next = new ArrayList<>();
        FlushList<Link> second = list.begin();
        assertSame(list, second, "a finished pass gives the list back for the next one");
        second.add(b);
        second.flushAll(next::add);
        assertEquals(List.of(b), next, "nothing of the pass before is flushed again");
    }

    @Test
    void shouldStillDeduplicatePastTheScanLimit() {
        FlushList<Link> pass = new FlushList<Link>().begin();
        List<Link> links = new ArrayList<>();
        for (int i = 0; i < 3 * FlushList.SCAN_LIMIT; i++) {
            links.add(new Link("l" + i));
        }
        for (int round = 0; round < 3; round++) {
            links.forEach(pass::add);
        }
        List<Link> flushed = new ArrayList<>();
        pass.flushAll(flushed::add);
        assertEquals(links, flushed);
    }

    @Test
    void shouldGiveAPassThatBeginsDuringAFlushAListOfItsOwn() {
        FlushList<Link> list = new FlushList<>();
        Link outer = new Link("outer");
        Link inner = new Link("inner");
        FlushList<Link> pass = list.begin();
        pass.add(outer);
        List<Link> flushed = new ArrayList<>();
        pass.flushAll(link -> {
            flushed.add(link);
            if (link == outer) { // a flush that re-enters the queue's executor code
                FlushList<Link> nested = list.begin();
                assertNotSame(list, nested);
                nested.add(inner);
                nested.flushAll(flushed::add);
            }
        });
        assertEquals(List.of(outer, inner), flushed);
        assertSame(list, list.begin(), "free again once the outer pass ended");
    }

    @Test
    void shouldBuildOneRunOfOneProducerAndSeveralRunsAsRanges() {
        PendingConfirms.StoredRanges one = new PendingConfirms.StoredRanges();
        for (long s = 5; s <= 9; s++) {
            one.stored(7, s);
        }
        assertEquals(Map.of(7L, List.of(new IdRange(5, 9))), one.build());

        PendingConfirms.StoredRanges none = new PendingConfirms.StoredRanges();
        assertEquals(Map.of(), none.build());

        PendingConfirms.StoredRanges mixed = new PendingConfirms.StoredRanges();
        mixed.stored(1, 1);
        mixed.stored(1, 2);
        mixed.stored(2, 10);
        mixed.stored(1, 3); // continues producer 1's first range after producer 2's run
        mixed.stored(1, 5); // a gap: a new range
        mixed.stored(2, 11);
        Map<Long, List<IdRange>> built = mixed.build();
        assertEquals(Map.of(1L, List.of(new IdRange(1, 3), new IdRange(5, 5)), 2L, List.of(new IdRange(10, 11))), built);
        assertEquals(List.of(1L, 2L), new ArrayList<>(built.keySet()), "producers in the order they first stored");
    }
}
