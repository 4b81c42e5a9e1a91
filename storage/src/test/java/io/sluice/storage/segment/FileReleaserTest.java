package io.sluice.storage.segment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Deleting in steps: how a file shrinks before its unlink, and that a mapped file is never cut. */
class FileReleaserTest {
    private static final long MIB = 1 << 20;

    @TempDir
    Path dir;

    private final List<String> steps = new ArrayList<>();

    private FileReleaser releaser(long chunkBytes) {
        ExecutorService thread = Executors.newSingleThreadExecutor();
        return new FileReleaser(thread, chunkBytes, (file, bytesLeft) -> {
            synchronized (steps) {
                steps.add(file.getFileName() + "=" + bytesLeft / MIB + "MiB:" + file.toFile().length() / MIB + "MiB");
            }
        });
    }

    @Test
    void cutsALargeFileFromItsEndInChunksThenUnlinksIt() throws IOException {
        Path file = fileOf(dir.resolve("a.cq4.deleting"), 5 * MIB + 12345);
        try (FileReleaser releaser = releaser(MIB)) {
            releaser.delete(file);
        } // close waits for the work handed over
        assertFalse(Files.exists(file));
        // 5 MiB + 12,345 bytes: five cuts of 1 MiB leave 12,345 bytes, which the unlink frees.
        assertEquals(List.of("a.cq4.deleting=4MiB:4MiB", "a.cq4.deleting=3MiB:3MiB", "a.cq4.deleting=2MiB:2MiB",
                "a.cq4.deleting=1MiB:1MiB", "a.cq4.deleting=0MiB:0MiB"), steps);
    }

    @Test
    void unlinksInOneGoWhenChunkingIsOffOrTheFileIsSmall() throws IOException {
        Path big = fileOf(dir.resolve("big"), 3 * MIB);
        Path small = fileOf(dir.resolve("small"), MIB / 2);
        try (FileReleaser off = releaser(0)) {
            off.delete(big);
        }
        try (FileReleaser on = releaser(MIB)) {
            on.delete(small);
        }
        assertFalse(Files.exists(big));
        assertFalse(Files.exists(small));
        assertEquals(List.of(), steps);
    }

    @Test
    void neverCutsAFileThisProcessMaps() throws IOException {
        Path file = fileOf(dir.resolve("mapped.cq4.deleting"), 4 * MIB);
        MappedByteBuffer mapping;
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            mapping = channel.map(FileChannel.MapMode.READ_WRITE, 0, 4 * MIB);
        }
        mapping.put((int) (4 * MIB - 1), (byte) 42);
        assertTrue(MappedFiles.mayBeMapped(file), "/proc/self/maps shows the mapping");
        try (FileReleaser releaser = releaser(MIB)) {
            releaser.delete(file);
        }
        assertFalse(Files.exists(file));
        assertEquals(List.of(), steps);
        // Had the file been cut, this read of its last page would be a SIGBUS (an InternalError).
        assertEquals(42, mapping.get((int) (4 * MIB - 1)));
    }

    @Test
    void cutsEveryLargeFileOfADeletedQueue() throws IOException {
        Path queue = dir.resolve("q.deleted-1");
        fileOf(queue.resolve("segments").resolve("00000001.cq4"), 2 * MIB);
        fileOf(queue.resolve("acks").resolve("acks.journal"), 3 * MIB);
        try (FileReleaser releaser = releaser(MIB)) {
            releaser.deleteTree(queue);
        }
        assertFalse(Files.exists(queue));
        List<String> sorted = new ArrayList<>(steps);
        sorted.sort(null);
        assertEquals(List.of("00000001.cq4=1MiB:1MiB", "acks.journal=1MiB:1MiB", "acks.journal=2MiB:2MiB"), sorted);
    }

    @Test
    void findsAPathInMapsLinesAndAssumesMappedWhenItCannotTell() throws IOException {
        Path maps = dir.resolve("maps");
        Path file = fileOf(dir.resolve("seg.cq4.deleting"), 1);
        Path other = fileOf(dir.resolve("other.cq4"), 1);
        Files.writeString(maps, "7f0000000000-7f0000100000 rw-s 00000000 fd:00 123   /other/file\n"
                + "7f0000100000-7f0000200000 rw-s 00000000 fd:00 456                " + file.toRealPath() + "\n");
        assertTrue(MappedFiles.mayBeMapped(file, maps));
        assertFalse(MappedFiles.mayBeMapped(other, maps));
        // The kernel resolves symbolic links: a path through one must still be recognised.
        Path link = Files.createSymbolicLink(dir.resolve("link"), dir);
        assertTrue(MappedFiles.mayBeMapped(link.resolve("seg.cq4.deleting"), maps));
        assertTrue(MappedFiles.mayBeMapped(file, dir.resolve("no-such-maps")));
        assertTrue(MappedFiles.mayBeMapped(dir.resolve("gone"), maps));
    }

    private static Path fileOf(Path file, long bytes) throws IOException {
        Files.createDirectories(file.getParent());
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength(bytes);
        }
        return file;
    }
}
