package io.sluice.storage.files;

import io.sluice.storage.DurabilityMode;
import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StorageFilesExhaustedException;
import io.sluice.storage.StoreConfig;

import java.io.FileInputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Run in a child JVM under a lowered open-file limit by {@link SegmentEntryFileLimitTest}: fills a
 * queue's first segment, takes every free descriptor but {@code free} (held open on /dev/null), and
 * appends the record that moves into the next segment, then {@code again} more small appends at once.
 * Prints one line per append ({@code append <sequence> ok <id>}, or {@code append <sequence> refused
 * <message> cause <class of the cause>}) and {@code again took <ms>}, then gives the descriptors back,
 * closes the store and prints {@code done}.
 */
public final class SegmentEntryWithoutDescriptors {
    static final long PRODUCER = 7;
    static final int FILLING_RECORDS = 4;
    static final int RECORD_BYTES = 250_000;
    /** The appends after the refused one stay in its segment, so that each could try the same open again. */
    static final int AGAIN_RECORD_BYTES = 100;

    private SegmentEntryWithoutDescriptors() {
    }

    static StoreConfig config() {
        return StoreConfig.builder().durability(DurabilityMode.ALWAYS).segmentBytes(StoreConfig.MIN_SEGMENT_BYTES)
                .maxMessageBytes((int) (StoreConfig.MIN_SEGMENT_BYTES / 4)).reservedDiskBytes(64L << 20).build();
    }

    public static void main(String[] args) throws Exception {
        Path dataDir = Path.of(args[0]);
        int free = Integer.parseInt(args[1]);
        int again = Integer.parseInt(args[2]);
        loadStorageClasses();
        List<FileInputStream> taken = new ArrayList<>();
        try (MessageStore store = MessageStore.open(dataDir, config())) {
            QueueStore queue = store.createQueue("q");
            long sequence = 0;
            for (int i = 0; i < FILLING_RECORDS; i++) {
                append(queue, ++sequence, RECORD_BYTES, true);
            }
            takeAllDescriptorsBut(free, taken);
            append(queue, ++sequence, RECORD_BYTES, false);
            long started = System.nanoTime();
            for (int i = 0; i < again; i++) {
                append(queue, ++sequence, AGAIN_RECORD_BYTES, false);
            }
            System.out.println("again took " + (System.nanoTime() - started) / 1_000_000);
            for (FileInputStream in : taken) {
                in.close();
            }
            taken.clear();
        }
        System.out.println("done");
    }

    private static void append(QueueStore queue, long sequence, int bytes, boolean durably) throws Exception {
        StringBuilder line = new StringBuilder("append ").append(sequence);
        try {
            long id = queue.append(PRODUCER, sequence, null, ByteBuffer.allocate(bytes));
            if (durably) {
                queue.whenDurable(id).get(10, TimeUnit.SECONDS);
            }
            line.append(" ok ").append(id);
        } catch (StorageFilesExhaustedException e) {
            line.append(" refused ").append(e.getMessage()).append(" cause ").append(e.getCause().getClass().getName());
        }
        System.out.println(line);
    }

    /**
     * Loading a class from a directory of the class path takes a descriptor, which there will not be: so
     * every class of the storage module is loaded now (the JDK's and the jars' come from files held open).
     */
    private static void loadStorageClasses() throws Exception {
        Path classes = Path.of(QueueStore.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        try (Stream<Path> files = Files.walk(classes)) {
            for (Path file : (Iterable<Path>) files::iterator) {
                String name = classes.relativize(file).toString();
                if (name.endsWith(".class") && !name.equals("module-info.class")) {
                    Class.forName(name.substring(0, name.length() - ".class".length()).replace('/', '.'), false,
                            SegmentEntryWithoutDescriptors.class.getClassLoader());
                }
            }
        }
    }

    private static void takeAllDescriptorsBut(int free, List<FileInputStream> taken) throws IOException {
        while (true) {
            try {
                taken.add(new FileInputStream("/dev/null"));
            } catch (IOException e) {
                if (!FileDescriptors.exhausted(e)) {
                    throw e;
                }
                break;
            }
        }
        for (int i = 0; i < free; i++) {
            taken.remove(taken.size() - 1).close();
        }
    }
}
