package io.sluice.broker.queue;

import io.sluice.protocol.ProducerIds;
import io.sluice.storage.dedup.ProducerTable;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The client's reserved producer ids (which it never picks) are the store's own producers (which the broker refuses a
 * client's publish under): the two modules cannot share the constant, so this holds them together.
 */
class ReservedProducerIdsTest {
    @Test
    void theClientAvoidsExactlyTheIdsTheBrokerKeepsForItself() {
        for (long id = Long.MIN_VALUE; id <= ProducerIds.LAST_RESERVED + 2; id++) {
            assertEquals(ProducerTable.isBrokers(id), ProducerIds.isReserved(id), "producer id " + id);
        }
        assertEquals(ProducerTable.isBrokers(Long.MAX_VALUE), ProducerIds.isReserved(Long.MAX_VALUE));
    }
}
