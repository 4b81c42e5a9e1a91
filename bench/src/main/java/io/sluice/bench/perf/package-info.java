/**
 * The perf CLI, in the spirit of RabbitMQ's PerfTest: producers and consumers in one JVM against a
 * running broker, on the workloads W1, W2 and W3 of docs/performance.md. {@link io.sluice.bench.perf.PerfMain}
 * parses the command line, {@link io.sluice.bench.perf.PerfRun} runs one workload and returns a
 * {@link io.sluice.bench.perf.PerfResult}. Run it with {@code bin/sluice-perf --help}; figures in
 * docs/performance.md.
 */
package io.sluice.bench.perf;
