package io.sluice.broker.queue;

import io.sluice.broker.error.BrokerException;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * A queue's ackTimeoutMs got an upper bound (the configuration's 7 days). A queue stored before it with a longer one
 * lost every setting it was declared with at the next start ("stored settings are no longer valid; using the
 * defaults": its dead-letter queue and delivery limit too), and a client declaring it again as it always had was
 * refused (found by a review). What was stored keeps its settings and may be declared again as it is; only a new value
 * meets the bound.
 */
class StoredAckTimeoutAboveTheBoundTest {
    private static final long THIRTY_DAYS_MS = 30L * 24 * 3_600_000;

    @TempDir
    Path dir;

    @Test
    void aQueueStoredWithALongerAckTimeoutKeepsItsSettingsAndMayBeDeclaredAgain() throws Exception {
        QueueSettings stored = QueueSettings.builder().ackTimeoutMs(THIRTY_DAYS_MS).maxDeliveries(3).build();
        try (QueueCore core = new QueueCore(dir, Map.of())) {
            core.queues.declare("q", QueueSettings.builder().maxDeliveries(3).build());
        }
        // As a broker from before the bound wrote it.
        Files.writeString(dir.resolve("queue-settings").resolve("q.json"),
                "{\"ackTimeoutMs\":" + THIRTY_DAYS_MS + ",\"maxDeliveries\":3}");
        try (QueueCore core = new QueueCore(dir, Map.of())) {
            BrokerQueue q = core.queues.get("q");
            assertEquals(THIRTY_DAYS_MS, q.options().ackTimeoutMs());
            assertEquals(3, q.options().maxDeliveries(), "its other settings kept too");
            assertSame(q, core.queues.existing("q", stored), "declared again as it was stored");
            BrokerException refused = assertThrows(BrokerException.class, () -> core.queues.existing("r", stored));
            assertEquals(ErrorCode.INVALID_QUEUE_SETTING, refused.code(), "a new queue meets the bound");
        }
    }
}
