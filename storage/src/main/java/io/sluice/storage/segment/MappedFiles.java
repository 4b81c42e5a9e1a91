package io.sluice.storage.segment;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Whether this process maps a file, from {@code /proc/self/maps}. Truncating a file that is mapped
 * turns any later access to the cut pages into SIGBUS, which the JVM reports as an
 * {@link InternalError} at best and a crash at worst; {@link FileReleaser} asks here before it cuts a
 * file down in steps.
 */
final class MappedFiles {
    private static final Path PROC_SELF_MAPS = Path.of("/proc/self/maps");

    private MappedFiles() {
    }

    /**
     * True if a mapping of this process shows {@code file}'s path, and also when that cannot be told
     * (no {@code /proc}, or it cannot be read): the caller must then assume the file is mapped.
     */
    static boolean mayBeMapped(Path file) {
        return mayBeMapped(file, PROC_SELF_MAPS);
    }

    static boolean mayBeMapped(Path file, Path maps) {
        String path;
        try {
            path = file.toRealPath().toString(); // the kernel shows the path with symbolic links resolved
        } catch (IOException | RuntimeException e) {
            return true;
        }
        try (BufferedReader reader = Files.newBufferedReader(maps, StandardCharsets.UTF_8)) {
            for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                // The path is the last field; the kernel appends " (deleted)" once the file is unlinked.
                if (line.endsWith(path) || line.endsWith(path + " (deleted)")) {
                    return true;
                }
            }
            return false;
        } catch (IOException | RuntimeException e) {
            return true;
        }
    }
}
