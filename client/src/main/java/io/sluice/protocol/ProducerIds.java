package io.sluice.protocol;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.LongSupplier;

/**
 * Producer ids: a named producer's id is derived from its name, the same on every client and broker (the
 * first 8 bytes of the SHA-256 of the name's UTF-8, read big-endian); an unnamed producer's is random. Id 0
 * means "no identity" (never deduplicated), so neither kind is ever 0. {@link #FIRST_RESERVED} to
 * {@link #LAST_RESERVED} are the broker's own (the storage module's {@code ProducerTable.isBrokers}: committed
 * transactions, a cluster's dead-letter copies and log positions), so neither kind is ever one of those either.
 * Stateless.
 */
public final class ProducerIds {
    /** The first of the broker's own producer ids; a PUBLISH under any of them is refused with PRODUCER_FENCED. */
    public static final long FIRST_RESERVED = Long.MIN_VALUE;
    /** The last of the broker's own producer ids. */
    public static final long LAST_RESERVED = Long.MIN_VALUE + 5;

    private ProducerIds() {
    }

    public static long forName(String name) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(name.getBytes(StandardCharsets.UTF_8));
            long id = ByteBuffer.wrap(digest).getLong();
            return id == 0 || isReserved(id) ? 1 : id;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every Java platform", e);
        }
    }

    public static long random() {
        return random(() -> ThreadLocalRandom.current().nextLong());
    }

    /** True for the broker's own producer ids, which no client publishes under. */
    public static boolean isReserved(long id) {
        return id >= FIRST_RESERVED && id <= LAST_RESERVED;
    }

    /** {@link #random()} drawing from {@code source}: tests choose the draws. */
    static long random(LongSupplier source) {
        long id;
        do {
            id = source.getAsLong();
        } while (id == 0 || isReserved(id));
        return id;
    }
}
