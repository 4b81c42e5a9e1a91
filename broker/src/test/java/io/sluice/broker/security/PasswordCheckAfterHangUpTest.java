package io.sluice.broker.security;

import io.sluice.broker.Broker;
import io.sluice.broker.TestAwait;
import io.sluice.protocol.HelloFrame;
import io.sluice.protocol.HelloOkFrame;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * HELLO passwords are hashed on a small pool (PasswordCheckStallTest). A check queued there for a connection that has
 * closed since (the peer hung up right after its HELLO, or the handshake timed out) must not cost a PBKDF2 hash: the
 * queue is not bounded by the connections open, and every such hash delays the logins of clients still waiting behind
 * it. Before: each hung-up HELLO was hashed anyway, so 60 of them held a real login back for 60 hashes.
 */
@Timeout(120)
class PasswordCheckAfterHangUpTest {
    private static final int HUNG_UP = 60;

    @TempDir
    Path dir;


    @Test
    void aHelloWhoseConnectionClosedIsNotHashed() throws Exception {
        try (Broker broker = SecurityFixture.start(dir, SecurityFixture.usersYaml(), Map.of("broker.io-threads", "1"))) {
            byte[] guess = SecurityFixture.helloBytes("hang-up", "alice", "guess");
            for (int i = 0; i < HUNG_UP; i++) {
                // One guess per source address: below auth.backoff-after-failures, so the brake would check each.
                try (Socket s = new Socket()) {
                    s.bind(new InetSocketAddress("127.3." + (i / 250) + "." + (1 + i % 250), 0));
                    s.connect(new InetSocketAddress("127.0.0.1", broker.port()), 10_000);
                    s.getOutputStream().write(guess);
                    s.getOutputStream().flush();
                } // closed at once: nobody waits for the answer
            }
            TestAwait.until("the broker saw every hung-up connection close", () -> broker.limits().openConnections() == 0);

            long started = System.nanoTime();
            try (SocketPeer alice = new SocketPeer(broker.port())) {
                alice.send(new HelloFrame(1, 1, "alice", 0, 0, "alice", "s3cret"));
                alice.expect(HelloOkFrame.class, 60_000);
            }
            long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            // Alice's check was queued behind every hung-up one: by her answer each was made or skipped. A check taken
            // up before its connection's close was seen (the first, on an idle pool) is made; the others are skipped.
            long checked = broker.loginBackoff().refusals(LoginBackoff.Listener.CLIENT);
            System.out.println("PasswordCheckAfterHangUpTest: " + checked + " of " + HUNG_UP + " hung-up HELLOs checked; "
                    + "the login after them took " + tookMs + " ms");
            assertTrue(checked < HUNG_UP / 2, checked + " of the " + HUNG_UP + " HELLOs of connections closed already "
                    + "were checked (a PBKDF2 hash each), delaying the logins behind them");
        }
    }
}
