package io.sluice.broker.metrics;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The JVM's and the process's meters are bound after the start, not while the broker starts
 * ({@link BrokerMetrics#bindJvmMeters()}), and every scrape has them all the same.
 */
class JvmMetersTest {
    @Test
    void areNotBoundAtConstructionAndTheFirstScrapeHasThem() {
        try (BrokerMetrics metrics = new BrokerMetrics(System::currentTimeMillis)) {
            assertFalse(metrics.hasMeter("jvm.memory.used"));
            assertFalse(metrics.hasMeter("process.uptime"));

            String scrape = metrics.scrape();

            assertTrue(scrape.contains("\njvm_memory_used_bytes{"), "a scrape before the bind has the JVM's meters");
            assertTrue(scrape.contains("\nprocess_uptime_seconds "), "and the process's");
            assertTrue(metrics.hasMeter("jvm.memory.used"));
        }
    }

    @Test
    void bindOnceHoweverOftenCalled() {
        try (BrokerMetrics metrics = new BrokerMetrics(System::currentTimeMillis)) {
            metrics.bindJvmMeters();
            metrics.bindJvmMeters();

            String scrape = metrics.scrape();

            assertEquals(1, scrape.split("# TYPE jvm_threads_live_threads ", -1).length - 1, scrape);
        }
    }

    @Test
    void addNothingOnceClosed() {
        BrokerMetrics metrics = new BrokerMetrics(System::currentTimeMillis);
        metrics.close();

        metrics.bindJvmMeters();

        assertFalse(metrics.hasMeter("jvm.memory.used"));
    }
}
