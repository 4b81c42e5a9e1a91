package io.sluice.storage;

import io.sluice.storage.files.AtomicFiles;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.SecureRandom;

/**
 * Which incarnation of its name a queue directory is: a random id written once, in the file {@value #FILE} of the
 * queue's directory, when the queue is created ({@link NewQueues}), and read at every open. A queue deleted and created
 * again under its name has another id, and its message ids start over, so whoever keeps ids of a queue beyond its life
 * (the broker's transaction commit records, docs/transactions.md rule X6) names the incarnation with them.
 *
 * <p>A directory without the file, made by a store before incarnations or left by a creation a crash interrupted
 * before its last force, is given one at its open, written and forced before the queue is served. Such a queue is
 * marked {@link #predatesIncarnations} if it holds unacknowledged messages then: only a store before incarnations
 * can have put them there (an interrupted creation never served an append). So nothing that names an id ever names
 * an incarnation that a restart could change: a queue is served only once its id is durable.
 *
 * <pre>
 * one line: decimal id, a space, "created" or "found" (found with unacknowledged messages: predates incarnations)
 * </pre>
 * Immutable.
 */
public record QueueIncarnation(long id, boolean predatesIncarnations) {
    /** The file in a queue's directory. */
    public static final String FILE = "incarnation";
    private static final SecureRandom RANDOM = new SecureRandom();

    /** A new queue's: a random id, never 0. */
    static QueueIncarnation fresh() {
        long id;
        do {
            id = RANDOM.nextLong();
        } while (id == 0);
        return new QueueIncarnation(id, false);
    }

    /** Writes a new queue's file under its temporary name, unforced; returns that name ({@link NewQueues}'s passes force and install it). */
    static Path writeTemporary(Path queueDirectory) throws IOException {
        QueueIncarnation created = fresh();
        return AtomicFiles.writeTemporary(queueDirectory.resolve(FILE), channel ->
                AtomicFiles.writeFully(channel, ByteBuffer.wrap(created.encode().getBytes(StandardCharsets.UTF_8))), false);
    }

    /**
     * At a queue's open: its incarnation as its file says; without the file (or with a damaged one), a fresh one,
     * written and forced before this returns, marked as predating incarnations if {@code holdsMessages}.
     */
    static QueueIncarnation open(Path queueDirectory, boolean holdsMessages) {
        Path file = queueDirectory.resolve(FILE);
        try {
            return decode(Files.readString(file, StandardCharsets.UTF_8));
        } catch (NoSuchFileException e) {
            // the usual case for a queue made before incarnations
        } catch (IOException | IllegalArgumentException e) {
            // a damaged file: a fresh id is the safe side (what named the old one is no longer applied here)
        }
        QueueIncarnation found = new QueueIncarnation(fresh().id(), holdsMessages);
        try {
            AtomicFiles.write(file, channel ->
                    AtomicFiles.writeFully(channel, ByteBuffer.wrap(found.encode().getBytes(StandardCharsets.UTF_8))));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file, e);
        }
        return found;
    }

    String encode() {
        return id + (predatesIncarnations ? " found" : " created") + "\n";
    }

    static QueueIncarnation decode(String text) {
        String[] parts = text.strip().split(" ");
        if (parts.length != 2 || !(parts[1].equals("found") || parts[1].equals("created"))) {
            throw new IllegalArgumentException("not an incarnation: '" + text.strip() + "'");
        }
        return new QueueIncarnation(Long.parseLong(parts[0]), parts[1].equals("found"));
    }
}
