package io.sluice.storage.tool;

import io.sluice.storage.ack.AckCheckpoint;
import io.sluice.storage.ack.AckJournal;
import io.sluice.storage.ack.AckLog;
import io.sluice.storage.ack.AckStateReader;
import io.sluice.storage.ack.CorruptAckStateException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

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
 */
record AckSnapshot(AckStateReader state, long checkpointGeneration, int journalRecords, String journalStop,
                   String damage, String journalDamage) {
    private static final String CHECKPOINT = "acks.checkpoint";
    private static final String JOURNAL = "acks.journal";

    /** Loads the ack state of the queue in {@code queueDirectory} whose segments hold {@code segmentCounts}. */
    static AckSnapshot load(Path queueDirectory, Map<Integer, Long> segmentCounts) throws IOException {
        Path acks = queueDirectory.resolve("acks");
        Path checkpoint = acks.resolve(CHECKPOINT);
        Path journal = acks.resolve(JOURNAL);
        long generation = -1;
        int records = 0;
        String stop = "no journal";
        String journalDamage = null;
        try {
            if (Files.exists(checkpoint)) {
                generation = AckCheckpoint.read(checkpoint).generation();
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
            return new AckSnapshot(null, generation, records, stop, e.getMessage(), journalDamage);
        }
        Path copy = Files.createTempDirectory("sluice-acks-");
        try {
            if (Files.exists(checkpoint)) {
                Files.copy(checkpoint, copy.resolve(CHECKPOINT));
            }
            if (Files.exists(journal)) {
                Files.copy(journal, copy.resolve(JOURNAL));
            }
            try (AckLog log = AckLog.open(copy, AckJournal.MIN_CAPACITY_BYTES)) {
                for (Map.Entry<Integer, Long> entry : segmentCounts.entrySet()) {
                    if (entry.getValue() > 0) {
                        log.segmentGrew(entry.getKey(), entry.getValue());
                    }
                }
                log.recover();
                return new AckSnapshot(log.state(), generation, records, stop, null, journalDamage);
            } catch (CorruptAckStateException e) {
                return new AckSnapshot(null, generation, records, stop, e.getMessage(), journalDamage);
            }
        } finally {
            io.sluice.storage.Directories.deleteRecursively(copy);
        }
    }

}
