package io.sluice.broker.queue;

import io.sluice.broker.config.ConfigLoader;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** Declared settings of the wrong type or shape are refused with the key, the value and what was expected. */
class QueueOptionsTest {
    private final BrokerConfig.Queues defaults = new ConfigLoader().load(null, Map.of()).queues;

    private String refusal(QueueSettings settings) {
        io.sluice.broker.error.BrokerException refused = assertThrows(io.sluice.broker.error.BrokerException.class,
                () -> QueueOptions.from("orders", settings, defaults));
        org.junit.jupiter.api.Assertions.assertEquals(io.sluice.protocol.ErrorCode.INVALID_QUEUE_SETTING, refused.code());
        return refused.getMessage();
    }

    /** The configuration caps queues.ack-timeout-ms at 7 days; a DECLARE (or the admin API's PUT) had no cap at all. */
    @Test
    void shouldRefuseAnAckTimeoutOutsideTheConfigurationsBounds() {
        assertEquals("ackTimeoutMs 604800001 is outside 100..604800000",
                refusal(QueueSettings.builder().set(QueueSettings.ACK_TIMEOUT_MS, 604_800_001L).build()));
        assertEquals("ackTimeoutMs 99 is outside 100..604800000",
                refusal(QueueSettings.builder().set(QueueSettings.ACK_TIMEOUT_MS, 99L).build()));
        assertEquals(604_800_000L, QueueOptions.from("orders", QueueSettings.builder().set(QueueSettings.ACK_TIMEOUT_MS, 604_800_000L)
                .build(), defaults).ackTimeoutMs());
    }

    /** "soft quota of 10 messages is above the hard quota of 5" named neither setting, nor which one the DECLARE gave. */
    @Test
    void aSoftQuotaAboveTheHardOneNamesBothSettings() {
        assertEquals("quotaSoftMessages 10 is above quotaHardMessages 5; a soft quota is at most the hard one",
                refusal(QueueSettings.builder().quotaMessages(10, 5).build()));
        assertEquals("quotaSoftBytes 6000000000 is above queues.quota-hard-bytes 5368709120; a soft quota is at most the hard one",
                refusal(QueueSettings.builder().set(QueueSettings.QUOTA_SOFT_BYTES, 6_000_000_000L).build()));
        assertEquals("quotaHardMessages -1 is negative; a quota is 0 (none) or more",
                refusal(QueueSettings.builder().set(QueueSettings.QUOTA_HARD_MESSAGES, -1L).build()));
        assertEquals("overflowPolicy 'sometimes' is not one of block, reject, drop-oldest",
                refusal(QueueSettings.builder().overflowPolicy("sometimes").build()));
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
    void aLongNamesDefaultDeadLetterQueueIsAQueueNameOfItsOwn() {
        String suffix = defaults.deadLetterSuffix;
        assertEquals("orders" + suffix, QueueOptions.defaults("orders", defaults).deadLetterQueue());
        String fits = "a".repeat(io.sluice.storage.QueueNames.MAX_LENGTH - suffix.length());
        assertEquals(fits + suffix, QueueOptions.defaults(fits, defaults).deadLetterQueue(), "a name that leaves room keeps the rule");
        String longOne = "a".repeat(io.sluice.storage.QueueNames.MAX_LENGTH - 1) + "b";
        String longTwo = "a".repeat(io.sluice.storage.QueueNames.MAX_LENGTH - 1) + "c";
        String one = QueueOptions.defaults(longOne, defaults).deadLetterQueue();
        String two = QueueOptions.defaults(longTwo, defaults).deadLetterQueue();
        assertEquals(io.sluice.storage.QueueNames.MAX_LENGTH, one.length());
        assertEquals(true, io.sluice.storage.QueueNames.isValid(one), one);
        assertEquals(true, one.endsWith(suffix), one);
        assertEquals(true, one.startsWith("a".repeat(100)), "it begins as the queue's name does: " + one);
        assertEquals(false, one.equals(two), "two long names that share their beginning get two dead-letter queues");
        assertEquals(one, QueueOptions.defaults(longOne, defaults).deadLetterQueue(), "the same name on every call and every node");
    }

    @Test
    void aDeadLetterSuffixThatWouldMakeNoQueueNameIsRefusedAtStart() {
        io.sluice.broker.config.ConfigException refused = assertThrows(io.sluice.broker.config.ConfigException.class,
                () -> new ConfigLoader().load(null, Map.of("queues.dead-letter-suffix", "/dead")));
        org.junit.jupiter.api.Assertions.assertTrue(refused.getMessage().contains("queues.dead-letter-suffix '/dead' has character '/'"),
                refused.getMessage());
        refused = assertThrows(io.sluice.broker.config.ConfigException.class,
                () -> new ConfigLoader().load(null, Map.of("queues.dead-letter-suffix", ".d".repeat(40))));
        org.junit.jupiter.api.Assertions.assertTrue(refused.getMessage().contains("queues.dead-letter-suffix has 80 characters; at most 64"),
                refused.getMessage());
    }

    /** What the admin API reports as a queue's settings declares the same options, on a broker with other defaults too. */
    @Test
    void asSettingsGivesEveryKnownSettingAndDeclaresTheSameOptions() {
        QueueOptions options = QueueOptions.from("orders", QueueSettings.builder().maxDeliveries(3).quotaMessages(10, 20)
                .overflowPolicy(QueueSettings.OVERFLOW_REJECT).build(), defaults);
        QueueSettings reported = options.asSettings();
        assertEquals(QueueOptions.KNOWN_KEYS.keySet(), new java.util.TreeSet<>(reported.asMap().keySet()));
        BrokerConfig.Queues otherDefaults = new ConfigLoader().load(null, Map.of("queues.max-deliveries", "9",
                "queues.overflow-policy", "drop-oldest", "queues.dead-letter-dropped", "true")).queues;
        assertEquals(reported, QueueOptions.from("copy", reported, otherDefaults).asSettings());
        assertEquals("reject", reported.stringValue(QueueSettings.OVERFLOW_POLICY).orElseThrow());
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
