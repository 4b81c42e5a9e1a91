package io.sluice.broker;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * Why a file an operator named (--config, --password-file) cannot be read, in words: the file system's exceptions
 * carry the path alone ("cannot be read: /etc/sluice/x" said nothing of why), and reading a directory fails with a
 * bare "Is a directory".
 */
public final class UnreadableFile {
    private UnreadableFile() {
    }

    public static String reason(Path file, IOException e) {
        if (Files.isDirectory(file)) {
            return "it is a directory";
        }
        if (e instanceof NoSuchFileException) {
            return "it does not exist";
        }
        if (e instanceof AccessDeniedException) {
            return "permission denied to user " + System.getProperty("user.name");
        }
        if (e instanceof FileSystemException f && f.getReason() != null) {
            return f.getReason();
        }
        return String.valueOf(e.getMessage());
    }
}
