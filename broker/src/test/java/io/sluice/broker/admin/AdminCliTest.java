package io.sluice.broker.admin;

import io.sluice.broker.auth.PasswordHasher;
import io.sluice.broker.metrics.MetricsFixture;
import io.sluice.client.Connection;
import io.sluice.client.ConsumerOptions;
import io.sluice.client.ProducerOptions;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code sluice admin} against a real broker: output, --json and the exit status of each failure. */
@Timeout(120)
class AdminCliTest {
    @TempDir
    Path dir;
    private MetricsFixture fixture;
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    @AfterEach
    void stop() {
        if (fixture != null) {
            fixture.close();
        }
    }

    private int run(String... args) {
        out.reset();
        err.reset();
        return AdminCli.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private String out() {
        return out.toString(StandardCharsets.UTF_8);
    }

    private String err() {
        return err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void shouldDeclareListShowPurgeAndDeleteWithTablesOrJson() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        String url = fixture.baseUrl();
        assertEquals(0, run("--url", url, "declare", "billing", "maxDeliveries=4", "overflowPolicy=reject", "quotaHardMessages=50"), err());
        assertTrue(out().contains("billing"), out());
        fixture.publishAndAck("billing", 3, 0);
        assertEquals(0, run("--url", url, "queues"), err());
        String[] lines = out().split("\n");
        assertTrue(lines[0].matches("NAME\\s+BACKLOG\\s+BACKLOG MiB\\s+READY\\s+UNACKED\\s+PUBLISHED/s\\s+ACKED/s\\s+OLDEST s"
                + "\\s+CONSUMERS\\s+PRODUCERS\\s+FLOW\\s+REASON"), out());
        // the rates are "-" until the broker has sampled the queue twice
        assertTrue(lines[1].matches("billing\\s+3\\s+0\\.0\\s+3\\s+0\\s+(-|0\\.0)\\s+(-|0\\.0)\\s+[0-9]+\\.[0-9]\\s+0\\s+0"
                + "\\s+free\\s+backlog below the soft quota"), out());
        assertEquals(0, run("--url", url, "--json", "queue", "billing"), err());
        assertTrue(out().contains("\"backlogMessages\" : 3"), out());
        assertEquals(0, run("--url", url, "connections"), err());
        assertEquals(0, run("--url", url, "consumers"), err());
        assertTrue(out().contains("(none)"), out());
        assertEquals(0, run("--url", url, "producers"), err());
        assertEquals(0, run("--url", url, "purge", "billing"), err());
        assertTrue(out().contains("purged 3 messages"), out());
        assertEquals(0, run("--url", url, "delete", "billing"), err());
        assertTrue(out().contains("deleted queue 'billing'"), out());
    }

    /** The rates columns: messages per second over the broker's last sampling interval. */
    @Test
    void shouldShowPublishAndAckRatesInTheQueuesTable() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        String url = fixture.baseUrl();
        fixture.publishAndAck("jobs", 1, 0);
        Duration timeout = Duration.ofSeconds(4 * QueueRates.INTERVAL_MS / 1000 + 10);
        // Sampled twice with nothing since: measured as idle.
        io.sluice.broker.TestAwait.value("a measured publish rate of 0", timeout, () -> row(url, "jobs"), r -> r[5].equals("0.0"));
        fixture.publishAndAck("jobs", 30, 20);
        String[] busy = io.sluice.broker.TestAwait.value("publish and ack rates above 0", timeout, () -> row(url, "jobs"),
                r -> Double.parseDouble(r[5]) > 0 && Double.parseDouble(r[6]) > 0);
        assertTrue(busy[5].matches("[0-9]+\\.[0-9]"), "one decimal: " + busy[5]);
    }

    /** The cells of the queues table's row for {@code queue}, split on runs of two or more spaces. */
    private String[] row(String url, String queue) {
        assertEquals(0, run("--url", url, "queues"), err());
        for (String line : out().split("\n")) {
            if (line.startsWith(queue + " ")) {
                return line.split("\\s{2,}");
            }
        }
        throw new AssertionError("no row for " + queue + " in\n" + out());
    }

    @Test
    void shouldNameAConnectionByOneKeyAcrossTablesAndCloseIt() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        String url = fixture.baseUrl();
        try (Connection client = fixture.connect()) {
            client.declareQueue("jobs", QueueSettings.EMPTY);
            client.createProducer("jobs", ProducerOptions.DEFAULT).send(new byte[] {1});
            client.subscribe("jobs", ConsumerOptions.DEFAULT);
            assertEquals(0, run("--url", url, "connections"), err());
            String[] connections = out().split("\n");
            assertTrue(connections[0].startsWith("CONNECTION  REMOTE") && connections[0].endsWith("RECEIVED MiB  SENT MiB"), out());
            assertEquals(2, connections.length, out());
            String id = connections[1].split("\\s+")[0];
            assertEquals(0, run("--url", url, "consumers"), err());
            assertTrue(out().split("\n")[1].matches("jobs\\s+" + id + "\\s+.*"), "consumers name the connection " + id + ":\n" + out());
            assertEquals(0, run("--url", url, "producers"), err());
            assertTrue(out().split("\n")[1].matches("jobs\\s+" + id + "\\s+free"), "producers name the connection " + id + ":\n" + out());
            assertEquals(0, run("--url", url, "close-connection", id), err());
            assertEquals("closed connection " + id + "\n", out());
            assertEquals(0, run("--url", url, "connections"), err());
            assertTrue(out().contains("(none)"), out());
            assertEquals(1, run("--url", url, "close-connection", id));
            assertTrue(err().contains("no open connection has id '" + id + "'") && err().contains("404"), err());
        }
    }

    /** A broker with one user, ops, of {@code password}. */
    private void startWithUserOps(String password) throws Exception {
        Path config = dir.resolve("sluice.yaml");
        Files.writeString(config, "auth:\n  allow-anonymous: true\n  users:\n    - name: ops\n      password-hash: \""
                + PasswordHasher.hash(password.toCharArray()) + "\"\n");
        fixture = new MetricsFixture(dir.resolve("data"), config, Map.of());
    }

    @Test
    void shouldReadThePasswordFromAFile() throws Exception {
        startWithUserOps("s3cret");
        Path passwordFile = dir.resolve("password");
        Files.writeString(passwordFile, "s3cret\n");
        assertEquals(0, run("--url", fixture.baseUrl(), "--user", "ops", "--password-file", passwordFile.toString(), "queues"), err());
        Files.writeString(passwordFile, "wrong\n");
        assertEquals(1, run("--url", fixture.baseUrl(), "--user", "ops", "--password-file", passwordFile.toString(), "queues"));
        assertTrue(err().contains("HTTP 401"), err());
        assertEquals(2, run("--url", fixture.baseUrl(), "--user", "ops", "--password-file", dir.resolve("absent").toString(), "queues"));
        assertTrue(err().startsWith("sluice admin: --password-file '" + dir.resolve("absent") + "' cannot be read"), err());
    }

    /** --user --json queues ran as the user "--json"; a flag after a valued flag is refused, as the broker's own flags are. */
    @Test
    void shouldRefuseAValuedOptionWhoseNextArgumentIsAnotherOption() {
        for (String option : List.of("--url", "--user", "--password-file")) {
            assertEquals(2, run(option, "--json", "queues"), option);
            assertTrue(err().startsWith("sluice admin: " + option + " needs a value; the argument after it, --json, is a flag\n"), err());
        }
        assertEquals(2, run("--user", "u", "--password", "--json", "queues"));
        assertTrue(err().startsWith("sluice admin: --password needs a value; the argument after it starts with --, as a flag does"
                + " (for a password that starts with --, write --password=VALUE or use --password-file)\n"), err());
        assertFalse(err().lines().findFirst().orElse("").contains("--json"), "a password is not repeated: " + err());
    }

    /** An empty argument was taken as the value: --password '' sent an empty password, --user '' an empty user. */
    @Test
    void shouldRefuseAnEmptyArgumentAsAnOptionsValue() {
        for (String option : List.of("--url", "--user", "--password", "--password-file")) {
            assertEquals(2, run(option, "", "queues"), option);
            assertTrue(err().startsWith("sluice admin: " + option + " needs a value; the argument after it is empty\n"), err());
        }
    }

    /**
     * A password may start with --: nothing in a password's rules forbids it, and the refusal above left --password-file
     * the only way to give one. --name=value gives any valued option a value that starts with -- (the usual GNU form).
     */
    @Test
    void aValuedOptionTakesItsValueAfterAnEqualsSignEvenOneThatStartsWithTwoDashes() throws Exception {
        startWithUserOps("--s3cret");
        assertEquals(0, run("--url=" + fixture.baseUrl(), "--user=ops", "--password=--s3cret", "queues"), err());
        assertEquals(0, run("--url", fixture.baseUrl(), "--user", "ops", "--password=--s3cret", "--json", "queues"), err());
        assertEquals(1, run("--url=" + fixture.baseUrl(), "--user=ops", "--password=--wrong", "queues"));
        assertTrue(err().contains("HTTP 401"), err());
        assertEquals(2, run("--url=" + fixture.baseUrl(), "--user=ops", "--password=", "queues"));
        assertTrue(err().startsWith("sluice admin: --password= has no value after the '='\n"), err());
        assertEquals(2, run("--json=yes", "queues"));
        assertTrue(err().startsWith("sluice admin: --json takes no value, got --json=yes\n"), err());
        assertEquals(2, run("--colour=red", "queues"));
        assertTrue(err().startsWith("sluice admin: unknown option '--colour=red'\n"), err());
    }

    /** An empty password file sent an empty password, and the broker's 401 said nothing of the file. */
    @Test
    void shouldRefuseAPasswordFileWhoseFirstLineIsEmpty() throws Exception {
        for (String content : List.of("", "\n", "\nsecret-on-line-two\n")) {
            Path file = Files.writeString(dir.resolve("password"), content);
            assertEquals(2, run("--user", "ops", "--password-file", file.toString(), "queues"), content);
            assertTrue(err().startsWith("sluice admin: --password-file '" + file + "' holds no password: its first line is"
                    + " empty\n"), err());
            assertFalse(err().contains("secret-on-line-two"), err());
        }
    }

    /** A missing file was said to be unreadable by repeating its path alone ("cannot be read: /x"); a directory likewise. */
    @Test
    void shouldSayWhyAPasswordFileCannotBeRead() throws Exception {
        Path absent = dir.resolve("absent");
        assertEquals(2, run("--user", "ops", "--password-file", absent.toString(), "queues"));
        assertTrue(err().startsWith("sluice admin: --password-file '" + absent + "' cannot be read: it does not exist\n"), err());
        assertEquals(2, run("--user", "ops", "--password-file", dir.toString(), "queues"));
        assertTrue(err().startsWith("sluice admin: --password-file '" + dir + "' cannot be read: it is a directory\n"), err());
    }

    @Test
    void shouldExitNonZeroWithAClearMessage() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        String url = fixture.baseUrl();
        assertEquals(1, run("--url", url, "queue", "missing"));
        assertTrue(err().contains("queue 'missing' does not exist") && err().contains("404"), err());
        assertEquals(1, run("--url", url, "declare", "q", "maxDeliveries=0"));
        assertTrue(err().contains("maxDeliveries 0 is outside"), err());
        assertEquals(1, run("--url", url, "declare", "q", "maxDeliveries=abc"));
        assertEquals("sluice admin: queue setting maxDeliveries=\"abc\" is a string; expected a whole number"
                + " (HTTP 400, invalid_setting)\n", err());
        assertEquals(1, run("--url", url, "queue", "q"), "the refused declare created nothing");
        assertEquals(2, run("--url", url, "frobnicate"));
        assertTrue(err().contains("unknown command 'frobnicate'") && err().contains("usage:"), err());
        assertEquals(2, run("--url", url, "queue"));
        assertEquals(2, run("--url", url, "declare", "q", "novalue"));
        assertEquals(2, run("--url", url, "add-node", "4", "10.0.0.4", "7691"));
        assertTrue(err().contains("add-node takes ID HOST RAFT_PORT CLIENT_PORT [SNAPSHOT_PORT]"), err());
        assertEquals(2, run("--url", url, "add-node", "4", "10.0.0.4", "7691", "port"));
        assertEquals(2, run("--url", url, "remove-node", "x"));
        assertTrue(err().contains("remove-node takes one node id"), err());
        assertEquals(1, run("--url", url, "remove-node", "2"));
        assertTrue(err().contains("not_a_cluster"), err());
        assertEquals(2, run("--user", "u", "queues"));
        assertEquals(2, run());
        int closedPort;
        try (ServerSocket s = new ServerSocket(0)) {
            closedPort = s.getLocalPort();
        }
        assertEquals(1, run("--url", "http://127.0.0.1:" + closedPort, "queues"));
        assertTrue(err().contains("unreachable"), err());
    }

    /**
     * Refused before any request (the URL names a port nothing listens on): an empty name went to the API as a path that
     * names a list ({@code delete ''} was {@code DELETE /api/queues/}), and of a key given twice the last won.
     */
    @Test
    void anEmptyNameOrAKeyGivenTwiceIsRefusedAsUsage() {
        String url = "http://127.0.0.1:1";
        for (String command : new String[] {"queue", "delete", "purge", "declare"}) {
            assertEquals(2, run("--url", url, command, ""), command + ": " + err());
            assertTrue(err().contains("the queue name is empty"), command + ": " + err());
        }
        assertEquals(2, run("--url", url, "close-connection", ""), err());
        assertTrue(err().contains("the connection id is empty"), err());
        assertEquals(2, run("--url", url, "declare", "q", "maxDeliveries=5", "maxDeliveries=6"), err());
        assertTrue(err().contains("declare setting 'maxDeliveries' is given twice; give each key once"), err());
    }

    /**
     * A number with a leading zero is refused by the CLI and the API alike, naming the key, as the configuration file
     * refuses {@code queues.max-deliveries: 05} (YAML reads it as octal): the CLI sent {@code maxDeliveries=05} as 5, and
     * the API answered Jackson's "Invalid numeric value: Leading zeroes not allowed", naming no key.
     */
    @Test
    void aNumberWithALeadingZeroIsRefusedNamingTheKeyByTheCliAndTheApiAlike() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        String url = fixture.baseUrl();
        String refusal = "maxDeliveries '05' has a leading zero, which JSON does not allow and YAML reads as an octal number"
                + " (the configuration file refuses it too); write 5";
        assertEquals(2, run("--url", url, "declare", "q", "maxDeliveries=05"), err());
        assertTrue(err().startsWith("sluice admin: declare setting " + refusal + "\n"), err());
        assertEquals(2, run("--url", url, "declare", "q", "quotaHardMessages=-007"), err());
        assertTrue(err().contains("declare setting quotaHardMessages '-007' has a leading zero") && err().contains("write -7"), err());
        assertEquals(1, run("--url", url, "queue", "q"), "nothing was declared");

        com.fasterxml.jackson.databind.JsonNode answer = new com.fasterxml.jackson.databind.ObjectMapper().readTree(
                fixture.request("PUT", "/api/queues/q", "{\"ackTimeoutMs\": 30000, \"maxDeliveries\": 05}", null).body());
        assertEquals("bad_json", answer.path("error").asText(), answer.toString());
        assertEquals(refusal, answer.path("message").asText());
        answer = new com.fasterxml.jackson.databind.ObjectMapper().readTree(
                fixture.request("PUT", "/api/queues/q", "{\"quotaHardMessages\": -007}", null).body());
        assertTrue(answer.path("message").asText().startsWith("quotaHardMessages '-007' has a leading zero"), answer.toString());
        assertEquals(1, run("--url", url, "queue", "q"), "nothing was declared");

        // A name is text: a dead-letter queue named 007 is that name.
        assertEquals(0, run("--url", url, "declare", "q", "deadLetterQueue=007", "maxDeliveries=5"), err());
    }

    /** A string setting that looks like a number was sent as one, and the broker refused it. */
    @Test
    void aStringSettingTakesItsTextAsWritten() throws Exception {
        fixture = new MetricsFixture(dir.resolve("data"), Map.of());
        assertEquals(0, run("--url", fixture.baseUrl(), "declare", "dl1", "deadLetterQueue=123", "maxDeliveries=3"), err());
        assertEquals(0, run("--url", fixture.baseUrl(), "--json", "queue", "dl1"), err());
        assertTrue(out().contains("\"deadLetterQueue\" : \"123\""), out());
        assertTrue(out().contains("\"maxDeliveries\" : 3"), out());
    }
}
