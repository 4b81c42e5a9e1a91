package io.sluice.broker.cluster;

import io.sluice.storage.files.AtomicFiles;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The cluster's finalized entry level as this node applied it (rule R12 of docs/replication.md, {@link EntryLevels}), and
 * so the formats this node writes when it leads. The level only rises: a level entry below the one applied changes
 * nothing, so replaying the log in any part is harmless.
 *
 * <p>It is kept in a file of its own ({@code <data-dir>/entry-level}, written atomically and forced when it rises), not
 * only in the log: a restart replays the log from the last snapshot on, and the level entry may be older than that. A
 * level in the file is one this node applied, so one that was committed.
 *
 * <p>Threads: {@link #apply} on the shard's state machine thread; the reads on any (a volatile read).
 */
final class FinalizedEntryLevel {
    static final String FILE = "entry-level";

    private final int supported;
    private final Path file;
    /** 0 while no level entry was applied here. */
    private volatile int finalized;

    /**
     * {@code file} null: kept in memory only (tests).
     *
     * @throws EntryLevels.EntryTooNew if the file holds a level above {@code supported}: this node applied it, with a newer
     *                                 broker, and a broker that cannot read its entries must not start on its data
     */
    FinalizedEntryLevel(int supported, Path file) {
        this.supported = supported;
        this.file = file;
        this.finalized = file == null ? 0 : read(file);
        if (finalized > supported) {
            throw EntryLevels.EntryTooNew.atStart(file, finalized, supported);
        }
    }

    /** The level {@code file} holds, 0 if there is none. */
    static int read(Path file) {
        try {
            if (!Files.exists(file)) {
                return 0;
            }
            String text = Files.readString(file, StandardCharsets.UTF_8).trim();
            return Integer.parseInt(text);
        } catch (IOException e) {
            throw new UncheckedIOException("reading the cluster's entry level from " + file + " failed", e);
        } catch (NumberFormatException e) {
            throw new IllegalStateException(file + " should hold the cluster's entry level, a number; it holds something else", e);
        }
    }

    /** The level this broker supports ({@link EntryLevels#SUPPORTED}, or lower in tests). */
    int supported() {
        return supported;
    }

    /** The finalized level this node applied, 0 if none. */
    int finalized() {
        return finalized;
    }

    /**
     * The highest level this node writes as the leader: the finalized one, {@link EntryLevels#BEFORE_LEVELS} if none was
     * finalized (a cluster of brokers that predate levels), never above what it supports.
     */
    int writable() {
        int level = finalized;
        return Math.min(level == 0 ? EntryLevels.BEFORE_LEVELS : level, supported);
    }

    /** Whether the leader may write entries of {@code version} ({@link EntryLevels#required}). */
    boolean allows(int version) {
        return reached(EntryLevels.required(version));
    }

    /** Whether the leader may write what entry level {@code level} allows (a format, or a meaning within one). */
    boolean reached(int level) {
        return level <= writable();
    }

    /**
     * Rule R12 before a snapshot is swapped in: the level {@code level} (0: none) a snapshot through {@code index} holds must
     * be one this broker supports. Changes nothing; {@link #apply} records it once the snapshot is in place.
     *
     * @throws EntryLevels.EntryTooNew if it is not
     */
    void checkSnapshot(int level, long index) {
        if (level > supported) {
            throw EntryLevels.EntryTooNew.inSnapshot(index, level, supported);
        }
    }

    /**
     * Applies a committed level entry: the level rises to {@code level} if it is higher, durably before this returns.
     *
     * @throws EntryLevels.EntryTooNew if this broker does not support {@code level}: it must stop, not skip it
     */
    void apply(int level, long index) {
        if (level > supported) {
            throw EntryLevels.EntryTooNew.finalizing(index, level, supported);
        }
        if (level <= finalized) {
            return;
        }
        if (file != null) {
            try {
                AtomicFiles.write(file, channel -> AtomicFiles.writeFully(channel,
                        ByteBuffer.wrap((level + "\n").getBytes(StandardCharsets.UTF_8))));
            } catch (IOException e) {
                throw new UncheckedIOException("writing the cluster's entry level " + level + " to " + file + " failed", e);
            }
        }
        finalized = level;
    }
}
