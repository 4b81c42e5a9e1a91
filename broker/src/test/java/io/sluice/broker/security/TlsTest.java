package io.sluice.broker.security;

import io.sluice.broker.Broker;
import io.sluice.client.Connection;
import io.sluice.client.ConnectionOptions;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.client.ReconnectPolicy;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** TLS on the client listener, with certificates made by keytool in the test. */
class TlsTest {
    @TempDir
    static Path certs;
    @TempDir
    Path dir;

    private static Path caPem;
    private static Path otherCaPem;
    private static Path[] server;
    private static Path[] expired;
    private static Path[] wrongName;
    private static Path[] carol;
    private Broker broker;

    @BeforeAll
    static void makeCertificates() throws Exception {
        TestCertificates ca = new TestCertificates(certs);
        caPem = ca.ca("test-ca");
        otherCaPem = ca.ca("other-ca");
        server = ca.leaf("test-ca", "server", "localhost", "ip:127.0.0.1,dns:localhost", 30, null);
        expired = ca.leaf("test-ca", "expired", "localhost", "ip:127.0.0.1,dns:localhost", 1, "-10d");
        wrongName = ca.leaf("test-ca", "wrong-name", "elsewhere.example", "dns:elsewhere.example", 30, null);
        carol = ca.leaf("test-ca", "carol", "carol", null, 30, null);
    }

    @AfterEach
    void stop() {
        if (broker != null) {
            broker.close();
        }
    }

    private void startBroker(Path[] certificate, Map<String, String> extra, String yaml) throws Exception {
        Map<String, String> overrides = new HashMap<>(Map.of(
                "tls.enabled", "true",
                "tls.certificate", certificate[0].toString(),
                "tls.private-key", certificate[1].toString()));
        overrides.putAll(extra);
        broker = SecurityFixture.start(dir, yaml, overrides);
    }

    private ConnectionOptions.Builder client(String host) {
        return ConnectionOptions.builder().host(host).port(broker.port()).reconnectPolicy(ReconnectPolicy.DISABLED)
                .connectTimeout(Duration.ofSeconds(3));
    }

    private static void works(ConnectionOptions options) throws Exception {
        try (Connection c = Connection.connect(options)) {
            c.declareQueue("tls-q", QueueSettings.EMPTY);
            try (Producer p = c.createProducer("tls-q", ProducerOptions.DEFAULT)) {
                p.send(new byte[] {42});
            }
        }
    }

    @Test
    void tlsWithHostnameVerificationSucceeds() throws Exception {
        startBroker(server, Map.of(), null);
        works(client("localhost").tls(true).trustCertificates(caPem).build());
        works(client("127.0.0.1").tls(true).trustCertificates(caPem).build());
    }

    @Test
    void certificateForAnotherHostFailsUnlessVerificationIsOff() throws Exception {
        startBroker(wrongName, Map.of(), null);
        RuntimeException e = assertThrows(RuntimeException.class,
                () -> Connection.connect(client("localhost").tls(true).trustCertificates(caPem).build()));
        assertTrue(e.getMessage().contains("No subject alternative DNS name matching localhost"), e.getMessage());
        works(client("localhost").tls(true).trustCertificates(caPem).hostnameVerification(false).build());
    }

    @Test
    void wrongCaFailsAndTheBrokerCarriesOn() throws Exception {
        startBroker(server, Map.of(), null);
        assertThrows(RuntimeException.class,
                () -> Connection.connect(client("localhost").tls(true).trustCertificates(otherCaPem).build()));
        works(client("localhost").tls(true).trustCertificates(caPem).build());
    }

    @Test
    void expiredCertificateFails() throws Exception {
        startBroker(expired, Map.of(), null);
        RuntimeException e = assertThrows(RuntimeException.class,
                () -> Connection.connect(client("localhost").tls(true).trustCertificates(caPem).build()));
        assertTrue(e.getMessage().contains("validity check failed"), e.getMessage());
    }

    @Test
    void plaintextClientOnTheTlsPortFailsCleanly() throws Exception {
        startBroker(server, Map.of(), null);
        long started = System.nanoTime();
        assertThrows(RuntimeException.class, () -> Connection.connect(client("localhost").build()));
        assertTrue(System.nanoTime() - started < Duration.ofSeconds(5).toNanos());
        works(client("localhost").tls(true).trustCertificates(caPem).build());
    }

    @Test
    void mutualTlsMakesTheCertificateCnTheUser() throws Exception {
        startBroker(server, Map.of("tls.client-auth", "require", "tls.client-ca", caPem.toString(), "auth.allow-anonymous", "false"),
                SecurityFixture.usersYaml());
        works(client("localhost").tls(true).trustCertificates(caPem).clientCertificate(carol[0], carol[1]).build());
        assertThrows(RuntimeException.class,
                () -> Connection.connect(client("localhost").tls(true).trustCertificates(caPem).build()),
                "no client certificate, require");
        // A certificate-verified CN that is not a configured user is refused.
        TestCertificates more = new TestCertificates(certs);
        Path[] dave = more.leaf("test-ca", "dave", "dave", null, 30, null);
        assertThrows(RuntimeException.class,
                () -> Connection.connect(client("localhost").tls(true).trustCertificates(caPem).clientCertificate(dave[0], dave[1]).build()));
    }

    @Test
    void shouldServeMetricsAndTheAdminApiOverHttpsWhenAsked() throws Exception {
        startBroker(server, Map.of("metrics.tls", "true", "metrics.port", "0"), null);
        java.security.KeyStore trust = java.security.KeyStore.getInstance("PKCS12");
        trust.load(null, null);
        try (java.io.InputStream in = java.nio.file.Files.newInputStream(caPem)) {
            trust.setCertificateEntry("ca", java.security.cert.CertificateFactory.getInstance("X.509").generateCertificate(in));
        }
        javax.net.ssl.TrustManagerFactory tmf = javax.net.ssl.TrustManagerFactory.getInstance(javax.net.ssl.TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(trust);
        javax.net.ssl.SSLContext context = javax.net.ssl.SSLContext.getInstance("TLS");
        context.init(null, tmf.getTrustManagers(), null);
        java.net.http.HttpClient https = java.net.http.HttpClient.newBuilder().sslContext(context).connectTimeout(Duration.ofSeconds(5)).build();
        java.net.http.HttpResponse<String> live = https.send(java.net.http.HttpRequest.newBuilder(
                java.net.URI.create("https://localhost:" + broker.metricsPort() + "/health/live")).build(),
                java.net.http.HttpResponse.BodyHandlers.ofString());
        org.junit.jupiter.api.Assertions.assertEquals(200, live.statusCode());
        java.net.http.HttpClient plain = java.net.http.HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        org.junit.jupiter.api.Assertions.assertThrows(java.io.IOException.class, () -> plain.send(java.net.http.HttpRequest.newBuilder(
                java.net.URI.create("http://localhost:" + broker.metricsPort() + "/health/live")).timeout(Duration.ofSeconds(5)).build(),
                java.net.http.HttpResponse.BodyHandlers.ofString()), "plain HTTP is not served on the HTTPS port");
    }
}
