package io.sluice.broker.config;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * The file holding a cluster's shared secret ({@code cluster.secret-file}, docs/security.md "The snapshot
 * port"): the same on every node, at least {@link #MIN_CHARACTERS} characters (surrounding white space is not
 * part of it), and, where the file system has POSIX permissions, readable by its owner alone, as an ssh key
 * must be. {@link #problem} is the configuration check's; {@link #read} is the node's, at start.
 */
public final class ClusterSecretFile {
    static final int MIN_CHARACTERS = 32;
    private static final String HOW = "make one with: head -c 32 /dev/urandom | base64 > FILE && chmod 600 FILE, "
            + "and copy it to every node";

    private ClusterSecretFile() {
    }

    /** What is wrong with the secret file at {@code path} (named by {@code key} in the sentence), or null if nothing. */
    static String problem(String key, String path) {
        Path file = Path.of(path);
        if (!Files.isRegularFile(file) || !Files.isReadable(file)) {
            return key + " " + path + " is not a readable file; " + HOW;
        }
        try {
            PosixFileAttributeView posix = Files.getFileAttributeView(file, PosixFileAttributeView.class);
            if (posix != null) {
                Set<PosixFilePermission> permissions = posix.readAttributes().permissions();
                for (PosixFilePermission p : permissions) {
                    if (p.name().startsWith("GROUP") || p.name().startsWith("OTHERS")) {
                        return key + " " + path + " may be read or changed by users other than its owner (mode "
                                + PosixFilePermissions.toString(permissions) + "); chmod 600 it";
                    }
                }
            }
            if (Files.readString(file, StandardCharsets.UTF_8).strip().length() < MIN_CHARACTERS) {
                return key + " " + path + " holds fewer than " + MIN_CHARACTERS + " characters; " + HOW;
            }
        } catch (IOException | RuntimeException e) {
            return key + " " + path + " cannot be read: " + e.getMessage();
        }
        return null;
    }

    /** The secret the file holds (its content without surrounding white space), as UTF-8 bytes. */
    public static byte[] read(String path) {
        try {
            return Files.readString(Path.of(path), StandardCharsets.UTF_8).strip().getBytes(StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cluster.secret-file " + path + " cannot be read", e);
        }
    }
}
