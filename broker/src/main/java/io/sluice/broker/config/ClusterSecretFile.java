package io.sluice.broker.config;

import io.sluice.broker.UnreadableFile;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
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
 * its owner alone, as an ssh key must be; printable UTF-8 text (a tab, a NUL or a byte-order mark would be part of one
 * node's secret and not of another's), at most {@link #MAX_BYTES}. A node proves the first line and accepts every line, which is how
 * a secret is rotated without a restart (docs/security.md, "Rotating the secret"). {@link #problem} is the
 * configuration check's; {@link #load} is the node's, at every use.
 */
public final class ClusterSecretFile {
    static final int MIN_CHARACTERS = 32;
    static final int MAX_BYTES = 65536;
    static final String HOW = "make one with: head -c 32 /dev/urandom | base64 > FILE && chmod 600 FILE, "
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
        String lead = key + " " + path;
        if (!Files.exists(file)) {
            throw new IllegalArgumentException(lead + " does not exist; " + HOW);
        }
        if (Files.isDirectory(file)) {
            throw new IllegalArgumentException(lead + " is a directory, not a file; " + HOW);
        }
        if (!Files.isRegularFile(file)) {
            throw new IllegalArgumentException(lead + " is not a regular file (a device or a pipe?); " + HOW);
        }
        byte[] bytes;
        try {
            PosixFileAttributeView posix = Files.getFileAttributeView(file, PosixFileAttributeView.class);
            if (posix != null) {
                Set<PosixFilePermission> permissions = posix.readAttributes().permissions();
                for (PosixFilePermission p : permissions) {
                    if (p.name().startsWith("GROUP") || p.name().startsWith("OTHERS")) {
                        throw new IllegalArgumentException(lead + " may be read or changed by users other than its owner (mode "
                                + PosixFilePermissions.toString(permissions) + "); chmod 600 it");
                    }
                }
            }
            long size = Files.size(file);
            if (size > MAX_BYTES) {
                throw new IllegalArgumentException(lead + " is " + size + " bytes; a secret file holds a few lines of at most "
                        + MAX_BYTES + " bytes in all: is it the right file? " + HOW);
            }
            bytes = Files.readAllBytes(file);
        } catch (IOException | UncheckedIOException e) {
            throw new IllegalArgumentException(cannotRead(key, path, e), e);
        }
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            throw new IllegalArgumentException(lead + " is not UTF-8 text (raw random bytes?); a secret is printable text: "
                    + "write it as base64. " + HOW);
        }
        if (text.isEmpty()) {
            throw new IllegalArgumentException(lead + " is empty; " + HOW);
        }
        String[] lines = text.split("\n", -1);
        List<byte[]> secrets = new ArrayList<>();
        boolean several = Arrays.stream(lines).filter(line -> !line.isBlank()).count() > 1;
        for (int i = 0; i < lines.length; i++) {
            String secret = lines[i].strip();
            if (secret.isEmpty()) {
                continue;
            }
            String where = lead + " line " + (i + 1);
            int unprintable = firstUnprintable(secret);
            if (unprintable >= 0) {
                // The character's code and place, never the line: the rest of it is the secret.
                throw new IllegalArgumentException(where + " holds an unprintable character (U+" + String.format("%04X",
                        secret.codePointAt(unprintable)) + ") at character " + (unprintable + 1) + "; a secret is printable text"
                        + " such as base64 (an editor's byte-order mark or a tab counts too). " + HOW);
            }
            if (secret.length() < MIN_CHARACTERS) {
                throw new IllegalArgumentException((several ? where : lead) + " holds " + secret.length() + " characters, fewer"
                        + " than " + MIN_CHARACTERS + "; " + HOW);
            }
            secrets.add(secret.getBytes(StandardCharsets.UTF_8));
        }
        if (secrets.isEmpty()) {
            throw new IllegalArgumentException(lead + " holds only blank lines; " + HOW);
        }
        return new ClusterSecrets(secrets.get(0), List.copyOf(secrets));
    }

    /** The index of the first character of {@code secret} that is a control or format character (a tab, NUL, a BOM), or -1. */
    private static int firstUnprintable(String secret) {
        for (int i = 0; i < secret.length(); i++) {
            char c = secret.charAt(i);
            if (Character.isISOControl(c) || Character.getType(c) == Character.FORMAT) {
                return i;
            }
        }
        return -1;
    }

    /** Why the file could not be read, in words: the file system's exception names the path alone. */
    static String cannotRead(String key, String path, Exception e) {
        String reason = e instanceof IOException io ? UnreadableFile.reason(Path.of(path), io) : String.valueOf(e.getMessage());
        String remedy = e instanceof AccessDeniedException ? "give the broker's user read access (chown it, chmod 600)" : HOW;
        return key + " " + path + " cannot be read: " + reason + "; " + remedy;
    }

    /** A cluster's secrets as one node holds them: the one it proves ({@code proving}) and every one it accepts. */
    public record ClusterSecrets(byte[] proving, List<byte[]> accepted) {
    }
}
