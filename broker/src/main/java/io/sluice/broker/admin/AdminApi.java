package io.sluice.broker.admin;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.sun.net.httpserver.HttpExchange;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.sluice.broker.Broker;
import io.sluice.broker.auth.Action;
import io.sluice.broker.auth.Authenticator;
import io.sluice.broker.auth.Authorizer;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.config.ScrapeAccess;
import io.sluice.broker.metrics.ConnectionTraffic;
import io.sluice.broker.net.ClientSessionAdapter;
import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.QueueSnapshot;
import io.sluice.broker.queue.Replication;
import io.sluice.broker.security.LoginBackoff;
import io.sluice.protocol.CloseFrame;
import io.sluice.broker.error.ErrorCodes;
import io.sluice.protocol.ErrorCode;
import io.sluice.protocol.QueueSettings;
import io.sluice.storage.BacklogStats;
import io.sluice.storage.QueueDigest;
import io.sluice.storage.StoredMessage;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The admin API, JSON over HTTP:
 * <pre>
 * GET    /api/queues               every queue with its figures
 * GET    /api/queues/{name}        one queue
 * PUT    /api/queues/{name}        declare; body: the DECLARE settings as a JSON object ({} for defaults)
 * DELETE /api/queues/{name}        delete with its messages
 * POST   /api/queues/{name}/purge  remove every message not out with a consumer
 * GET    /api/connections          open client connections and their traffic
 * DELETE /api/connections/{id}     close one (after a CLOSE frame saying an administrator closed it)
 * GET    /api/consumers            subscriptions: queue, connection, credit, unacknowledged
 * GET    /api/producers            connection, queue and the flow state it was told
 * GET    /api/queues/{name}/digest the digest of the messages it holds (to compare a cluster's nodes)
 * GET    /api/cluster              a cluster node's role, leader, term, indexes, counters and followers
 * POST   /api/cluster/leader       hand the shard's leadership to a node; body {"nodeId": N} ({@link ClusterAdmin})
 * POST   /api/cluster/feature-level  raise the cluster's entry level; body {"level": N} ({@link ClusterAdmin})
 * POST   /api/cluster/nodes        add a node to the cluster; body {"id", "host", "raftPort", "clientPort", "snapshotPort"}
 * DELETE /api/cluster/nodes/{id}   remove a node from the cluster
 * </pre>
 * Errors are {@code {"error": code, "message": sentence}}: 400 bad JSON or setting, 401 credentials,
 * 403 permission, 404 unknown queue or path, 405 method, 409 queue exists with other settings.
 *
 * <p>Access (A1): with users configured ({@code auth.users}), every request needs HTTP Basic
 * credentials that {@link Authenticator#check} accepts; with none, the API is open while
 * {@code auth.allow-anonymous} is true and closed otherwise, and requests run as anonymous
 * ({@code auth.anonymous-permissions}).
 *
 * <p>Permissions (A2), the wire protocol's grants ({@link Authorizer}), checked before the queue is
 * looked up so that a refused user cannot probe which queues exist; a refusal is 403
 * {@code access_denied} naming the user, the action and the queue:
 * <ul>
 * <li>{@code GET /api/queues/{name}} needs any action on the queue (publish, consume, manage, monitor);
 * {@code PUT}, {@code DELETE} and {@code purge} need manage.</li>
 * <li>{@code GET /api/queues}, {@code /api/consumers}, {@code /api/producers} list only the queues the
 * user may see.</li>
 * <li>{@code GET /api/connections} lists every connection to a user with a grant on every queue
 * ({@code *}), and only the user's own connections to anyone else; {@code DELETE /api/connections/{id}}
 * closes the user's own connection, or any with manage on every queue.</li>
 * </ul>
 *
 * <p>Origin (A4): a request whose {@code Origin} header is not this port's own is refused 403
 * {@code cross_origin} before anything else ({@link #refuseCrossOrigin}).
 *
 * <p>Each queue carries its rates, messages per second over the last {@link QueueRates#INTERVAL_MS}
 * ({@link QueueRates}), and the age of its oldest unacknowledged and oldest ready message.
 */
final class AdminApi {
    private static final Logger LOG = LoggerFactory.getLogger(AdminApi.class);
    static final String JSON = "application/json; charset=utf-8";
    /** Sent by the web console with each request; its 401s then carry no Basic challenge. */
    static final String CONSOLE_HEADER = "X-Sluice-Console";
    private static final long QUEUE_WAIT_MS = 5000;
    /** How long a delete or purge on a cluster node waits to be committed and applied: through an election or two. */
    private static final long REPLICATED_WAIT_MS = 15_000;

    private final Broker broker;
    private final BrokerConfig.Auth auth;
    private final Authenticator authenticator;
    private final Authorizer authorizer;
    /** Refuses a body naming a key twice (which the last would otherwise win), here and in {@link ClusterAdmin}. */
    private final ObjectMapper json = new ObjectMapper(JsonFactory.builder().enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build())
            .enable(SerializationFeature.INDENT_OUTPUT);

    /** Answers refused credentials after {@link LoginBackoff#REFUSAL_DELAY_MS}, so no HTTP thread waits. */
    private final ScheduledExecutorService delayedAnswers;
    /** The HTTP threads, which write those delayed answers (see {@link #refuse}). */
    private final Executor httpThreads;

    private final QueueRates rates;
    private final ClusterAdmin clusterAdmin;

    AdminApi(Broker broker, ScheduledExecutorService delayedAnswers, Executor httpThreads, QueueRates rates) {
        this.broker = broker;
        this.delayedAnswers = delayedAnswers;
        this.httpThreads = httpThreads;
        this.rates = rates;
        this.auth = broker.config().auth;
        this.authenticator = new Authenticator(auth);
        this.authorizer = broker.authorizer();
        this.clusterAdmin = new ClusterAdmin(broker::cluster, authorizer, json);
    }

    /**
     * A failed request: its HTTP status, stable error code and sentence; for refused credentials, also
     * that the answer is delayed and, in backoff, when the source may try again.
     */
    /** The largest request body the API reads. */
    static final int MAX_BODY_BYTES = 1 << 20;

    static final class ApiException extends RuntimeException {
        final int status;
        final String code;
        final boolean refusedCredentials;
        final long retryAfterMs;

        ApiException(int status, String code, String message) {
            this(status, code, message, false, 0);
        }

        ApiException(int status, String code, String message, boolean refusedCredentials, long retryAfterMs) {
            super(message);
            this.status = status;
            this.code = code;
            this.refusedCredentials = refusedCredentials;
            this.retryAfterMs = retryAfterMs;
        }
    }

    void handle(HttpExchange exchange) throws IOException {
        try {
            // Headers first: nobody refused makes the broker read, or hold, a body (AdminServer's rule on slow requests).
            refuseCrossOrigin(exchange);
            String user = authenticate(exchange);
            byte[] body = readBody(exchange);
            Object result = route(user, exchange.getRequestMethod(), exchange.getRequestURI().getRawPath(), body);
            AdminServer.respond(exchange, 200, JSON, json.writeValueAsString(result) + "\n");
        } catch (ApiException e) {
            refuse(exchange, e, false);
        } catch (RuntimeException e) {
            error(exchange, 500, "internal_error", "the request failed: " + e);
        }
    }

    /** The request's body, refused with 413 past {@link #MAX_BODY_BYTES} (by its Content-Length, or as it is read). */
    private static byte[] readBody(HttpExchange exchange) throws IOException {
        String declared = exchange.getRequestHeaders().getFirst("Content-Length");
        if (declared != null) {
            long length;
            try {
                length = Long.parseLong(declared.trim());
            } catch (NumberFormatException e) {
                throw new ApiException(400, "bad_request", "Content-Length '" + declared + "' is not a number");
            }
            if (length > MAX_BODY_BYTES) {
                throw tooLarge(length + " bytes");
            }
        }
        byte[] body = exchange.getRequestBody().readNBytes(MAX_BODY_BYTES + 1);
        if (body.length > MAX_BODY_BYTES) {
            throw tooLarge("more than " + MAX_BODY_BYTES + " bytes");
        }
        return body;
    }

    private static ApiException tooLarge(String size) {
        return new ApiException(413, "body_too_large", "the request body is " + size + "; the admin API takes at most "
                + MAX_BODY_BYTES + " bytes (queue settings and users are small JSON objects)");
    }

    /**
     * Answers a failed request, as JSON or (for {@code /metrics}) plain text; refused credentials
     * {@link LoginBackoff#REFUSAL_DELAY_MS} later, from the scheduler.
     */
    private void refuse(HttpExchange exchange, ApiException e, boolean plainText) throws IOException {
        if (e.status == 401) {
            // The console asks for credentials with its own form; a Basic challenge would make the
            // browser ask again with its own prompt, and then send those credentials by itself.
            boolean console = exchange.getRequestHeaders().containsKey(CONSOLE_HEADER);
            exchange.getResponseHeaders().set("WWW-Authenticate", (console ? "SluiceConsole" : "Basic") + " realm=\"sluice\"");
        }
        if (e.retryAfterMs > 0) {
            exchange.getResponseHeaders().set("Retry-After", String.valueOf((e.retryAfterMs + 999) / 1000));
        }
        if (!e.refusedCredentials) {
            answer(exchange, e, plainText);
            return;
        }
        // The scheduler only waits; an HTTP thread writes the answer. Writing it is not quick for a request that
        // announced a body it does not send: after the answer the JDK's server reads what is left of the body (up to
        // 64 KiB) until the request's time is up (10 s). On the scheduler's one thread that held every other refusal
        // and the rates' sampling that long; on an HTTP thread it holds that thread, as any slow request does.
        Runnable write = () -> {
            try {
                answer(exchange, e, plainText);
            } catch (IOException | RuntimeException gone) {
                exchange.close(); // the client went away meanwhile
            }
        };
        try {
            delayedAnswers.schedule(() -> {
                try {
                    httpThreads.execute(write);
                } catch (RejectedExecutionException shuttingDown) {
                    exchange.close();
                }
            }, LoginBackoff.REFUSAL_DELAY_MS, TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException shuttingDown) {
            answer(exchange, e, plainText);
        }
    }

    private void answer(HttpExchange exchange, ApiException e, boolean plainText) throws IOException {
        if (plainText) {
            AdminServer.respond(exchange, e.status, "text/plain; charset=utf-8", e.getMessage() + "\n");
        } else {
            error(exchange, e.status, e.code, e.getMessage());
        }
    }

    private void error(HttpExchange exchange, int status, String code, String message) throws IOException {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("error", code);
        body.put("message", message);
        AdminServer.respond(exchange, status, JSON, json.writeValueAsString(body) + "\n");
    }

    /**
     * Rule A4: a request a browser sends on behalf of a page from another origin (its {@code Origin}
     * header names another host and port than its {@code Host}) is refused, 403 {@code cross_origin},
     * before its credentials are looked at. Without this, any web page could make a browser on the
     * broker's machine purge a queue of an open (anonymous) admin API with a plain form POST. The
     * console is served from this port, so its requests are same-origin; the CLI sends no Origin.
     */
    private static void refuseCrossOrigin(HttpExchange exchange) {
        String origin = exchange.getRequestHeaders().getFirst("Origin");
        if (origin == null) {
            return;
        }
        String host = exchange.getRequestHeaders().getFirst("Host");
        String authority;
        try {
            authority = URI.create(origin).getRawAuthority();
        } catch (IllegalArgumentException e) {
            authority = null;
        }
        if (host == null || authority == null || !authority.equalsIgnoreCase(host)) {
            throw new ApiException(403, "cross_origin", "the admin API refuses requests from pages of another origin ("
                    + origin + "); use the console on this port or the admin CLI");
        }
    }

    /**
     * For the metrics endpoint, rule A3: with {@code metrics.scrape-access: open} anyone; with
     * {@code authenticated} rule A1, and then a user with a grant on every queue, since the scrape names
     * every queue. Answers 401 or 403 itself (plain text) and returns false when the request may not proceed.
     */
    boolean admitScrape(HttpExchange exchange) throws IOException {
        if (broker.config().metrics.scrapeAccess == ScrapeAccess.OPEN) {
            return true;
        }
        try {
            String user = authenticate(exchange);
            if (!authorizer.allowedOnEveryQueue(user, null)) {
                authorizer.countDenial();
                throw new ApiException(403, "access_denied", Authorizer.who(user) + " may not read /metrics: the scrape shows"
                        + " every queue, so it needs a grant on every queue (queues: \"*\", e.g. actions: [monitor])");
            }
            return true;
        } catch (ApiException e) {
            refuse(exchange, e, true);
            return false;
        }
    }

    /**
     * Rule A1: the user the request runs as ("" for anonymous), or a 401. A request with an
     * Authorization header is an attempt for {@link LoginBackoff} (a source in backoff gets 429
     * {@code too_many_failures} with Retry-After); one without is only told to authenticate.
     */
    private String authenticate(HttpExchange exchange) {
        String header = exchange.getRequestHeaders().getFirst("Authorization");
        if (auth.users.isEmpty()) {
            if (auth.allowAnonymous) {
                return "";
            }
            throw new ApiException(401, "unauthorized", "the admin API is closed: no users are configured (auth.users)"
                    + " and auth.allow-anonymous is false");
        }
        if (header == null || !header.regionMatches(true, 0, "Basic ", 0, 6)) {
            throw new ApiException(401, "unauthorized", "the admin API needs HTTP Basic credentials of a user in auth.users");
        }
        LoginBackoff.Outcome outcome = broker.loginBackoff().authenticate(exchange.getRemoteAddress(), LoginBackoff.Listener.ADMIN,
                () -> checkBasic(header.substring(6).trim()));
        if (!outcome.result().accepted()) {
            broker.rejectionLog().warn(LOG, "Authentication failed for an admin request from {}: {}.", exchange.getRemoteAddress(),
                    outcome.result().rejected());
        }
        if (outcome.braked()) {
            throw new ApiException(429, "too_many_failures", outcome.result().rejected(), true, outcome.retryAfterMs());
        }
        if (!outcome.result().accepted()) {
            throw new ApiException(401, "unauthorized", outcome.result().rejected(), true, 0);
        }
        return outcome.result().user();
    }

    /** The user of Basic credentials ({@code base64(user:password)}), or why they are refused. */
    private Authenticator.Result checkBasic(String credentials) {
        String decoded;
        try {
            decoded = new String(Base64.getDecoder().decode(credentials), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            return new Authenticator.Result("", "the Authorization header is not valid Basic base64");
        }
        int colon = decoded.indexOf(':');
        String user = colon < 0 ? decoded : decoded.substring(0, colon);
        String password = colon < 0 ? "" : decoded.substring(colon + 1);
        return new Authenticator.Result(user, user.isEmpty() ? "a user name is required" : authenticator.check(user, password));
    }

    /** Rule A2 for one queue: 403 unless {@code user} may do {@code action} (null: see) on it. */
    private void permit(String user, Action action, String queue) {
        if (action == null ? authorizer.maySee(user, queue) : authorizer.allowed(user, action, queue)) {
            return;
        }
        if (action == null) {
            authorizer.countDenial();
        }
        throw new ApiException(403, "access_denied", action == null ? Authorizer.seeDenial(user, queue)
                : Authorizer.denial(user, action, queue));
    }

    private Object route(String user, String method, String rawPath, byte[] body) {
        List<String> parts = new ArrayList<>();
        for (String p : rawPath.split("/")) {
            if (!p.isEmpty()) {
                parts.add(URLDecoder.decode(p, StandardCharsets.UTF_8));
            }
        }
        // parts[0] is "api"
        String resource = parts.size() > 1 ? parts.get(1) : "";
        switch (resource) {
            case "queues" -> {
                if (parts.size() == 2) {
                    requireMethod(method, "GET");
                    return allQueues(user);
                }
                String name = parts.get(2);
                if (parts.size() == 4 && parts.get(3).equals("purge")) {
                    requireMethod(method, "POST");
                    permit(user, Action.MANAGE, name);
                    return purge(name);
                }
                if (parts.size() == 4 && parts.get(3).equals("digest")) {
                    requireMethod(method, "GET");
                    permit(user, null, name);
                    return digest(queue(name));
                }
                if (parts.size() != 3) {
                    break;
                }
                if (!List.of("GET", "PUT", "DELETE").contains(method)) {
                    throw new ApiException(405, "method_not_allowed", method + " " + rawPath
                            + " is not supported; use GET, PUT or DELETE");
                }
                permit(user, method.equals("GET") ? null : Action.MANAGE, name);
                if (method.equals("PUT")) {
                    requireSingleNode("declaring a queue through the admin API");
                }
                return switch (method) {
                    case "GET" -> describe(queue(name));
                    case "PUT" -> declare(name, body);
                    default -> delete(name);
                };
            }
            case "cluster" -> {
                if (parts.size() == 2) {
                    requireMethod(method, "GET");
                    return clusterAdmin.status();
                }
                if (parts.size() == 3 && parts.get(2).equals("leader")) {
                    requireMethod(method, "POST");
                    return clusterAdmin.transferLeader(user, body);
                }
                if (parts.size() == 3 && parts.get(2).equals("feature-level")) {
                    requireMethod(method, "POST");
                    return clusterAdmin.raiseEntryLevel(user, body);
                }
                if (parts.size() == 3 && parts.get(2).equals("nodes")) {
                    requireMethod(method, "POST");
                    return clusterAdmin.addNode(user, body);
                }
                if (parts.size() == 4 && parts.get(2).equals("nodes")) {
                    requireMethod(method, "DELETE");
                    return clusterAdmin.removeNode(user, parts.get(3));
                }
            }
            case "connections" -> {
                if (parts.size() == 3) {
                    requireMethod(method, "DELETE");
                    return closeConnection(user, parts.get(2));
                }
                requireMethod(method, "GET");
                return connections(user);
            }
            case "consumers" -> {
                requireMethod(method, "GET");
                return consumers(user);
            }
            case "producers" -> {
                requireMethod(method, "GET");
                return producers(user);
            }
            default -> {
            }
        }
        throw new ApiException(404, "not_found", "no API at " + method + " " + rawPath
                + "; see /api/queues, /api/connections, /api/consumers, /api/producers, /api/cluster, /api/cluster/leader, "
                + "/api/cluster/feature-level, /api/cluster/nodes");
    }

    /**
     * The digest of the messages the queue holds on this node ({@link QueueDigest}): equal on every node of a
     * cluster once they applied the same log (docs/replication.md, rule R6). Reads every unacknowledged message.
     */
    private Map<String, Object> digest(BrokerQueue q) {
        QueueDigest digest = QueueDigest.of(q.store());
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("queue", q.name());
        m.put("messages", digest.messages());
        m.put("firstId", digest.firstId());
        m.put("lastId", digest.lastId());
        m.put("sha256", digest.sha256());
        return m;
    }

    private static void requireMethod(String method, String wanted) {
        if (!method.equals(wanted)) {
            throw new ApiException(405, "method_not_allowed", "method " + method + " is not supported here; use " + wanted);
        }
    }

    private BrokerQueue queue(String name) {
        BrokerQueue q = broker.queues().get(name);
        if (q == null) {
            throw new ApiException(404, "unknown_queue", "queue '" + name + "' does not exist");
        }
        return q;
    }

    private static QueueSnapshot snapshot(BrokerQueue q) {
        io.netty.util.concurrent.Future<QueueSnapshot> f = q.snapshot();
        if (!f.awaitUninterruptibly(QUEUE_WAIT_MS, TimeUnit.MILLISECONDS)) {
            throw new ApiException(503, "queue_busy", "queue '" + q.name() + "' did not answer within " + QUEUE_WAIT_MS + " ms");
        }
        if (!f.isSuccess()) {
            throw new ApiException(503, "queue_busy", "queue '" + q.name() + "' could not report its figures: " + f.cause());
        }
        return f.getNow();
    }

    /** The queues {@code user} may see (rule A2). */
    private List<BrokerQueue> visibleQueues(String user) {
        return broker.queues().all().stream().filter(q -> authorizer.maySee(user, q.name()))
                .sorted(Comparator.comparing(BrokerQueue::name)).toList();
    }

    private List<Object> allQueues(String user) {
        List<Object> out = new ArrayList<>();
        visibleQueues(user).forEach(q -> {
            try {
                out.add(describe(q));
            } catch (ApiException e) {
                if (e.status != 503) {
                    throw e;
                }
            }
        });
        return out;
    }

    private Map<String, Object> describe(BrokerQueue q) {
        QueueSnapshot s = snapshot(q);
        BacklogStats stats = q.store().stats();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("name", q.name());
        m.put("backlogMessages", s.backlogMessages());
        m.put("backlogBytes", s.backlogBytes());
        m.put("readyMessages", s.readyMessages());
        m.put("unackedMessages", s.inFlightMessages());
        m.put("consumers", s.consumers().size());
        m.put("producers", s.producers().size());
        m.put("flowState", s.flowState().name().toLowerCase());
        m.put("flowReason", s.flowReason());
        long nowMillis = q.store().nowMillis();
        m.put("oldestUnackedAgeSeconds", oldestUnackedAgeSeconds(q, nowMillis));
        long ready = s.oldestReadyTimestampMillis();
        m.put("oldestReadyAgeSeconds", ready < 0 ? 0 : Math.max(0, nowMillis - ready) / 1000.0);
        m.put("rates", rates.of(q.name()));
        m.put("durability", q.store().durability().configName());
        m.put("segments", stats.segments());
        m.put("diskBytes", stats.diskBytes());
        m.put("pinnedBytes", stats.pinnedBytes());
        m.put("counters", s.counters());
        m.put("settings", Map.of(
                QueueSettings.MAX_DELIVERIES, q.options().maxDeliveries(),
                QueueSettings.DEAD_LETTER_QUEUE, q.options().deadLetterQueue(),
                QueueSettings.ACK_TIMEOUT_MS, q.options().ackTimeoutMs(),
                "quota", q.options().quota()));
        return m;
    }

    /** As the metric of that name: 0 with no message, null when the oldest record cannot be read. */
    private static Double oldestUnackedAgeSeconds(BrokerQueue q, long nowMillis) {
        try {
            long oldest = q.store().oldestUnacked(id -> false, 0);
            StoredMessage m = oldest < 0 ? null : q.store().read(oldest);
            return m == null ? 0.0 : Math.max(0, nowMillis - m.timestampMillis()) / 1000.0;
        } catch (RuntimeException e) {
            return null; // a damaged record or a queue being deleted: unknown, not 0
        }
    }

    private Map<String, Object> declare(String name, byte[] body) {
        QueueSettings settings = parseSettings(body);
        try {
            boolean existed = broker.queues().get(name) != null;
            BrokerQueue q = onDeclareThread(() -> broker.queues().declare(name, settings));
            Map<String, Object> m = describe(q);
            m.put("created", !existed);
            return m;
        } catch (RuntimeException e) {
            ErrorCode code = ErrorCodes.of(e);
            if (code == ErrorCode.INTERNAL_ERROR) {
                throw e;
            }
            throw new ApiException(ErrorCodes.httpStatus(code), ErrorCodes.httpName(code), ErrorCodes.unwrap(e).getMessage());
        }
    }

    /** Declares and deletes go through the broker's declare thread, in line with the connections' ones. */
    private <T> T onDeclareThread(Supplier<T> task) {
        try {
            return broker.queues().onDeclareThread(task).join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException cause) {
                throw cause;
            }
            throw e;
        }
    }

    /**
     * Waits for a change submitted to the shard's log to be applied here; 503 if Raft took longer than
     * {@link #REPLICATED_WAIT_MS} (an election running: the change may still be applied), the failure's own
     * status (409 for NOT_LEADER) if it was refused.
     */
    private static <T> T awaitReplicated(CompletableFuture<T> change, String what) {
        try {
            return change.get(REPLICATED_WAIT_MS, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new ApiException(503, "not_committed", what + " was not committed within " + REPLICATED_WAIT_MS
                    + " ms; it may still be applied, look again before repeating it");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ApiException(503, "interrupted", what + " was interrupted while waiting for the cluster");
        } catch (ExecutionException e) {
            ErrorCode code = ErrorCodes.of(e);
            if (code == ErrorCode.INTERNAL_ERROR) {
                throw new IllegalStateException(what + " failed", e.getCause());
            }
            throw new ApiException(ErrorCodes.httpStatus(code), ErrorCodes.httpName(code), what + " failed: " + e.getCause().getMessage());
        }
    }

    /** Why a body is refused, in a sentence; jackson-core words a key given twice "Duplicate field 'name'". */
    static String notValidJson(JsonProcessingException e) {
        String said = String.valueOf(e.getOriginalMessage());
        return said.startsWith("Duplicate field ") ? "the body gives the key " + said.substring("Duplicate field ".length())
                + " twice; give each key once" : "the body is not valid JSON: " + said;
    }

    private QueueSettings parseSettings(byte[] body) {
        if (body.length == 0) {
            return QueueSettings.EMPTY;
        }
        JsonNode root;
        try {
            root = json.readTree(body);
        } catch (JsonProcessingException e) {
            throw new ApiException(400, "bad_json", notValidJson(e));
        } catch (IOException e) {
            throw new ApiException(400, "bad_json", "the body could not be read: " + e.getMessage());
        }
        if (root == null || root.isMissingNode()) {
            return QueueSettings.EMPTY;
        }
        if (!root.isObject()) {
            throw new ApiException(400, "bad_json", "the body must be a JSON object of queue settings, got " + root.getNodeType());
        }
        QueueSettings.Builder b = QueueSettings.builder();
        for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            JsonNode v = e.getValue();
            try {
                if (v.isIntegralNumber() && v.canConvertToLong()) {
                    b.set(e.getKey(), v.longValue());
                } else if (v.isBoolean()) {
                    b.set(e.getKey(), v.booleanValue());
                } else if (v.isTextual()) {
                    b.set(e.getKey(), v.textValue());
                } else {
                    throw new ApiException(400, "invalid_setting", "queue setting '" + e.getKey() + "' is " + v
                            + "; settings are whole numbers, booleans or strings");
                }
            } catch (IllegalArgumentException tooLarge) {
                // The wire's limits (a string setting's UTF-8 bytes, the number of settings), as a DECLARE frame has them.
                throw new ApiException(400, "invalid_setting", tooLarge.getMessage());
            }
        }
        return b.build();
    }

    /**
     * On a cluster node the admin API changes no queue: it would change this node's store alone
     * (docs/replication.md, "Not built yet"). Clients declare through the leader.
     */
    private void requireSingleNode(String what) {
        if (broker.queues().replication() != null) {
            throw new ApiException(409, "not_replicated", "this broker is a cluster node, and a cluster does not replicate "
                    + what + " from the admin API yet; see docs/replication.md");
        }
    }

    /**
     * On a cluster node the change goes through the shard's log (rule R7 of docs/replication.md), so only the
     * leader takes it; a follower answers 409 {@code not_leader} naming the leader's client listener.
     */
    private Replication requireLeaderIfCluster() {
        Replication replication = broker.queues().replication();
        String notLeader = replication == null ? null : replication.notLeader();
        if (notLeader != null) {
            throw new ApiException(409, "not_leader", "this cluster node does not take changes now: " + notLeader);
        }
        return replication;
    }

    private Map<String, Object> delete(String name) {
        Replication replication = requireLeaderIfCluster();
        if (replication != null) {
            if (!awaitReplicated(replication.delete(name), "delete of queue '" + name + "'")) {
                throw new ApiException(404, "unknown_queue", "queue '" + name + "' does not exist");
            }
            return Map.of("deleted", name);
        }
        if (!onDeclareThread(() -> broker.queues().delete(name))) {
            throw new ApiException(404, "unknown_queue", "queue '" + name + "' does not exist");
        }
        return Map.of("deleted", name);
    }

    private Map<String, Object> purge(String name) {
        Replication replication = requireLeaderIfCluster();
        if (replication != null) {
            return Map.of("queue", name, "purgedMessages", awaitReplicated(replication.purge(queue(name)),
                    "purge of queue '" + name + "'"));
        }
        io.netty.util.concurrent.Future<Long> f = queue(name).purge();
        if (!f.awaitUninterruptibly(QUEUE_WAIT_MS, TimeUnit.MILLISECONDS) || !f.isSuccess()) {
            throw new ApiException(503, "queue_busy", "purge of queue '" + name + "' did not finish within " + QUEUE_WAIT_MS + " ms");
        }
        return Map.of("queue", name, "purgedMessages", f.getNow());
    }

    /** The user a connection runs as ("" anonymous or before its HELLO). */
    private static String userOf(Channel ch) {
        ClientSessionAdapter handler = ch.pipeline().get(ClientSessionAdapter.class);
        return handler == null ? "" : handler.user();
    }

    private List<Object> connections(String user) {
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
            out.add(m);
        }
        return out;
    }

    /** Closes one client connection, telling the client why with a CLOSE frame first. */
    private Map<String, Object> closeConnection(String user, String id) {
        for (Channel ch : broker.connections()) {
            if (ch.id().asShortText().equals(id)) {
                String owner = userOf(ch);
                if (!owner.equals(user) && !authorizer.allowedOnEveryQueue(user, Action.MANAGE)) {
                    authorizer.countDenial();
                    throw new ApiException(403, "access_denied", Authorizer.who(user) + " may not close connection '" + id
                            + "' of " + Authorizer.who(owner) + " (that needs manage on every queue, \"*\")");
                }
                ch.writeAndFlush(new CloseFrame(ErrorCode.NONE, "closed by an administrator"))
                        .addListener(ChannelFutureListener.CLOSE);
                ch.closeFuture().awaitUninterruptibly(QUEUE_WAIT_MS, TimeUnit.MILLISECONDS);
                return Map.of("closed", id);
            }
        }
        throw new ApiException(404, "unknown_connection", "no open connection has id '" + id + "'; see GET /api/connections");
    }

    private List<Object> consumers(String user) {
        List<Object> out = new ArrayList<>();
        for (BrokerQueue q : visibleQueues(user)) {
            for (QueueSnapshot.ConsumerFigures c : snapshot(q).consumers()) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("queue", q.name());
                m.put("connection", c.connection());
                m.put("tag", c.tag());
                m.put("credit", c.credit());
                m.put("unackedMessages", c.unackedMessages());
                out.add(m);
            }
        }
        return out;
    }

    private List<Object> producers(String user) {
        List<Object> out = new ArrayList<>();
        for (BrokerQueue q : visibleQueues(user)) {
            QueueSnapshot s = snapshot(q);
            for (String p : s.producers()) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("connection", p);
                m.put("queue", q.name());
                m.put("flowState", s.flowState().name().toLowerCase());
                out.add(m);
            }
        }
        return out;
    }
}
