package io.sluice.client;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class ConsumerOptionsTest {
    /**
     * An ack flush delay the network thread cannot schedule (beyond Duration.toNanos(), about 292 years) is refused
     * here. Taken, it would have each ack short of a full batch throw on the network thread scheduling its flush: with
     * a credit below ackBatchSize (credit 1, batch 128) no ACK and no CREDIT would ever be written, and the consumer
     * would stop receiving for good.
     */
    @Test
    void anAckFlushDelayTheNetworkThreadCannotScheduleIsRefused() {
        IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                () -> new ConsumerOptions(1, 128, Duration.ofDays(365L * 1000)));
        assertEquals("ackFlushDelay PT8760000H is too long to count in nanoseconds (at most about 292 years)",
                refused.getMessage());
        new ConsumerOptions(1, 128, Duration.ofDays(365L * 200)); // long, but it counts
    }
}
