package io.sluice.broker.cluster;

/**
 * How far one follower is, as the shard's leader sees it: the last log index it is known to hold
 * ({@code matchIndex}), the next the leader will send it, how many entries of the leader's log it lacks,
 * and how long ago it last answered.
 */
public record FollowerProgress(int nodeId, long matchIndex, long nextIndex, long lagEntries, long lastResponseMs) {

    /** The row {@code GET /api/cluster} shows for this follower. */
    java.util.Map<String, Object> toMap() {
        java.util.Map<String, Object> m = new java.util.LinkedHashMap<>();
        m.put("nodeId", nodeId);
        m.put("matchIndex", matchIndex);
        m.put("nextIndex", nextIndex);
        m.put("lagEntries", lagEntries);
        m.put("lastResponseMs", lastResponseMs);
        return m;
    }
}
