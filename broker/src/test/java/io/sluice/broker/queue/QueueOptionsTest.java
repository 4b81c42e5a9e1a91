package io.sluice.broker.queue;

import io.sluice.broker.config.ConfigLoader;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.error.BrokerException;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** Declared settings of the wrong type or shape are refused with the key, the value and what was expected. */
class QueueOptionsTest {
    private final BrokerConfig.Queues defaults = new ConfigLoader().load(null, Map.of()).queues;

    private String refusal(QueueSettings settings) {
        BrokerException refused = assertThrows(BrokerException.class, () -> QueueOptions.from("orders", settings, defaults));
        assertEquals(ErrorCode.INVALID_QUEUE_SETTING, refused.code());
        return refused.getMessage();
    }

    @Test
    void shouldRefuseAStringWhereAWholeNumberIsExpected() {
        assertEquals("queue setting maxDeliveries=\"abc\" is a string; expected a whole number",
                refusal(QueueSettings.builder().set(QueueSettings.MAX_DELIVERIES, "abc").build()));
    }

    @Test
    void shouldRefuseANumberWhereAStringOrBooleanIsExpected() {
        assertEquals("queue setting overflowPolicy=5 is a whole number; expected a string (block, reject or drop-oldest);"
                        + " queue setting deadLetterDropped=\"yes\" is a string; expected true or false",
                refusal(QueueSettings.builder().set(QueueSettings.OVERFLOW_POLICY, 5).set(QueueOptions.DEAD_LETTER_DROPPED, "yes").build()));
    }

    @Test
    void shouldRefuseADeadLetterQueueThatIsNotAQueueName() {
        assertEquals("queue setting deadLetterQueue=\"x y\" is not a queue name: queue name 'x y' has character ' ' at position 1;"
                        + " allowed are A-Z a-z 0-9 . _ -",
                refusal(QueueSettings.builder().deadLetterQueue("x y").build()));
    }

    @Test
    void shouldListTheKnownSettingsSortedForAnUnknownOne() {
        assertEquals("unknown queue setting 'maxDelivery'; known settings are ackTimeoutMs, deadLetterDropped, deadLetterQueue,"
                        + " maxDeliveries, overflowPolicy, quotaHardBytes, quotaHardMessages, quotaSoftBytes, quotaSoftMessages",
                refusal(QueueSettings.builder().set("maxDelivery", 3).build()));
    }

    @Test
    void shouldAcceptWellTypedSettings() {
        QueueOptions options = QueueOptions.from("orders", QueueSettings.builder().maxDeliveries(3).deadLetterQueue("orders.dead")
                .set(QueueOptions.DEAD_LETTER_DROPPED, true).build(), defaults);
        assertEquals(3, options.maxDeliveries());
        assertEquals("orders.dead", options.deadLetterQueue());
        assertEquals(true, options.deadLetterDropped());
    }
}
