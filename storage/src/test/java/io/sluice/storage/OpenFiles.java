package io.sluice.storage;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/** What this process holds open (descriptors, from /proc/self/fd) and mapped (from /proc/self/maps) under a directory. */
public final class OpenFiles {
    private OpenFiles() {
    }

    /** The files under {@code directory} (or it) that a descriptor of this process points at. */
    public static List<String> descriptorsUnder(Path directory) {
        try {
            String prefix = directory.toRealPath().toString();
            List<String> found = new ArrayList<>();
            try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
                for (Path fd : (Iterable<Path>) fds::iterator) {
                    try {
                        String target = Files.readSymbolicLink(fd).toString();
                        if (target.startsWith(prefix)) {
                            found.add(target);
                        }
                    } catch (IOException gone) {
                        // closed between the listing and the read
                    }
                }
            }
            return found;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The files under {@code directory} that this process has mapped, each once. */
    public static List<String> mappingsUnder(Path directory) throws IOException {
        String prefix = directory.toRealPath().toString();
        List<String> found = new ArrayList<>();
        for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
            int slash = line.indexOf('/');
            if (slash >= 0 && line.substring(slash).startsWith(prefix)) {
                found.add(line.substring(slash));
            }
        }
        return found.stream().distinct().toList();
    }
}
