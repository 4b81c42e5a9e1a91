package io.sluice.storage.crash;

import io.sluice.storage.ack.AckFiles;
import io.sluice.storage.durability.FileForcer;
import io.sluice.storage.reclaim.RelocationIntent;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;

/**
 * The disk a machine crash would leave, built from exactly what the store forced. As a
 * {@link FileForcer} it records each file's content just before each force (a segment, a new queue's
 * ack checkpoint and journal under their temporary names, counted under their real names, and
 * Chronicle's metadata file), and the ack journal's just before each msync (what was in the page cache
 * then is on disk once the force returns; what came later may not be). {@link #build} then writes a
 * data directory holding, per segment file, its content as of its last force (a segment never forced
 * is absent); the ack journal as of its last msync, or as its creation forced it if it was never
 * msynced; the ack checkpoint as it is if its creation was forced (later checkpoints are fsynced by
 * their writer), and Chronicle's metadata file as it is if it was ever forced (with the first segment).
 * A file never forced whose name is durable is there empty: its name reached the disk, its data did not.
 * A segment file, an ack file or the metadata file is there only if its directory entry was made
 * durable too, by a force of its directory after it was created (or renamed into place); so is a
 * queue's directory (in the directory of queues) and each of its subdirectories (in the queue's
 * directory), and nothing inside a directory that is not there. Deletes and renames over an existing
 * name count as durable at once, the worst case: on ext4 any later fsync commits them. The image is
 * only right for queues created by the store it watched.
 */
final class ForcedDiskImage implements FileForcer {
    private final Path dataDirectory;
    /** The content of each file (a temporary one under its real name) at its last force. */
    private final Map<Path, byte[]> forcedFiles = new ConcurrentHashMap<>();
    /** Files whose directory entry a force of their directory made durable. */
    private final java.util.Set<Path> durableEntries = ConcurrentHashMap.newKeySet();
    /** Every forced version of each ack journal, oldest first. */
    private final Map<Path, List<byte[]>> forcedJournals = new ConcurrentHashMap<>();

    ForcedDiskImage(Path dataDirectory) {
        this.dataDirectory = dataDirectory;
    }

    @Override
    public void force(FileChannel channel, Path file) throws IOException {
        byte[] content = Files.readAllBytes(file);
        channel.force(false);
        String name = file.getFileName().toString();
        Path real = name.endsWith(".tmp") ? file.resolveSibling(name.substring(0, name.length() - ".tmp".length())) : file;
        forcedFiles.put(dataDirectory.relativize(real), content);
    }

    @Override
    public void forceDirectory(FileChannel channel, Path directory) throws IOException {
        try (Stream<Path> entries = Files.list(directory)) {
            entries.forEach(entry -> durableEntries.add(dataDirectory.relativize(entry)));
        }
        channel.force(true);
    }

    @Override
    public void forcingMapped(Path file) {
        try {
            byte[] content = Files.readAllBytes(file);
            forcedJournals.computeIfAbsent(dataDirectory.relativize(file), f -> new CopyOnWriteArrayList<>()).add(content);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** How many times the journal of {@code queue} was forced so far. */
    int journalForces(String queue) {
        List<byte[]> versions = forcedJournals.get(journal(queue));
        return versions == null ? 0 : versions.size();
    }

    /** Builds the image in {@code image} with each ack journal as of its last force. */
    void build(Path image) throws IOException {
        build(image, Map.of());
    }

    /**
     * Builds the image, taking the journal of each queue named in {@code journalVersion} as of that
     * force (0 the first) instead of the last: the disk of a crash in which the later msyncs were lost.
     */
    void build(Path image, Map<String, Integer> journalVersion) throws IOException {
        Files.createDirectories(image);
        try (Stream<Path> files = Files.walk(dataDirectory)) {
            for (Path file : (Iterable<Path>) files::iterator) {
                Path relative = dataDirectory.relativize(file);
                Path target = image.resolve(relative.toString());
                String name = file.getFileName().toString();
                if (!relative.toString().isEmpty() && !Files.isDirectory(target.getParent())) {
                    continue; // its directory is not on the disk after the crash
                }
                if (Files.isDirectory(file)) {
                    boolean queueLevel = relative.getNameCount() >= 2 && relative.getNameCount() <= 3
                            && relative.getName(0).toString().equals("queues");
                    if (!queueLevel || durableEntries.contains(relative)) {
                        Files.createDirectories(target);
                    }
                } else if (name.endsWith(".cq4")) {
                    byte[] forced = forcedFiles.get(relative);
                    if (forced != null && durableEntries.contains(relative)) {
                        Files.write(target, forced);
                    }
                } else if (name.equals(AckFiles.JOURNAL) && durableEntries.contains(relative)) {
                    List<byte[]> versions = forcedJournals.get(relative);
                    if (versions == null || versions.isEmpty()) {
                        // Never msynced: as its creation forced it, provided nothing was acked since (the
                        // tests that build an image of a queue this new ack nothing in it), else empty.
                        Files.write(target, forcedFiles.getOrDefault(relative, new byte[0]));
                        continue;
                    }
                    String queue = relative.getName(1).toString();
                    int version = journalVersion.getOrDefault(queue, versions.size() - 1);
                    Files.write(target, versions.get(version));
                } else if ((name.equals(AckFiles.CHECKPOINT) || name.equals("metadata.cq4t")) && durableEntries.contains(relative)) {
                    if (forcedFiles.containsKey(relative)) {
                        Files.copy(file, target);
                    } else {
                        Files.write(target, new byte[0]);
                    }
                } else if (name.equals(RelocationIntent.FILE)) {
                    Files.copy(file, target);
                }
                // .cq4.deleting, temporary files and store.lock: gone or irrelevant after the crash.
            }
        }
    }

    /**
     * Lays what this image's store forced over {@code base}, the image of the disk as an earlier store
     * in the same data directory left it (that store's process was killed; this one reopened its files):
     * each segment file and Chronicle metadata file as of its last force here, if its name is on that
     * disk already or a force of its directory here made it durable; each ack checkpoint already on that
     * disk as it is now (a reopened queue's checkpoints are written whole by their writer: temporary file,
     * fsync, rename, directory fsync); each ack journal as of its last msync here, if it had one. The
     * result is the disk a machine crash would leave now.
     */
    void overlay(Path base) throws IOException {
        for (Map.Entry<Path, byte[]> forced : forcedFiles.entrySet()) {
            Path relative = forced.getKey();
            String name = relative.getFileName().toString();
            Path target = base.resolve(relative.toString());
            if ((name.endsWith(".cq4") || name.equals("metadata.cq4t")) && Files.isDirectory(target.getParent())
                    && (Files.exists(target) || durableEntries.contains(relative))) {
                Files.write(target, forced.getValue());
            }
        }
        for (Map.Entry<Path, List<byte[]>> journal : forcedJournals.entrySet()) {
            Path target = base.resolve(journal.getKey().toString());
            if (Files.exists(target) && !journal.getValue().isEmpty()) {
                Files.write(target, journal.getValue().get(journal.getValue().size() - 1));
            }
        }
        try (Stream<Path> files = Files.walk(dataDirectory)) {
            for (Path file : (Iterable<Path>) files::iterator) {
                Path target = base.resolve(dataDirectory.relativize(file).toString());
                if (file.getFileName().toString().equals(AckFiles.CHECKPOINT) && Files.exists(target)) {
                    Files.copy(file, target, StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
    }

    private static Path journal(String queue) {
        return Path.of("queues", queue, "acks", AckFiles.JOURNAL);
    }
}
