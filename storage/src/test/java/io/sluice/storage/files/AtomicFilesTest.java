package io.sluice.storage.files;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

class AtomicFilesTest {
    @TempDir
    Path dir;

    private static AtomicFiles.Content text(String s) {
        return channel -> AtomicFiles.writeFully(channel, ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void aWriteThatFailsLeavesTheOldFileWholeAndTheNextReplacesItsLeftover() throws Exception {
        Path file = dir.resolve("state");
        AtomicFiles.write(file, text("old"));
        assertThrows(IOException.class, () -> AtomicFiles.write(file, channel -> {
            AtomicFiles.writeFully(channel, ByteBuffer.wrap("half".getBytes(StandardCharsets.UTF_8)));
            throw new IOException("the disk went away");
        }));
        assertEquals("old", Files.readString(file), "the file is the complete old one");

        AtomicFiles.write(file, text("new"));
        assertEquals("new", Files.readString(file));
        assertFalse(Files.exists(AtomicFiles.temporary(file)), "the leftover was replaced, then renamed into place");
    }
}
