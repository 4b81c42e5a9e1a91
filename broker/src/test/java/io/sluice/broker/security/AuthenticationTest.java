package io.sluice.broker.security;

import io.sluice.broker.Broker;
import io.sluice.broker.auth.Authenticator;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Consumer;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.Message;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.client.SluiceException;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Users, passwords and permissions end to end with the Java client. */
class AuthenticationTest {
    @TempDir
    Path dir;
    private Broker broker;

    @BeforeEach
    void start() throws Exception {
        broker = SecurityFixture.start(dir, SecurityFixture.usersYaml(), Map.of("auth.allow-anonymous", "false"));
    }

    @AfterEach
    void stop() {
        broker.close();
    }

    private Connection connect(String user, String password) {
        return Connection.connect(ConnectionOptions.builder().host("127.0.0.1").port(broker.port())
                .credentials(user, password).reconnectPolicy(ReconnectPolicy.DISABLED).build());
    }

    @Test
    void wrongPasswordIsRefusedAfterADelay() {
        long started = System.nanoTime();
        SluiceException e = assertThrows(SluiceException.class, () -> connect("alice", "guess"));
        assertEquals(ErrorCode.AUTHENTICATION_FAILED, e.errorCode());
        assertTrue(e.getMessage().contains("user 'alice'"), e.getMessage());
        assertTrue(!e.getMessage().contains("guess"), "the password never appears: " + e.getMessage());
        assertTrue(System.nanoTime() - started >= Duration.ofMillis(190).toNanos());
        connect("alice", "s3cret").close();
    }

    @Test
    void unknownUserAndAnonymousAreRefused() {
        SluiceException unknown = assertThrows(SluiceException.class, () -> connect("mallory", "s3cret"));
        assertEquals(ErrorCode.AUTHENTICATION_FAILED, unknown.errorCode());
        SluiceException anonymous = assertThrows(SluiceException.class, () -> connect("", ""));
        assertEquals(ErrorCode.AUTHENTICATION_FAILED, anonymous.errorCode());
        SluiceException noPassword = assertThrows(SluiceException.class, () -> connect("carol", ""));
        assertEquals(ErrorCode.AUTHENTICATION_FAILED, noPassword.errorCode(), "a certificate-only user has no password");
    }

    /**
     * A HELLO with a password and no user was admitted as anonymous where anonymous access is on: the client meant to log
     * in as someone and ran with the anonymous permissions instead, without a word.
     */
    @Test
    void aPasswordWithoutAUserIsRefusedWhereAnonymousIsAllowed() throws Exception {
        broker.close();
        broker = SecurityFixture.start(Files.createDirectory(dir.resolve("anonymous-allowed")), SecurityFixture.usersYaml(),
                Map.of("auth.allow-anonymous", "true"));
        SluiceException refused = assertThrows(SluiceException.class, () -> connect("", "s3cret"));
        assertEquals(ErrorCode.AUTHENTICATION_FAILED, refused.errorCode());
        assertTrue(refused.getMessage().contains("a password was given without a user"), refused.getMessage());
        assertTrue(!refused.getMessage().contains("s3cret"), "the password never appears: " + refused.getMessage());
        connect("", "").close(); // anonymous, as before
    }

    @Test
    void missingPermissionIsDeniedAndTheConnectionStaysUsable() throws Exception {
        try (Connection alice = connect("alice", "s3cret"); Connection bob = connect("bob", "s3cret")) {
            alice.declareQueue("orders.eu", QueueSettings.EMPTY);
            try (Producer producer = alice.createProducer("orders.eu", ProducerOptions.DEFAULT)) {
                producer.send("one".getBytes(StandardCharsets.UTF_8));
            }

            SluiceException declare = assertThrows(SluiceException.class, () -> bob.declareQueue("orders.us", QueueSettings.EMPTY));
            assertEquals(ErrorCode.ACCESS_DENIED, declare.errorCode());
            assertTrue(declare.getMessage().contains("user 'bob' may not manage on queue 'orders.us'"), declare.getMessage());
            assertEquals(ErrorCode.ACCESS_DENIED, assertThrows(SluiceException.class, () -> bob.purgeQueue("orders.eu")).errorCode());
            assertEquals(ErrorCode.ACCESS_DENIED, assertThrows(SluiceException.class, () -> bob.deleteQueue("orders.eu")).errorCode());
            SluiceException consume = assertThrows(SluiceException.class, () -> alice.subscribe("other", ConsumerOptions.DEFAULT));
            assertEquals(ErrorCode.ACCESS_DENIED, consume.errorCode());
            assertTrue(consume.getMessage().contains("user 'alice' may not consume on queue 'other'"), consume.getMessage());

            try (Producer producer = bob.createProducer("orders.eu", ProducerOptions.DEFAULT)) {
                SluiceException publish = assertThrows(SluiceException.class,
                        () -> producer.send("two".getBytes(StandardCharsets.UTF_8), Duration.ofSeconds(5)));
                assertEquals(ErrorCode.ACCESS_DENIED, publish.errorCode());
                assertTrue(publish.getMessage().contains("user 'bob' may not publish on queue 'orders.eu'"), publish.getMessage());
            }

            assertTrue(bob.isConnected());
            Consumer consumer = bob.subscribe("orders.eu", ConsumerOptions.DEFAULT);
            Message m = consumer.receive(Duration.ofSeconds(10));
            assertEquals("one", new String(m.payload(), StandardCharsets.UTF_8));
            m.ack();
        }
    }

    @Test
    void authenticatorCountsFailuresAndMapsCertificateUsers() {
        BrokerConfig.Auth auth = new BrokerConfig.Auth();
        BrokerConfig.User carol = new BrokerConfig.User();
        carol.name = "carol";
        auth.users.add(carol);
        Authenticator authenticator = new Authenticator(auth);
        assertEquals("carol", authenticator.authenticate("", "", "carol", false).user());
        assertNull(authenticator.authenticate("", "", "carol", false).rejected());
        assertTrue(authenticator.authenticate("", "", "dave", true).rejected().contains("CN 'dave' is not a configured user"));
        assertTrue(authenticator.authenticate("", "", null, false).rejected().contains("anonymous access is not allowed"));
        assertNull(authenticator.authenticate("", "", null, true).rejected());
        assertTrue(authenticator.authenticate("carol", "x", null, true).rejected().contains("user 'carol'"));
        assertEquals(3, authenticator.authenticationFailures());
    }
}
