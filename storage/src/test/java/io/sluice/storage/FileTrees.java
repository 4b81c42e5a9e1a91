package io.sluice.storage;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/** Copies of a store's files, for the tests that build the disk a crash leaves or move a store elsewhere, and what they hold. */
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

    /**
     * Every file and directory under {@code root} (relative to it), each file as its size and the SHA-256 of its bytes: two
     * trees are equal when every byte is, and a difference names the files that differ.
     */
    public static Map<Path, String> contents(Path root) throws IOException {
        Map<Path, String> contents = new TreeMap<>();
        try (Stream<Path> files = Files.walk(root)) {
            for (Path file : files.toList()) {
                if (Files.isDirectory(file)) {
                    contents.put(root.relativize(file), "directory");
                } else {
                    byte[] bytes = Files.readAllBytes(file);
                    contents.put(root.relativize(file), bytes.length + " bytes with SHA-256 " + HexFormat.of().formatHex(sha256(bytes)));
                }
            }
        }
        return contents;
    }

    private static byte[] sha256(byte[] bytes) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(bytes);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM has SHA-256", e);
        }
    }
}
