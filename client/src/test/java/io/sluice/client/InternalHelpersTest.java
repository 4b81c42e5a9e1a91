package io.sluice.client;

import io.sluice.client.internal.Backoff;
import io.sluice.client.internal.IdRanges;
import io.sluice.protocol.IdRange;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

class InternalHelpersTest {
    @Test
    void shouldMergeIdsIntoFewestRanges() {
        long[] ids = {5, 1, 2, 3, 9, 3, 10, 7};
        assertEquals(List.of(new IdRange(1, 3), new IdRange(5, 5), new IdRange(7, 7), new IdRange(9, 10)),
                IdRanges.of(ids, ids.length));
        assertEquals(List.of(), IdRanges.of(new long[0], 0));
    }

    @Test
    void shouldDoubleBackoffUpToTheMaximumAndResetAfterSuccess() {
        Backoff backoff = new Backoff(100, 1000, 2.0, 0.0, () -> 0.5);
        assertEquals(List.of(100L, 200L, 400L, 800L, 1000L, 1000L), List.of(backoff.nextDelayMillis(),
                backoff.nextDelayMillis(), backoff.nextDelayMillis(), backoff.nextDelayMillis(),
                backoff.nextDelayMillis(), backoff.nextDelayMillis()));
        backoff.reset();
        assertEquals(100L, backoff.nextDelayMillis());
        Backoff jittered = new Backoff(100, 1000, 2.0, 0.2, () -> 0.0);
        assertEquals(80L, jittered.nextDelayMillis());
    }
}
