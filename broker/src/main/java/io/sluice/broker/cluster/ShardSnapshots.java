package io.sluice.broker.cluster;

import io.sluice.broker.queue.QueueManager;
import io.sluice.storage.Directories;
import io.sluice.storage.files.AtomicFiles;
import io.sluice.storage.snapshot.SnapshotFiles;
import org.apache.ratis.server.protocol.TermIndex;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.IntSupplier;
import java.util.stream.Stream;

/**
 * The snapshots of this node's queues (rule R4 of docs/replication.md), in {@code <broker.data-dir>/snapshots},
 * on the file system of the store so that sealed segments are hard links:
 *
 * <pre>
 * snapshots/&lt;term&gt;_&lt;index&gt;/queues/&lt;name&gt;/...   each queue's files ({@code MessageStore.snapshotTo})
 * snapshots/&lt;term&gt;_&lt;index&gt;/queue-settings/      the queues' settings files
 * snapshots/&lt;term&gt;_&lt;index&gt;/term-index           "term index": the last entry the snapshot holds
 * snapshots/&lt;term&gt;_&lt;index&gt;/entry-level          the cluster's entry level as of that entry, if one was finalized (R12)
 * snapshots/&lt;term&gt;_&lt;index&gt;/cluster-settings     the settings every node must share, if the cluster recorded them (R2)
 * </pre>
 *
 * A snapshot is written under {@code .tmp}, forced, and renamed into place: a directory without the suffix is
 * complete and durable. The newest {@link #KEEP} are kept, so that a follower still fetching the one before the
 * newest finishes (a deleted snapshot's open files stay readable; one not opened yet fails the fetch, which the
 * follower retries). Threads: {@link #take} on the state machine thread, {@link #latest} on any.
 */
final class ShardSnapshots {
    private static final Logger LOG = LoggerFactory.getLogger(ShardSnapshots.class);
    static final String TERM_INDEX_FILE = "term-index";
    static final String SETTINGS = "queue-settings";
    private static final String TEMPORARY = ".tmp";
    private static final int KEEP = 2;

    /** A complete snapshot: the last entry it holds and its directory. */
    record Snapshot(TermIndex termIndex, Path directory) {
    }

    private final Path directory;
    private final QueueManager queues;
    /** The finalized entry level as applied (0: none), read on the state machine thread with the snapshot's index. */
    private final IntSupplier entryLevel;
    /** The cluster's settings as applied (null: none), read as the level is (rule R2, {@link ClusterSettings}). */
    private final java.util.function.Supplier<ClusterSettings.Values> clusterSettings;

    ShardSnapshots(Path directory, QueueManager queues) throws IOException {
        this(directory, queues, () -> 0, () -> null);
    }

    ShardSnapshots(Path directory, QueueManager queues, IntSupplier entryLevel, java.util.function.Supplier<ClusterSettings.Values> settings)
            throws IOException {
        this.directory = directory;
        this.queues = queues;
        this.entryLevel = entryLevel;
        this.clusterSettings = settings;
        Files.createDirectories(directory);
        for (Path unfinished : list(p -> p.getFileName().toString().endsWith(TEMPORARY))) {
            Directories.deleteRecursively(unfinished); // a snapshot a crash interrupted
        }
    }

    /**
     * Writes the snapshot of every queue at {@code last}. The caller guarantees that no entry is applied
     * meanwhile (Ratis's state machine thread, with every earlier entry's queue work done), so the queues are
     * copied as of one index; each queue stands still only for its own copy (MessageStore.snapshotTo).
     */
    Snapshot take(TermIndex last) throws IOException {
        Path done = directory.resolve(name(last));
        if (Files.exists(done)) {
            return new Snapshot(last, done); // taken before a crash: the same entries, the same state
        }
        Path temporary = directory.resolve(name(last) + TEMPORARY);
        if (Files.exists(temporary)) {
            Directories.deleteRecursively(temporary);
        }
        long started = System.nanoTime();
        List<String> copied = queues.store().snapshotTo(temporary);
        Path settings = Files.createDirectories(temporary.resolve(SETTINGS));
        for (String queue : copied) {
            Path file = queues.settingsDirectory().resolve(queue + ".json");
            if (Files.exists(file)) {
                Files.copy(file, settings.resolve(file.getFileName()));
            }
        }
        Files.writeString(temporary.resolve(TERM_INDEX_FILE), last.getTerm() + " " + last.getIndex() + "\n", StandardCharsets.UTF_8);
        SnapshotFiles.force(settings);
        SnapshotFiles.force(temporary.resolve(TERM_INDEX_FILE));
        int level = entryLevel.getAsInt();
        if (level > 0) { // a follower that installs this learns the level with it (R12), the level entry may be purged
            Files.writeString(temporary.resolve(FinalizedEntryLevel.FILE), level + "\n", StandardCharsets.UTF_8);
            SnapshotFiles.force(temporary.resolve(FinalizedEntryLevel.FILE));
        }
        ClusterSettings.Values recorded = clusterSettings.get();
        if (recorded != null) { // as the level: a node added after the settings entry was purged checks its own with it (R2)
            Files.writeString(temporary.resolve(ClusterSettings.FILE), recorded.text(), StandardCharsets.UTF_8);
            SnapshotFiles.force(temporary.resolve(ClusterSettings.FILE));
        }
        AtomicFiles.fsyncDirectory(temporary);
        Files.move(temporary, done, StandardCopyOption.ATOMIC_MOVE);
        AtomicFiles.fsyncDirectory(directory);
        LOG.info("Snapshot of {} queues through index {} (term {}) written to {} in {} ms.", copied.size(), last.getIndex(),
                last.getTerm(), done, (System.nanoTime() - started) / 1_000_000);
        List<Snapshot> all = all();
        for (int i = 0; i < all.size() - KEEP; i++) {
            Directories.deleteRecursively(all.get(i).directory());
        }
        return new Snapshot(last, done);
    }

    /** The newest complete snapshot, or null. */
    Snapshot latest() throws IOException {
        List<Snapshot> all = all();
        return all.isEmpty() ? null : all.get(all.size() - 1);
    }

    /** Complete snapshots, oldest first. */
    private List<Snapshot> all() throws IOException {
        List<Snapshot> all = new ArrayList<>();
        for (Path dir : list(p -> !p.getFileName().toString().endsWith(TEMPORARY))) {
            TermIndex termIndex = readTermIndex(dir);
            if (termIndex != null) {
                all.add(new Snapshot(termIndex, dir));
            }
        }
        all.sort(Comparator.comparingLong(s -> s.termIndex().getIndex()));
        return all;
    }

    private List<Path> list(java.util.function.Predicate<Path> filter) throws IOException {
        try (Stream<Path> entries = Files.list(directory)) {
            return entries.filter(Files::isDirectory).filter(filter).toList();
        }
    }

    /** The term and index a snapshot directory's {@link #TERM_INDEX_FILE} names, or null if it has none. */
    static TermIndex readTermIndex(Path snapshotDirectory) throws IOException {
        Path file = snapshotDirectory.resolve(TERM_INDEX_FILE);
        if (!Files.exists(file)) {
            return null;
        }
        String[] parts = Files.readString(file, StandardCharsets.UTF_8).trim().split(" ");
        return TermIndex.valueOf(Long.parseLong(parts[0]), Long.parseLong(parts[1]));
    }

    private static String name(TermIndex last) {
        return last.getTerm() + "_" + last.getIndex();
    }
}
