package io.sluice.broker.admin;

import com.sun.net.httpserver.HttpExchange;
import io.sluice.broker.Broker;

import java.io.IOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;

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
 * Each path that takes GET takes HEAD, answered as GET without the body. Errors are {@code {"error": code, "message":
 * sentence}}: 400 bad JSON, setting or Authorization header, 401 credentials, 403 permission, 404 unknown queue or path,
 * 405 method (with an {@code Allow} header listing the path's methods), 409 queue exists with other settings.
 *
 * <p>Access (A1): with users configured ({@code auth.users}), every request needs HTTP Basic
 * credentials that {@link Authenticator#check} accepts; with none, the API is open while
 * {@code auth.allow-anonymous} is true and closed otherwise, and requests run as anonymous
 * ({@code auth.anonymous-permissions}). Credentials a request sends are checked even where the API is open: 401 if
 * they do not authenticate, 400 {@code bad_authorization} if the header is malformed ({@link BasicCredentials}).
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
 * {@code cross_origin} before anything else ({@link AdminRequestGate#refuseCrossOrigin}).
 *
 * <p>Each queue carries its rates, messages per second over the last {@link QueueRates#INTERVAL_MS}
 * ({@link QueueRates}), and the age of its oldest unacknowledged and oldest ready message.
 *
 * <p>This class admits a request and routes it; the work is done by {@link AdminRequestGate} (origin, credentials,
 * body size), {@link QueueEndpoints}, {@link ConnectionEndpoints}, {@link ClusterAdmin} (the resources) and
 * {@link AdminAnswers} (the JSON answers and errors).
 *
 * <p>Threads: the port's HTTP threads ({@link AdminServer}), one request each, several at once; nothing here
 * changes after construction.
 */
final class AdminApi {
    private final AdminAnswers answers;
    private final AdminRequestGate gate;
    private final QueueEndpoints queues;
    private final ConnectionEndpoints connections;
    private final ClusterAdmin clusterAdmin;

    AdminApi(Broker broker, ScheduledExecutorService delayedAnswers, Executor httpThreads, QueueRates rates) {
        AdminJson json = new AdminJson();
        this.answers = new AdminAnswers(json, delayedAnswers, httpThreads);
        this.gate = new AdminRequestGate(broker, answers);
        this.queues = new QueueEndpoints(broker, json, rates);
        this.connections = new ConnectionEndpoints(broker);
        this.clusterAdmin = new ClusterAdmin(broker::cluster, broker.authorizer(), json);
    }

    void handle(HttpExchange exchange) throws IOException {
        try {
            // Headers first: nobody refused makes the broker read, or hold, a body (AdminServer's rule on slow requests).
            AdminRequestGate.refuseCrossOrigin(exchange);
            String user = gate.authenticate(exchange);
            refuseQuery(exchange.getRequestURI().getRawQuery());
            byte[] body = AdminRequestGate.readBody(exchange);
            Object result = route(user, exchange.getRequestMethod(), exchange.getRequestURI().getRawPath(), body);
            answers.ok(exchange, result);
        } catch (ApiException e) {
            answers.refuse(exchange, e, false);
        } catch (RuntimeException e) {
            answers.error(exchange, 500, "internal_error", "the request failed: " + e);
        }
    }

    /** For the metrics endpoint, rule A3 ({@link AdminRequestGate#admitScrape}). */
    boolean admitScrape(HttpExchange exchange) throws IOException {
        return gate.admitScrape(exchange);
    }

    /**
     * No request takes a query parameter; one ignored would have a request do more than it asked ({@code DELETE
     * ...?if-empty=true} deleting a queue that holds messages), so any is refused, as an unknown JSON key is.
     */
    private static void refuseQuery(String rawQuery) {
        if (rawQuery == null || rawQuery.isEmpty()) {
            return;
        }
        String first = rawQuery.split("&", 2)[0].split("=", 2)[0];
        String name;
        try {
            name = URLDecoder.decode(first, StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            name = first;
        }
        throw new ApiException(400, "bad_request", "the admin API takes no query parameters, and '" + name + "' is one;"
                + " a queue's settings go in the JSON body of its PUT");
    }

    private Object route(String user, String method, String rawPath, byte[] body) {
        Route at = new Route(method, rawPath);
        List<String> parts = new ArrayList<>();
        String[] segments = rawPath.split("/", -1);
        // segments[0] is the empty text before the first '/'; an empty one after it (a trailing or doubled '/') names nothing
        for (int i = 1; i < segments.length; i++) {
            if (segments[i].isEmpty()) {
                throw notFound(method, rawPath);
            }
            parts.add(decodeSegment(segments[i]));
        }
        // parts[0] is "api"
        String resource = parts.size() > 1 ? parts.get(1) : "";
        switch (resource) {
            case "queues" -> {
                if (parts.size() == 2) {
                    at.take("GET");
                    return queues.list(user);
                }
                String name = parts.get(2);
                if (parts.size() == 4 && parts.get(3).equals("purge")) {
                    at.take("POST");
                    return queues.purge(user, name);
                }
                if (parts.size() == 4 && parts.get(3).equals("digest")) {
                    at.take("GET");
                    return queues.digest(user, name);
                }
                if (parts.size() != 3) {
                    break;
                }
                return switch (at.take("GET", "PUT", "DELETE")) {
                    case "GET" -> queues.describe(user, name);
                    case "PUT" -> queues.declare(user, name, body);
                    default -> queues.delete(user, name);
                };
            }
            case "cluster" -> {
                if (parts.size() == 2) {
                    at.take("GET");
                    return clusterAdmin.status();
                }
                if (parts.size() == 3 && parts.get(2).equals("leader")) {
                    at.take("POST");
                    return clusterAdmin.transferLeader(user, body);
                }
                if (parts.size() == 3 && parts.get(2).equals("feature-level")) {
                    at.take("POST");
                    return clusterAdmin.raiseEntryLevel(user, body);
                }
                if (parts.size() == 3 && parts.get(2).equals("nodes")) {
                    at.take("POST");
                    return clusterAdmin.addNode(user, body);
                }
                if (parts.size() == 4 && parts.get(2).equals("nodes")) {
                    at.take("DELETE");
                    return clusterAdmin.removeNode(user, parts.get(3));
                }
            }
            case "connections" -> {
                if (parts.size() == 3) {
                    at.take("DELETE");
                    return connections.close(user, parts.get(2));
                }
                if (parts.size() == 2) {
                    at.take("GET");
                    return connections.list(user);
                }
            }
            case "consumers" -> {
                if (parts.size() == 2) {
                    at.take("GET");
                    return queues.consumers(user);
                }
            }
            case "producers" -> {
                if (parts.size() == 2) {
                    at.take("GET");
                    return queues.producers(user);
                }
            }
            default -> {
            }
        }
        throw notFound(method, rawPath);
    }

    private static ApiException notFound(String method, String rawPath) {
        return new ApiException(404, "not_found", "no API at " + method + " " + rawPath
                + "; see /api/queues, /api/connections, /api/consumers, /api/producers, /api/cluster, /api/cluster/leader, "
                + "/api/cluster/feature-level, /api/cluster/nodes");
    }

    /**
     * A path segment percent-decoded as a URI's path is: a '+' stays a '+' (URLDecoder decodes a form, where it is a
     * space, and the API then spoke of a queue 'a b' that nobody named); a malformed escape is 400 {@code bad_path}, not a
     * 500. The JDK's server answers a request line with a malformed escape itself, before any handler (docs/operations.md).
     */
    private static String decodeSegment(String segment) {
        try {
            return URLDecoder.decode(segment.replace("+", "%2B"), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            throw new ApiException(400, "bad_path", "the path segment '" + segment + "' has a malformed percent-escape;"
                    + " write % and two hex digits");
        }
    }

    /**
     * A request's method at the path it names. HEAD is GET without the body ({@link AdminServer#send} leaves the body
     * out), so a path that takes GET takes HEAD, routed as GET; a 405 lists what the path takes in its {@code Allow}.
     */
    private record Route(String method, String rawPath) {
        /** The method to serve the request as, one of {@code methods}; else 405 naming them all. */
        String take(String... methods) {
            String served = method.equals("HEAD") ? "GET" : method;
            if (List.of(methods).contains(served)) {
                return served;
            }
            List<String> allow = new ArrayList<>();
            for (String m : methods) {
                allow.add(m);
                if (m.equals("GET")) {
                    allow.add("HEAD");
                }
            }
            throw ApiException.methodNotAllowed(method, rawPath, String.join(", ", allow));
        }
    }
}
