package io.sluice.broker.security;

import io.sluice.broker.Broker;
import io.sluice.protocol.DeclareQueueFrame;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.ErrorFrame;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A HELLO with a user name costs a PBKDF2 hash (210,000 rounds, some 100-200 ms of CPU), and it was computed on the
 * connection's event loop, which also serves every other connection and queue placed on it. Anyone who can reach the
 * port, without a password, from enough source addresses to stay under the per-address brake (each address gets
 * auth.backoff-after-failures checks), held the loops busy hashing: other clients' frames waited seconds. A client
 * already connected must be answered promptly while strangers guess passwords.
 */
@Timeout(120)
class PasswordCheckStallTest {
    private static final int ATTACKERS = 32;
    private static final int ROUND_TRIPS = 10;

    @TempDir
    Path dir;


    @Test
    void anEstablishedClientIsAnsweredPromptlyWhileStrangersGuessPasswords() throws Exception {
        try (Broker broker = SecurityFixture.start(dir, SecurityFixture.usersYaml(), Map.of("broker.io-threads", "1"));
             SocketPeer victim = SocketPeer.hello(broker.port())) { // anonymous, from 127.0.0.1
            victim.send(new DeclareQueueFrame(1, "orders.none", QueueSettings.EMPTY, true));
            assertEquals(ErrorCode.UNKNOWN_QUEUE, victim.expect(ErrorFrame.class, 10_000).errorCode());

            byte[] hello = SecurityFixture.helloBytes("guesser", "alice", "guess");
            AtomicBoolean stop = new AtomicBoolean();
            AtomicInteger attempts = new AtomicInteger();
            ExecutorService attackers = Executors.newFixedThreadPool(ATTACKERS);
            try {
                for (int t = 0; t < ATTACKERS; t++) {
                    attackers.submit(() -> {
                        byte[] sink = new byte[256];
                        while (!stop.get()) {
                            // Four guesses per source address: below auth.backoff-after-failures, so each is checked.
                            int source = attempts.getAndIncrement() / 4;
                            String from = "127.1." + (source / 250) + "." + (1 + source % 250);
                            try (Socket s = new Socket()) {
                                s.bind(new InetSocketAddress(from, 0));
                                s.connect(new InetSocketAddress("127.0.0.1", broker.port()), 10_000);
                                s.setSoTimeout(30_000);
                                s.getOutputStream().write(hello);
                                InputStream in = s.getInputStream();
                                while (in.read(sink) >= 0) {
                                    // until the broker closes it
                                }
                            } catch (Exception e) {
                                // the next guess
                            }
                        }
                        return null;
                    });
                }
                io.sluice.broker.TestAwait.until("the guessing is under way", java.time.Duration.ofSeconds(60),
                        () -> broker.loginBackoff().refusals(LoginBackoff.Listener.CLIENT) >= 2 * ATTACKERS);
                List<Long> latenciesMs = new ArrayList<>();
                for (int i = 0; i < ROUND_TRIPS; i++) {
                    long started = System.nanoTime();
                    victim.send(new DeclareQueueFrame(2 + i, "orders.none", QueueSettings.EMPTY, true));
                    ErrorFrame answer = victim.expect(ErrorFrame.class, 60_000);
                    latenciesMs.add(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
                    assertEquals(2 + i, answer.requestId());
                }
                long refused = broker.loginBackoff().refusals(LoginBackoff.Listener.CLIENT);
                assertTrue(refused >= 2 * ATTACKERS, "the guessing was under way: " + refused + " refusals");
                System.out.println("PasswordCheckStallTest: round trips " + latenciesMs + " ms, " + refused + " refused");
                long worst = latenciesMs.stream().mapToLong(Long::longValue).max().orElseThrow();
                assertTrue(worst < 500, "a round trip of the established client took up to " + worst + " ms while "
                        + "strangers guessed passwords (" + refused + " refused so far): " + latenciesMs);
            } finally {
                stop.set(true);
                attackers.shutdown();
                attackers.awaitTermination(60, TimeUnit.SECONDS);
            }
        }
    }
}
