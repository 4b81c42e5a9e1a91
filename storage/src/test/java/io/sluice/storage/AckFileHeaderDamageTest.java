package io.sluice.storage;

import io.sluice.storage.ack.AckFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A bit flip in the generation of the ack checkpoint's or the ack journal's header, on the disk a kill -9 leaves (acks
 * in the journal, not yet in a checkpoint). The generation decides whether the journal is replayed, and neither header
 * was under a checksum: a checkpoint generation damaged upwards made recovery ignore the journal, so acknowledged
 * messages were delivered again and delivery counts went back; a journal generation damaged downwards did the same, and
 * either damaged the other way refused the queue as if its checkpoint had been replaced. Now a checkpoint whose header
 * does not check out refuses the queue, naming the file (as a damaged body always did: which acks it held cannot be
 * told), and a journal whose records prove its generation is replayed whatever its header says.
 */
class AckFileHeaderDamageTest {
    private static final int MESSAGES = 20;

    @TempDir
    Path dir;

    private final List<Long> ids = new ArrayList<>();
    private final List<Long> acknowledged = new ArrayList<>();
    private long deliveredTwice;

    private StoreConfig config() {
        return StoreConfig.builder().reservedDiskBytes(64L << 20).build();
    }

    /** The disk a kill -9 leaves: a queue of {@link #MESSAGES}, a few acknowledged and one delivered twice since its checkpoint. */
    private Path killedStore() throws IOException {
        Path live = dir.resolve("live");
        Path image = dir.resolve("image");
        try (MessageStore store = MessageStore.open(live, config())) {
            QueueStore q = store.createQueue("q");
            for (int i = 0; i < MESSAGES; i++) {
                ids.add(q.append(null, ("m" + i).getBytes()));
            }
            for (int i : new int[] {0, 1, 2, 3, 4, 10}) {
                assertEquals(io.sluice.storage.ack.AckResult.NEWLY_ACKED, q.ack(ids.get(i)));
                acknowledged.add(ids.get(i));
            }
            deliveredTwice = ids.get(7);
            q.recordDelivery(deliveredTwice, 1);
            q.recordDelivery(deliveredTwice, 2);
            FileTrees.copy(live, image); // the files as the page cache has them: what a kill -9 leaves
        }
        return image;
    }

    private static Path acks(Path data) {
        return data.resolve("queues").resolve("q").resolve("acks");
    }

    private static long generation(Path file) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "r")) {
            f.seek(8);
            return f.readLong();
        }
    }

    private static void writeGeneration(Path file, long generation) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.seek(8);
            f.writeLong(generation);
        }
    }

    /** One bit of {@code generation} flipped: upwards (a high bit set), or downwards (its lowest set bit cleared). */
    private static long flipped(long generation, boolean upwards) {
        long flipped = upwards ? generation | 1L << 40 : generation & (generation - 1);
        assertEquals(1, Long.bitCount(flipped ^ generation));
        return flipped;
    }

    /** The ids a reader of the reopened queue is given, with their delivery counts. */
    private Map<Long, Integer> delivered(Path data) {
        Map<Long, Integer> delivered = new TreeMap<>();
        try (MessageStore store = MessageStore.open(data, config());
             QueueReader reader = store.queue("q").openReader()) {
            for (StoredMessage m = reader.next(); m != null; m = reader.next()) {
                delivered.put(m.id(), store.queue("q").deliveryCount(m.id()));
            }
        }
        return delivered;
    }

    private Map<Long, Integer> unacknowledged() {
        Map<Long, Integer> expected = new TreeMap<>();
        for (long id : ids) {
            if (!acknowledged.contains(id)) {
                expected.put(id, id == deliveredTwice ? 2 : 0);
            }
        }
        return expected;
    }

    @Test
    void theUndamagedDiskDeliversExactlyTheUnacknowledgedMessages() throws IOException {
        Path image = killedStore();
        assertEquals(unacknowledged(), delivered(image));
    }

    /**
     * Upwards, the journal was ignored: its acks lost, the acknowledged messages delivered again, the delivery counts
     * back to 0. Downwards, the queue was refused too, but as if its checkpoint had been lost or replaced.
     */
    @ParameterizedTest(name = "upwards: {0}")
    @ValueSource(booleans = {true, false})
    void aCheckpointWhoseGenerationIsDamagedRefusesTheQueueNamingTheFile(boolean upwards) throws IOException {
        Path image = killedStore();
        Path checkpoint = acks(image).resolve(AckFiles.CHECKPOINT);
        writeGeneration(checkpoint, flipped(generation(checkpoint), upwards));
        byte[] damaged = Files.readAllBytes(checkpoint);

        RuntimeException refused = assertThrows(RuntimeException.class, () -> delivered(image));
        assertTrue(refused.getMessage().contains("ack state file " + checkpoint.toAbsolutePath() + " is corrupt at offset 24: "
                + "CRC32C"), refused.getMessage());
        assertTrue(refused.getMessage().contains("of its header and body does not match"), refused.getMessage());
        assertArrayEquals(damaged, Files.readAllBytes(checkpoint), "the file is left as it is, for the operator");
    }

    /**
     * Downwards, the journal was ignored: its acks lost, the acknowledged messages delivered again, the delivery counts
     * back to 0. Upwards, the queue was refused as if its checkpoint had been lost or replaced.
     */
    @ParameterizedTest(name = "upwards: {0}")
    @ValueSource(booleans = {true, false})
    void aJournalWhoseGenerationIsDamagedIsReplayed(boolean upwards) throws IOException {
        Path image = killedStore();
        Path journal = acks(image).resolve(AckFiles.JOURNAL);
        long generation = generation(journal);
        assertEquals(generation(acks(image).resolve(AckFiles.CHECKPOINT)), generation, "the journal follows the checkpoint");
        writeGeneration(journal, flipped(generation, upwards));

        assertEquals(unacknowledged(), delivered(image));
        assertEquals(unacknowledged(), delivered(image), "and the state recovered is the one kept");
    }
}
