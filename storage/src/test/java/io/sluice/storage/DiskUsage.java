package io.sluice.storage;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/** Allocated disk, as {@code stat} counts it (blocks actually held; a sparse file's holes cost nothing). */
public final class DiskUsage {
    private DiskUsage() {
    }

    /** Allocated bytes of every regular file under {@code directory}. */
    public static long allocatedBytesUnder(Path directory) {
        long total = 0;
        try (Stream<Path> files = Files.walk(directory)) {
            for (Path file : (Iterable<Path>) files.filter(Files::isRegularFile)::iterator) {
                total += allocatedBytes(file);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return total;
    }

    /** {@code stat}'s block count of {@code file} times its block unit. */
    public static long allocatedBytes(Path file) {
        try {
            Process stat = new ProcessBuilder("stat", "--format=%b %B", file.toString()).redirectErrorStream(true).start();
            String out = new String(stat.getInputStream().readAllBytes(), StandardCharsets.US_ASCII).trim();
            if (!stat.waitFor(10, TimeUnit.SECONDS) || stat.exitValue() != 0) {
                throw new IllegalStateException("stat of " + file + " failed: " + out);
            }
            String[] fields = out.split(" ");
            return Long.parseLong(fields[0]) * Long.parseLong(fields[1]);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while running stat on " + file, e);
        }
    }

    /** One line per file: size and allocated bytes, for failure messages. */
    public static String describe(Path directory) {
        StringBuilder text = new StringBuilder();
        try (Stream<Path> files = Files.walk(directory)) {
            for (Path file : (Iterable<Path>) files.filter(Files::isRegularFile).sorted()::iterator) {
                text.append(directory.relativize(file)).append(' ').append(Files.size(file)).append(" B size, ")
                        .append(allocatedBytes(file)).append(" B allocated; ");
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return text.toString();
    }
}
