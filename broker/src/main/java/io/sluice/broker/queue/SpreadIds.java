package io.sluice.broker.queue;

/**
 * Message ids as keys of Netty's {@code LongObjectHashMap}: that map hashes a long to its low bits and
 * probes linearly, so the consecutive ids a queue delivers fill one contiguous run of slots, and each
 * removal shifts the rest of the run back (a profile of W1 showed {@code removeAt} at 12 % of the broker).
 * Keys are stored spread by MurmurHash3's 64-bit finaliser instead: a bijection, so distinct ids stay
 * distinct keys, and {@link #unspread} gives the id back.
 */
final class SpreadIds {
    private SpreadIds() {
    }

    static long spread(long id) {
        long h = id;
        h ^= h >>> 33;
        h *= 0xff51afd7ed558ccdL;
        h ^= h >>> 33;
        h *= 0xc4ceb9fe1a85ec53L;
        h ^= h >>> 33;
        return h;
    }

    /** The inverse of {@link #spread}. */
    static long unspread(long key) {
        long h = key;
        h ^= h >>> 33;
        h *= 0x9cb4b2f8129337dbL; // inverse of 0xc4ceb9fe1a85ec53 modulo 2^64
        h ^= h >>> 33;
        h *= 0x4f74430c22a54005L; // inverse of 0xff51afd7ed558ccd modulo 2^64
        h ^= h >>> 33;
        return h;
    }
}
