package io.sluice.broker.admin;

import com.sun.net.httpserver.HttpExchange;
import io.sluice.broker.security.LoginBackoff;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Writes the admin API's answers: a result as JSON, a failure ({@link ApiException}) as
 * {@code {"error": code, "message": sentence}} or, for {@code /metrics}, as plain text; refused credentials
 * {@link LoginBackoff#REFUSAL_DELAY_MS} later.
 *
 * <p>Threads: called on the HTTP thread serving the request. A refusal of credentials is timed on the port's
 * scheduler thread, which only waits and hands the write to an HTTP thread ({@link #refuse}).
 */
final class AdminAnswers {
    static final String JSON = "application/json; charset=utf-8";
    /** Sent by the web console with each request; its 401s then carry no Basic challenge. */
    static final String CONSOLE_HEADER = "X-Sluice-Console";

    private final AdminJson json;
    /** Answers refused credentials after {@link LoginBackoff#REFUSAL_DELAY_MS}, so no HTTP thread waits. */
    private final ScheduledExecutorService delayedAnswers;
    /** The HTTP threads, which write those delayed answers (see {@link #refuse}). */
    private final Executor httpThreads;

    AdminAnswers(AdminJson json, ScheduledExecutorService delayedAnswers, Executor httpThreads) {
        this.json = json;
        this.delayedAnswers = delayedAnswers;
        this.httpThreads = httpThreads;
    }

    /** 200 with the result as JSON. */
    void ok(HttpExchange exchange, Object result) throws IOException {
        AdminServer.respond(exchange, 200, JSON, json.write(result) + "\n");
    }

    /**
     * Answers a failed request, as JSON or (for {@code /metrics}) plain text; refused credentials
     * {@link LoginBackoff#REFUSAL_DELAY_MS} later, from the scheduler.
     */
    void refuse(HttpExchange exchange, ApiException e, boolean plainText) throws IOException {
        if (e.status == 401) {
            // The console asks for credentials with its own form; a Basic challenge would make the
            // browser ask again with its own prompt, and then send those credentials by itself.
            boolean console = exchange.getRequestHeaders().containsKey(CONSOLE_HEADER);
            exchange.getResponseHeaders().set("WWW-Authenticate", (console ? "SluiceConsole" : "Basic") + " realm=\"sluice\"");
        }
        if (e.allow != null) {
            exchange.getResponseHeaders().set("Allow", e.allow);
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
        // AdminServer.DRAIN_BYTES) until the request's time is up (10 s). On the scheduler's one thread that held every other refusal
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

    void error(HttpExchange exchange, int status, String code, String message) throws IOException {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("error", code);
        body.put("message", message);
        AdminServer.respond(exchange, status, JSON, json.write(body) + "\n");
    }
}
