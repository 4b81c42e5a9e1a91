package io.sluice.broker.admin;

/**
 * A failed admin request: its HTTP status, stable error code and sentence; for refused credentials, also
 * that the answer is delayed and, in backoff, when the source may try again. {@link AdminAnswers} writes it.
 *
 * <p>Threads: made and caught on the HTTP thread serving the request; a refusal of credentials is then
 * answered on another HTTP thread ({@link AdminAnswers#refuse}), and is not changed after it is thrown.
 */
final class ApiException extends RuntimeException {
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
