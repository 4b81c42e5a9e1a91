package io.sluice.storage;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Arrays;

/**
 * The file {@code clean-shutdown} in a data directory: made by a close that forced every queue, removed by the next open.
 * An open that does not find it follows a process crash, whose unforced records are in the page cache, and forces every
 * segment before serving them (docs/storage.md, "Recovery"), as Kafka's log manager recovers the logs of a broker without
 * its clean-shutdown file. Neither making nor removing it is forced: after a machine crash the page cache is gone,
 * everything recovery reads is on disk, and a mark that comes back then skips a force that has nothing left to make
 * durable. It holds the identity (device and inode) of the directory of queues it vouches for, and is believed only by an
 * open of that directory: a copy of a cleanly closed data directory (a backup restored, cp or rsync to another disk) has
 * files written into the page cache only, which the mark says nothing about (an empty mark, made by an earlier broker, is
 * not believed either).
 *
 * <p>Stateless; the store's open and close call it, and the offline verify reads the mark by the same rule
 * ({@link #vouches}).
 */
public final class CleanShutdownMark {
    public static final String FILE = "clean-shutdown";

    private CleanShutdownMark() {
    }

    public static Path file(Path dataDirectory) {
        return dataDirectory.resolve(FILE);
    }

    /**
     * What a mark vouching for the directory of queues of {@code dataDirectory} holds: its file system identity (on Linux
     * its device and inode), which a copy does not keep and a rename does; null where the file system gives none, so that
     * no mark is made or believed there.
     */
    public static String identity(Path dataDirectory) throws IOException {
        Object key = Files.readAttributes(dataDirectory.resolve("queues"), BasicFileAttributes.class).fileKey();
        return key == null ? null : "queues " + key + "\n";
    }

    /**
     * Whether a mark holding {@code mark} vouches for the directory whose {@link #identity} is {@code identity}. Compared
     * as bytes: the mark is never forced, so after a machine crash it may hold anything, which only makes it unbelieved
     * (a strict UTF-8 read would refuse to open the store).
     */
    public static boolean vouches(byte[] mark, String identity) {
        return identity != null && Arrays.equals(mark, identity.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * At the store's open: whether the last close was clean, by a mark vouching for this very directory; removes the mark
     * either way.
     *
     * @throws IOException if the mark is there and cannot be read or removed (a directory, say): the store is not opened
     */
    static boolean takeAtOpen(Path dataDirectory) throws IOException {
        Path mark = file(dataDirectory);
        boolean clean = Files.exists(mark) && vouches(Files.readAllBytes(mark), identity(dataDirectory));
        Files.deleteIfExists(mark);
        return clean;
    }

    /** At a close that forced every queue: makes the mark (none where the file system gives no identity). */
    static void write(Path dataDirectory) throws IOException {
        String identity = identity(dataDirectory);
        if (identity != null) {
            Files.writeString(file(dataDirectory), identity);
        }
    }
}
