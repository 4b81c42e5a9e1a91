package io.sluice.broker.metrics;

import io.sluice.protocol.ErrorCode;

import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * Broker-wide traffic counters, fed by {@link TrafficCountHandler} on every connection's event loop
 * and read at scrape time. Thread-safe: {@link LongAdder}s, so event loops do not contend.
 */
public final class NetworkCounters {
    final LongAdder framesReceived = new LongAdder();
    final LongAdder framesSent = new LongAdder();
    final LongAdder bytesReceived = new LongAdder();
    final LongAdder bytesSent = new LongAdder();
    final Map<ErrorCode, LongAdder> protocolErrors = new EnumMap<>(ErrorCode.class);

    public NetworkCounters() {
        for (ErrorCode code : ErrorCode.values()) {
            if (code != ErrorCode.NONE) {
                protocolErrors.put(code, new LongAdder());
            }
        }
    }

    /** A connection closed by the broker with this code (NONE is a normal close and is not counted). */
    void closedWith(ErrorCode code) {
        LongAdder counter = protocolErrors.get(code);
        if (counter != null) {
            counter.increment();
        }
    }

    public long framesReceived() {
        return framesReceived.sum();
    }

    public long framesSent() {
        return framesSent.sum();
    }
}
