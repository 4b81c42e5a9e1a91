package io.sluice.broker.admin;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsServer;
import io.sluice.broker.security.ListenerExposure;
import io.sluice.broker.security.TlsContexts;

import javax.net.ssl.SSLContext;
import io.sluice.broker.Broker;
import io.sluice.broker.ListenFailure;
import io.sluice.broker.StartupException;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.metrics.BrokerMetrics;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.Map;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The broker's HTTP port ({@code metrics.port}): {@code /metrics} (Prometheus text),
 * {@code /health/live} (200 from start until the client listener fails, then 503), {@code /health/ready} (200 once the store is
 * recovered and the client listener is up, else 503) and the admin API under {@code /api}
 * ({@link AdminApi}). The health probes never ask for credentials (orchestrators probe without
 * them); {@code /metrics} does per {@code metrics.scrape-access}. It starts before recovery, so that a long recovery is visible as live but not
 * ready; {@link #attach} hands it the running broker.
 *
 * <p>The web console ({@link ConsoleFiles}) is served under {@code /console/}; {@code /} leads there.
 *
 * <p>Threads: the JDK's HTTP server on up to {@value #HTTP_THREADS} daemon threads (made as requests need them, gone
 * when idle), and one that times the delayed answers to refused credentials (an HTTP thread writes them) and samples
 * the queue rates; requests never run on an event loop.
 *
 * <p>Rule "a slow request holds a thread for a while, not for ever": the JDK's server reads a request on the thread
 * that serves it, so a client announcing a body and never sending it held that thread, and two such clients held the
 * two there were, health probes included. Now there are {@value #HTTP_THREADS}, a request (its body included) that
 * takes longer than {@value #MAX_REQUEST_SECONDS} s has its connection closed by the server (the JDK's
 * {@code sun.net.httpserver.maxReqTime}, set unless the operator set it), and the API reads a body only after the
 * credentials and up to {@link AdminRequestGate#MAX_BODY_BYTES}. No other handler reads a body at all (metrics, health, the
 * console, the API during recovery): what is left unread the JDK's server throws away after the answer, at most
 * {@link #DRAIN_BYTES}, within the same time limit. Likewise a response not written within
 * {@value #MAX_RESPONSE_SECONDS} s (a client that stops reading a large {@code /metrics}) has its connection closed
 * ({@code sun.net.httpserver.maxRspTime}; checked by hand: a write to a client reading nothing failed about a second
 * after the limit).
 */
public final class AdminServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(AdminServer.class);
    static final int HTTP_THREADS = 8;
    static final int MAX_REQUEST_SECONDS = 10;
    /** A response (a large /metrics to a client that stops reading) has this long to be written, then its connection goes. */
    static final int MAX_RESPONSE_SECONDS = 60;
    /**
     * How much of a body left unread the server reads and throws away after the answer, before it closes the connection
     * (the JDK's {@code sun.net.httpserver.drainAmount}, 64 KiB unless set). Closing a connection with unread bytes
     * resets it, and a client still sending then often loses the answer: with the JDK's 64 KiB, a client sending a body
     * just over {@link AdminRequestGate#MAX_BODY_BYTES} saw a reset instead of its 413. Thrown away in 2 KiB steps, never held.
     */
    static final long DRAIN_BYTES = 2L * AdminRequestGate.MAX_BODY_BYTES;

    static {
        // Read once by the JDK's server, when the first one is made: before any.
        if (System.getProperty("sun.net.httpserver.maxReqTime") == null) {
            System.setProperty("sun.net.httpserver.maxReqTime", String.valueOf(MAX_REQUEST_SECONDS));
        }
        if (System.getProperty("sun.net.httpserver.maxRspTime") == null) {
            System.setProperty("sun.net.httpserver.maxRspTime", String.valueOf(MAX_RESPONSE_SECONDS));
        }
        if (System.getProperty("sun.net.httpserver.drainAmount") == null) {
            System.setProperty("sun.net.httpserver.drainAmount", String.valueOf(DRAIN_BYTES));
        }
    }

    static final String PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

    private final HttpServer server;
    private final ExecutorService executor;
    /**
     * Times the delayed answers to refused credentials ({@link AdminAnswers}), so that no HTTP thread waits, and
     * samples the queues' counters for their rates ({@link QueueRates}). Never writes to a client.
     */
    private final ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "sluice-http-scheduler");
        t.setDaemon(true);
        return t;
    });
    private final BrokerMetrics metrics;
    /** How long after the broker is listening the JVM's and the process's meters are bound (BrokerMetrics.bindJvmMeters). */
    private static final long JVM_METERS_DELAY_MS = 5_000;
    private volatile Broker broker;
    private volatile AdminApi api;

    private AdminServer(HttpServer server, ExecutorService executor, BrokerMetrics metrics) {
        this.server = server;
        this.executor = executor;
        this.metrics = metrics;
    }

    /** Binds {@code metrics.listen-address}:{@code metrics.port}; throws naming both if it cannot. */
    public static AdminServer start(BrokerConfig config) {
        InetSocketAddress address = new InetSocketAddress(config.metrics.listenAddress, config.metrics.port);
        HttpServer server;
        try {
            if (config.metrics.tls) {
                HttpsServer https = HttpsServer.create(address, 64);
                SSLContext context = TlsContexts.httpServer(config.tls);
                https.setHttpsConfigurator(TlsContexts.httpsConfigurator(context, false));
                server = https;
            } else {
                server = HttpServer.create(address, 64);
            }
        } catch (IOException | RuntimeException e) {
            throw new StartupException(ListenFailure.describe(config.metrics.listenAddress, config.metrics.port,
                    "metrics.listen-address", "metrics.port", e), e);
        }
        AtomicInteger n = new AtomicInteger();
        ThreadPoolExecutor executor = new ThreadPoolExecutor(HTTP_THREADS, HTTP_THREADS, 30, TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(), r -> {
                    Thread t = new Thread(r, "sluice-http-" + n.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                });
        executor.allowCoreThreadTimeOut(true);
        AdminServer admin = new AdminServer(server, executor, new BrokerMetrics(System::currentTimeMillis));
        server.setExecutor(executor);
        // The JDK's server picks the context whose path is the longest prefix of the request's: each handler checks that
        // the path is its own (exactly(...)), so that /metricsfoo or /health/readyzzz is not answered as /metrics or ready.
        server.createContext("/metrics", exactly("/metrics", admin::metrics));
        server.createContext("/health/live", exactly("/health/live", admin::live));
        server.createContext("/health/ready", exactly("/health/ready", admin::ready));
        server.createContext("/api", admin::api);
        server.createContext("/", ConsoleFiles::handle);
        server.start();
        LOG.info("Metrics, health, admin API and web console on {}://{}:{}/.", config.metrics.tls ? "https" : "http",
                config.metrics.listenAddress, admin.port());
        ListenerExposure.warnIfAdminExposed(config);
        return admin;
    }

    /** Hands over the broker once its store is recovered and its listener bound. */
    public void attach(Broker running) {
        metrics.bind(running.queues(), running.store(), running.connections(), running.networkCounters(),
                running.recoveryNanos(), running::isReady);
        metrics.bindSecurity(running.limits(), running.authorizer(), running.loginBackoff());
        metrics.bindTransactions(running.transactions());
        if (running.cluster() != null) {
            metrics.bindCluster(running.cluster());
        }
        QueueRates rates = new QueueRates(System::nanoTime);
        scheduler.scheduleAtFixedRate(() -> rates.sample(running.queues().all()), 0, QueueRates.INTERVAL_MS, TimeUnit.MILLISECONDS);
        // After a restart's first publishes rather than beside them; a scrape before then binds them itself.
        scheduler.schedule(metrics::bindJvmMeters, JVM_METERS_DELAY_MS, TimeUnit.MILLISECONDS);
        this.api = new AdminApi(running, scheduler, executor, rates);
        this.broker = running;
    }

    /** The port bound (useful when the configuration says 0). */
    public int port() {
        return server.getAddress().getPort();
    }

    private void metrics(HttpExchange exchange) throws IOException {
        if (!reads(exchange)) {
            refuseMethod(exchange, GET_OR_HEAD);
            return;
        }
        // metrics.scrape-access (docs/operations.md). Before recovery ends there is no AdminApi yet and
        // the scrape holds only the JVM and process meters, so it is answered without credentials.
        AdminApi admin = api;
        if (admin != null && !admin.admitScrape(exchange)) {
            return;
        }
        respond(exchange, 200, PROMETHEUS_CONTENT_TYPE, metrics.scrape());
    }

    private void live(HttpExchange exchange) throws IOException {
        Broker b = broker;
        if (b == null || b.isListening()) {
            respond(exchange, 200, "text/plain; charset=utf-8", "live\n");
        } else {
            respond(exchange, 503, "text/plain; charset=utf-8", "not live: " + listenerClosed(b));
        }
    }

    private static String listenerClosed(Broker b) {
        InetSocketAddress listener = b.listenAddress();
        return "the client listener on " + listener.getAddress().getHostAddress() + ":" + listener.getPort() + " is closed\n";
    }

    private void ready(HttpExchange exchange) throws IOException {
        Broker b = broker;
        Map<String, String> failed = b == null ? Map.of() : b.failedQueues();
        if (b != null && b.isReady() && failed.isEmpty()) {
            respond(exchange, 200, "text/plain; charset=utf-8", "ready\n");
        } else if (b != null && b.isReady()) {
            StringBuilder text = new StringBuilder("not ready: the storage of ").append(failed.size())
                    .append(failed.size() == 1 ? " queue" : " queues").append(" failed; restart the broker once the disk is fixed\n");
            failed.forEach((queue, why) -> text.append("queue '").append(queue).append("': ").append(why).append('\n'));
            respond(exchange, 503, "text/plain; charset=utf-8", text.toString());
        } else if (b == null) {
            respond(exchange, 503, "text/plain; charset=utf-8", "not ready: the store is being recovered\n");
        } else if (!b.isListening()) {
            // Not ready and not listening: the listener died under a running broker (isListening stays true during
            // close()). Saying "shutting down" here sent operators after a shutdown that was not happening.
            respond(exchange, 503, "text/plain; charset=utf-8", "not ready: " + listenerClosed(b));
        } else {
            respond(exchange, 503, "text/plain; charset=utf-8", "not ready: the broker is shutting down\n");
        }
    }

    /** {@code handler} for {@code path} itself; any longer path is the console's to answer (its 404). */
    private static HttpHandler exactly(String path, HttpHandler handler) {
        return exchange -> {
            if (exchange.getRequestURI().getRawPath().equals(path)) {
                handler.handle(exchange);
            } else {
                ConsoleFiles.handle(exchange);
            }
        };
    }

    private void api(HttpExchange exchange) throws IOException {
        String path = exchange.getRequestURI().getRawPath();
        if (!path.equals("/api") && !path.startsWith("/api/")) { // /apifoo: the context matched by prefix
            ConsoleFiles.handle(exchange);
            return;
        }
        AdminApi current = api;
        if (current == null) {
            // The body is not read: during recovery no request is served, and reading it (uncapped, before any
            // credentials, which cannot be checked yet) let anyone make the broker hold a body of any size.
            respond(exchange, 503, AdminAnswers.JSON, "{\"error\":\"not_ready\",\"message\":\"the broker is still recovering its store\"}");
            return;
        }
        current.handle(exchange);
    }

    static void respond(HttpExchange exchange, int status, String contentType, String body) throws IOException {
        exchange.getResponseHeaders().set("Content-Type", contentType);
        send(exchange, status, body.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Sends {@code status}, the headers set so far and {@code body}; to a HEAD request the same status and headers, with
     * the Content-Length a GET gets, and no body (HTTP's HEAD: GET without the body). The JDK's server sends a
     * Content-Length header set by hand on a HEAD answer as it is; given the length through sendResponseHeaders instead,
     * it logs a WARNING line per HEAD request (anyone's to send) and sends no length.
     */
    static void send(HttpExchange exchange, int status, byte[] body) throws IOException {
        if ("HEAD".equals(exchange.getRequestMethod())) {
            exchange.getResponseHeaders().set("Content-Length", String.valueOf(body.length));
            exchange.sendResponseHeaders(status, -1);
            exchange.close();
            return;
        }
        exchange.sendResponseHeaders(status, body.length == 0 ? -1 : body.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
        }
    }

    /** The methods of a path that only reads: HEAD is GET without the body, so every such path takes both. */
    static final String GET_OR_HEAD = "GET, HEAD";

    /** Whether the request is one a path that only reads takes: GET or HEAD. */
    static boolean reads(HttpExchange exchange) {
        String method = exchange.getRequestMethod();
        return method.equals("GET") || method.equals("HEAD");
    }

    /** 405 in plain text, with the {@code Allow} header HTTP requires of a 405: the methods {@code allow} lists. */
    static void refuseMethod(HttpExchange exchange, String allow) throws IOException {
        exchange.getResponseHeaders().set("Allow", allow);
        respond(exchange, 405, "text/plain; charset=utf-8", "use " + allow.replace(", ", " or ") + "\n");
    }

    @Override
    public void close() {
        server.stop(0);
        scheduler.shutdownNow();
        executor.shutdown();
        try {
            executor.awaitTermination(2, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        metrics.close();
    }
}
