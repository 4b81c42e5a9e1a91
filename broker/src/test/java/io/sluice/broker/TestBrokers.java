package io.sluice.broker;

import io.netty.channel.Channel;
import io.sluice.broker.config.ConfigLoader;

import java.nio.file.Path;
import java.time.Duration;
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

    /** The bytes written to {@code channel} that Netty holds, not yet handed to the socket; read from any thread. */
    static long outboundPending(Channel channel) {
        var buffer = channel.unsafe().outboundBuffer();
        return buffer == null ? 0 : buffer.totalPendingWriteBytes();
    }

    /** The broker's channel of {@code client}'s connection. */
    static Channel servedChannel(Broker broker, RawClient client) throws InterruptedException {
        Channel[] found = new Channel[1];
        TestAwait.until("the broker's channel of the connection", Duration.ofSeconds(10), () -> {
            for (Channel ch : broker.connections()) {
                if (client.localAddress().equals(ch.remoteAddress())) {
                    found[0] = ch;
                    return true;
                }
            }
            return false;
        });
        return found[0];
    }
}
