package io.sluice.storage;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.stream.Stream;

/** Copies of a store's files, for the tests that build the disk a crash leaves or move a store elsewhere. */
public final class FileTrees {
    private FileTrees() {
    }

    /**
     * Copies {@code from}'s files into {@code to}, replacing what is there (the files' content as the page cache has it),
     * but for lock files, which belong to the process holding them.
     */
    public static void copy(Path from, Path to) throws IOException {
        try (Stream<Path> files = Files.walk(from)) {
            for (Path source : files.toList()) {
                Path target = to.resolve(from.relativize(source).toString());
                if (Files.isDirectory(source)) {
                    Files.createDirectories(target);
                } else if (!source.getFileName().toString().endsWith(".lock")) {
                    try {
                        Files.copy(source, target, StandardCopyOption.REPLACE_EXISTING);
                    } catch (NoSuchFileException gone) {
                        // removed while the walk ran (a reclaimed segment's tally): not in this copy
                    }
                }
            }
        }
    }
}
