package io.sluice.protocol;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Producer ids: a named producer's id is derived from its name, the same on every client and broker (the
 * first 8 bytes of the SHA-256 of the name's UTF-8, read big-endian); an unnamed producer's is random. Id 0
 * means "no identity" (never deduplicated), so neither kind is ever 0. {@link #RESERVED} is the broker's own
 * (it applies committed transactions under it), so neither kind is ever that either. Stateless.
 */
public final class ProducerIds {
    /** The broker's transaction coordinator's producer id; a PUBLISH under it is refused with PRODUCER_FENCED. */
    public static final long RESERVED = Long.MIN_VALUE;

    private ProducerIds() {
    }

    public static long forName(String name) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(name.getBytes(StandardCharsets.UTF_8));
            long id = ByteBuffer.wrap(digest).getLong();
            return id == 0 || id == RESERVED ? 1 : id;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every Java platform", e);
        }
    }

    public static long random() {
        long id;
        do {
            id = ThreadLocalRandom.current().nextLong();
        } while (id == 0 || id == RESERVED);
        return id;
    }
}
