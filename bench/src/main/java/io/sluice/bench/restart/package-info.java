/**
 * Restart after kill -9, measured from outside the broker (issue 14, item 2.4):
 * {@link io.sluice.bench.restart.RestartAfterKill} starts brokers through launchers (bin/sluice, or a script that
 * runs another build), kills each with kill -9 while publishes are in flight, starts it again on the same data
 * and times the way to the first confirm. Figures in docs/performance.md, "Restart after kill -9".
 */
package io.sluice.bench.restart;
