package io.sluice.broker.config;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ConfigLoaderTest {
    @TempDir
    Path dir;

    @Test
    void shouldRunOnTheEmbeddedDefaults() {
        BrokerConfig c = new ConfigLoader().load(null, Map.of());
        assertEquals("127.0.0.1", c.broker.listenAddress);
        assertEquals(7672, c.broker.port);
        assertEquals("always", c.storage.durability);
        assertEquals(10, c.queues.maxDeliveries);
        assertEquals(0, c.broker.ioThreads, "one event loop per processor");
    }

    @Test
    void shouldLayerAFileAndOverridesOnTheDefaultsWithoutLosingOtherKeys() throws Exception {
        Path file = dir.resolve("sluice.yaml");
        Files.writeString(file, "broker:\n  port: 9000\nstorage:\n  durability: never\n");
        BrokerConfig c = new ConfigLoader().load(file, Map.of("queues.max-deliveries", "3"));
        assertEquals(9000, c.broker.port);
        assertEquals("127.0.0.1", c.broker.listenAddress, "keys the file does not name keep their defaults");
        assertEquals("never", c.storage.durability);
        assertEquals(3, c.queues.maxDeliveries);
    }

    @Test
    void shouldRejectAnUnknownKeyNamingIt() throws Exception {
        Path file = dir.resolve("bad.yaml");
        Files.writeString(file, "broker:\n  prot: 9000\n");
        ConfigException e = assertThrows(ConfigException.class, () -> new ConfigLoader().load(file, Map.of()));
        assertTrue(e.getMessage().contains("unknown key 'broker.prot'"), e.getMessage());
    }

    @Test
    void shouldRejectBadValuesNamingKeyValueAndRule() {
        ConfigException e = assertThrows(ConfigException.class, () -> new ConfigLoader().load(null,
                Map.of("broker.port", "70000", "storage.durability", "sometimes", "queues.max-deliveries", "0",
                        "broker.io-threads", "-1")));
        String m = e.getMessage();
        assertTrue(m.contains("broker.port 70000 is outside 0..65535"), m);
        assertTrue(m.contains("broker.io-threads -1 is outside 0..1024"), m);
        assertTrue(m.contains("storage.durability 'sometimes' is not one of always, interval, never"), m);
        assertTrue(m.contains("queues.max-deliveries 0 is outside"), m);
    }

    /** "queues quota: soft quota of 10 messages is above the hard quota of 5" named no key, nor did a bad overflow policy. */
    @Test
    void shouldNameBothKeysOfASoftQuotaAboveTheHardOne() {
        ConfigException e = assertThrows(ConfigException.class, () -> new ConfigLoader().load(null,
                Map.of("queues.quota-soft-messages", "10", "queues.quota-hard-messages", "5", "queues.quota-hard-bytes", "-1")));
        assertEquals("invalid configuration:\n  - queues.quota-hard-bytes -1 is negative; a quota is 0 (none) or more", e.getMessage());
        e = assertThrows(ConfigException.class, () -> new ConfigLoader().load(null,
                Map.of("queues.quota-soft-messages", "10", "queues.quota-hard-messages", "5")));
        assertEquals("invalid configuration:\n  - queues.quota-soft-messages 10 is above queues.quota-hard-messages 5; a soft quota"
                + " is at most the hard one", e.getMessage());
        e = assertThrows(ConfigException.class, () -> new ConfigLoader().load(null, Map.of("queues.overflow-policy", "sometimes")));
        assertEquals("invalid configuration:\n  - queues.overflow-policy 'sometimes' is not one of block, reject, drop-oldest",
                e.getMessage());
    }

    @Test
    void shouldRejectAWronglyTypedValueInWordsOfTheYamlKey() {
        ConfigException e = assertThrows(ConfigException.class, () -> new ConfigLoader().load(null, Map.of("broker.port", "many")));
        assertEquals("invalid configuration: override broker.port=many: broker.port 'many' is not a whole number", e.getMessage());
    }

    @Test
    void shouldRejectAWronglyTypedValueInAFileNamingTheKey() throws Exception {
        Path file = dir.resolve("typed.yaml");
        Files.writeString(file, "metrics:\n  enabled: maybe\nstorage:\n  relocate-max-live-ratio: lots\n");
        ConfigException e = assertThrows(ConfigException.class, () -> new ConfigLoader().load(file, Map.of()));
        assertEquals("invalid configuration: " + file + ": metrics.enabled 'maybe' is not true or false; write true or false", e.getMessage());
    }

    @Test
    void shouldNameAKeyInAListEntryAsTheOtherMessagesDo() throws Exception {
        Path file = dir.resolve("entry.yaml");
        Files.writeString(file, "auth:\n  users:\n    - name: app\n      permissions: all\n");
        ConfigException e = assertThrows(ConfigException.class, () -> new ConfigLoader().load(file, Map.of()));
        assertEquals("invalid configuration: " + file + ": auth.users[0].permissions is not a list", e.getMessage());
    }

    @Test
    void shouldNameStorageProblemsByTheirYamlKeys() {
        ConfigException e = assertThrows(ConfigException.class, () -> new ConfigLoader().load(null,
                Map.of("storage.segment-bytes", "5", "storage.sync-interval-ms", "0")));
        String m = e.getMessage();
        assertTrue(m.contains("storage.segment-bytes 5 is outside"), m);
        assertTrue(m.contains("storage.sync-interval-ms 0 is outside 1..60000"), m);
        assertTrue(!m.contains("segmentBytes") && !m.contains("syncIntervalMs"), "no Java field names: " + m);
    }

    @Test
    void shouldListKnownKeysSorted() throws Exception {
        Path file = dir.resolve("unknown.yaml");
        Files.writeString(file, "metrics:\n  prot: 1\n");
        ConfigException e = assertThrows(ConfigException.class, () -> new ConfigLoader().load(file, Map.of()));
        assertEquals("invalid configuration: " + file + ": unknown key 'metrics.prot'; known keys at that level:"
                + " allow-anonymous-remote, enabled, listen-address, port, scrape-access, tls", e.getMessage());
    }

    @Test
    void shouldRejectAPlainTextPassword() throws Exception {
        Path file = dir.resolve("users.yaml");
        Files.writeString(file, "auth:\n  users:\n    - name: app\n      password-hash: secret\n");
        ConfigException e = assertThrows(ConfigException.class, () -> new ConfigLoader().load(file, Map.of()));
        assertTrue(e.getMessage().contains("auth.users[0].password-hash"), e.getMessage());
    }
}
