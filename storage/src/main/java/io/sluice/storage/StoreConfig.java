package io.sluice.storage;

import java.util.ArrayList;
import java.util.List;

/**
 * Validated, immutable settings of a {@link MessageStore}. Build with {@link #builder()}; every
 * field is checked at {@link Builder#build()}, and all failures are reported together.
 *
 * @param durability           when an append counts as stored (see {@link DurabilityMode})
 * @param syncIntervalMs       how often {@link DurabilityMode#INTERVAL} forces segments, and how often ack
 *                             journals are forced in every mode
 * @param segmentBytes         a segment is sealed and a new one started once it holds this many bytes of
 *                             records; the trade-off is documented in docs/storage.md
 * @param maxMessageBytes      the largest headers plus payload accepted by an append
 * @param reservedDiskBytes    appends are refused once free disk space falls below this, so that acks,
 *                             reclaim and relocation can still write, and so that a store into a
 *                             memory-mapped page never meets a full disk (which would be a SIGBUS)
 * @param ackJournalBytes      capacity of a queue's ack journal before it is folded into a checkpoint
 * @param relocateMaxLiveRatio a sealed segment whose share of unacknowledged messages is at most this
 *                             has its stragglers moved forward so that it can be deleted (0 disables)
 * @param relocateMaxLiveMessages and at most this many live messages in absolute terms
 * @param relocateAfterMs      and only once it has been sealed this long, so that the messages merely in
 *                             flight at the roll are acknowledged rather than copied
 * @param readAheadMessages    how far (in messages) the read-ahead thread touches a reader's coming
 *                             records, so that a consumer catching up on a cold backlog finds them in
 *                             the page cache instead of faulting on the broker's event loop (0 disables)
 * @param exactRollPoint       at open, count the write segment's bytes record by record, as an append counts them, so
 *                             that it is sealed where it would have been had the store kept running (one pass over
 *                             at most one segment): a cluster node needs it, since every node must give a message the
 *                             same id; a broker of its own does not (its relocation moves ids anyway)
 */
public record StoreConfig(
        DurabilityMode durability,
        long syncIntervalMs,
        long segmentBytes,
        int maxMessageBytes,
        long reservedDiskBytes,
        int ackJournalBytes,
        double relocateMaxLiveRatio,
        int relocateMaxLiveMessages,
        long relocateAfterMs,
        int readAheadMessages,
        boolean exactRollPoint) {

    public static final long MIN_SEGMENT_BYTES = 1L << 20;
    public static final long MAX_SEGMENT_BYTES = 1L << 30;
    /** Chronicle's block (its mapping chunk) at least, when the segment is as large. */
    public static final long CHRONICLE_BLOCK_BYTES = 16L << 20;
    /** The default {@code maxMessageBytes}; the block holds a message of it whatever a node's own setting (below). */
    public static final int DEFAULT_MAX_MESSAGE_BYTES = 4 << 20;
    /** Chronicle's own header before each document. */
    static final int CHRONICLE_DOCUMENT_HEADER_BYTES = 4;

    /**
     * Chronicle's block: the chunk it maps and grows a segment file by. Chronicle writes a document within one overlap of
     * the block (a quarter of it) and refuses a longer one, so the block holds four of the largest record this store may
     * write: {@code maxMessageBytes} plus the headers the broker adds to a copy it forwards
     * ({@link QueueStore#HEADER_HEADROOM_BYTES}), the record's header and Chronicle's, rounded up to a whole MiB, and
     * never less than {@link #CHRONICLE_BLOCK_BYTES} when the segment is as large. The message it is sized for is never
     * below the default {@code maxMessageBytes} (or a quarter of a smaller segment), so that a cluster node configured
     * lower still holds what a leader with the defaults and its segment size admits (rule R2 of docs/replication.md).
     * Chronicle keeps the block size nowhere on disk: segments written under another one open with this one.
     */
    public long chronicleBlockBytes() {
        return chronicleBlockBytes(segmentBytes, maxMessageBytes);
    }

    static long chronicleBlockBytes(long segmentBytes, int maxMessageBytes) {
        long message = Math.max(maxMessageBytes, Math.min(DEFAULT_MAX_MESSAGE_BYTES, segmentBytes / 4));
        long record = message + QueueStore.HEADER_HEADROOM_BYTES + io.sluice.storage.segment.RecordCodec.HEADER_BYTES
                + CHRONICLE_DOCUMENT_HEADER_BYTES;
        long mib = 1L << 20;
        long sized = (4 * record + mib - 1) / mib * mib;
        return Math.max(Math.min(CHRONICLE_BLOCK_BYTES, segmentBytes), sized);
    }

    /**
     * The largest headers plus payload this store can hold at all: a quarter of {@link #chronicleBlockBytes()} less the
     * record's header, at least {@code maxMessageBytes} plus {@link QueueStore#HEADER_HEADROOM_BYTES}. A cluster node
     * stores a committed message up to this (rule R2 of docs/replication.md); {@code maxMessageBytes} is what a broker
     * admits.
     */
    public int storableMessageBytes() {
        return (int) (chronicleBlockBytes() / 4) - io.sluice.storage.segment.RecordCodec.HEADER_BYTES;
    }

    /** Room for ack checkpoints (a bit per live message, compressed) written while appends are refused. */
    private static final long CHECKPOINT_ALLOWANCE_BYTES = 1L << 20;

    /**
     * The smallest {@code reservedDiskBytes} the engine can work with (docs/storage.md, "Disk full"):
     * what must still be writable once appends are refused, so that no store into a memory-mapped page
     * meets a full disk (a SIGBUS): one Chronicle block ({@link #chronicleBlockBytes()}: a segment's index and its
     * growth by one block), the copies of one relocation ({@code relocateMaxLiveRatio} of a segment), an ack
     * journal rotation and recovery (which writes a new journal beside the old one: twice
     * {@code ackJournalBytes}), and the checkpoints.
     */
    public long minimumReservedDiskBytes() {
        return minimumReservedDiskBytes(segmentBytes, maxMessageBytes, relocateMaxLiveRatio, ackJournalBytes);
    }

    /**
     * What relocation must leave free: the part of the minimum reserve that is not for relocation (a
     * Chronicle block, ack-journal rotation, checkpoints).
     */
    public long relocationFloorBytes() {
        return minimumReservedDiskBytes() - (long) Math.ceil(segmentBytes * relocateMaxLiveRatio);
    }

    static long minimumReservedDiskBytes(long segmentBytes, int maxMessageBytes, double relocateMaxLiveRatio, int ackJournalBytes) {
        return chronicleBlockBytes(segmentBytes, maxMessageBytes) + (long) Math.ceil(segmentBytes * relocateMaxLiveRatio)
                + 2L * ackJournalBytes + CHECKPOINT_ALLOWANCE_BYTES;
    }

    public static Builder builder() {
        return new Builder();
    }

    public Builder toBuilder() {
        return new Builder()
                .durability(durability)
                .syncIntervalMs(syncIntervalMs)
                .segmentBytes(segmentBytes)
                .maxMessageBytes(maxMessageBytes)
                .reservedDiskBytes(reservedDiskBytes)
                .ackJournalBytes(ackJournalBytes)
                .relocateMaxLiveRatio(relocateMaxLiveRatio)
                .relocateMaxLiveMessages(relocateMaxLiveMessages)
                .relocateAfterMs(relocateAfterMs)
                .readAheadMessages(readAheadMessages)
                .exactRollPoint(exactRollPoint);
    }

    /** A mutable builder with the defaults a broker runs with. */
    public static final class Builder {
        private DurabilityMode durability = DurabilityMode.ALWAYS;
        private long syncIntervalMs = 1000;
        private long segmentBytes = 64L << 20;
        private int maxMessageBytes = DEFAULT_MAX_MESSAGE_BYTES;
        private long reservedDiskBytes = 256L << 20;
        private int ackJournalBytes = 8 << 20;
        private double relocateMaxLiveRatio = 0.05;
        private int relocateMaxLiveMessages = 10_000;
        private long relocateAfterMs = 1000;
        private int readAheadMessages = 50_000;
        private boolean exactRollPoint = true;

        public Builder exactRollPoint(boolean value) {
            this.exactRollPoint = value;
            return this;
        }

        public Builder durability(DurabilityMode value) {
            this.durability = value;
            return this;
        }

        public Builder syncIntervalMs(long value) {
            this.syncIntervalMs = value;
            return this;
        }

        public Builder segmentBytes(long value) {
            this.segmentBytes = value;
            return this;
        }

        public Builder maxMessageBytes(int value) {
            this.maxMessageBytes = value;
            return this;
        }

        public Builder reservedDiskBytes(long value) {
            this.reservedDiskBytes = value;
            return this;
        }

        public Builder ackJournalBytes(int value) {
            this.ackJournalBytes = value;
            return this;
        }

        public Builder relocateMaxLiveRatio(double value) {
            this.relocateMaxLiveRatio = value;
            return this;
        }

        public Builder relocateMaxLiveMessages(int value) {
            this.relocateMaxLiveMessages = value;
            return this;
        }

        public Builder relocateAfterMs(long value) {
            this.relocateAfterMs = value;
            return this;
        }

        public Builder readAheadMessages(int value) {
            this.readAheadMessages = value;
            return this;
        }

        /** Checks every field and throws one exception listing every problem found. */
        public StoreConfig build() {
            List<String> problems = new ArrayList<>();
            if (durability == null) {
                problems.add("durability must be set (always, interval or never)");
            }
            if (syncIntervalMs < 1 || syncIntervalMs > 60_000) {
                problems.add("syncIntervalMs " + syncIntervalMs + " is outside 1..60000");
            }
            if (segmentBytes < MIN_SEGMENT_BYTES || segmentBytes > MAX_SEGMENT_BYTES) {
                problems.add("segmentBytes " + segmentBytes + " is outside " + MIN_SEGMENT_BYTES + ".." + MAX_SEGMENT_BYTES);
            }
            if (maxMessageBytes < 1 || maxMessageBytes > segmentBytes / 4) {
                problems.add("maxMessageBytes " + maxMessageBytes + " is outside 1..segmentBytes/4 (" + segmentBytes / 4 + "): a message "
                        + "takes at most a quarter of a segment");
            }
            long minimumReserve = minimumReservedDiskBytes(segmentBytes, maxMessageBytes, relocateMaxLiveRatio, ackJournalBytes);
            if (reservedDiskBytes < minimumReserve) {
                problems.add("reservedDiskBytes " + reservedDiskBytes + " is below the " + minimumReserve + " bytes ("
                        + (minimumReserve >> 20) + " MiB) the engine needs for these settings: one Chronicle block of "
                        + chronicleBlockBytes(segmentBytes, maxMessageBytes) + ", a relocation of up to "
                        + (long) Math.ceil(segmentBytes * relocateMaxLiveRatio) + ", an ack-journal rotation and recovery of "
                        + 2L * ackJournalBytes + ", and " + CHECKPOINT_ALLOWANCE_BYTES + " for checkpoints must stay writable "
                        + "once appends are refused, or a full disk turns into a SIGBUS");
            }
            if (ackJournalBytes < 4096 || ackJournalBytes > (1 << 30)) {
                problems.add("ackJournalBytes " + ackJournalBytes + " is outside 4096..1073741824");
            }
            if (!(relocateMaxLiveRatio >= 0 && relocateMaxLiveRatio <= 0.5)) {
                problems.add("relocateMaxLiveRatio " + relocateMaxLiveRatio + " is outside 0..0.5");
            }
            if (relocateMaxLiveMessages < 0) {
                problems.add("relocateMaxLiveMessages " + relocateMaxLiveMessages + " is negative");
            }
            if (relocateAfterMs < 0 || relocateAfterMs > 3_600_000) {
                problems.add("relocateAfterMs " + relocateAfterMs + " is outside 0..3600000");
            }
            if (readAheadMessages < 0 || readAheadMessages > 10_000_000) {
                problems.add("readAheadMessages " + readAheadMessages + " is outside 0..10000000");
            }
            if (!problems.isEmpty()) {
                throw new IllegalArgumentException("invalid storage configuration: " + String.join("; ", problems));
            }
            return new StoreConfig(durability, syncIntervalMs, segmentBytes, maxMessageBytes, reservedDiskBytes,
                    ackJournalBytes, relocateMaxLiveRatio, relocateMaxLiveMessages, relocateAfterMs, readAheadMessages, exactRollPoint);
        }
    }
}
