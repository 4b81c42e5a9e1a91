package io.sluice.broker.admin;

/**
 * A failed admin request: its HTTP status, stable error code and sentence; for refused credentials, also
 * that the answer is delayed and, in backoff, when the source may try again; for a 405, the methods the path takes.
 * {@link AdminAnswers} writes it.
 *
 * <p>Threads: made and caught on the HTTP thread serving the request; a refusal of credentials is then
 * answered on another HTTP thread ({@link AdminAnswers#refuse}), and is not changed after it is thrown.
 */
final class ApiException extends RuntimeException {
    final int status;
    final String code;
    final boolean refusedCredentials;
    final long retryAfterMs;
    /** For a 405, the methods the path takes, as its {@code Allow} header lists them; else null. */
    final String allow;

    ApiException(int status, String code, String message) {
        this(status, code, message, false, 0);
    }

    ApiException(int status, String code, String message, boolean refusedCredentials, long retryAfterMs) {
        this(status, code, message, refusedCredentials, retryAfterMs, null);
    }

    private ApiException(int status, String code, String message, boolean refusedCredentials, long retryAfterMs, String allow) {
        super(message);
        this.status = status;
        this.code = code;
        this.refusedCredentials = refusedCredentials;
        this.retryAfterMs = retryAfterMs;
        this.allow = allow;
    }

    /** 405 {@code method_not_allowed} for {@code method} at {@code rawPath}, which takes the methods {@code allow} lists. */
    static ApiException methodNotAllowed(String method, String rawPath, String allow) {
        return new ApiException(405, "method_not_allowed", "method " + method + " is not supported at " + rawPath + "; use "
                + allow.replace(", ", " or "), false, 0, allow);
    }
}
