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
        assertTrue(m.contains("durability mode 'sometimes'"), m);
        assertTrue(m.contains("queues.max-deliveries 0 is outside"), m);
    }

    @Test
    void shouldRejectAWronglyTypedValue() {
        ConfigException e = assertThrows(ConfigException.class, () -> new ConfigLoader().load(null, Map.of("broker.port", "many")));
        assertTrue(e.getMessage().contains("broker.port"), e.getMessage());
    }

    @Test
    void shouldRejectAPlainTextPassword() throws Exception {
        Path file = dir.resolve("users.yaml");
        Files.writeString(file, "auth:\n  users:\n    - name: app\n      password-hash: secret\n");
        ConfigException e = assertThrows(ConfigException.class, () -> new ConfigLoader().load(file, Map.of()));
        assertTrue(e.getMessage().contains("auth.users[0].password-hash"), e.getMessage());
    }
}
