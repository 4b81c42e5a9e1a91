package io.sluice.broker.metrics;

import io.netty.channel.Channel;
import io.netty.util.AttributeKey;

/**
 * One connection's traffic figures, kept as a channel attribute. Written only on the connection's
 * event loop (Netty runs every pipeline event there); read by the admin API from other threads,
 * where a figure may be a moment stale.
 */
public final class ConnectionTraffic {
    private static final AttributeKey<ConnectionTraffic> KEY = AttributeKey.valueOf("sluice.traffic");

    long framesReceived;
    long framesSent;
    long bytesReceived;
    long bytesSent;

    /** The figures of this channel, created on first use. */
    public static ConnectionTraffic of(Channel channel) {
        ConnectionTraffic t = channel.attr(KEY).get();
        if (t == null) {
            t = new ConnectionTraffic();
            ConnectionTraffic before = channel.attr(KEY).setIfAbsent(t);
            if (before != null) {
                t = before;
            }
        }
        return t;
    }

    public long framesReceived() {
        return framesReceived;
    }

    public long framesSent() {
        return framesSent;
    }

    public long bytesReceived() {
        return bytesReceived;
    }

    public long bytesSent() {
        return bytesSent;
    }
}
