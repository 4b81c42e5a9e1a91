package io.sluice.broker.config;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

/**
 * The file holding a cluster's shared secrets ({@code cluster.secret-file}, docs/security.md "The snapshot
 * port"): one secret per line (blank lines ignored), each at least {@link #MIN_CHARACTERS} characters
 * (surrounding white space is not part of it), and, where the file system has POSIX permissions, readable by
 * its owner alone, as an ssh key must be. A node proves the first line and accepts every line, which is how
 * a secret is rotated without a restart (docs/security.md, "Rotating the secret"). {@link #problem} is the
 * configuration check's; {@link #load} is the node's, at every use.
 */
public final class ClusterSecretFile {
    static final int MIN_CHARACTERS = 32;
    private static final String HOW = "make one with: head -c 32 /dev/urandom | base64 > FILE && chmod 600 FILE, "
            + "and copy it to every node";

    private ClusterSecretFile() {
    }

    /** What is wrong with the secret file at {@code path} (named by {@code key} in the sentence), or null if nothing. */
    static String problem(String key, String path) {
        try {
            read(key, path);
            return null;
        } catch (IllegalArgumentException e) {
            return e.getMessage();
        }
    }

    /**
     * The secrets the file holds now, checked as at start (the same sentences), the file read once.
     *
     * @throws IllegalArgumentException naming what is wrong with the file
     */
    public static ClusterSecrets load(String path) {
        return read("cluster.secret-file", path);
    }

    private static ClusterSecrets read(String key, String path) {
        Path file = Path.of(path);
        if (!Files.isRegularFile(file) || !Files.isReadable(file)) {
            throw new IllegalArgumentException(key + " " + path + " is not a readable file; " + HOW);
        }
        String[] lines;
        try {
            PosixFileAttributeView posix = Files.getFileAttributeView(file, PosixFileAttributeView.class);
            if (posix != null) {
                Set<PosixFilePermission> permissions = posix.readAttributes().permissions();
                for (PosixFilePermission p : permissions) {
                    if (p.name().startsWith("GROUP") || p.name().startsWith("OTHERS")) {
                        throw new IllegalArgumentException(key + " " + path + " may be read or changed by users other than its owner (mode "
                                + PosixFilePermissions.toString(permissions) + "); chmod 600 it");
                    }
                }
            }
            lines = Files.readString(file, StandardCharsets.UTF_8).split("\n", -1);
        } catch (IOException | UncheckedIOException e) {
            throw new IllegalArgumentException(key + " " + path + " cannot be read: " + e.getMessage(), e);
        }
        List<byte[]> secrets = new ArrayList<>();
        boolean several = Arrays.stream(lines).filter(line -> !line.isBlank()).count() > 1;
        for (int i = 0; i < lines.length; i++) {
            String secret = lines[i].strip();
            if (secret.isEmpty()) {
                continue;
            }
            if (secret.length() < MIN_CHARACTERS) {
                throw new IllegalArgumentException(key + " " + path + (several ? " line " + (i + 1) : "")
                        + " holds fewer than " + MIN_CHARACTERS + " characters; " + HOW);
            }
            secrets.add(secret.getBytes(StandardCharsets.UTF_8));
        }
        if (secrets.isEmpty()) {
            throw new IllegalArgumentException(key + " " + path + " holds fewer than " + MIN_CHARACTERS + " characters; " + HOW);
        }
        return new ClusterSecrets(secrets.get(0), List.copyOf(secrets));
    }

    /** A cluster's secrets as one node holds them: the one it proves ({@code proving}) and every one it accepts. */
    public record ClusterSecrets(byte[] proving, List<byte[]> accepted) {
    }
}
