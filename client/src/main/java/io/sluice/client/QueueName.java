package io.sluice.client;

import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * A queue name and its UTF-8 length, checked against the wire's limit for a string (docs/protocol.md, "Primitive
 * types": a uint16 length). Checked on the calling thread: a frame built on the network thread with a longer name
 * throws there, where nobody waits for the exception.
 */
record QueueName(String queue, int utf8Bytes) {
    /** The most UTF-8 bytes a string on the wire holds. */
    static final int MAX_UTF8_BYTES = 0xFFFF;

    /**
     * @throws NullPointerException     {@code queue} is null
     * @throws IllegalArgumentException its UTF-8 form is longer than the wire carries
     */
    static QueueName of(String queue) {
        int bytes = Objects.requireNonNull(queue, "queue").getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_UTF8_BYTES) {
            throw new IllegalArgumentException("queue name is " + bytes + " UTF-8 bytes, above the limit of " + MAX_UTF8_BYTES);
        }
        return new QueueName(queue, bytes);
    }
}
