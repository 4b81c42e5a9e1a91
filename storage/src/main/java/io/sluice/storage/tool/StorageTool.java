package io.sluice.storage.tool;

import io.sluice.storage.QueueNames;
import io.sluice.storage.segment.SegmentRollCycle;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * Command line entry of the offline tools (see the package javadoc and docs/storage.md, "Offline
 * tools"). {@link #run} does the work and returns the exit code; {@link #main} only exits with it.
 *
 * <pre>
 * verify &lt;dataDir&gt;                               exit 0 clean, 1 damage found
 * dump &lt;dataDir&gt; &lt;queue&gt; [--limit N] [--from ID]   exit 0 clean, 1 damaged record or ack state
 * </pre>
 * {@code -h} or {@code --help} anywhere prints this usage to standard output and exits 0.
 * Exit 2 on a usage error, with a message naming the wrong argument; 141, quietly, when the reader of
 * standard output closed it (EPIPE on file descriptor 1; rule T1 at {@link #run}). Progress goes to standard error when it is a
 * terminal (rule T2), never into the report.
 */
public final class StorageTool {
    public static final int EXIT_CLEAN = 0;
    public static final int EXIT_DAMAGED = 1;
    public static final int EXIT_USAGE = 2;
    /** Standard output was closed by its reader (128 + SIGPIPE, as a Unix tool stopped by a closed pipe). */
    public static final int EXIT_OUTPUT_CLOSED = 141;

    static final String USAGE = String.join(System.lineSeparator(),
            "usage: sluice-storage-tool verify <dataDir>",
            "       sluice-storage-tool dump <dataDir> <queue> [--limit N] [--from ID]",
            "  verify  checks every record's checksum and the ack state files of every queue",
            "  dump    prints a queue's records (acknowledged ones too) and its ack state",
            "  ID is hex (0x100000005), decimal, or segment/sequence (1/5)",
            "  exit codes: 0 clean, 1 damage found, 2 usage error, 141 standard output closed by its reader",
            "  progress goes to stderr when it is a terminal; the report goes to stdout");

    private StorageTool() {
    }

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /**
     * Runs one command; reports go to {@code out}, usage errors to {@code err}.
     *
     * <p>Rule T1: when the report cannot be written the run stops. If its reader closed the pipe
     * ({@code dump ... | head}) it stops quietly with {@link #EXIT_OUTPUT_CLOSED}; any other failure
     * (a full disk) is reported and exits {@link #EXIT_DAMAGED}. A {@link PrintStream} hides which of
     * the two happened, so given {@code System.out} the tool writes to file descriptor 1 through its own
     * {@link ReportOutput}, which keeps the error; given another stream it cannot tell, and a failure of
     * that stream is reported and exits {@link #EXIT_DAMAGED}: 141 says only what is known. Rule T2: with {@code System.err} a terminal, long runs show their progress
     * there ({@link Progress}).
     */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        ReportOutput report = out == System.out ? ReportOutput.standardOutput() : null;
        PrintStream target = report == null ? out : report.printStream();
        boolean progress = err == System.err;
        try {
            int code = command(args, target, err, progress);
            target.flush();
            if (target.checkError()) {
                throw new OutputFailedException();
            }
            return code;
        } catch (OutputFailedException e) {
            if (report != null && report.closedByReader()) {
                return EXIT_OUTPUT_CLOSED; // T1
            }
            err.println("error: cannot write the report to " + (report == null ? "the output stream given (it does not say why)"
                    : "standard output: " + (report.failure() == null ? "the write failed" : report.failure().getMessage())));
            return EXIT_DAMAGED;
        } finally {
            target.flush();
            err.flush();
        }
    }

    /** {@code progress}: whether the command may show its progress on standard error (rule T2). */
    private static int command(String[] args, PrintStream out, PrintStream err, boolean progress) {
        try {
            if (args.length == 0) {
                throw new UsageException("missing command");
            }
            // bin/sluice hands "verify --help" on as it is: help anywhere after a command asks for the usage, not a run
            if (Arrays.stream(args).anyMatch(arg -> arg.equals("-h") || arg.equals("--help"))) {
                out.println(USAGE);
                return EXIT_CLEAN;
            }
            return switch (args[0]) {
                case "verify" -> verify(args, out, progress);
                case "dump" -> dump(args, out, progress);
                case "help" -> {
                    out.println(USAGE);
                    yield EXIT_CLEAN;
                }
                default -> throw new UsageException("unknown command '" + args[0] + "': expected verify or dump");
            };
        } catch (UsageException e) {
            err.println("error: " + e.getMessage());
            err.println(USAGE);
            return EXIT_USAGE;
        } catch (OutputFailedException e) {
            throw e;
        } catch (IOException | RuntimeException | InternalError e) {
            err.println("error: " + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()));
            return EXIT_DAMAGED;
        }
    }

    /**
     * Throws {@link OutputFailedException} if the report could no longer be written (rule T1).
     * {@code checkError} flushes, so callers ask once per batch of lines, not per line.
     */
    static void checkOutput(PrintStream out) {
        if (out.checkError()) {
            throw new OutputFailedException();
        }
    }

    /** The report could not be written: the pipe's reader went away, or the disk is full (rule T1). */
    static final class OutputFailedException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        OutputFailedException() {
            super("the report could not be written to standard output", null, false, false);
        }
    }

    private static int verify(String[] args, PrintStream out, boolean progress) {
        if (args.length != 2) {
            throw new UsageException("verify takes exactly one argument, <dataDir>; got " + (args.length - 1));
        }
        Path data = dataDirectory(args[1]);
        List<String> queues = StoreVerifier.queueNames(data);
        // verify prints a few lines per queue and erases the progress line first, so it may share a terminal
        Progress shown = progress ? Progress.onStandardError(true) : Progress.NONE;
        try {
            return new StoreVerifier(out, shown).verify(data, queues) ? EXIT_CLEAN : EXIT_DAMAGED;
        } finally {
            shown.done();
        }
    }

    private static int dump(String[] args, PrintStream out, boolean progress) throws IOException {
        if (args.length < 3) {
            throw new UsageException("dump needs <dataDir> <queue>; got " + (args.length - 1) + " argument(s)");
        }
        Path data = dataDirectory(args[1]);
        String queue = args[2];
        if (!QueueNames.isValid(queue)) {
            throw new UsageException("queue '" + queue + "' is not a valid queue name");
        }
        Path queueDirectory = data.resolve("queues").resolve(queue);
        if (!Files.isDirectory(queueDirectory)) {
            throw new UsageException("queue '" + queue + "' does not exist in " + data + " (no directory " + queueDirectory + ")");
        }
        long limit = Long.MAX_VALUE;
        long from = -1;
        for (int i = 3; i < args.length; i++) {
            String option = args[i];
            if (!option.equals("--limit") && !option.equals("--from")) {
                throw new UsageException("unknown option '" + option + "' for dump: expected --limit N or --from ID");
            }
            if (i + 1 >= args.length) {
                throw new UsageException(option + " needs a value");
            }
            if (args[i + 1].startsWith("--")) {
                // Taken as the value, the next option would be lost and its value left as an option of its own.
                throw new UsageException(option + " needs a value; the argument after it, " + args[i + 1] + ", is a flag");
            }
            String value = args[++i];
            if (option.equals("--limit")) {
                limit = parseLimit(value);
            } else {
                from = parseId(value);
            }
        }
        // dump prints a line per record: on the terminal of its report those lines are the progress
        Progress shown = progress ? Progress.onStandardError(false) : Progress.NONE;
        try {
            return new QueueDumper(out, shown).dump(queue, queueDirectory, from, limit) ? EXIT_CLEAN : EXIT_DAMAGED;
        } finally {
            shown.done();
        }
    }

    private static Path dataDirectory(String argument) {
        Path data = Path.of(argument);
        if (!Files.isDirectory(data)) {
            throw new UsageException("data directory '" + argument + "' does not exist or is not a directory");
        }
        if (!Files.isDirectory(data.resolve("queues"))) {
            throw new UsageException("'" + argument + "' is not a Sluice data directory: it has no queues/ directory");
        }
        return data;
    }

    static long parseLimit(String value) {
        try {
            long limit = parseDigits(value, 10);
            if (limit > 0) {
                return limit;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new UsageException("--limit '" + value + "' is not a positive whole number");
    }

    /**
     * ASCII digits alone in {@code radix}: Long.parse* also takes a leading '+' (and parseLong a '-'), which no count
     * or id is written with; past 2^63 - 1 the result is negative, which the callers refuse.
     */
    private static long parseDigits(String digits, int radix) {
        if (digits.isEmpty() || !digits.chars().allMatch(c -> c < 128 && Character.digit(c, radix) >= 0)) {
            throw new NumberFormatException(digits);
        }
        return Long.parseUnsignedLong(digits, radix);
    }

    /** Parses {@code 0x...} hex, decimal, or {@code segment/sequence}. */
    static long parseId(String value) {
        try {
            long id;
            int slash = value.indexOf('/');
            if (slash >= 0) {
                long segment = parseDigits(value.substring(0, slash), 10);
                long sequence = parseDigits(value.substring(slash + 1), 10);
                if (segment < 0 || segment > Integer.MAX_VALUE || sequence < 0 || sequence > 0xFFFF_FFFFL) {
                    throw new NumberFormatException();
                }
                id = SegmentRollCycle.INSTANCE.toIndex((int) segment, sequence);
            } else if (value.startsWith("0x") || value.startsWith("0X")) {
                id = parseDigits(value.substring(2), 16);
            } else {
                id = parseDigits(value, 10);
            }
            if (id >= 0) {
                return id;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new UsageException("--from '" + value + "' is not a message id: use hex (0x100000005), decimal or segment/sequence (1/5)");
    }

    /** A wrong command line; the message names the argument. */
    static final class UsageException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        UsageException(String message) {
            super(message);
        }
    }
}
