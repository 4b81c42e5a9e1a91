package io.sluice.protocol;

/**
 * The reason text of a CLOSE or ERROR with {@link ErrorCode#NOT_LEADER}: which node of the cluster is the
 * leader, in a form both ends read (docs/protocol.md, "Clusters"). The reason starts with the token
 * {@code leader=<host>:<port>} (the leader's client listener), or {@code leader=?} while no leader is
 * known, then a space and a sentence for people:
 *
 * <pre>
 * leader=127.0.0.1:7682 node 2 is a follower; the leader is node 1
 * leader=? node 2 is a follower and knows no leader yet (an election is running)
 * </pre>
 *
 * Only this one code gives its reason a layout; every other reason is free text.
 */
public final class LeaderHint {
    private static final String PREFIX = "leader=";
    private static final String UNKNOWN = "?";

    private LeaderHint() {
    }

    /** The reason for a NOT_LEADER: {@code leaderAddress} (host:port) may be null when no leader is known. */
    public static String format(String leaderAddress, String sentence) {
        return PREFIX + (leaderAddress == null ? UNKNOWN : leaderAddress) + " " + sentence;
    }

    /** The leader's host:port that a NOT_LEADER reason names, or null if it names none or is not of this form. */
    public static String leaderAddress(String reason) {
        if (reason == null || !reason.startsWith(PREFIX)) {
            return null;
        }
        int end = reason.indexOf(' ');
        String address = reason.substring(PREFIX.length(), end < 0 ? reason.length() : end);
        int colon = address.lastIndexOf(':');
        if (address.equals(UNKNOWN) || colon <= 0 || colon == address.length() - 1) {
            return null;
        }
        for (int i = colon + 1; i < address.length(); i++) {
            if (!Character.isDigit(address.charAt(i))) {
                return null;
            }
        }
        return address;
    }
}
