package io.sluice.storage.tool;

import io.sluice.storage.ack.AckCheckpoint;
import io.sluice.storage.ack.AckJournal;
import io.sluice.storage.ack.AckLog;
import io.sluice.storage.ack.AckStateProbe;
import io.sluice.storage.ack.AckStateReader;
import io.sluice.storage.ack.CorruptAckStateException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * A queue's ack state as a restart would recover it, loaded without changing the queue's files.
 *
 * <p>{@link AckLog} recovery ends in a checkpoint and a fresh journal, so it cannot run on the live
 * directory. Instead: the checkpoint's header and body CRC32C are checked in place ({@link
 * AckCheckpoint#read}), the journal is replayed in place with a visitor that applies nothing ({@link
 * AckJournal#replay} only reads the file), and the full state comes from {@link AckLog} recovering a
 * private copy of {@code acks.checkpoint} and {@code acks.journal} in a temporary directory, which
 * is deleted afterwards.
 *
 * @param state             recovered state, or null when {@code damage} is set
 * @param checkpointGeneration generation of {@code acks.checkpoint}, or -1 when there is none
 * @param journalRecords    intact journal records of the checkpoint's generation
 * @param journalStop       where and why journal replay stopped (a torn tail after a crash is normal)
 * @param damage            why the ack state cannot be trusted, or null
 * @param journalDamage     why the journal's header is damaged though its records are replayed, or null
 * @param missingUnacked    for each segment the checkpoint knows whose file is not there, the unacknowledged messages
 *                          the ack state counts in it, if any ({@link AckStateProbe}): a broker refuses the queue
 */
record AckSnapshot(AckStateReader state, long checkpointGeneration, int journalRecords, String journalStop,
                   String damage, String journalDamage, Map<Integer, Long> missingUnacked) {
    private static final String CHECKPOINT = "acks.checkpoint";
    private static final String JOURNAL = "acks.journal";

    /**
     * Loads the ack state of the queue in {@code queueDirectory} whose segments hold {@code segmentCounts};
     * {@code segmentFiles}: the segments whose files are there; {@code unreadable}: those of them whose records cannot all
     * be read, which the state keeps as the checkpoint counts them, or as {@code segmentCounts} does where it counts more
     * (a recovery forgets a segment it is given no count for, and with it how many of its messages were not acknowledged;
     * given the count of an index cut short, fewer than the checkpoint's, it forgets the messages past it).
     */
    static AckSnapshot load(Path queueDirectory, Map<Integer, Long> segmentCounts, Set<Integer> segmentFiles,
                            Set<Integer> unreadable) throws IOException {
        Path acks = queueDirectory.resolve("acks");
        Path checkpoint = acks.resolve(CHECKPOINT);
        Path journal = acks.resolve(JOURNAL);
        String notReadable = notReadable(acks, checkpoint, journal);
        if (notReadable != null) {
            return new AckSnapshot(null, -1, 0, "not replayed", notReadable, null, Map.of());
        }
        long generation = -1;
        int records = 0;
        String stop = "no journal";
        String journalDamage = null;
        AckStateReader checkpointed = null;
        try {
            if (Files.exists(checkpoint)) {
                AckCheckpoint.Loaded loaded = AckCheckpoint.read(checkpoint);
                generation = loaded.generation();
                checkpointed = loaded.tracker();
            }
            if (Files.exists(journal)) {
                AckJournal.Replay replay = AckJournal.replay(journal, Math.max(generation, 0), new AckJournal.Visitor() { });
                records = replay.records();
                journalDamage = replay.headerDamage();
                stop = replay.applied()
                        ? "offset " + replay.stopOffset() + ": " + replay.stopReason()
                        : "not replayed: " + replay.stopReason();
            }
        } catch (CorruptAckStateException e) {
            return new AckSnapshot(null, generation, records, stop, e.getMessage(), journalDamage, Map.of());
        }
        // The probe's own copy goes beside this one, inside the temporary directory.
        Path root = Files.createTempDirectory("sluice-acks-");
        Path copy = Files.createDirectory(root.resolve("acks"));
        try {
            if (Files.exists(checkpoint)) {
                Files.copy(checkpoint, copy.resolve(CHECKPOINT));
            }
            if (Files.exists(journal)) {
                Files.copy(journal, copy.resolve(JOURNAL));
            }
            Map<Integer, Long> missingUnacked;
            try {
                missingUnacked = missingUnacked(copy, checkpointed, segmentCounts, segmentFiles);
            } catch (CorruptAckStateException e) {
                return new AckSnapshot(null, generation, records, stop, e.getMessage(), journalDamage, Map.of());
            }
            Map<Integer, Long> counts = new TreeMap<>(segmentCounts);
            for (int segment : unreadable) {
                if (checkpointed != null && checkpointed.messageCount(segment) > 0) {
                    counts.merge(segment, checkpointed.messageCount(segment), Math::max);
                }
            }
            try (AckLog log = AckLog.open(copy, AckJournal.MIN_CAPACITY_BYTES)) {
                for (Map.Entry<Integer, Long> entry : counts.entrySet()) {
                    if (entry.getValue() > 0) {
                        log.segmentGrew(entry.getKey(), entry.getValue());
                    }
                }
                log.recover();
                return new AckSnapshot(log.state(), generation, records, stop, null, journalDamage, missingUnacked);
            } catch (CorruptAckStateException e) {
                return new AckSnapshot(null, generation, records, stop, e.getMessage(), journalDamage, missingUnacked);
            }
        } finally {
            io.sluice.storage.Directories.deleteRecursively(root);
        }
    }

    /**
     * Why the ack files cannot be read at all, or null: {@code acks} there but not a directory, or an ack file there but not
     * a regular file. A broker's open fails on either; read as absent, they made an empty ack state and a CLEAN report.
     */
    private static String notReadable(Path acks, Path checkpoint, Path journal) {
        String consequence = ": the queue's ack state cannot be read, and a broker refuses to open the queue";
        if (Files.exists(acks) && !Files.isDirectory(acks)) {
            return acks + " is not a directory" + consequence;
        }
        for (Path file : new Path[] {checkpoint, journal}) {
            if (Files.exists(file) && !Files.isRegularFile(file)) {
                return "ack state file " + file + " is not a regular file" + consequence;
            }
        }
        return null;
    }

    /** The question a broker's open asks (rule "a missing segment is not forgotten", docs/storage.md). */
    private static Map<Integer, Long> missingUnacked(Path acksCopy, AckStateReader checkpointed,
                                                     Map<Integer, Long> segmentCounts, Set<Integer> segmentFiles)
            throws IOException {
        if (checkpointed == null) {
            return Map.of();
        }
        return AckStateProbe.unacknowledgedInMissing(acksCopy, checkpointed, segmentFiles::contains, () -> segmentCounts);
    }
}
