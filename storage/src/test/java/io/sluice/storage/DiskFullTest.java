package io.sluice.storage;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.sluice.storage.Await.until;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * A real full disk: a 64 MiB tmpfs mounted for the test (needs root; skipped loudly otherwise).
 * Appends stop at the reserve with {@link StorageFullException}; then a filler file takes every
 * block left, and acks (stores into the memory-mapped ack journal) and reclaim must still work, with
 * no SIGBUS; once space returns, appends work again.
 */
@Tag("slow")
class DiskFullTest {
    private static final long FILESYSTEM_BYTES = 64L << 20;
    private static final long RESERVED_BYTES = 16L << 20;
    private static final int PAYLOAD_BYTES = 4000;

    @TempDir
    Path temp;
    private Path mountPoint;
    private boolean mounted;
    private MessageStore store;

    @BeforeEach
    void mountSmallFilesystem() throws Exception {
        mountPoint = Files.createDirectory(temp.resolve("tmpfs"));
        String why;
        try {
            ProcessResult r = run("mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", mountPoint.toString());
            why = r.status == 0 ? null : "mount exited with " + r.status + ": " + r.output;
        } catch (IOException e) {
            why = "cannot run mount: " + e.getMessage();
        }
        if (why != null) {
            String reason = "DiskFullTest SKIPPED: needs a 64 MiB tmpfs mounted at " + mountPoint + " (run as root): " + why;
            System.err.println(reason);
            Assumptions.abort(reason);
        }
        mounted = true;
    }

    @AfterEach
    void unmount() throws Exception {
        if (store != null) {
            store.close();
        }
        if (mounted) {
            ProcessResult r = run("umount", mountPoint.toString());
            if (r.status != 0) {
                System.err.println("umount " + mountPoint + " failed (" + r.output + "); detaching lazily");
                run("umount", "-l", mountPoint.toString());
            }
        }
    }

    private static byte[] payload(long i) {
        byte[] b = new byte[PAYLOAD_BYTES];
        for (int k = 0; k < b.length; k++) {
            b[k] = (byte) (i * 31 + k);
        }
        return b;
    }

    @Test
    void shouldRefuseAppendsAtTheReserveAndKeepAckingAndReclaimingOnAFullDisk() throws Exception {
        Path data = mountPoint.resolve("data");
        Files.createDirectories(data);
        FileStore fileStore = Files.getFileStore(data);
        assertEquals(FILESYSTEM_BYTES, fileStore.getTotalSpace(), "the data directory must be on the 64 MiB tmpfs");
        store = MessageStore.open(data, StoreConfig.builder()
                .durability(DurabilityMode.ALWAYS)
                .segmentBytes(4L << 20)
                .maxMessageBytes(64 << 10)
                .reservedDiskBytes(RESERVED_BYTES)
                .ackJournalBytes(1 << 20)
                .build());
        DiskSpaceGuard guard = store.diskGuard();
        guard.refresh();
        assertTrue(guard.freeBytes() <= FILESYSTEM_BYTES && Math.abs(guard.freeBytes() - fileStore.getUsableSpace()) < (1 << 20),
                "the guard must see the tmpfs: guard " + guard.freeBytes() + ", filesystem " + fileStore.getUsableSpace());
        QueueStore queue = store.createQueue("q");

        List<Long> ids = new ArrayList<>();
        StorageFullException full = null;
        for (int i = 0; i < 100_000 && full == null; i++) {
            try {
                ids.add(queue.append(null, payload(i)));
            } catch (StorageFullException e) {
                full = e;
            }
        }
        assertNotNull(full, "64 MiB cannot take 100,000 messages of 4,000 bytes");
        String message = full.getMessage();
        assertTrue(message.contains("free disk space") && message.contains("reserved margin of " + RESERVED_BYTES),
                "the refusal must name free space and the margin: " + message);
        long appended = ids.size();
        assertTrue(appended * PAYLOAD_BYTES > 30L << 20, "appends must go on until about the reserve, stopped after " + appended);
        assertTrue(fileStore.getUsableSpace() > RESERVED_BYTES / 2, "the reserve must be left free: " + fileStore.getUsableSpace());
        until("everything appended is durable", () -> queue.durableIndex() >= ids.get(ids.size() - 1));

        // Take the reserve too: from here on any write that needs a new block fails.
        Path filler = mountPoint.resolve("filler");
        fillDisk(filler);
        assertThrows(StorageFullException.class, () -> queue.append(null, payload(-1)));

        try (QueueReader reader = queue.openReader()) {
            int n = 0;
            for (StoredMessage m = reader.next(); m != null; m = reader.next(), n++) {
                assertEquals((long) ids.get(n), m.id());
                assertArrayEquals(payload(n), m.payloadBytes(), "payload of message " + n);
            }
            assertEquals(appended, n, "every message appended before the disk filled must be readable");
        }
        assertEquals(0, queue.corruptRecords());

        // Acks are stores into the mapped journal; on a disk with no free block they must neither
        // fail nor fault while the journal has room, because its pages are written zeros, not holes:
        // 2,500 records of 21 bytes touch every page of the journal's initial 64 KiB.
        for (long id : ids.subList(0, 2500)) {
            assertEquals(io.sluice.storage.ack.AckResult.NEWLY_ACKED, queue.ack(id));
        }
        // Growing the journal or rotating it (a checkpoint) needs new blocks, which is what the reserve
        // is for; the filler took the reserve too, so give that back.
        Files.delete(filler);
        // Near the reserve the journal grows only while the guard grants it room above the reserve,
        // and rotates otherwise (AckJournalGrowthTest): either way no ack fails.
        long freeBeforeAcks = fileStore.getUsableSpace();
        for (long id : ids.subList(2500, ids.size())) {
            assertEquals(io.sluice.storage.ack.AckResult.NEWLY_ACKED, queue.ack(id));
        }
        assertEquals(0, queue.unackedMessages());
        assertTrue(usable(fileStore) >= RESERVED_BYTES - (1 << 20), "the acks left the reserve alone: " + usable(fileStore));
        until("sealed segments reclaimed", () -> queue.segmentNumbers().size() == 1, 30, TimeUnit.SECONDS);
        until("reclaimed space visible", () -> usable(fileStore) > freeBeforeAcks + RESERVED_BYTES + (4L << 20),
                30, TimeUnit.SECONDS);

        long afterReclaim = queue.append(null, payload(1_000_001));
        assertArrayEquals(payload(1_000_001), queue.read(afterReclaim).payloadBytes(), "append once reclaim freed space");

        until("appends after the disk was full are durable", () -> queue.durableIndex() >= afterReclaim);
    }

    private static long usable(FileStore fileStore) {
        try {
            return fileStore.getUsableSpace();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** Writes {@code file} until the filesystem has no block left. */
    private static void fillDisk(Path file) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ByteBuffer chunk = ByteBuffer.allocate(1 << 20);
            int size = chunk.capacity();
            while (size >= 1) {
                chunk.clear().limit(size);
                try {
                    while (chunk.hasRemaining()) {
                        channel.write(chunk);
                    }
                } catch (IOException noSpace) {
                    size /= 2;
                }
            }
        }
        if (Files.getFileStore(file).getUsableSpace() > 0) {
            fail("the filler left " + Files.getFileStore(file).getUsableSpace() + " bytes free");
        }
    }

    private record ProcessResult(int status, String output) {
    }

    private static ProcessResult run(String... command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            return new ProcessResult(-1, "timed out");
        }
        return new ProcessResult(p.waitFor(), output);
    }
}
