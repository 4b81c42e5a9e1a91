package io.sluice.broker;

import io.sluice.storage.MessageStore;
import io.sluice.storage.QueueStore;
import io.sluice.storage.StoreConfig;
import io.sluice.storage.segment.SegmentFiles;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The packaged broker ({@code java -jar}, as README runs it) given a start-up it cannot complete: it
 * prints one line naming the cause, exits non-zero on its own, and leaves the metrics port free and
 * {@code store.lock} unheld. Before the fix, a client port in use or a listen address not on the
 * machine threw Netty's checked {@code NativeIoException} past {@code catch (RuntimeException)}, and
 * the JVM stayed up with the HTTP server answering.
 */
@Timeout(120)
class BrokerStartupFailureIT {
    @TempDir
    Path dir;

    @Test
    void shouldExitWithOneLineWhenTheClientPortIsInUse() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            int port = taken.getLocalPort();
            Failure f = startExpectingFailure(List.of("--port", Integer.toString(port)));
            assertEquals(1, f.exitCode, f.output());
            assertEquals("sluice: cannot start: cannot listen on 127.0.0.1:" + port
                    + " (broker.port): the address is already in use by another process", f.errorLine(), f.output());
        }
    }

    @Test
    void shouldExitWithOneLineWhenTheListenAddressIsNotOnThisMachine() throws Exception {
        // 192.0.2.1 is TEST-NET-1 (RFC 5737): never assigned to a host, so binding to it fails.
        Failure f = startExpectingFailure(List.of("--listen", "192.0.2.1", "--port", Integer.toString(TestPorts.free()),
                "--set", "auth.allow-anonymous-remote=true"));
        assertEquals(1, f.exitCode, f.output());
        assertTrue(f.errorLine().startsWith("sluice: cannot start: cannot listen on 192.0.2.1:"), f.output());
        assertTrue(f.errorLine().endsWith("(broker.listen-address): the address is not one of this machine's"), f.output());
    }

    @Test
    void shouldExitWithOneLineWhenTheMetricsPortIsInUse() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            int port = taken.getLocalPort();
            Failure f = startExpectingFailure(List.of(), List.of("--port", Integer.toString(TestPorts.free())), port, false);
            assertEquals(1, f.exitCode, f.output());
            assertEquals("sluice: cannot start: cannot listen on 127.0.0.1:" + port
                    + " (metrics.port): the address is already in use by another process", f.errorLine(), f.output());
        }
    }

    @Test
    void shouldExitWithOneLineWhenTheDataDirectoryIsAFile() throws Exception {
        Path file = dir.resolve("not-a-dir");
        Files.writeString(file, "x");
        Failure f = startExpectingFailure(List.of("--port", Integer.toString(TestPorts.free()),
                "--data-dir", file.toString()));
        assertEquals(1, f.exitCode, f.output());
        assertEquals("sluice: cannot start: data directory " + file + " is a file, not a directory", f.errorLine(), f.output());
    }

    /**
     * A segment whose first header is not Chronicle's: Chronicle's undeclared StreamCorruptedException passed every catch
     * of the start; the broker printed it with its trace and then "stopping (signal received)", and exited only after
     * its shutdown hook had waited 120 s for the start.
     */
    @Test
    void shouldExitAtOnceNamingASegmentDamagedInItsHeader() throws Exception {
        Path segment;
        try (MessageStore store = MessageStore.open(dir.resolve("data"),
                StoreConfig.builder().reservedDiskBytes(64L << 20).build())) {
            QueueStore queue = store.createQueue("vq");
            for (int i = 0; i < 50; i++) {
                queue.append(null, ("m" + i).getBytes(StandardCharsets.UTF_8));
            }
            segment = queue.segmentDirectory().resolve(SegmentFiles.fileName(0));
        }
        try (RandomAccessFile file = new RandomAccessFile(segment.toFile(), "rw")) {
            file.write("JUNK".getBytes(StandardCharsets.US_ASCII));
        }
        Failure f = startExpectingFailure(List.of("--port", Integer.toString(TestPorts.free())));
        assertEquals(1, f.exitCode, f.output());
        assertTrue(f.errorLine().startsWith("sluice: cannot start: queue 'vq': segment file " + segment
                + " is damaged in its header (unexpected magic 0x4b4e554a "), f.output());
    }

    @Test
    void shouldNameAReadOnlyFileSystem() throws Exception {
        Path mountPoint = Files.createDirectory(dir.resolve("ro"));
        Assumptions.assumeTrue(canMountInOwnNamespace(), "unshare -m with a tmpfs mount is not available here");
        // The read-only tmpfs exists only in the child's own mount namespace: it goes when the child does.
        List<String> prefix = List.of("unshare", "-m", "sh", "-c", "mount -t tmpfs -o ro tmpfs \"$0\" && exec \"$@\"",
                mountPoint.toString());
        Failure f = startExpectingFailure(prefix, List.of("--port", Integer.toString(TestPorts.free()),
                "--data-dir", mountPoint.resolve("data").toString()), TestPorts.free(), true);
        assertEquals(1, f.exitCode, f.output());
        assertEquals("sluice: cannot start: data directory " + mountPoint.resolve("data") + " cannot be created: "
                + mountPoint + " is on a read-only file system", f.errorLine(), f.output());
    }

    @Test
    void shouldNameTheUserThatMayNotWrite() throws Exception {
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")) && Files.isExecutable(Path.of("/usr/bin/setpriv")),
                "needs root and setpriv to run the broker as user nobody");
        // Root may write anywhere, so the broker runs as nobody (uid 65534) under a root-owned 0755 directory.
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        Path parent = Files.createDirectory(dir.resolve("root-owned"));
        Files.setPosixFilePermissions(parent, PosixFilePermissions.fromString("rwxr-xr-x"));
        List<String> prefix = List.of("/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups");
        Failure f = startExpectingFailure(prefix, List.of("--port", Integer.toString(TestPorts.free()),
                "--data-dir", parent.resolve("data").toString()), TestPorts.free(), true);
        assertEquals(1, f.exitCode, f.output());
        assertTrue(f.errorLine().startsWith("sluice: cannot start: data directory " + parent.resolve("data")
                + " cannot be created: permission denied for user "), f.output());
        assertTrue(f.errorLine().endsWith("to write to " + parent + " (owner root, rwxr-xr-x)"), f.output());
    }

    private static boolean canMountInOwnNamespace() {
        try {
            Process p = new ProcessBuilder("unshare", "-m", "sh", "-c", "mount -t tmpfs -o ro tmpfs /mnt")
                    .redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }

    /** How a broker that could not start ended: its exit code and everything it printed. */
    private record Failure(int exitCode, List<String> lines) {
        String output() {
            return String.join("\n", lines);
        }

        /** The one line that says why; fails if there is none or more than one, or any stack trace. */
        String errorLine() {
            List<String> errors = lines.stream().filter(l -> l.startsWith("sluice: ")).toList();
            assertEquals(1, errors.size(), "exactly one error line:\n" + output());
            assertTrue(lines.stream().noneMatch(l -> l.startsWith("\tat ") || l.contains("Exception")),
                    "no stack trace or exception name:\n" + output());
            return errors.get(0);
        }
    }

    private Failure startExpectingFailure(List<String> args) throws Exception {
        return startExpectingFailure(List.of(), args, TestPorts.free(), true);
    }

    /**
     * Runs the jar (after {@code prefix}, a command that wraps it) and waits for it to exit; then checks
     * that it left the metrics port free (unless the test holds it) and store.lock unheld.
     */
    private Failure startExpectingFailure(List<String> prefix, List<String> args, int metricsPort, boolean checkMetricsPort)
            throws Exception {
        Path jar = Path.of(System.getProperty("sluice.test.brokerJar"));
        assertTrue(Files.isRegularFile(jar), "the packaged broker " + jar + " exists (run with mvn verify)");
        Path data = dir.resolve("data");
        List<String> command = new ArrayList<>(prefix);
        command.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-jar", jar.toString(),
                "--data-dir", data.toString(), "--set", "metrics.port=" + metricsPort,
                "--set", "storage.reserved-disk-bytes=67108864"));
        command.addAll(args);
        Path log = dir.resolve("broker-" + System.nanoTime() + ".log");
        Process process = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.to(log.toFile())).start();
        try {
            assertTrue(process.waitFor(30, TimeUnit.SECONDS), "the broker exits on its own; output:\n" + ChildJvm.tail(log));
        } finally {
            if (process.isAlive()) {
                ChildJvm.kill(process);
            }
        }
        if (checkMetricsPort) {
            assertPortFree(metricsPort);
        }
        assertStoreUnlocked(data);
        return new Failure(process.exitValue(), ChildJvm.lines(log));
    }

    private static void assertPortFree(int port) throws IOException {
        try (ServerSocket again = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
            assertNotNull(again, "the metrics port " + port + " is free again");
        }
    }

    private static void assertStoreUnlocked(Path data) throws IOException {
        Path lockFile = data.resolve("store.lock");
        if (!Files.isRegularFile(lockFile)) {
            return;
        }
        try (FileChannel channel = FileChannel.open(lockFile, StandardOpenOption.WRITE);
             FileLock lock = channel.tryLock()) {
            assertNotNull(lock, "store.lock is no longer held");
        }
    }
}
