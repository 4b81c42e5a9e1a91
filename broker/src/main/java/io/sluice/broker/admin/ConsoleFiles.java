package io.sluice.broker.admin;

import com.sun.net.httpserver.HttpExchange;

import java.io.IOException;
import java.io.InputStream;
import java.util.Map;

/**
 * The web console's static files, from the broker jar ({@code io/sluice/broker/console/}): an HTML
 * page, its script and its style sheet, served under {@code /console/}; {@code /} redirects there.
 * The files hold no data and need no credentials; everything the console shows it fetches from the
 * admin API ({@link AdminApi}), which authenticates and applies the per-queue permissions.
 *
 * <p>Only the files named in {@link #FILES} are served, so no path can reach another resource. Each
 * answer forbids framing (a page of another site cannot overlay the purge button) and, through its
 * content security policy, any script, style or connection not from this port.
 *
 * <p>Threads: the admin server's HTTP threads; stateless.
 */
final class ConsoleFiles {
    static final String PATH = "/console/";
    private static final String RESOURCES = "/io/sluice/broker/console/";
    private static final Map<String, String> FILES = Map.of(
            "index.html", "text/html; charset=utf-8",
            "console.js", "text/javascript; charset=utf-8",
            "console.css", "text/css; charset=utf-8");

    private ConsoleFiles() {
    }

    static void handle(HttpExchange exchange) throws IOException {
        // No request here has a use for a body, so none is read: reading it whole let anyone reaching the port, without
        // credentials, make the broker hold a body of any size. Unread, the JDK's server throws away at most
        // AdminServer.DRAIN_BYTES of it after the answer and closes the connection if more was announced.
        String path = exchange.getRequestURI().getRawPath();
        if (!AdminServer.reads(exchange)) {
            AdminServer.refuseMethod(exchange, AdminServer.GET_OR_HEAD);
            return;
        }
        if (path.equals("/") || path.equals("/console")) {
            exchange.getResponseHeaders().set("Location", PATH);
            AdminServer.send(exchange, 302, new byte[0]);
            return;
        }
        String name = path.startsWith(PATH) ? path.substring(PATH.length()) : null;
        if (name != null && name.isEmpty()) {
            name = "index.html";
        }
        String type = name == null ? null : FILES.get(name);
        if (type == null) {
            AdminServer.respond(exchange, 404, "text/plain; charset=utf-8", "nothing at " + path
                    + "; the console is at " + PATH + ", the admin API under /api/\n");
            return;
        }
        byte[] bytes;
        try (InputStream in = ConsoleFiles.class.getResourceAsStream(RESOURCES + name)) {
            if (in == null) {
                AdminServer.respond(exchange, 500, "text/plain; charset=utf-8", "the console file " + name
                        + " is missing from the broker jar\n");
                return;
            }
            bytes = in.readAllBytes();
        }
        exchange.getResponseHeaders().set("Content-Type", type);
        exchange.getResponseHeaders().set("Cache-Control", "no-cache");
        exchange.getResponseHeaders().set("X-Content-Type-Options", "nosniff");
        exchange.getResponseHeaders().set("X-Frame-Options", "DENY");
        exchange.getResponseHeaders().set("Content-Security-Policy",
                "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'");
        exchange.getResponseHeaders().set("Referrer-Policy", "no-referrer");
        AdminServer.send(exchange, 200, bytes);
    }
}
