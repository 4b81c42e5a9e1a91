#!/usr/bin/env python3
"""Summarises an interleaved A/B of run-workloads.sh as paired ratios.

    bench/scripts/paired-ratio.py RESULTS.jsonl PREFIX ARM_A ARM_B

RESULTS.jsonl holds run-workloads.sh's output lines; the runs of one pair are PREFIX-ARM_A-i and PREFIX-ARM_B-i
(for example w1-dedup on off: w1-dedup-on-3 and w1-dedup-off-3). A ratio taken within a pair (A over B, both run in
the same minute) cancels the machine's drift from one minute to the next, which moves a run of W1 by more than the
few per cent an A/B like deduplication's has to resolve. Printed per measure: the median of the pairs' ratios, its
95 % interval from a bootstrap over the pairs (fixed seed, so a summary is reproducible), and each arm's median.
Measures: end-to-end rate (A/B above 1: A is faster), p99 and the broker's CPU seconds over the run, its warm-up
messages included (A/B above 1: A costs more).
"""
import json
import random
import statistics
import sys


def load(path, prefix, arm):
    runs = {}
    for line in open(path):
        line = line.strip()
        if not line.startswith("{"):
            continue
        d = json.loads(line)
        name = d.get("run", "")
        head = f"{prefix}-{arm}-"
        if name.startswith(head) and name[len(head):].isdigit():
            runs[int(name[len(head):])] = d
    return runs


def bootstrap_interval(ratios, rounds=10000):
    rng = random.Random(16)
    medians = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(rounds))
    return medians[int(0.025 * rounds)], medians[int(0.975 * rounds) - 1]


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    path, prefix, arm_a, arm_b = sys.argv[1:]
    a, b = load(path, prefix, arm_a), load(path, prefix, arm_b)
    pairs = sorted(set(a) & set(b))
    if not pairs:
        sys.exit(f"no pair {prefix}-{arm_a}-i / {prefix}-{arm_b}-i in {path}")
    bad = [i for i in pairs for d in (a[i], b[i]) if d.get("lost", 0) or d.get("dups", 0) or d.get("failed", 0)]
    measures = {
        "e2e msg/s": lambda d: d["e2e_rate"],
        "p99 ms": lambda d: d["p99_us"] / 1000.0,
        "broker CPU s/run": lambda d: d.get("broker_cpu_s"),
    }
    print(f"{len(pairs)} pairs of {prefix}: {arm_a} against {arm_b}; runs with loss, duplicates or failures: {len(bad)}")
    print(f"{'measure':<20} {arm_a + ' median':>14} {arm_b + ' median':>14} {'ratio median':>13} {'95% interval':>17}")
    for name, get in measures.items():
        xs = [(get(a[i]), get(b[i])) for i in pairs]
        xs = [(x, y) for x, y in xs if x is not None and y is not None and y > 0]
        if not xs:
            continue
        ratios = [x / y for x, y in xs]
        low, high = bootstrap_interval(ratios)
        print(f"{name:<20} {statistics.median(x for x, _ in xs):>14.2f} {statistics.median(y for _, y in xs):>14.2f}"
              f" {statistics.median(ratios):>13.3f} {f'{low:.3f}-{high:.3f}':>17}")


if __name__ == "__main__":
    main()
