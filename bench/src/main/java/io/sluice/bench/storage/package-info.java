/**
 * JMH micro-benchmarks of the segment store: append (with and without group commit), sequential
 * read, acks in order and shuffled, and the raw cost of one fsync on the benchmark's disk. Shared
 * fork, warm-up and JVM settings live in {@link io.sluice.bench.storage.StorageBenchmarkBase}.
 * Figures and how to run them: docs/performance.md.
 */
package io.sluice.bench.storage;
