package io.sluice.broker.cluster;

/**
 * How far one follower is, as the shard's leader sees it: the last log index it is known to hold
 * ({@code matchIndex}), the next the leader will send it, how many entries of the leader's log it lacks,
 * and how long ago it last answered.
 */
public record FollowerProgress(int nodeId, long matchIndex, long nextIndex, long lagEntries, long lastResponseMs) {
}
