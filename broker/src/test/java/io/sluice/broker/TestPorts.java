package io.sluice.broker;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Ports for servers a test starts later (a child broker, an in-process node, a Prometheus server).
 *
 * <p>A port is checked free now and bound only later, so two rules keep it from being taken in between:
 * <ul>
 *   <li>It lies below Linux's ephemeral range (32768 and up), where the kernel never puts the local end of an
 *       outgoing connection: a port the kernel handed out for {@code bind(0)} could be taken by a Raft client's
 *       connection before the node meant to listen on it starts ("Address already in use").</li>
 *   <li>The broker module runs its test classes in two JVMs side by side (broker/pom.xml's forkCount). Each takes its
 *       own half of the range, by the fork number surefire hands it ({@value #FORK_PROPERTY}), so a port one JVM
 *       checked and has not bound yet is never handed out by the other. Within one JVM no port is handed out twice.</li>
 * </ul>
 */
public final class TestPorts {
    /** The system property broker/pom.xml sets to surefire's fork number (1, 2, ...); absent outside Maven. */
    static final String FORK_PROPERTY = "sluice.test.fork";
    private static final int LOWEST = 20_000;
    private static final int PER_FORK = 6_000;
    private static final Set<Integer> HANDED_OUT = ConcurrentHashMap.newKeySet();

    private TestPorts() {
    }

    /** A port free now, never handed out before in this JVM, in this fork's half of the range. */
    public static int free() {
        int base = LOWEST + (fork() % 2) * PER_FORK;
        for (int attempt = 0; attempt < 1000; attempt++) {
            int port = base + ThreadLocalRandom.current().nextInt(PER_FORK);
            if (!HANDED_OUT.add(port)) {
                continue;
            }
            try (ServerSocket socket = new ServerSocket()) {
                socket.setReuseAddress(false);
                socket.bind(new InetSocketAddress("0.0.0.0", port));
                return port;
            } catch (IOException taken) {
                // in use by another process: try another
            }
        }
        throw new UncheckedIOException(new IOException("no free port in " + base + ".." + (base + PER_FORK - 1)
                + " after 1000 attempts"));
    }

    /** This JVM's fork number, 1 when run outside surefire (an IDE runs one JVM). */
    static int fork() {
        return Integer.getInteger(FORK_PROPERTY, 1);
    }
}
