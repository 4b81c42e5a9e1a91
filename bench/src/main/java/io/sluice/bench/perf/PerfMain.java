package io.sluice.bench.perf;

import java.io.PrintStream;

/**
 * The perf CLI's entry point: {@code bin/sluice-perf [options]}, or
 * {@code java -cp bench/target/sluice-bench.jar io.sluice.bench.perf.PerfMain [options]}; see
 * {@link PerfOptions#USAGE}. With {@code --json} stdout carries one JSON object per measured run ({@code --runs},
 * one by default), one per line, and everything else goes to stderr.
 */
public final class PerfMain {
    private PerfMain() {
    }

    public static void main(String[] args) throws InterruptedException {
        System.exit(run(args, System.out, System.err));
    }

    static int run(String[] args, PrintStream out, PrintStream err) throws InterruptedException {
        PerfOptions options;
        try {
            options = PerfOptions.parse(args);
        } catch (PerfOptions.HelpRequested e) {
            out.println(PerfOptions.USAGE);
            return 0;
        } catch (IllegalArgumentException e) {
            err.println("sluice-perf: " + e.getMessage());
            return 2;
        }
        try {
            if (options.isDeclare()) {
                for (int run = 1; run <= options.runs; run++) {
                    DeclareRun.Result result = new DeclareRun(options, options.runs == 1 ? options.queuePrefix : options.queuePrefix + "-run" + run, err).run();
                    report(options, out, err, result.toSummary(), result.toJson(), 0);
                    if (result.failed() > 0) {
                        err.println("sluice-perf: " + result.failed() + " declares failed");
                        return 1;
                    }
                }
                return 0;
            }
            if (options.isManyQueues()) {
                ManyQueuesRun.Result result = new ManyQueuesRun(options, err).run();
                return report(options, out, err, result.toSummary(), result.toJson(), result.lost()) ? 0 : 1;
            }
            if (options.warmupMessages > 0) {
                err.println("Warming up with " + options.warmupMessages + " messages (not measured)...");
                PerfResult warmup = new PerfRun(options.warmup(), err).run();
                if (warmup.lost() > 0) {
                    err.println("sluice-perf: the warm-up lost " + warmup.lost() + " confirmed messages");
                    return 1;
                }
            }
            for (int run = 1; run <= options.runs; run++) {
                if (options.runs > 1) {
                    err.println("Run " + run + " of " + options.runs + ":");
                }
                boolean whole;
                if (options.appClient) {
                    AppRun.Result result = new AppRun(options, err).run();
                    whole = report(options, out, err, result.toSummary(), result.toJson(), result.lost());
                } else {
                    PerfResult result = new PerfRun(options, err).run();
                    whole = report(options, out, err, result.toSummary(), result.toJson(), result.lost());
                }
                if (!whole) {
                    return 1;
                }
            }
        } catch (RuntimeException e) {
            err.println("sluice-perf: the run failed: " + e.getMessage());
            return 1;
        }
        return 0;
    }

    /** Prints one run's result (JSON on stdout with --json, else the summary); false if it lost messages. */
    private static boolean report(PerfOptions options, PrintStream out, PrintStream err, String summary, String json, long lost) {
        if (options.json) {
            err.print(summary);
            out.println(json);
        } else {
            out.print(summary);
        }
        if (lost > 0) {
            err.println("sluice-perf: " + lost + " confirmed messages were never received");
            return false;
        }
        return true;
    }
}
