package io.sluice.broker.cluster;

import io.sluice.broker.txn.CrashPoint;
import org.apache.ratis.server.protocol.TermIndex;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

/**
 * How a snapshot directory ({@link ShardSnapshots}) travels from the node serving it to a follower installing
 * it, as one HTTP response body (the follower reads it at its own pace; TCP's flow control is the back-pressure
 * that Ratis's own chunked install lacks, RATIS-2632):
 *
 * <pre>
 * int magic "SLS1", long term, long index
 * per file: UTF relative path ('/'-separated), long length, the bytes, long CRC32C of the bytes
 * UTF "" at the end
 * </pre>
 *
 * Stateless.
 */
final class SnapshotStream {
    private static final int MAGIC = 0x534C5331;
    private static final int BUFFER_BYTES = 1 << 16;

    private SnapshotStream() {
    }

    static void write(ShardSnapshots.Snapshot snapshot, OutputStream sink) throws IOException {
        DataOutputStream out = new DataOutputStream(sink);
        out.writeInt(MAGIC);
        out.writeLong(snapshot.termIndex().getTerm());
        out.writeLong(snapshot.termIndex().getIndex());
        List<Path> files;
        try (Stream<Path> walk = Files.walk(snapshot.directory())) {
            files = walk.filter(Files::isRegularFile).sorted().toList();
        }
        byte[] buffer = new byte[BUFFER_BYTES];
        for (Path file : files) {
            String relative = snapshot.directory().relativize(file).toString().replace(file.getFileSystem().getSeparator(), "/");
            try (InputStream in = Files.newInputStream(file)) {
                long length = Files.size(file); // the files of a complete snapshot never change
                out.writeUTF(relative);
                out.writeLong(length);
                CRC32C crc = new CRC32C();
                long left = length;
                while (left > 0) {
                    int n = in.read(buffer, 0, (int) Math.min(buffer.length, left));
                    if (n < 0) {
                        throw new IOException(file + " ended " + left + " bytes early");
                    }
                    crc.update(buffer, 0, n);
                    out.write(buffer, 0, n);
                    left -= n;
                }
                out.writeLong(crc.getValue());
            }
        }
        out.writeUTF("");
        out.flush();
    }

    /** Reads a snapshot into {@code target} (which must not exist); returns the last entry it holds. Forces nothing. */
    static TermIndex read(InputStream source, Path target) throws IOException {
        DataInputStream in = new DataInputStream(source);
        if (in.readInt() != MAGIC) {
            throw new IOException("not a Sluice snapshot stream");
        }
        TermIndex termIndex = TermIndex.valueOf(in.readLong(), in.readLong());
        Files.createDirectories(target);
        Path root = target.toAbsolutePath().normalize();
        byte[] buffer = new byte[BUFFER_BYTES];
        for (String relative = in.readUTF(); !relative.isEmpty(); relative = in.readUTF()) {
            Path file = root.resolve(relative).normalize();
            if (!file.startsWith(root) || file.equals(root)) {
                throw new IOException("snapshot file '" + relative + "' is outside the snapshot");
            }
            long length = in.readLong();
            Files.createDirectories(file.getParent());
            CRC32C crc = new CRC32C();
            try (OutputStream out = Files.newOutputStream(file)) {
                long left = length;
                while (left > 0) {
                    int n = in.read(buffer, 0, (int) Math.min(buffer.length, left));
                    if (n < 0) {
                        throw new IOException("the snapshot stream ended inside " + relative);
                    }
                    crc.update(buffer, 0, n);
                    out.write(buffer, 0, n);
                    left -= n;
                }
            }
            if (in.readLong() != crc.getValue()) {
                throw new IOException("snapshot file " + relative + " arrived damaged (CRC32C differs)");
            }
            CrashPoint.reached(SnapshotInstaller.CRASH_WHILE_FETCHING);
        }
        return termIndex;
    }
}
