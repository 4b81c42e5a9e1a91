package io.sluice.storage.ack;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The ack checkpoint's checksum over its header, and the files of the format version before it. */
class AckCheckpointTest {
    @TempDir
    Path dir;

    @Test
    void aCheckpointOfVersionOneStillReads() throws Exception {
        Path fixture = Path.of(AckCheckpointTest.class.getResource("/ack-checkpoint-v1/" + AckFiles.CHECKPOINT).toURI());
        Path file = dir.resolve(AckFiles.CHECKPOINT);
        Files.copy(fixture, file);
        assertEquals(AckCheckpoint.VERSION_WITH_UNCHECKED_HEADER, Files.readAllBytes(file)[7]);

        AckCheckpoint.Loaded loaded = AckCheckpoint.read(file);
        assertEquals(7, loaded.generation());
        AckTracker state = loaded.tracker();
        assertEquals(3, state.highestKnownSegment());
        assertEquals(100 - 71 + 10, state.unackedCount());
        assertTrue(state.isAcked(AckTracker.id(2, 69)));
        assertFalse(state.isAcked(AckTracker.id(2, 70)));
        assertTrue(state.isAcked(AckTracker.id(2, 80)));
        assertEquals(3, state.deliveryCount(AckTracker.id(2, 75)));
        assertFalse(state.isAcked(AckTracker.id(3, 0)));
    }

    /**
     * Every byte of a version-2 header is checked, the generation's among them (it decides whether the journal is
     * replayed): version 1 checked the body alone, so a damaged generation read as another one.
     */
    @Test
    void aFlipInAnyByteOfTheHeaderIsRefusedNamingTheFile() throws Exception {
        AckTracker tracker = new AckTracker();
        tracker.segmentGrew(0, 100);
        tracker.ackRange(0, 9);
        Path file = dir.resolve(AckFiles.CHECKPOINT);
        AckCheckpoint.write(file, 5, tracker);
        byte[] good = Files.readAllBytes(file);
        assertEquals(AckCheckpoint.VERSION, good[7]);
        assertEquals(5, AckCheckpoint.read(file).generation());

        for (int offset = 0; offset < AckCheckpoint.HEADER_BYTES; offset++) {
            byte[] damaged = good.clone();
            damaged[offset] ^= 0x04;
            Files.write(file, damaged);
            CorruptAckStateException e = assertThrows(CorruptAckStateException.class, () -> AckCheckpoint.read(file),
                    "a flip at offset " + offset);
            assertEquals(file, e.file());
            assertTrue(e.getMessage().startsWith("ack state file " + file + " is corrupt at offset "), e.getMessage());
        }
        byte[] generationDamaged = good.clone();
        generationDamaged[15] ^= 0x04;
        Files.write(file, generationDamaged);
        assertTrue(assertThrows(CorruptAckStateException.class, () -> AckCheckpoint.read(file)).getMessage()
                .contains("is corrupt at offset 24: CRC32C"));
    }
}
