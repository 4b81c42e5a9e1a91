package io.sluice.broker.queue;

import io.sluice.broker.flow.QuotaSettings;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The byte backlog and the store's figure of discarded damaged records' bytes. A queue counts its bytes from the store's
 * unacknowledged records, which leave out a discarded record (the store acknowledges it): what the store had discarded
 * before that count must be taken as seen, not taken off the count a second time (found by a review: BrokerQueue passed
 * it to {@link Backlog#storeDiscarded}, which subtracted it from a count that never held it).
 */
class BacklogDiscardedBytesTest {
    @Test
    void discardsBeforeTheCountAreNotTakenOffItAndLaterOnesAre() {
        Backlog backlog = new Backlog("q", QuotaSettings.NONE, 16, QueueManager.DEFAULT_PUBLISH_ALLOWANCE_BYTES, 2, 18);
        backlog.storeDiscardedBeforeTheCount(8);
        assertEquals(18, backlog.bytes(), "the 8 bytes discarded before the count are not in it");
        backlog.storeDiscarded(8);
        assertEquals(18, backlog.bytes(), "nothing new discarded");
        backlog.storeDiscarded(18);
        assertEquals(8, backlog.bytes(), "a 10-byte record discarded since leaves the backlog");
    }
}
