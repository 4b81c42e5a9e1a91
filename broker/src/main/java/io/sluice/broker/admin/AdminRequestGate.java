package io.sluice.broker.admin;

import com.sun.net.httpserver.HttpExchange;
import io.sluice.broker.Broker;
import io.sluice.broker.auth.Authenticator;
import io.sluice.broker.auth.Authorizer;
import io.sluice.broker.config.BrokerConfig;
import io.sluice.broker.config.ScrapeAccess;
import io.sluice.broker.security.LoginBackoff;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.URI;
import java.util.List;

/**
 * What a request to the admin port passes before it is served: its origin (rule A4), its credentials (rule A1),
 * for {@code /metrics} the scrape access (rule A3), and the size of its body. Each refusal is an {@link ApiException}.
 * The per-queue permissions (rule A2) are the endpoints' ({@link QueueEndpoints}, {@link ConnectionEndpoints}).
 *
 * <p>Threads: the HTTP thread serving the request; the state it shares with the other requests, the login
 * backoff and the rejection log, is the broker's ({@link LoginBackoff}) and safe across threads.
 */
final class AdminRequestGate {
    /** Under AdminApi's name, the logger its authentication failures were logged under before the split. */
    private static final Logger LOG = LoggerFactory.getLogger(AdminApi.class);
    /** The largest request body the API reads. */
    static final int MAX_BODY_BYTES = 1 << 20;

    private final Broker broker;
    private final BrokerConfig.Auth auth;
    private final Authenticator authenticator;
    private final Authorizer authorizer;
    private final AdminAnswers answers;

    AdminRequestGate(Broker broker, AdminAnswers answers) {
        this.broker = broker;
        this.answers = answers;
        this.auth = broker.config().auth;
        this.authenticator = new Authenticator(auth);
        this.authorizer = broker.authorizer();
    }

    /** The request's body, refused with 413 past {@link #MAX_BODY_BYTES} (by its Content-Length, or as it is read). */
    static byte[] readBody(HttpExchange exchange) throws IOException {
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
     * Rule A4: a request a browser sends on behalf of a page from another origin (its {@code Origin}
     * header names another host and port than its {@code Host}) is refused, 403 {@code cross_origin},
     * before its credentials are looked at. Without this, any web page could make a browser on the
     * broker's machine purge a queue of an open (anonymous) admin API with a plain form POST. The
     * console is served from this port, so its requests are same-origin; the CLI sends no Origin.
     */
    static void refuseCrossOrigin(HttpExchange exchange) {
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
     * For the metrics endpoint, rule A3: with {@code metrics.scrape-access: open} anyone, though credentials a request
     * sends are checked by rule A1 (a scraper with a wrong password is told so, not served as if it had logged in); with
     * {@code authenticated} rule A1, and then a user with a grant on every queue, since the scrape names
     * every queue. Answers 400, 401 or 403 itself (plain text) and returns false when the request may not proceed.
     */
    boolean admitScrape(HttpExchange exchange) throws IOException {
        try {
            if (broker.config().metrics.scrapeAccess == ScrapeAccess.OPEN) {
                if (exchange.getRequestHeaders().containsKey("Authorization")) {
                    authenticate(exchange);
                }
                return true;
            }
            String user = authenticate(exchange);
            if (!authorizer.allowedOnEveryQueue(user, null)) {
                authorizer.countDenial();
                throw new ApiException(403, "access_denied", Authorizer.who(user) + " may not read /metrics: the scrape shows"
                        + " every queue, so it needs a grant on every queue (queues: \"*\", e.g. actions: [monitor])");
            }
            return true;
        } catch (ApiException e) {
            answers.refuse(exchange, e, true);
            return false;
        }
    }

    /**
     * Rule A1: the user the request runs as ("" for anonymous), or a refusal. A request without an Authorization
     * header runs as anonymous where the API is open (no users, {@code auth.allow-anonymous}) and is told to authenticate
     * elsewhere. A request with one has it checked wherever it is sent, as a HELLO naming a user is checked: credentials
     * that do not authenticate are 401, open API or not (served as anonymous, a script would believe it had logged in),
     * and a header that is no Basic credentials at all is 400 {@code bad_authorization}. Basic credentials are an attempt
     * for {@link LoginBackoff} (a source in backoff gets 429 {@code too_many_failures} with Retry-After) where users are
     * configured; with none there is no password to guess, and a malformed header or another scheme checks none: those
     * are not.
     */
    String authenticate(HttpExchange exchange) {
        List<String> headers = exchange.getRequestHeaders().get("Authorization");
        if (headers == null || headers.isEmpty()) {
            if (!auth.users.isEmpty()) {
                throw new ApiException(401, "unauthorized", "the admin API needs HTTP Basic credentials of a user in auth.users");
            }
            if (!auth.allowAnonymous) {
                throw new ApiException(401, "unauthorized", "the admin API is closed: no users are configured (auth.users)"
                        + " and auth.allow-anonymous is false");
            }
            return "";
        }
        if (headers.size() > 1) {
            throw malformed("the request has " + headers.size() + " Authorization headers; send one");
        }
        BasicCredentials credentials = BasicCredentials.parse(headers.get(0));
        if (auth.users.isEmpty()) {
            // No user exists, so there is no password to guess: refused without counting towards the source's backoff,
            // whose table the anonymous requests and clients of the same address share (a scraper sending credentials
            // would otherwise lock them out).
            Authenticator.Result refused = check(credentials);
            if (!refused.accepted()) {
                broker.rejectionLog().warn(LOG, "Authentication failed for an admin request from {}: {}.",
                        exchange.getRemoteAddress(), refused.rejected());
                throw new ApiException(401, "unauthorized", refused.rejected(), true, 0);
            }
        }
        LoginBackoff.Outcome outcome = broker.loginBackoff().authenticate(exchange.getRemoteAddress(), LoginBackoff.Listener.ADMIN,
                () -> check(credentials));
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

    /** The user of Basic credentials, or why they are refused; checked as a HELLO's, against the users there are (maybe none). */
    private Authenticator.Result check(BasicCredentials credentials) {
        String user = credentials.user();
        return new Authenticator.Result(user, user.isEmpty() ? "a user name is required in the Basic credentials"
                : authenticator.check(user, credentials.password()));
    }

    static ApiException malformed(String problem) {
        return new ApiException(400, "bad_authorization", problem + "; the admin API takes 'Authorization: Basic "
                + "<base64 of user:password>', or no header for anonymous access where it is allowed");
    }
}
