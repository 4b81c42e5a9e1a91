package io.sluice.broker.admin;

import io.netty.channel.Channel;
import io.sluice.broker.Broker;
import io.sluice.broker.auth.Action;
import io.sluice.broker.auth.Authorizer;
import io.sluice.broker.metrics.ConnectionTraffic;
import io.sluice.broker.net.ClientSessionAdapter;
import io.sluice.broker.net.LastFrame;
import io.sluice.protocol.CloseFrame;
import io.sluice.protocol.ErrorCode;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The admin API's client connections ({@link AdminApi} routes to them, method already checked):
 * {@code GET /api/connections} lists every connection to a user with a grant on every queue ({@code *}), and only
 * the user's own connections to anyone else; {@code DELETE /api/connections/{id}} closes the user's own connection,
 * or any with manage on every queue (rule A2).
 *
 * <p>Threads: the HTTP thread serving the request. It reads the connections' figures as they stand, hands the
 * CLOSE frame to the connection's event loop and waits up to {@link QueueEndpoints#QUEUE_WAIT_MS} for it to close.
 */
final class ConnectionEndpoints {
    private final Broker broker;
    private final Authorizer authorizer;

    ConnectionEndpoints(Broker broker) {
        this.broker = broker;
        this.authorizer = broker.authorizer();
    }

    /** The user a connection runs as ("" anonymous or before its HELLO). */
    private static String userOf(Channel ch) {
        ClientSessionAdapter handler = ch.pipeline().get(ClientSessionAdapter.class);
        return handler == null ? "" : handler.user();
    }

    List<Object> list(String user) {
        boolean everyConnection = authorizer.allowedOnEveryQueue(user, null);
        List<Object> out = new ArrayList<>();
        for (Channel ch : broker.connections()) {
            if (!everyConnection && !userOf(ch).equals(user)) {
                continue;
            }
            ConnectionTraffic t = ConnectionTraffic.of(ch);
            ClientSessionAdapter handler = ch.pipeline().get(ClientSessionAdapter.class);
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("id", ch.id().asShortText());
            m.put("remoteAddress", String.valueOf(ch.remoteAddress()));
            m.put("client", handler == null ? "?" : handler.client());
            m.put("user", handler == null ? "" : handler.user());
            m.put("framesReceived", t.framesReceived());
            m.put("framesSent", t.framesSent());
            m.put("bytesReceived", t.bytesReceived());
            m.put("bytesSent", t.bytesSent());
            m.put("publishHeldBytes", handler == null ? 0 : handler.publishHeldBytes());
            out.add(m);
        }
        return out;
    }

    /** Closes one client connection, telling the client why with a CLOSE frame first. */
    Map<String, Object> close(String user, String id) {
        for (Channel ch : broker.connections()) {
            if (ch.id().asShortText().equals(id)) {
                String owner = userOf(ch);
                if (!owner.equals(user) && !authorizer.allowedOnEveryQueue(user, Action.MANAGE)) {
                    authorizer.countDenial();
                    throw new ApiException(403, "access_denied", Authorizer.who(user) + " may not close connection '" + id
                            + "' of " + Authorizer.who(owner) + " (that needs manage on every queue, \"*\")");
                }
                LastFrame.writeAndClose(ch, new CloseFrame(ErrorCode.NONE, "closed by an administrator"));
                ch.closeFuture().awaitUninterruptibly(QueueEndpoints.QUEUE_WAIT_MS, TimeUnit.MILLISECONDS);
                return Map.of("closed", id);
            }
        }
        throw new ApiException(404, "unknown_connection", "no open connection has id '" + id + "'; see GET /api/connections");
    }
}
