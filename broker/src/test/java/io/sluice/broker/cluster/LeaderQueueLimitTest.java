package io.sluice.broker.cluster;

import io.sluice.broker.error.BrokerException;
import io.sluice.broker.error.ErrorCodes;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * Rule R2: the leader's {@code limits.max-queues} counts the entries it has in flight that can create a queue, so that
 * two declares submitted before either is applied never both take the last place, and a place is given back once an
 * entry is refused (or, applied, its queue is in the catalog).
 */
class LeaderQueueLimitTest extends ShardApplierFixture {
    @Test
    void twoNewQueuesInFlightNeverBothTakeTheLastPlace() {
        queues.declareCommitted("orders", QueueSettings.EMPTY);
        LeaderQueueLimit limit = new LeaderQueueLimit(queues, 2);

        Runnable invoices = limit.hold("invoices"); // submitted, not applied yet
        BrokerException refused = assertThrows(BrokerException.class, () -> limit.hold("payments"));
        assertEquals(ErrorCode.RESOURCE_LIMIT, ErrorCodes.of(refused));
        assertEquals("declaring queue 'payments' would bring the queue count to 3, above limits.max-queues 2",
                refused.getMessage(), "the words a single broker answers with");
        assertDoesNotThrow(() -> limit.hold("invoices"), "a second declare of a queue in flight takes no other place");
        assertDoesNotThrow(() -> limit.hold("orders"), "nor does one of a queue that exists");

        invoices.run(); // Raft refused one of the two entries of 'invoices': the other still holds its place
        assertThrows(BrokerException.class, () -> limit.hold("payments"));
    }

    @Test
    void aPlaceIsGivenBackOnceTheEntryIsRefused() {
        LeaderQueueLimit limit = new LeaderQueueLimit(queues, 1);
        Runnable invoices = limit.hold("invoices");
        assertThrows(BrokerException.class, () -> limit.hold("payments"));

        invoices.run();
        invoices.run(); // answered twice (applied, then Raft's late refusal): given back once
        Runnable payments = limit.hold("payments");
        assertThrows(BrokerException.class, () -> limit.hold("invoices"), "'payments' holds the one place");
        payments.run();
    }

    @Test
    void aHeldQueueDeletedBeforeItsEntryIsAppliedStillCounts() {
        queues.declareCommitted("dead-letters", QueueSettings.EMPTY);
        LeaderQueueLimit limit = new LeaderQueueLimit(queues, 1);
        Runnable deadLetter = limit.hold("dead-letters"); // a dead-letter's entry in flight; its entry declares the queue again
        queues.onDeclareThread(() -> queues.delete("dead-letters")).join();

        assertThrows(BrokerException.class, () -> limit.hold("orders"), "the dead-letter's entry will create its queue again");
        deadLetter.run();
        assertDoesNotThrow(() -> limit.hold("orders"));
    }
}
