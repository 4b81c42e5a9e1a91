package io.sluice.broker;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.MalformedInputException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The README, docs/, help texts, scripts and comments stand alone: every Markdown file they name is in this repository
 * (the perf CLI's --help and the bench's comments named a page of workloads that is not; docs/performance.md has them).
 */
class RepositoryStandsAloneTest {
    private static final Path ROOT = Path.of(System.getProperty("user.dir")).getParent();
    /** A Markdown file's name: README.md, performance.md (of docs/performance.md). */
    private static final Pattern MARKDOWN = Pattern.compile("[A-Za-z0-9_.-]+\\.md\\b");
    /** Build output, data and the version control's own files, which are not the repository's text. */
    private static final Set<String> SKIPPED = Set.of("target", ".git", "data", "node_modules");

    @Test
    void everyMarkdownFileNamedIsInTheRepository() throws IOException {
        List<Path> files = new ArrayList<>();
        try (Stream<Path> walk = Files.walk(ROOT)) {
            walk.filter(p -> ROOT.relativize(p).toString().isEmpty() || !skipped(ROOT.relativize(p)))
                    .filter(Files::isRegularFile).forEach(files::add);
        }
        Set<String> present = new TreeSet<>();
        files.stream().map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".md")).forEach(present::add);
        Set<String> missing = new TreeSet<>();
        for (Path file : files) {
            String text;
            try {
                text = Files.readString(file);
            } catch (MalformedInputException binary) {
                continue; // not text: a jar, an image
            }
            Matcher m = MARKDOWN.matcher(text);
            while (m.find()) {
                if (!present.contains(m.group())) {
                    missing.add(ROOT.relativize(file) + ": " + m.group());
                }
            }
        }
        assertEquals(Set.of(), missing, "Markdown files named but not in the repository (of " + present + ")");
    }

    private static boolean skipped(Path relative) {
        for (Path part : relative) {
            if (SKIPPED.contains(part.toString())) {
                return true;
            }
        }
        return false;
    }
}
