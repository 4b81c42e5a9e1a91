package io.sluice.broker.flow;

import io.sluice.protocol.FlowState;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The quota state machine as docs/flow-control.md draws it (rules Q1..Q4 of {@link FlowGate}), one
 * row per transition: quotas of 100 soft / 200 hard messages and 1,000 soft / 2,000 hard bytes.
 */
class FlowGateTest {
    private static FlowGate gateIn(FlowState state, QuotaSettings.OverflowPolicy policy) {
        FlowGate gate = new FlowGate(new QuotaSettings(100, 200, 1_000, 2_000, policy));
        switch (state) {
            case SLOWED -> gate.update(100, 0);
            case BLOCKED -> gate.update(200, 0);
            default -> { }
        }
        assertEquals(state, gate.state(), "setting up");
        return gate;
    }

    @ParameterizedTest(name = "{0} + backlog {1} msgs / {2} bytes -> {3} ({4})")
    @CsvSource({
            // from,   messages, bytes, to,      rule
            "FREE,     99,       999,   FREE,    below both soft levels",
            "FREE,     100,      0,     SLOWED,  Q1 soft messages reached",
            "FREE,     0,        1000,  SLOWED,  Q1 soft bytes reached",
            "FREE,     200,      0,     BLOCKED, Q2 hard messages reached from free",
            "FREE,     0,        2000,  BLOCKED, Q2 hard bytes reached from free",
            "SLOWED,   199,      1999,  SLOWED,  below hard: still slowed",
            "SLOWED,   200,      0,     BLOCKED, Q2 hard messages reached",
            "SLOWED,   90,       0,     SLOWED,  hysteresis: 90 is not below 0.9 x soft",
            "SLOWED,   89,       899,   FREE,    Q4 both below 0.9 x soft",
            "SLOWED,   89,       900,   SLOWED,  Q4 needs both figures below",
            "BLOCKED,  199,      0,     BLOCKED, hysteresis: 199 is not below the resume level",
            "BLOCKED,  180,      0,     BLOCKED, hysteresis: 180 is not below 0.9 x hard",
            "BLOCKED,  179,      0,     SLOWED,  Q3 below the resume level and still above soft",
            "BLOCKED,  179,      1800,  BLOCKED, Q3 needs both figures below",
            "BLOCKED,  50,       0,     FREE,    Q3 then Q4 in one evaluation",
    })
    void blockPolicy(FlowState from, long messages, long bytes, FlowState to, String rule) {
        FlowGate gate = gateIn(from, QuotaSettings.OverflowPolicy.BLOCK);
        boolean changed = gate.update(messages, bytes);
        assertEquals(to, gate.state(), rule);
        assertEquals(from != to, changed, "update reports the change: " + rule);
        assertTrue(to == FlowState.FREE || !gate.reason().isEmpty(), "a slowed or blocked queue says why");
    }

    @ParameterizedTest(name = "{0}: backlog {1} msgs -> {2}")
    @CsvSource({
            "REJECT,      200, SLOWED",
            "REJECT,      10000, SLOWED",
            "DROP_OLDEST, 200, SLOWED",
            "DROP_OLDEST, 10000, SLOWED",
    })
    void otherPoliciesNeverTellProducersToWait(QuotaSettings.OverflowPolicy policy, long messages, FlowState to) {
        FlowGate gate = gateIn(FlowState.FREE, policy);
        gate.update(messages, 0);
        assertEquals(to, gate.state(), "Q2 applies to the block policy only; the others act per message");
    }

    @ParameterizedTest(name = "reason at {0} msgs / {1} bytes")
    @CsvSource({
            "200, 0, backlog of 200 messages reached the hard quota of 200 messages (queues.quota-hard-messages)",
            "0, 2000, backlog of 2000 bytes reached the hard quota of 2000 bytes (queues.quota-hard-bytes)",
            "100, 0, backlog of 100 messages reached the soft quota of 100 messages (queues.quota-soft-messages)",
            "0, 1000, backlog of 1000 bytes reached the soft quota of 1000 bytes (queues.quota-soft-bytes)",
    })
    void theReasonNamesTheQuotaItsNumbersAndTheConfigurationKeyItComesFrom(long messages, long bytes, String reason) {
        FlowGate gate = gateIn(FlowState.FREE, QuotaSettings.OverflowPolicy.BLOCK);
        gate.update(messages, bytes);
        assertEquals(reason, gate.reason());
    }

    /** A level the queue's DECLARE set is named by the DECLARE's key, the others by the configuration's. */
    @Test
    void theReasonNamesTheQueuesOwnSettingWhereItsDeclareSetTheLevel() {
        FlowGate gate = new FlowGate(new QuotaSettings(100, 200, 1_000, 2_000, QuotaSettings.OverflowPolicy.BLOCK,
                java.util.Set.of(QuotaSettings.Setting.HARD_MESSAGES)));
        gate.update(200, 0);
        assertEquals("backlog of 200 messages reached the hard quota of 200 messages (quotaHardMessages)", gate.reason());
        gate.update(0, 2_000);
        assertEquals("backlog of 2000 bytes reached the hard quota of 2000 bytes (queues.quota-hard-bytes)", gate.reason());
    }
}
