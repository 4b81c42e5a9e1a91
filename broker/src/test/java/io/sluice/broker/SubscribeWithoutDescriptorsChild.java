package io.sluice.broker;

import io.sluice.broker.config.ConfigLoader;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Child of {@link SubscribeWithoutDescriptorsTest}: a broker whose process can be made to run out of
 * file descriptors on command. Prints {@code port N} once it listens; then reads commands on stdin:
 * {@code hog} takes every descriptor left (prints {@code hogged N}), {@code release} gives them back
 * (prints {@code released}), {@code stop} closes the broker and exits.
 */
public final class SubscribeWithoutDescriptorsChild {
    private SubscribeWithoutDescriptorsChild() {
    }

    /**
     * A broker run from its jar loads its classes from a file it holds open; this one loads them from
     * the build's class directories, a file each, which a process without descriptors cannot open. So
     * before the hog every class there is loaded (not initialised), and the broker meets the hog as
     * it would in production.
     */
    private static void loadEveryClassOfTheClassDirectories() throws IOException {
        ClassLoader loader = SubscribeWithoutDescriptorsChild.class.getClassLoader();
        for (String entry : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
            Path root = Path.of(entry);
            if (!Files.isDirectory(root)) {
                continue;
            }
            try (var files = Files.walk(root)) {
                for (Path file : (Iterable<Path>) files::iterator) {
                    String name = root.relativize(file).toString();
                    if (name.endsWith(".class") && !name.endsWith("module-info.class")) {
                        try {
                            Class.forName(name.substring(0, name.length() - ".class".length()).replace('/', '.'), false, loader);
                        } catch (ClassNotFoundException | LinkageError e) {
                            // a class that cannot load here (a test's optional dependency) is not the broker's
                        }
                    }
                }
            }
        }
    }

    public static void main(String[] args) throws Exception {
        Broker broker = Broker.start(new ConfigLoader().load(null, Map.of("broker.data-dir", args[0], "broker.port", "0",
                "metrics.enabled", "false", "storage.reserved-disk-bytes", "67108864")));
        System.out.println("port " + broker.port());
        List<FileChannel> hog = new ArrayList<>();
        BufferedReader commands = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        for (String command = commands.readLine(); command != null; command = commands.readLine()) {
            switch (command) {
                case "hog" -> {
                    loadEveryClassOfTheClassDirectories();
                    try {
                        while (true) {
                            hog.add(FileChannel.open(Path.of("/dev/null"), StandardOpenOption.READ));
                        }
                    } catch (IOException exhausted) {
                        System.out.println("hogged " + hog.size());
                    }
                }
                case "release" -> {
                    for (FileChannel f : hog) {
                        f.close();
                    }
                    hog.clear();
                    System.out.println("released");
                }
                case "stop" -> {
                    broker.close();
                    System.out.println("stopped");
                    System.exit(0);
                }
                default -> System.out.println("unknown command " + command);
            }
        }
        System.exit(1);
    }
}
