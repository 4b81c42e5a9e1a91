package io.sluice.broker.error;

import io.sluice.broker.queue.NamedProducersExhaustedException;
import io.sluice.protocol.ErrorCode;
import io.sluice.storage.InvalidQueueNameException;
import io.sluice.storage.MessageTooLargeException;
import io.sluice.storage.QueueNotFoundException;
import io.sluice.storage.StorageFailedException;
import io.sluice.storage.StorageFilesExhaustedException;
import io.sluice.storage.StorageFullException;
import io.sluice.storage.dedup.ProducerEpochsExhaustedException;

import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * The one place a failure becomes a wire error code (and, through {@link #httpStatus}, an admin API
 * status): by its type, never by the text of its message. Anything not known here is
 * INTERNAL_ERROR, which the caller logs and answers without details.
 */
public final class ErrorCodes {
    private ErrorCodes() {
    }

    public static ErrorCode of(Throwable failure) {
        Throwable e = unwrap(failure);
        if (e instanceof BrokerException b) {
            return b.code();
        }
        if (e instanceof InvalidQueueNameException) {
            return ErrorCode.INVALID_QUEUE_NAME;
        }
        if (e instanceof QueueNotFoundException) {
            return ErrorCode.UNKNOWN_QUEUE;
        }
        if (e instanceof MessageTooLargeException) {
            return ErrorCode.MESSAGE_TOO_LARGE;
        }
        if (e instanceof StorageFullException) {
            return ErrorCode.STORAGE_FULL;
        }
        if (e instanceof StorageFailedException) {
            return ErrorCode.STORAGE_FAILED;
        }
        if (e instanceof ProducerEpochsExhaustedException) {
            return ErrorCode.RESOURCE_LIMIT; // the queue's producer epochs, not the broker: the client is told why
        }
        if (e instanceof NamedProducersExhaustedException) {
            return ErrorCode.RESOURCE_LIMIT; // this queue's named producers on open connections: the client is told why
        }
        if (e instanceof StorageFilesExhaustedException) {
            return ErrorCode.RESOURCE_LIMIT; // out of file descriptors: this queue cannot open a file now; the others go on
        }
        return ErrorCode.INTERNAL_ERROR;
    }

    /** The failure itself, without the wrappers of futures. */
    public static Throwable unwrap(Throwable failure) {
        Throwable e = failure;
        while ((e instanceof CompletionException || e instanceof ExecutionException) && e.getCause() != null) {
            e = e.getCause();
        }
        return e;
    }

    /** The admin API's status for a code. */
    public static int httpStatus(ErrorCode code) {
        return switch (code) {
            case UNKNOWN_QUEUE -> 404;
            case QUEUE_EXISTS_WITH_DIFFERENT_SETTINGS, QUEUE_BEING_DELETED, NOT_LEADER -> 409;
            case INVALID_QUEUE_NAME, INVALID_QUEUE_SETTING, MESSAGE_TOO_LARGE -> 400;
            case ACCESS_DENIED -> 403;
            case AUTHENTICATION_FAILED -> 401;
            case RESOURCE_LIMIT -> 429;
            case STORAGE_FULL, STORAGE_FAILED, QUEUE_BLOCKED -> 503;
            default -> 500;
        };
    }

    /** The admin API's error name for a code: the code's name in lower case ({@code invalid_setting} as it always was). */
    public static String httpName(ErrorCode code) {
        return code == ErrorCode.INVALID_QUEUE_SETTING ? "invalid_setting" : code.name().toLowerCase(java.util.Locale.ROOT);
    }
}
