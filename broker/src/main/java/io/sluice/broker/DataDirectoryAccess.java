package io.sluice.broker;

import java.io.IOException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * Checks, before the store opens, that the broker will be able to create and write its data directory,
 * so that the operator learns why not: a file in its place, a read-only file system, or the user the
 * broker runs as lacking write permission (with the owner and mode of the directory that refuses).
 * The store itself reports only that it could not open the directory.
 */
final class DataDirectoryAccess {
    private DataDirectoryAccess() {
    }

    /** Null if {@code dataDirectory} exists as a writable directory or can be created; else why not. */
    static String problem(Path dataDirectory) {
        Path dir = dataDirectory.toAbsolutePath().normalize();
        if (Files.exists(dir)) {
            if (!Files.isDirectory(dir)) {
                return "data directory " + dataDirectory + " is " + (Files.isRegularFile(dir) ? "a file" : "something else")
                        + ", not a directory";
            }
            String refusal = writeRefusal(dir);
            return refusal == null ? null : "data directory " + dataDirectory + " is not usable: " + refusal;
        }
        Path existing = dir.getParent();
        while (existing != null && !Files.exists(existing)) {
            existing = existing.getParent();
        }
        if (existing == null) {
            return null;
        }
        if (!Files.isDirectory(existing)) {
            return "data directory " + dataDirectory + " cannot be created: " + existing + " is a file, not a directory";
        }
        String refusal = writeRefusal(existing);
        return refusal == null ? null : "data directory " + dataDirectory + " cannot be created: " + refusal;
    }

    /** Why this process cannot create entries in {@code dir}, or null if it can. */
    private static String writeRefusal(Path dir) {
        try {
            FileStore store = Files.getFileStore(dir);
            if (store.isReadOnly()) {
                return dir + " is on a read-only file system";
            }
        } catch (IOException e) {
            return "the file system of " + dir + " cannot be examined: " + e.getMessage();
        }
        if (Files.isWritable(dir) && Files.isExecutable(dir)) {
            return null;
        }
        return "permission denied for user " + System.getProperty("user.name") + " to write to " + dir + ownerAndMode(dir);
    }

    private static String ownerAndMode(Path dir) {
        try {
            PosixFileAttributes attributes = Files.readAttributes(dir, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            return " (owner " + attributes.owner().getName() + ", " + PosixFilePermissions.toString(attributes.permissions()) + ")";
        } catch (IOException | UnsupportedOperationException e) {
            return "";
        }
    }
}
