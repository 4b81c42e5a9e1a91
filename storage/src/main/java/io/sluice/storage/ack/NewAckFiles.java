package io.sluice.storage.ack;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * A new queue's ack files, created in steps ({@link AckLog}'s class javadoc, "A new queue"): {@link #prepare} writes
 * them under temporary names, not forced, not in place. The caller forces {@link #temporaryFiles()}, then calls
 * {@link #install()}, then forces {@link #directory()}; the queue's state is durable after the last of these. Not
 * thread-safe: one thread at a time.
 */
public final class NewAckFiles {
    private final Path directory;
    private final int journalCapacityBytes;
    private final Path checkpointTemporary;
    private final Path journalTemporary;

    private NewAckFiles(Path directory, int journalCapacityBytes, Path checkpointTemporary, Path journalTemporary) {
        this.directory = directory;
        this.journalCapacityBytes = journalCapacityBytes;
        this.checkpointTemporary = checkpointTemporary;
        this.journalTemporary = journalTemporary;
    }

    /** The files to force before {@link #install()}. */
    public List<Path> temporaryFiles() {
        return List.of(checkpointTemporary, journalTemporary);
    }

    /** The directory to force after {@link #install()}: it holds the files' entries. */
    public Path directory() {
        return directory;
    }

    /**
     * Renames the forced files into place and returns the recovered ack log of the empty queue
     * (no {@link AckLog#recover()}: there is nothing to recover, and the files are written).
     */
    public AckLog install() throws IOException {
        AckCheckpoint.install(checkpointTemporary, directory.resolve(AckFiles.CHECKPOINT));
        AckJournal journal = AckJournal.install(journalTemporary, directory.resolve(AckFiles.JOURNAL), AckLog.FIRST_GENERATION,
                journalCapacityBytes);
        return AckLog.installed(directory, journalCapacityBytes, journal);
    }

    /** Deletes the files, after a failure before {@link #install()}. */
    public void discard() throws IOException {
        Files.deleteIfExists(checkpointTemporary);
        Files.deleteIfExists(journalTemporary);
    }

    /**
     * The first step of creating a new queue's ack files in steps (class javadoc, "A new queue"): writes
     * the empty checkpoint and journal of generation {@value AckLog#FIRST_GENERATION} under their temporary
     * names in {@code directory} (created if needed), without forcing anything.
     *
     * @throws IllegalStateException if {@code directory} already holds a checkpoint: it is not a new queue's
     */
    public static NewAckFiles prepare(Path directory, int journalCapacityBytes) throws IOException {
        AckJournal.checkCapacity(journalCapacityBytes);
        Path absolute = directory.toAbsolutePath();
        Files.createDirectories(absolute);
        Path checkpoint = absolute.resolve(AckFiles.CHECKPOINT);
        if (Files.exists(checkpoint)) {
            throw new IllegalStateException("ack directory " + absolute + " already holds " + AckFiles.CHECKPOINT
                    + "; only a new queue's ack files are created in steps");
        }
        Path journal = absolute.resolve(AckFiles.JOURNAL);
        Path checkpointTemporary = AckCheckpoint.writeUnforced(checkpoint, AckLog.FIRST_GENERATION, new AckTracker());
        try {
            return new NewAckFiles(absolute, journalCapacityBytes, checkpointTemporary,
                    AckJournal.writeUnforced(journal, AckLog.FIRST_GENERATION, journalCapacityBytes));
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(checkpointTemporary);
            throw e;
        }
    }
}
