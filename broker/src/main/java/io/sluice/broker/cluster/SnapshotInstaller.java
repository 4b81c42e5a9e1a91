package io.sluice.broker.cluster;

import io.sluice.broker.queue.BrokerQueue;
import io.sluice.broker.queue.QueueManager;
import io.sluice.broker.txn.CrashPoint;
import io.sluice.storage.Directories;
import io.sluice.storage.files.AtomicFiles;
import io.sluice.storage.snapshot.SnapshotFiles;
import org.apache.ratis.server.protocol.TermIndex;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import javax.net.ssl.HttpsURLConnection;
import javax.net.ssl.SSLContext;
import java.net.HttpURLConnection;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.stream.Stream;

/**
 * Installs the leader's snapshot on a follower that fell behind the leader's purged log (rule R4 of
 * docs/replication.md), in two steps that a crash can interrupt anywhere:
 *
 * <ol>
 *   <li>{@link #fetch}, on its own thread while the node goes on applying: the snapshot is read from the
 *       leader's {@link SnapshotServer} into {@code <data>/snapshot-install.tmp}, every file and directory
 *       forced, and the directory renamed to {@code <data>/snapshot-install} (the data directory forced). That
 *       rename decides the install: before it the node's old state stands (the temporary directory is deleted
 *       by the fetch that fails, or when the node starts), after it the new one will.</li>
 *   <li>{@link #installPending}, on the state machine thread, which applies nothing meanwhile (Ratis reloads the
 *       paused state machine): first the snapshot's entry level and the cluster's settings it records are checked
 *       against this node's ({@link BeforeSwap}), so that a node that must refuse it refuses with its old state
 *       untouched; then {@link #swapIn}: every queue of the node is deleted, the directory of queues forced, and the
 *       mark {@code old-queues-deleted} made in the install directory; then each of the snapshot's queues is
 *       moved into the store by one rename and opened through normal recovery. The caller then writes the
 *       snapshot marker and calls {@link #finish}. Each step is done again or skipped by the next
 *       {@link #swapIn} (the next start's, if a crash came first): a queue is deleted only before the mark,
 *       and moved whole or not at all.</li>
 * </ol>
 *
 * <p>A fetch that fails for any reason (the leader closed the connection, sent a damaged file, or went silent
 * for {@link Timeouts#readMs}: a partition in the middle of a transfer) deletes its temporary directory and
 * fails; the node's queues are untouched, and Ratis asks again with its next notification.
 *
 * <p>Threads: {@link #fetch} runs on this installer's own thread; {@link #swapIn} and {@link #finish} on the
 * state machine thread, never while a fetch of the same install runs (Ratis reloads only after the fetch).
 */
final class SnapshotInstaller {
    private static final Logger LOG = LoggerFactory.getLogger(SnapshotInstaller.class);
    static final String INSTALL = "snapshot-install";
    static final String OLD_QUEUES_DELETED = "old-queues-deleted";

    /** Crash points ({@link CrashPoint}): the fetch has written the first file of the stream into the temporary directory. */
    static final String CRASH_WHILE_FETCHING = "snapshot-while-fetching";
    /** The fetched snapshot is renamed into place (the install is decided); the swap has not started. */
    static final String CRASH_FETCHED_BEFORE_SWAP = "snapshot-fetched-before-swap";
    /** The swap deleted this node's queues and made its mark; none of the snapshot's queues is moved in yet. */
    static final String CRASH_OLD_QUEUES_DELETED = "snapshot-old-queues-deleted";

    private final Path dataDirectory;
    private final Path install;
    private final Path temporary;
    private final QueueManager queues;
    private final Timeouts timeouts;
    private final SnapshotAuth auth;
    /** Null: plain HTTP. */
    private final SSLContext tls;
    /**
     * Held while the pending install is swapped in and finished ({@link #installPending}), and while a fetch puts its
     * snapshot in place: a fetch that completes during a swap (the leader purged further meanwhile and notified again)
     * waits, and its snapshot is the next pending install, rather than being deleted by the swap's finish, which left
     * Ratis taking the newer snapshot as installed over the older one's queues (the entries between them never applied).
     */
    private final Object installLock = new Object();
    private final ExecutorService thread = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "sluice-snapshot-install");
        t.setDaemon(true);
        return t;
    });

    /**
     * How long a fetch waits to connect ({@code cluster.snapshot-connect-timeout-ms}) and for each read of the
     * stream ({@code cluster.snapshot-read-timeout-ms}): a slow transfer that keeps sending goes on; one whose
     * leader went silent is given up after the read timeout.
     */
    record Timeouts(int connectMs, int readMs) {
    }

    SnapshotInstaller(Path dataDirectory, QueueManager queues, Timeouts timeouts, SnapshotAuth auth) throws IOException {
        this(dataDirectory, queues, timeouts, auth, null);
    }

    /** With {@code tls} (not null, {@link NodeTls#clientContext}): fetches over HTTPS, presenting this node's certificate. */
    SnapshotInstaller(Path dataDirectory, QueueManager queues, Timeouts timeouts, SnapshotAuth auth, SSLContext tls) throws IOException {
        this.tls = tls;
        this.dataDirectory = dataDirectory;
        this.install = dataDirectory.resolve(INSTALL);
        this.temporary = dataDirectory.resolve(INSTALL + ".tmp");
        this.queues = queues;
        this.timeouts = timeouts;
        this.auth = auth;
        if (Files.exists(temporary)) {
            Directories.deleteRecursively(temporary); // a fetch a crash interrupted: never decided, never used
        }
    }

    /**
     * Fetches the newest snapshot holding at least entry {@code minIndex} from the snapshot server at
     * {@code address} (host:port) and makes it the pending install; completes with the last entry it holds,
     * or null if that server has none yet (Ratis then answers SNAPSHOT_UNAVAILABLE and the leader asks again).
     */
    CompletableFuture<TermIndex> fetch(String address, long minIndex) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                TermIndex waiting = pending();
                if (waiting != null && waiting.getIndex() >= minIndex) {
                    return waiting; // fetched before, not swapped in yet
                }
                return download(address, minIndex);
            } catch (IOException e) {
                deleteTemporary();
                throw new UncheckedIOException("fetching the snapshot from " + address + " failed: " + e.getMessage()
                        + "; this node keeps its queues and fetches again at the leader's next notification", e);
            } catch (RuntimeException e) {
                deleteTemporary();
                throw e;
            }
        }, thread);
    }

    private void deleteTemporary() {
        try {
            if (Files.exists(temporary)) {
                Directories.deleteRecursively(temporary);
            }
        } catch (RuntimeException e) {
            LOG.warn("Could not delete the partial snapshot {} (the next fetch deletes it): {}", temporary, e.toString());
        }
    }

    private TermIndex download(String address, long minIndex) throws IOException {
        if (Files.exists(temporary)) {
            Directories.deleteRecursively(temporary);
        }
        long started = System.nanoTime();
        String path = "/snapshot?min-index=" + minIndex;
        HttpURLConnection connection = open(address, path, null);
        TermIndex termIndex;
        try {
            int status = connection.getResponseCode();
            if (status == 401 && auth.required()) {
                // The challenge: ask again with the proof of the secret for its nonce (SnapshotAuth).
                String authorization = auth.authorization(connection.getHeaderField("WWW-Authenticate"), "GET " + path);
                drain(connection);
                if (authorization != null) {
                    connection = open(address, path, authorization);
                    status = connection.getResponseCode();
                }
            }
            if (status == 404) {
                LOG.info("The snapshot server at {} has no snapshot holding entry {} yet.", address, minIndex);
                return null;
            }
            if (status == 401) {
                throw new IOException("the snapshot server at " + address + " refused this node (HTTP 401: " + errorSentence(connection)
                        + "); every node's cluster.secret-file must hold the same secret");
            }
            if (status != 200) {
                throw new IOException("the snapshot server at " + address + " answered HTTP " + status);
            }
            try (InputStream body = connection.getInputStream()) {
                termIndex = SnapshotStream.read(body, temporary);
            }
        } catch (SocketTimeoutException e) {
            throw new IOException("the snapshot server at " + address + " sent nothing for " + timeouts.readMs()
                    + " ms (cluster.snapshot-read-timeout-ms); the transfer is abandoned", e);
        } finally {
            connection.disconnect();
        }
        if (termIndex.getIndex() < minIndex) {
            throw new IOException("the snapshot server at " + address + " sent a snapshot through index " + termIndex.getIndex()
                    + ", below " + minIndex);
        }
        SnapshotFiles.force(temporary);
        synchronized (installLock) { // not while the pending install is swapped in: its finish would delete this one
            if (Files.exists(install)) {
                Directories.deleteRecursively(install); // an older one, never swapped in (the swap would have removed it)
            }
            Files.move(temporary, install, StandardCopyOption.ATOMIC_MOVE);
            AtomicFiles.fsyncDirectory(dataDirectory);
        }
        CrashPoint.reached(CRASH_FETCHED_BEFORE_SWAP);
        LOG.info("Fetched the snapshot through index {} (term {}) from {} in {} ms; it replaces this node's queues next.",
                termIndex.getIndex(), termIndex.getTerm(), address, (System.nanoTime() - started) / 1_000_000);
        return termIndex;
    }

    /** A request for {@code path}, connected (within the connect timeout); each read of its answer waits up to the read timeout. */
    private HttpURLConnection open(String address, String path, String authorization) throws IOException {
        HttpURLConnection connection = (HttpURLConnection) URI.create((tls == null ? "http://" : "https://") + address + path)
                .toURL().openConnection();
        if (connection instanceof HttpsURLConnection https) {
            https.setSSLSocketFactory(tls.getSocketFactory()); // the default hostname check stays: the certificate names the host
        }
        connection.setConnectTimeout(timeouts.connectMs());
        connection.setReadTimeout(timeouts.readMs());
        connection.setUseCaches(false);
        if (authorization != null) {
            connection.setRequestProperty("Authorization", authorization);
        }
        try {
            connection.connect();
        } catch (SocketTimeoutException e) {
            throw new IOException("the snapshot server at " + address + " did not accept a connection within "
                    + timeouts.connectMs() + " ms (cluster.snapshot-connect-timeout-ms)", e);
        }
        return connection;
    }

    /** The first line of an error answer's body (the server's sentence), at most 300 characters. */
    private static String errorSentence(HttpURLConnection connection) throws IOException {
        try (InputStream error = connection.getErrorStream()) {
            if (error == null) {
                return "no reason given";
            }
            String text = new String(error.readNBytes(300), java.nio.charset.StandardCharsets.UTF_8).strip();
            int newline = text.indexOf('\n');
            return newline < 0 ? text : text.substring(0, newline);
        }
    }

    /** Reads the rest of a refused answer so that the connection can be reused. */
    private static void drain(HttpURLConnection connection) throws IOException {
        try (InputStream error = connection.getErrorStream()) {
            if (error != null) {
                error.readNBytes(4096);
            }
        }
    }

    /** The fetched snapshot waiting to be swapped in (or whose swap a crash interrupted), or null. */
    TermIndex pending() throws IOException {
        return Files.isDirectory(install) ? ShardSnapshots.readTermIndex(install) : null;
    }

    /** The entry level the pending install's snapshot holds (rule R12), 0 if none. */
    int pendingEntryLevel() {
        return FinalizedEntryLevel.read(install.resolve(FinalizedEntryLevel.FILE));
    }

    /** Replaces every queue of this node with the pending snapshot's; returns the last entry it holds. See the class. */
    TermIndex swapIn() throws IOException {
        TermIndex termIndex = pending();
        long started = System.nanoTime();
        Path mark = install.resolve(OLD_QUEUES_DELETED);
        if (!Files.exists(mark)) {
            List<String> old = new ArrayList<>(queues.all().stream().map(BrokerQueue::name).toList());
            for (String name : old) {
                queues.onDeclareThread(() -> queues.delete(name)).join();
            }
            AtomicFiles.fsyncDirectory(queues.store().dataDirectory().resolve("queues"));
            Files.createFile(mark);
            AtomicFiles.fsyncDirectory(install);
            LOG.info("Snapshot install: deleted this node's {} queues.", old.size());
            CrashPoint.reached(CRASH_OLD_QUEUES_DELETED);
        }
        List<Path> copies;
        Path queueCopies = install.resolve("queues");
        try (Stream<Path> list = Files.exists(queueCopies) ? Files.list(queueCopies) : Stream.empty()) {
            copies = list.filter(Files::isDirectory).sorted().toList();
        }
        for (Path copy : copies) {
            String name = copy.getFileName().toString();
            Path settings = install.resolve(ShardSnapshots.SETTINGS).resolve(name + ".json");
            queues.onDeclareThread(() -> queues.adopt(name, copy, settings)).join();
        }
        LOG.info("Snapshot install: {} queues through index {} (term {}) in place in {} ms.", copies.size(), termIndex.getIndex(),
                termIndex.getTerm(), (System.nanoTime() - started) / 1_000_000);
        return termIndex;
    }

    /**
     * Whether this node may take the pending snapshot at all, asked before anything of the node is changed: the snapshot's
     * entry level (0: none) and the cluster's settings it records (null: none) must be ones this node can apply (rules
     * R12, R2). Throws to refuse it; the node's queues are then as they were and the install stays pending.
     */
    interface BeforeSwap {
        void check(TermIndex pending, int entryLevel, ClusterSettings.Values settings);
    }

    /**
     * The steps of an install once its snapshot is swapped in: the node's own snapshot of it and its marker. The snapshot's
     * entry level (0: none) and the cluster's settings it records (null: none) come with it (rules R12, R2).
     */
    interface AfterSwap {
        void installed(TermIndex installed, int entryLevel, ClusterSettings.Values settings) throws IOException;
    }

    /**
     * Runs {@code check} on the pending install (if there is one), then swaps it in, runs {@code after}, and removes the
     * install directory, all under {@link #installLock}, so that no fetch replaces the install meanwhile. Returns what was
     * installed, or null. A snapshot {@code check} refuses changes nothing: this node's queues stay as they were (a node
     * configured otherwise than the cluster must not have replaced its store before it refuses).
     */
    TermIndex installPending(BeforeSwap check, AfterSwap after) throws IOException {
        synchronized (installLock) {
            TermIndex pending = pending();
            if (pending == null) {
                return null;
            }
            int level = pendingEntryLevel();
            ClusterSettings.Values settings = ClusterSettings.read(install.resolve(ClusterSettings.FILE));
            check.check(pending, level, settings);
            TermIndex installed = swapIn();
            after.installed(installed, level, settings);
            finish();
            return installed;
        }
    }

    /** Once the snapshot's marker is written: the install directory is done with. */
    void finish() throws IOException {
        Directories.deleteRecursively(install);
        AtomicFiles.fsyncDirectory(dataDirectory);
    }

    void close() {
        thread.shutdownNow();
    }
}
