package io.sluice.broker.cluster;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsServer;
import io.sluice.broker.security.TlsContexts;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.net.ssl.SSLContext;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Serves this node's newest snapshot ({@link ShardSnapshots}) to a follower installing it
 * ({@link SnapshotInstaller}): {@code GET /snapshot?min-index=N} answers the snapshot as a
 * {@link SnapshotStream}, or 404 if this node has none holding entry N. Only to a node that proves it holds the
 * cluster secret ({@link SnapshotAuth}): any other request gets 401, a challenge and a sentence, and not a byte of
 * a queue. On the node's own address. One transfer at a time, on its own thread: a follower catching up costs the
 * leader one reader of its disk, never a broker or Raft thread.
 */
final class SnapshotServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(SnapshotServer.class);

    private final HttpServer server;
    private final ExecutorService thread = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "sluice-snapshot-server");
        t.setDaemon(true);
        return t;
    });
    private final ShardSnapshots snapshots;
    private final SnapshotAuth auth;

    SnapshotServer(String host, int port, ShardSnapshots snapshots, SnapshotAuth auth) throws IOException {
        this(host, port, snapshots, auth, null);
    }

    /**
     * With {@code tls} (not null, {@link NodeTls#serverContext}): HTTPS, and a client without a certificate the
     * cluster's CA signed gets no TLS session, before the secret's challenge is even reached.
     */
    SnapshotServer(String host, int port, ShardSnapshots snapshots, SnapshotAuth auth, SSLContext tls) throws IOException {
        this.snapshots = snapshots;
        this.auth = auth;
        InetSocketAddress address = new InetSocketAddress(host, port);
        if (tls == null) {
            server = HttpServer.create(address, 0);
        } else {
            HttpsServer https = HttpsServer.create(address, 0);
            https.setHttpsConfigurator(TlsContexts.httpsConfigurator(tls, true));
            server = https;
        }
        server.createContext("/snapshot", this::serve);
        server.setExecutor(thread);
        server.start();
    }

    private void serve(HttpExchange exchange) throws IOException {
        try (exchange) {
            String requestLine = exchange.getRequestMethod() + " " + exchange.getRequestURI();
            if (!auth.verify(exchange.getRequestHeaders().getFirst("Authorization"), requestLine)) {
                refuse(exchange);
                return;
            }
            long minIndex = 0;
            String query = exchange.getRequestURI().getQuery();
            if (query != null && query.startsWith("min-index=")) {
                minIndex = Long.parseLong(query.substring("min-index=".length()));
            }
            ShardSnapshots.Snapshot latest = snapshots.latest();
            if (latest == null || latest.termIndex().getIndex() < minIndex) {
                exchange.sendResponseHeaders(404, -1);
                return;
            }
            LOG.info("Sending the snapshot through index {} to {}.", latest.termIndex().getIndex(), exchange.getRemoteAddress());
            exchange.getResponseHeaders().set("Content-Type", "application/octet-stream");
            exchange.sendResponseHeaders(200, 0);
            try (OutputStream body = exchange.getResponseBody()) {
                SnapshotStream.write(latest, body);
            }
        } catch (IOException | RuntimeException e) {
            LOG.warn("Sending a snapshot to {} failed: {}", exchange.getRemoteAddress(), e.toString());
        }
    }

    private void refuse(HttpExchange exchange) throws IOException {
        boolean tried = exchange.getRequestHeaders().containsKey("Authorization");
        if (tried) {
            LOG.warn("Refused a snapshot request from {}: its proof of the cluster secret is wrong or its nonce is spent or expired.",
                    exchange.getRemoteAddress());
        }
        byte[] sentence = ((tried ? "the proof of the cluster secret is wrong, or its nonce is spent or expired: "
                + "every node's cluster.secret-file must hold the same secret"
                : "the snapshot port serves only a node that proves it holds the cluster secret (cluster.secret-file); "
                + "answer the challenge in WWW-Authenticate") + "\n").getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("WWW-Authenticate", auth.challenge());
        exchange.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
        exchange.sendResponseHeaders(401, sentence.length);
        try (OutputStream body = exchange.getResponseBody()) {
            body.write(sentence);
        }
    }

    @Override
    public void close() {
        server.stop(0);
        thread.shutdownNow();
    }
}
