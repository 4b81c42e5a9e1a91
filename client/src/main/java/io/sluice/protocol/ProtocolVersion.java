package io.sluice.protocol;

/**
 * The protocol versions this codec speaks.
 *
 * <p>The client offers a range [min, max] in HELLO; the broker picks the highest version inside both its own
 * range and the client's, or closes with UNSUPPORTED_VERSION. Every frame layout in this package is the
 * layout of {@link #CURRENT}.
 */
public final class ProtocolVersion {
    /** The oldest version this codec can decode. */
    public static final int MIN = 1;
    /** The newest version this codec can decode, and the one it encodes. */
    public static final int CURRENT = 1;

    private ProtocolVersion() {
    }

    /**
     * Picks the highest version both ranges contain, or returns -1 when they do not overlap.
     */
    public static int negotiate(int peerMin, int peerMax, int localMin, int localMax) {
        int highest = Math.min(peerMax, localMax);
        int lowest = Math.max(peerMin, localMin);
        return highest >= lowest ? highest : -1;
    }
}
