package io.sluice.bench.perf;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PerfOptionsTest {

    /** --help points into this repository for the workloads' defaults: docs/performance.md, never a file outside it. */
    @Test
    void theHelpPointsToTheWorkloadsInDocsPerformanceMd() {
        assertTrue(PerfOptions.USAGE.contains("defaults of docs/performance.md, \"The workloads\""), PerfOptions.USAGE);
        assertFalse(PerfOptions.USAGE.contains("BENCH"), PerfOptions.USAGE);
    }

    @Test
    void shouldKeepThePerfClientWithTheWorkloadsSizesByDefault() {
        PerfOptions options = PerfOptions.parse(new String[] {"--workload", "W1"});

        assertFalse(options.appClient);
        assertTrue(options.callbacksOnNetworkThread);
        assertEquals(1_000_000, options.messages);
    }

    @Test
    void shouldRunTheAppClientWithTheClientsDispatchPoolAndIssue18Sizes() {
        PerfOptions w1 = PerfOptions.parse(new String[] {"--workload", "W1", "--client", "app"});
        PerfOptions w2 = PerfOptions.parse(new String[] {"--client", "app", "--workload", "W2"});

        assertTrue(w1.appClient);
        assertFalse(w1.callbacksOnNetworkThread, "the client's default: callbacks on the dispatch pool");
        assertEquals(500_000, w1.messages);
        assertEquals(1000, w1.confirmWindow, "ProducerOptions' default maxInFlight");
        assertEquals(1000, w1.credit);
        assertEquals("app, dispatch", w1.callbacksLabel());
        assertEquals(1_000_000, w2.messages);
        assertTrue(w2.drainAfterPublish);
    }

    @Test
    void shouldLetExplicitOptionsOverrideTheAppClientsDefaultsWhereverTheyStand() {
        PerfOptions options = PerfOptions.parse(new String[] {"--callbacks", "network", "--messages", "20000",
                "--workload", "W1", "--client", "app", "--runs", "4"});

        assertTrue(options.callbacksOnNetworkThread);
        assertEquals("app, network", options.callbacksLabel());
        assertEquals(20_000, options.messages);
        assertEquals(4, options.runs);
    }

    @Test
    void shouldRefuseAnAppRunThatIsNotOneProducerAndOneConsumerForACount() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse(
                new String[] {"--client", "app", "--workload", "W1", "--producers", "4", "--consumers", "4"}));
        assertTrue(e.getMessage().contains("--producers 4") && e.getMessage().contains("--consumers 4"), e.getMessage());

        assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse(
                new String[] {"--client", "app", "--workload", "W1", "--duration", "10"}));
        assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse(
                new String[] {"--client", "app", "--workload", "W1", "--warmup-messages", "1000"}));
    }

    @Test
    void shouldRefuseAnAppRunOfAnotherWorkloadAndAnUnknownClient() {
        IllegalArgumentException w3 = assertThrows(IllegalArgumentException.class,
                () -> PerfOptions.parse(new String[] {"--client", "app", "--workload", "W3"}));
        assertTrue(w3.getMessage().contains("W3"), w3.getMessage());
        IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
                () -> PerfOptions.parse(new String[] {"--client", "fast"}));
        assertEquals("--client fast is not perf or app", unknown.getMessage());
        assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse(new String[] {"--client"}));
    }

    @Test
    void shouldRunTransactionalW1InBatchesOf100WithTenCommitsInFlightUnlessToldAndWarmUpTheSameWay() {
        PerfOptions defaults = PerfOptions.parse(new String[] {"--workload", "W1", "--transactional"});
        PerfOptions explicit = PerfOptions.parse(new String[] {"--tx-batch", "50", "--transactional", "--workload", "W1",
                "--tx-in-flight", "1", "--warmup-messages", "1000", "--queue-prefix", "q"});

        assertTrue(defaults.transactional);
        assertEquals(100, defaults.messagesPerTransaction);
        assertEquals(10, defaults.commitsInFlight);
        assertEquals(1_000_000, defaults.messages);
        assertEquals("q-0-out", explicit.outputQueueName(0));
        PerfOptions warmup = explicit.warmup();
        assertTrue(warmup.transactional);
        assertEquals(50, warmup.messagesPerTransaction);
        assertEquals(1, warmup.commitsInFlight);
        assertEquals("q-warmup-0-out", warmup.outputQueueName(0));
        assertFalse(PerfOptions.parse(new String[] {"--workload", "W1"}).transactional);
    }

    @Test
    void shouldRefuseATransactionalRunThatIsNotW1ShapedWithConsumersForwarding() {
        IllegalArgumentException w2 = assertThrows(IllegalArgumentException.class,
                () -> PerfOptions.parse(new String[] {"--workload", "W2", "--transactional"}));
        assertTrue(w2.getMessage().contains("W2"), w2.getMessage());
        IllegalArgumentException shape = assertThrows(IllegalArgumentException.class, () -> PerfOptions.parse(
                new String[] {"--workload", "W1", "--transactional", "--client", "app", "--consumers", "0", "--duration", "5"}));
        assertTrue(shape.getMessage().contains("--client app") && shape.getMessage().contains("--consumers 0"),
                shape.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> PerfOptions.parse(new String[] {"--workload", "W1", "--transactional", "--tx-batch", "0"}));
    }

    @Test
    void shouldSendEveryConnectionToTheClustersBootstrapListWhenGivenOne() {
        PerfOptions options = PerfOptions.parse(new String[] {"--workload", "W1", "--bootstrap", "127.0.0.1:7681, 127.0.0.1:7682,localhost:7683"});

        assertEquals(java.util.List.of("127.0.0.1:7681", "127.0.0.1:7682", "localhost:7683"), options.bootstrap);
        assertEquals(options.bootstrap, options.connectionOptions().build().bootstrap());
        assertEquals(java.util.List.of(), PerfOptions.parse(new String[] {"--workload", "W1"}).connectionOptions().build().bootstrap());
    }

    @Test
    void shouldRefuseABootstrapItemWithoutAPortNamingTheItem() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> PerfOptions.parse(new String[] {"--bootstrap", "127.0.0.1:7681,node-2"}));
        assertTrue(e.getMessage().contains("'node-2'") && e.getMessage().contains("--bootstrap"), e.getMessage());
    }
}
