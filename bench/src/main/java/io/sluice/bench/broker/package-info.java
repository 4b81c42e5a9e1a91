/**
 * JMH micro-benchmarks of the broker's queue core, without sockets: the publish path of one queue with
 * idempotent publishing on and off. Fork, warm-up and JVM settings are the storage benchmarks'
 * ({@link io.sluice.bench.storage.StorageBenchmarkBase}). Figures and how to run them:
 * docs/performance.md, "Idempotent publishing".
 */
package io.sluice.bench.broker;
