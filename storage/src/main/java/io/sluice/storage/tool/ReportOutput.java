package io.sluice.storage.tool;

import java.io.BufferedOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;

/**
 * Standard output for the tools' reports. {@code System.out} swallows a failed write and keeps only a
 * flag, so a tool writing into a pipe whose reader has gone ({@code dump ... | head}) cannot tell that
 * from a full disk; this stream remembers the exception. Buffered (64 KiB), flushed by the tool.
 * Single thread: the tool's.
 */
final class ReportOutput extends OutputStream {
    private final OutputStream target;
    private IOException failure;

    private ReportOutput(OutputStream target) {
        this.target = target;
    }

    /** Over file descriptor 1. */
    static ReportOutput standardOutput() {
        return new ReportOutput(new FileOutputStream(FileDescriptor.out));
    }

    /** A buffered print stream over this; the tool flushes it. */
    PrintStream printStream() {
        return new PrintStream(new BufferedOutputStream(this, 1 << 16), false);
    }

    @Override
    public void write(int b) throws IOException {
        try {
            target.write(b);
        } catch (IOException e) {
            failure = e;
            throw e;
        }
    }

    @Override
    public void write(byte[] bytes, int offset, int length) throws IOException {
        try {
            target.write(bytes, offset, length);
        } catch (IOException e) {
            failure = e;
            throw e;
        }
    }

    @Override
    public void flush() throws IOException {
        try {
            target.flush();
        } catch (IOException e) {
            failure = e;
            throw e;
        }
    }

    /** True when a write failed because the reading end of the pipe was closed (EPIPE). */
    boolean closedByReader() {
        return failure != null && failure.getMessage() != null && failure.getMessage().contains("Broken pipe");
    }

    /** Why the last write failed, or null. */
    IOException failure() {
        return failure;
    }
}
