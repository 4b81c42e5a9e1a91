package io.sluice.storage;

import io.sluice.storage.files.AtomicFiles;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
 * version 2, one line: "v2", the decimal id, "created" or "found" (found with unacknowledged messages: predates
 *            incarnations), and the CRC32C of the text before it (UTF-8, up to the space before it) as 8 hex digits,
 *            separated by single spaces: v2 -4627392305413219614 created 1a2b3c4d
 * version 1, one line: the decimal id, a space, "created" or "found"; still read, and rewritten as version 2 at the
 *            queue's open
 * </pre>
 * Rule "an incarnation is checked": a file that does not read, or whose digit a bit flip changed (version 1 has no
 * checksum, so it reads as another id), must not make the queue another incarnation of its name, or a commit record
 * still pending for it would no longer apply to it: its staged messages discarded, its acknowledgements not applied
 * again (docs/transactions.md, X6). A version-2 file that does not check out refuses the queue's open, naming the
 * file: which incarnation it is cannot be told.
 * Immutable.
 */
public record QueueIncarnation(long id, boolean predatesIncarnations) {
    /** The file in a queue's directory. */
    public static final String FILE = "incarnation";
    /** The format written: the line's first word, before the id. */
    static final String VERSION = "v2";
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final Logger LOG = LoggerFactory.getLogger(QueueIncarnation.class);

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
     * At a queue's open: its incarnation as its file says (a version-1 file rewritten as version 2); without the file, a
     * fresh one, written and forced before this returns, marked as predating incarnations if {@code holdsMessages}.
     *
     * @throws StorageException naming the file if it is there and does not read (rule "an incarnation is checked")
     */
    static QueueIncarnation open(Path queueDirectory, boolean holdsMessages) {
        Path file = queueDirectory.resolve(FILE);
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            QueueIncarnation found = new QueueIncarnation(fresh().id(), holdsMessages); // a queue made before incarnations
            try {
                write(file, found);
            } catch (IOException written) {
                throw new UncheckedIOException("cannot write " + file, written);
            }
            return found;
        } catch (IOException e) {
            throw unreadable(file, e);
        }
        QueueIncarnation read = decodeChecked(file, text);
        if (!text.startsWith(VERSION + " ")) {
            try {
                write(file, read);
            } catch (IOException e) {
                // It reads as it is; the checksum comes with a later open.
                LOG.warn("Could not rewrite the incarnation file {} with a checksum ({}); it is read as it is.", file, e.toString());
            }
        }
        return read;
    }

    /**
     * For {@code bin/sluice verify}: why the incarnation file of the queue in {@code queueDirectory} would refuse its
     * open, or null if it reads or is not there (a queue's open gives it one then). Reads only.
     */
    public static String damage(Path queueDirectory) {
        Path file = queueDirectory.resolve(FILE);
        try {
            decodeChecked(file, Files.readString(file, StandardCharsets.UTF_8));
            return null;
        } catch (NoSuchFileException e) {
            return null;
        } catch (CharacterCodingException e) {
            return damaged(file, "not UTF-8 text").getMessage();
        } catch (IOException e) {
            return "incarnation file " + file + " cannot be read: " + e;
        } catch (StorageException e) {
            return e.getMessage();
        }
    }

    /**
     * Refuses the open of the queue in {@code queueDirectory} if its incarnation file is there and does not read, as
     * {@link #open} would; reads only. A queue's recovery asks first, before any of the queue's files is touched, so that
     * the refused queue's files stay as they are (checked after the recovery, its ack files were rewritten by then).
     *
     * @throws StorageException naming the file if it does not read (rule "an incarnation is checked")
     */
    public static void refuseIfDamaged(Path queueDirectory) {
        Path file = queueDirectory.resolve(FILE);
        try {
            decodeChecked(file, Files.readString(file, StandardCharsets.UTF_8));
        } catch (NoSuchFileException e) {
            // the open gives the queue one
        } catch (IOException e) {
            throw unreadable(file, e);
        }
    }

    private static QueueIncarnation decodeChecked(Path file, String text) {
        try {
            return decode(text);
        } catch (IllegalArgumentException e) {
            throw damaged(file, e.getMessage());
        }
    }

    /** A read of the file that failed: its damage if its bytes are not text, else a failure that is not the file's. */
    private static RuntimeException unreadable(Path file, IOException e) {
        if (e instanceof CharacterCodingException) {
            return damaged(file, "not UTF-8 text");
        }
        return new UncheckedIOException("cannot read " + file, e); // not the file's damage: no descriptor, a failing disk
    }

    private static void write(Path file, QueueIncarnation incarnation) throws IOException {
        AtomicFiles.write(file, channel ->
                AtomicFiles.writeFully(channel, ByteBuffer.wrap(incarnation.encode().getBytes(StandardCharsets.UTF_8))));
    }

    private static StorageException damaged(Path file, String why) {
        return new StorageException("incarnation file " + file + " is damaged (" + why + "): which incarnation of its name "
                + "the queue is cannot be told, and a transaction's commit record still pending for it would not be applied "
                + "to another. Restore the file from a backup; or, if no transaction touching the queue was pending when the "
                + "broker stopped, delete it: the queue is given a new incarnation at its next open");
    }

    String encode() {
        String line = VERSION + " " + id + (predatesIncarnations ? " found" : " created");
        return line + " " + checksum(line) + "\n";
    }

    private static String checksum(String line) {
        CRC32C crc = new CRC32C();
        crc.update(line.getBytes(StandardCharsets.UTF_8));
        return String.format("%08x", crc.getValue());
    }

    /** Reads a file's text, either version; throws {@link IllegalArgumentException} saying why if it does not read. */
    static QueueIncarnation decode(String text) {
        String line = text.strip();
        String[] parts = line.split(" ");
        int status;
        if (parts.length == 4 && parts[0].equals(VERSION)) {
            String checked = line.substring(0, line.lastIndexOf(' '));
            if (!checksum(checked).equals(parts[3])) {
                throw new IllegalArgumentException("its CRC32C is " + checksum(checked) + ", the file holds " + parts[3]);
            }
            status = 2;
        } else if (parts.length == 2) {
            status = 1; // version 1: no checksum
        } else {
            throw new IllegalArgumentException("not an incarnation: '" + line + "'");
        }
        if (!(parts[status].equals("found") || parts[status].equals("created"))) {
            throw new IllegalArgumentException("not an incarnation: '" + line + "'");
        }
        try {
            return new QueueIncarnation(Long.parseLong(parts[status - 1]), parts[status].equals("found"));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not an incarnation: '" + line + "'");
        }
    }
}
