package io.sluice.broker;

import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The suite's two test JVMs must take ports from different halves of the range ({@link TestPorts}); they can only if
 * each knows its fork number. Without it both took the same half, and a child broker of one JVM found its port taken
 * by the other's ("cannot listen on 127.0.0.1:P (broker.port): the address is already in use by another process").
 */
class TestPortsTest {
    @Test
    void shouldKnowItsForkNumberWhenSurefireRunsIt() {
        if (System.getProperty("surefire.real.class.path") == null) {
            return; // an IDE's single JVM: there is no other fork to keep apart from
        }
        String fork = System.getProperty(TestPorts.FORK_PROPERTY);
        assertNotNull(fork, "surefire ran this JVM without " + TestPorts.FORK_PROPERTY + ": broker/pom.xml's argLine must pass "
                + "-D" + TestPorts.FORK_PROPERTY + "=${surefire.forkNumber}, or the two test JVMs share one port range");
        assertTrue(Integer.parseInt(fork) >= 1, "fork number " + fork);
    }

    @Test
    void shouldNeverHandOutAPortTwiceOrOneInTheEphemeralRange() {
        Set<Integer> ports = new HashSet<>();
        for (int i = 0; i < 200; i++) {
            int port = TestPorts.free();
            assertTrue(port >= 20_000 && port < 32_000, "port " + port + " outside 20000..31999");
            assertTrue(ports.add(port), "port " + port + " handed out twice");
        }
        int half = TestPorts.fork() % 2;
        ports.forEach(port -> assertNotEquals(1 - half, (port - 20_000) / 6_000, "port " + port + " in the other fork's half"));
    }
}
