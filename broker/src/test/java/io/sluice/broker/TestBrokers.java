package io.sluice.broker;

import io.sluice.broker.config.ConfigLoader;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/** Starts an in-JVM broker for a test: ephemeral ports, no disk reserve, plus the test's own settings. */
final class TestBrokers {
    private TestBrokers() {
    }

    static Broker start(Path dataDir, Map<String, String> extra) {
        Map<String, String> overrides = new HashMap<>(Map.of(
                "broker.data-dir", dataDir.toString(),
                "broker.port", "0",
                "metrics.port", "0",
                "storage.reserved-disk-bytes", "67108864"));
        overrides.putAll(extra);
        return Broker.start(new ConfigLoader().load(null, overrides));
    }
}
