package io.sluice.broker.cluster;

import java.nio.ByteBuffer;

/**
 * Entry format levels (docs/replication.md, rule R12): which log entry formats a broker reads, and which the leader may
 * write. Each {@link ShardEntry} version needs the level of the same number:
 *
 * <pre>
 * level 1  plain frames (ShardEntry version 1: DECLARE_QUEUE, DELETE_QUEUE, PUBLISH, ACK, PRODUCER_INIT)
 * level 2  dead-letters (version 2, rule R8)
 * level 3  deliveries (version 3, rule R10)
 * level 4  publishes with the producers' epochs (version 4, rule R11)
 * level 5  batches of entries (EntryBatch, version 5)
 * level 6  transactions (TransactionEntry, version 7, rule R13)
 * level 7  the cluster's settings that every node must share (ClusterSettings, version 8, rule R2)
 * level 8  a PUBLISH's epochs may say a leader that lost its epoch marks admitted a producer unchecked
 *          (ProducerEpochs.ADMITTED_WITHOUT_EPOCH in version 4, rule R11): no new version, a new meaning
 * </pre>
 *
 * The cluster's level is itself replicated: a level entry (version {@value #LEVEL_ENTRY_VERSION}, which any level may
 * carry) finalizes it, and the leader writes only formats at or below it ({@link FinalizedEntryLevel}):
 *
 * <pre>
 * | uint8 version (6) | int32 originNode | int64 originCall | uint8 level |
 * </pre>
 *
 * A broker supports every level up to {@link #SUPPORTED}. A node that meets an entry needing a level above that (or of a
 * version it does not know at all: a newer broker's) must not skip it, as brokers before levels did: every other node
 * applies it, so skipping it would leave this node's queues different from theirs. {@link EntryTooNew} says so, and the
 * state machine stops applying the log (ShardStateMachine) until the node runs a broker that supports the level.
 *
 * <p>Threads: constants and pure functions; thread-safe.
 */
final class EntryLevels {
    /** The newest level a broker of this version reads and writes. */
    static final int NEWEST = 8;
    /**
     * The level of a cluster whose log holds no level entry but does hold others: its brokers predate levels, and they
     * wrote every format through batches, so the leader goes on writing them.
     */
    static final int BEFORE_LEVELS = 5;
    /** The version of a level entry: it changes no queue, so brokers before levels skip it harmlessly. */
    static final int LEVEL_ENTRY_VERSION = 6;
    private static final int LEVEL_ENTRY_BYTES = 1 + Integer.BYTES + Long.BYTES + 1;
    /**
     * The level this broker supports: {@link #NEWEST}, or lower with the test knob {@code -Dsluice.cluster.max-entry-level=N}
     * (1 to {@value #NEWEST}), which makes a node behave as a broker of an older version would (tests of a rolling upgrade).
     */
    static final int SUPPORTED = supportedFromKnob(System.getProperty("sluice.cluster.max-entry-level"));

    private EntryLevels() {
    }

    static int supportedFromKnob(String knob) {
        if (knob == null || knob.isBlank()) {
            return NEWEST;
        }
        int level;
        try {
            level = Integer.parseInt(knob.trim());
        } catch (NumberFormatException e) {
            level = -1;
        }
        if (level < 1 || level > NEWEST) {
            throw new IllegalArgumentException("sluice.cluster.max-entry-level is '" + knob + "'; it must be a level from 1 to " + NEWEST);
        }
        return level;
    }

    /** The level a Raft entry whose first byte is {@code version} needs; {@link Integer#MAX_VALUE} for a version this broker does not know. */
    static int required(int version) {
        if (version == LEVEL_ENTRY_VERSION) {
            return 1;
        }
        if (version == TransactionEntry.VERSION) {
            return TransactionEntry.LEVEL;
        }
        if (version == ClusterSettings.VERSION) {
            return ClusterSettings.LEVEL;
        }
        return version >= ShardEntry.VERSION && version <= EntryBatch.VERSION ? version : Integer.MAX_VALUE;
    }

    /** A level entry: node {@code originNode}'s call {@code originCall} finalizes entry level {@code level}. */
    record LevelEntry(int originNode, long originCall, int level) {
    }

    static boolean isLevelEntry(byte[] data) {
        return data.length > 0 && (data[0] & 0xff) == LEVEL_ENTRY_VERSION;
    }

    static byte[] encodeLevelEntry(int originNode, long originCall, int level) {
        if (level < 1 || level > 255) {
            throw new IllegalArgumentException("entry level " + level + " does not fit a level entry (1 to 255)");
        }
        return ByteBuffer.allocate(LEVEL_ENTRY_BYTES).put((byte) LEVEL_ENTRY_VERSION).putInt(originNode).putLong(originCall)
                .put((byte) level).array();
    }

    /** @throws IllegalArgumentException a damaged level entry (every node skips it alike) */
    static LevelEntry decodeLevelEntry(byte[] data) {
        if (data.length != LEVEL_ENTRY_BYTES || !isLevelEntry(data) || data[LEVEL_ENTRY_BYTES - 1] == 0) {
            throw new IllegalArgumentException("a level entry of " + data.length + " bytes is damaged (" + LEVEL_ENTRY_BYTES
                    + " bytes, a level of at least 1)");
        }
        ByteBuffer in = ByteBuffer.wrap(data, 1, LEVEL_ENTRY_BYTES - 1);
        return new LevelEntry(in.getInt(), in.getLong(), in.get() & 0xff);
    }

    /**
     * Checks that a node supporting {@code supported} can apply the Raft entry {@code data} at {@code index}, a batch's
     * entries included, before any of it is applied.
     *
     * @throws EntryTooNew if it holds an entry of a level above {@code supported}
     */
    static void check(byte[] data, long index, int supported) {
        if (data.length == 0) {
            return; // damaged: skipped alike by every node
        }
        int version = data[0] & 0xff;
        if (required(version) > supported) {
            throw new EntryTooNew(index, version, supported);
        }
        if (version == EntryBatch.VERSION) {
            for (byte[] entry : EntryBatch.entriesOrEmpty(data)) {
                int inner = entry[0] & 0xff;
                if (required(inner) > supported) {
                    throw new EntryTooNew(index, inner, supported);
                }
            }
        }
    }

    /** A log entry this node cannot apply without diverging from the nodes that can: it must stop, not skip it. */
    static final class EntryTooNew extends RuntimeException {
        private final int version;

        EntryTooNew(long index, int version, int supported) {
            this("log entry " + index + " holds a shard entry of format version " + version + ", which needs entry level "
                    + (required(version) == Integer.MAX_VALUE ? "above " + NEWEST + " (a newer broker's)" : required(version)),
                    version, supported);
        }

        /** A level entry at {@code index} finalizing {@code level}. */
        static EntryTooNew finalizing(long index, int level, int supported) {
            return new EntryTooNew("log entry " + index + " finalizes entry level " + level, LEVEL_ENTRY_VERSION, supported);
        }

        /** A snapshot through {@code index}, not swapped in yet, holds {@code level}. */
        static EntryTooNew inSnapshot(long index, int level, int supported) {
            return new EntryTooNew("the snapshot through log entry " + index + " holds entry level " + level, LEVEL_ENTRY_VERSION,
                    supported);
        }

        /** At start: this node's data says the cluster finalized {@code level}, kept in {@code file}. */
        static EntryTooNew atStart(java.nio.file.Path file, int level, int supported) {
            return new EntryTooNew("this node's data (" + file + ") says the cluster finalized entry level " + level,
                    LEVEL_ENTRY_VERSION, supported);
        }

        private EntryTooNew(String what, int version, int supported) {
            super(what + "; this broker supports entry levels up to " + supported + ". This node stops applying the log rather "
                    + "than skip it and hold different queues from the other nodes: upgrade this node's broker and start it "
                    + "again, and it catches up from the log");
            this.version = version;
        }

        int version() {
            return version;
        }
    }
}
