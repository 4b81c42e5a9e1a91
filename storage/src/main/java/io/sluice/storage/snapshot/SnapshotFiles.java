package io.sluice.storage.snapshot;

import io.sluice.storage.files.AtomicFiles;
import io.sluice.storage.durability.ForcedMark;
import io.sluice.storage.segment.SegmentFiles;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * The file work of a store snapshot (docs/storage.md, "Snapshots"): a copy of one queue's directory in
 * which the sealed segments are hard links and everything still written is copied, and the forces that
 * make a finished snapshot durable. Stateless; the caller holds whatever keeps the files still.
 */
public final class SnapshotFiles {
    private SnapshotFiles() {
    }

    /**
     * Copies the queue directory {@code queueDirectory} into {@code target} (which must not exist). A
     * segment numbered below {@code writeSegment} is sealed, so immutable until reclaim deletes it, and
     * becomes a hard link; the segment being written, Chronicle's metadata, the ack checkpoint and journal
     * and the producer checkpoint are copied. Files left by an interrupted write ({@code .tmp}) or delete
     * ({@code .deleting}) stay behind: recovery would discard them anyway. Nothing is forced here
     * ({@link #force}). The caller must keep every file of the queue still meanwhile (the queue's lock).
     */
    public static void copyQueue(Path queueDirectory, Path target, int writeSegment) throws IOException {
        Files.createDirectories(target);
        List<Path> entries;
        // Files.list reads no attributes: a .tmp renamed or a .deleting unlinked meanwhile (their threads take no
        // queue lock) is skipped by its name below, never touched, where Files.walk would fail on it.
        try (Stream<Path> list = Files.list(queueDirectory)) {
            entries = list.sorted().toList();
        }
        for (Path entry : entries) {
            String name = entry.getFileName().toString();
            // The forced mark is the source's: written without the queue's lock, it may name records the copy lacks.
            if (name.endsWith(".tmp") || name.endsWith(SegmentFiles.DELETING_SUFFIX) || name.equals(ForcedMark.FILE)) {
                continue;
            }
            Path copy = target.resolve(name);
            int segment = SegmentFiles.segmentOf(name);
            if (Files.isDirectory(entry)) {
                copyQueue(entry, copy, writeSegment);
            } else if (segment >= 0 && segment < writeSegment) {
                Files.createLink(copy, entry);
            } else {
                Files.copy(entry, copy);
            }
        }
    }

    /** Forces every file under {@code root}, then every directory from the deepest up, {@code root} included. */
    public static void force(Path root) throws IOException {
        List<Path> directories = new ArrayList<>();
        try (Stream<Path> walk = Files.walk(root)) {
            for (Path path : (Iterable<Path>) walk::iterator) {
                if (Files.isDirectory(path)) {
                    directories.add(path);
                } else {
                    try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
                        channel.force(true);
                    }
                }
            }
        }
        for (int i = directories.size() - 1; i >= 0; i--) {
            AtomicFiles.fsyncDirectory(directories.get(i));
        }
    }
}
