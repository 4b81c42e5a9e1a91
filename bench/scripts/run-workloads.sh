#!/usr/bin/env bash
# Runs the workloads of docs/performance.md against brokers started from the broker jar, the way docs/performance.md
# reports them, and prints one JSON line per run (plus the broker's CPU seconds and peak RSS).
#
#   bench/scripts/run-workloads.sh OUT_DIR [SERIES...]
#
# SERIES (default: w1-cold w1-warm w1-4x4 w1-never w2):
#   w1-cold w1-warm w1-long w1-steady w1-4x4 w1-dispatch w1-never w2 mq mq-10k declare
#   w1-app-cold w1-app-rounds w2-app w1-cluster w1-tx w1-dedup w1-pair
#   w1-cold   3 runs, each on a fresh broker and a fresh CLI JVM, no warm-up (the JIT compiles during the run)
#   w1-warm   one broker warmed by a 3 M-message W1 run that is not reported, then 5 runs of W1, each with
#             --warmup-messages 500000 for the CLI's own JVM
#   w1-long   as w1-warm with a 20 M-message broker warm-up and --warmup-messages 5000000, 3 runs
#             (the steady state of a long-running broker; about 3 minutes)
#   w1-4x4    as w1-warm with --producers 4 --consumers 4, 3 runs
#   w1-steady one warm broker, then one CLI JVM measuring 10 W1 runs in a row (--runs 10): the first runs
#             carry the client JVM's JIT compilation, the last ones show a client in its steady state
#   w1-dispatch  as w1-warm with the client's callbacks on its dispatch pool (--callbacks dispatch), the
#             client's default, instead of on its network thread (the perf CLI's default)
#   w1-never  as w1-warm on a broker with storage.durability=never, 5 runs
#   mq        one fresh broker (with -XX:NativeMemoryTracking=summary), workload MQ: 1,000 queues, each
#             with one producer and one consumer at 10 msg/s, for 10 minutes; broker RSS sampled every
#             10 s by the CLI, allocated disk per queue, and bench/scripts/rss-breakdown.sh of the broker
#             60 s in and at the end (mq-breakdown-*.txt)
#   mq-10k    one fresh broker, 10,000 queues declared, each with one producer and one consumer at
#             1 msg/s for 60 s
#   declare   workload DECLARE, 1,000 new queues, in three shapes: one connection declaring one after the
#             other (the blocking declareQueue), 8 connections doing so at once, and one connection
#             pipelining all 1,000 (declareQueueAsync); 3 rounds of the three (DECLARE_ROUNDS=n for more),
#             each run on a fresh broker started by bin/sluice on its defaults (BROKER_JAR=path overrides
#             the jar, for an A/B)
#   w2        one fresh broker, W2 (5 M messages); heap in use sampled every second from /metrics (jvm_memory_used_bytes, area heap),
#             bytes on disk (du) of the data directory after the drain
#   w1-app-cold   (the app series start the broker with bin/sluice, its class archive made beforehand)
#             issue 18's application-shaped client (--client app: the client's defaults, callbacks on its
#             dispatch pool, sendAsync().whenComplete() per message, a handler recording under a lock), W1 of
#             500,000 messages; 5 runs, each on a fresh broker and a fresh CLI JVM, no warm-up
#   w1-app-rounds one fresh broker, then one CLI JVM running the same W1 four times against it (--runs 4), one
#             result per round (the rounds after the first show the client JVM warming up)
#   w2-app    one fresh broker, W2 with --client app: 1,000,000 messages published, confirmed, then drained
#   w1-cluster  issue 20's comparison: one broker and a three-node cluster (docs/replication.md) started side by
#             side on their defaults, each warmed by a 1 M-message W1 run (not reported), then 5 rounds
#             (CLUSTER_ROUNDS=n for more) of W1 --warmup-messages 500000 on the single broker (w1-cluster-single-i)
#             and through the cluster's bootstrap list (w1-cluster-3-i), interleaved; a cluster run's
#             broker_cpu_s is the three nodes' together. Ports: the single broker on SLUICE_PERF_PORT, the
#             nodes' clients on SLUICE_PERF_PORT+11..13, Raft +21..23, snapshots +31..33, metrics +41..43
#   w1-tx     one broker warmed by a 1 M-message W1 run and a 1 M-message transactional W1 run (not reported),
#             then 5 rounds (TX_ROUNDS=n for more) of four runs, each with --warmup-messages 500000: plain W1
#             (w1-tx-plain-i), W1 --transactional (batches of 100, 10 commits in flight per consumer, the 1,000
#             messages W1 keeps in flight: w1-tx-i), the same with 4 commits in flight (w1-tx-4-i) and with 1
#             (w1-tx-serial-i); interleaved, so the ratio of each transactional run to plain W1 is taken in the
#             same minutes
#   w1-dedup  issue 16's A/B: two brokers side by side, deduplication on (SLUICE_PERF_PORT) and off (port + 1), each
#             warmed by a 3 M-message W1 run (not reported), then DEDUP_PAIRS pairs (default 12) of W1
#             --warmup-messages 500000 in the order on, off, off, on, ... (w1-dedup-on-i, w1-dedup-off-i), so each
#             pair is taken in the same minute; bench/scripts/paired-ratio.py OUT_DIR/results.jsonl on off summarises
#   w1-pair   an A/B of two JVM option sets on the same jar: brokers side by side, arm a with PAIR_A_OPTS
#             (SLUICE_PERF_PORT) and arm b with PAIR_B_OPTS (port + 1), each warmed by a 2 M-message W1 run (not
#             reported), then PAIRS pairs (default 12) of W1 --warmup-messages 300000 in the order a, b, b, a, ...
#             (w1-pair-a-i, w1-pair-b-i); bench/scripts/paired-ratio.py OUT_DIR/results.jsonl w1-pair a b summarises
#   The app series report, besides the rates and percentiles, max_all_us and the worst one-second window
#   (worst_second_*; defined in docs/performance.md, "Application-shaped runs").
# SLUICE_PERF_ARGS is added to every perf run's arguments, after the series' own, so it overrides them (a smoke
# run at a small size: SLUICE_PERF_ARGS="--messages 20000").
# Each broker gets a fresh data directory under OUT_DIR and is stopped by its PID afterwards.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:?usage: run-workloads.sh OUT_DIR [SERIES...]}"
shift
series=("$@")
[ ${#series[@]} -gt 0 ] || series=(w1-cold w1-warm w1-4x4 w1-never w2)
mkdir -p "$out"
broker_jar="$root/broker/target/sluice-broker-0.1.0-SNAPSHOT.jar"
bench_jar="$root/bench/target/sluice-bench.jar"
[ -f "$broker_jar" ] && [ -f "$bench_jar" ] || (cd "$root" && mvn -B -q package -DskipTests)
port=${SLUICE_PERF_PORT:-17680}   # another port when the machine is shared: another broker may hold 17680
broker_pid=

# Brokers get the JVM options and the malloc arenas bin/sluice gives them (bin/sluice-jvm-options, MALLOC_ARENA_MAX=2);
# options in SLUICE_JAVA_OPTS come later and win.
export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
. "$root/bin/sluice-jvm-options"
java_bin="$(readlink -f "$(command -v java)")"
read -r -a broker_jvm_options <<< "$(sluice_jvm_options "${java_bin%/bin/java}")"
# SLUICE_BROKER_ARGS is added to every broker's arguments (an A/B of a setting: "--set queues.dedup-enabled=false").
start_broker() { # name [--set k=v ...]
  local name=$1; shift
  rm -rf "$out/data-$name"
  java "${broker_jvm_options[@]}" ${SLUICE_JAVA_OPTS:-} -jar "$broker_jar" --data-dir "$out/data-$name" --port $port --set metrics.port=0 "$@" ${SLUICE_BROKER_ARGS:-} \
      > "$out/broker-$name.log" 2>&1 &
  broker_pid=$!
  for _ in $(seq 200); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && return 0; sleep 0.1; done
  echo "broker $name did not start; see $out/broker-$name.log" >&2; exit 1
}

# The application-shaped series start the broker as issue 18 measured it: with bin/sluice on its defaults, which
# includes its class archive (docs/operations.md, "Start-up and the class archive"). The archive is made first,
# once per build, by bin/sluice's own training in the foreground (SLUICE_CLASS_ARCHIVE_DELAY=foreground), so that
# no measured start runs beside a training.
start_broker_bin() { # name
  local name=$1
  SLUICE_CLASS_ARCHIVE_DELAY=foreground "$root/bin/sluice" --version > /dev/null  # trains only if missing or stale
  rm -rf "$out/data-$name"
  "$root/bin/sluice" --data-dir "$out/data-$name" --port $port --set metrics.port=0 ${SLUICE_BROKER_ARGS:-} \
      > "$out/broker-$name.log" 2>&1 &
  broker_pid=$!
  for _ in $(seq 200); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && return 0; sleep 0.1; done
  echo "broker $name did not start; see $out/broker-$name.log" >&2; exit 1
}

# A three-node cluster (docs/replication.md) on this machine, each node a broker JVM started as start_broker
# starts one, with its own configuration and data directory under OUT_DIR/NAME; sets cluster_pids and bootstrap.
start_cluster() { # name
  local name=$1 n nodes="" pid
  rm -rf "${out:?}/$name"; mkdir -p "$out/$name"
  for n in 1 2 3; do
    nodes+="    - {id: $n, host: 127.0.0.1, raft-port: $((port + 20 + n)), client-port: $((port + 10 + n)), snapshot-port: $((port + 30 + n))}"$'\n'
  done
  cluster_pids=""; bootstrap=""
  (umask 077 && head -c 32 /dev/urandom | base64 > "$out/$name/cluster-secret") # the snapshot ports' shared secret
  for n in 1 2 3; do
    printf 'broker:\n  name: node-%s\n  port: %s\n  data-dir: %s\nmetrics:\n  port: %s\ncluster:\n  enabled: true\n  node-id: %s\n  secret-file: %s\n  nodes:\n%s' \
        "$n" $((port + 10 + n)) "$out/$name/node-$n" $((port + 40 + n)) "$n" "$out/$name/cluster-secret" "$nodes" > "$out/$name/node-$n.yaml"
    java "${broker_jvm_options[@]}" ${SLUICE_JAVA_OPTS:-} -jar "$broker_jar" --config "$out/$name/node-$n.yaml" > "$out/$name/node-$n.log" 2>&1 &
    cluster_pids+="$! "; bootstrap+="${bootstrap:+,}127.0.0.1:$((port + 10 + n))"
  done
  for n in 1 2 3; do
    for _ in $(seq 600); do (echo > /dev/tcp/127.0.0.1/$((port + 10 + n))) 2>/dev/null && break; sleep 0.1; done
  done
  for pid in $cluster_pids; do kill -0 "$pid" 2>/dev/null || { echo "a node of $name did not start; see $out/$name" >&2; exit 1; }; done
}

stop_cluster() {
  local pid
  # shellcheck disable=SC2086
  kill $cluster_pids 2>/dev/null || true
  for pid in $cluster_pids; do wait "$pid" 2>/dev/null || true; done
}

stop_broker() {
  kill "$broker_pid"; wait "$broker_pid" 2>/dev/null || true
}

cpu_seconds() { # pid... : their user and system CPU together
  local pid total=0
  for pid in "$@"; do total=$(awk -v t="$total" '{printf "%.2f", t + ($14+$15)/100}' "/proc/$pid/stat"); done
  echo "$total"
}

perf_run() { # label args...
  local label=$1; shift
  # shellcheck disable=SC2086 # cpu_pids is words: the nodes of a cluster run
  local before; before=$(cpu_seconds ${cpu_pids:-$broker_pid})
  # shellcheck disable=SC2086 # SLUICE_PERF_ARGS is words
  java ${SLUICE_PERF_JAVA_OPTS:-} -cp "$bench_jar" io.sluice.bench.perf.PerfMain --json --quiet --port $port "$@" ${SLUICE_PERF_ARGS:-} \
      > "$out/$label.json" 2> "$out/$label.err"
  # shellcheck disable=SC2086
  local after; after=$(cpu_seconds ${cpu_pids:-$broker_pid})
  local rss; rss=$(awk '/VmHWM/ {print $2}' /proc/$broker_pid/status)
  python3 - "$out/$label.json" "$label" "$before" "$after" "$rss" <<'PY'
import json, sys
path, label, before, after, rss = sys.argv[1:]
lines = [l for l in open(path) if l.strip()]
for i, line in enumerate(lines, 1):  # one line per measured run (--runs)
    d = json.loads(line)
    d.update(run=label if len(lines) == 1 else f"{label}-run{i}", broker_vmhwm_kb=int(rss))
    if len(lines) == 1:
        d.update(broker_cpu_s=round(float(after) - float(before), 2))
    print(json.dumps(d))
PY
}

# An interleaved A/B of W1 on two brokers started side by side, arm A's on $port (pid $a_pid) and arm B's on port + 1
# ($b_pid): each warmed by a W1 run of WARMUP messages (not reported), then PAIRS pairs of W1 with --warmup-messages
# CLIENT_WARMUP, in the order A, B, B, A, ... (PREFIX-A-i, PREFIX-B-i), so each pair is taken in the same minute; then
# both brokers are stopped. bench/scripts/paired-ratio.py summarises the pairs.
paired_w1() { # prefix arm_a arm_b pairs warmup client_warmup
  local prefix=$1 arm_a=$2 arm_b=$3 pairs=$4 warmup=$5 client_warmup=$6 base_port=$port i arm order
  port=$base_port broker_pid=$a_pid perf_run "$prefix-$arm_a-warmup" --workload W1 --messages "$warmup" > /dev/null
  port=$((base_port + 1)) broker_pid=$b_pid perf_run "$prefix-$arm_b-warmup" --workload W1 --messages "$warmup" > /dev/null
  for i in $(seq "$pairs"); do
    order="$arm_a $arm_b"; [ $((i % 2)) -eq 0 ] && order="$arm_b $arm_a"
    for arm in $order; do
      if [ "$arm" = "$arm_a" ]; then
        port=$base_port broker_pid=$a_pid perf_run "$prefix-$arm-$i" --workload W1 --warmup-messages "$client_warmup"
      else
        port=$((base_port + 1)) broker_pid=$b_pid perf_run "$prefix-$arm-$i" --workload W1 --warmup-messages "$client_warmup"
      fi
    done
  done
  port=$base_port
  broker_pid=$b_pid; stop_broker; broker_pid=$a_pid; stop_broker
}

for s in "${series[@]}"; do
  case $s in
    w1-cold)
      for i in 1 2 3; do
        start_broker "w1-cold-$i"; perf_run "w1-cold-$i" --workload W1; stop_broker
      done ;;
    w1-warm)
      start_broker w1-warm; perf_run w1-warm-broker-warmup --workload W1 --messages 3000000 > /dev/null
      for i in 1 2 3 4 5; do perf_run "w1-warm-$i" --workload W1 --warmup-messages 500000; done
      stop_broker ;;
    w1-long)
      start_broker w1-long; perf_run w1-long-broker-warmup --workload W1 --messages 20000000 > /dev/null
      for i in 1 2 3; do perf_run "w1-long-$i" --workload W1 --warmup-messages 5000000; done
      stop_broker ;;
    w1-4x4)
      start_broker w1-4x4; perf_run w1-4x4-broker-warmup --workload W1 --messages 3000000 --producers 4 --consumers 4 > /dev/null
      for i in 1 2 3; do perf_run "w1-4x4-$i" --workload W1 --producers 4 --consumers 4 --warmup-messages 500000; done
      stop_broker ;;
    w1-steady)
      start_broker w1-steady; perf_run w1-steady-broker-warmup --workload W1 --messages 3000000 > /dev/null
      perf_run w1-steady --workload W1 --runs 10
      stop_broker ;;
    w1-dispatch)
      start_broker w1-dispatch; perf_run w1-dispatch-broker-warmup --workload W1 --messages 3000000 > /dev/null
      for i in 1 2 3 4 5; do perf_run "w1-dispatch-$i" --workload W1 --warmup-messages 500000 --callbacks dispatch; done
      stop_broker ;;
    w1-never)
      start_broker w1-never --set storage.durability=never
      perf_run w1-never-broker-warmup --workload W1 --messages 3000000 > /dev/null
      for i in 1 2 3 4 5; do perf_run "w1-never-$i" --workload W1 --warmup-messages 500000; done
      stop_broker ;;
    w1-app-cold)
      for i in 1 2 3 4 5; do
        start_broker_bin "w1-app-cold-$i"; perf_run "w1-app-cold-$i" --workload W1 --client app; stop_broker
      done ;;
    w1-app-rounds)
      start_broker_bin w1-app-rounds; perf_run w1-app-rounds --workload W1 --client app --runs 4; stop_broker ;;
    w2-app)
      start_broker_bin w2-app; perf_run w2-app --workload W2 --client app; stop_broker ;;
    w1-cluster)
      start_broker w1-cluster-single; single_pid=$broker_pid
      start_cluster w1-cluster-3
      perf_run w1-cluster-single-warmup --workload W1 --messages 1000000 > /dev/null
      broker_pid=${cluster_pids%% *} cpu_pids=$cluster_pids perf_run w1-cluster-3-warmup --workload W1 --messages 1000000 --bootstrap "$bootstrap" > /dev/null
      for i in $(seq "${CLUSTER_ROUNDS:-5}"); do
        perf_run "w1-cluster-single-$i" --workload W1 --warmup-messages 500000
        broker_pid=${cluster_pids%% *} cpu_pids=$cluster_pids perf_run "w1-cluster-3-$i" --workload W1 --warmup-messages 500000 --bootstrap "$bootstrap"
      done
      stop_cluster; broker_pid=$single_pid; stop_broker ;;
    w1-dedup)
      base_port=$port
      start_broker w1-dedup-on --set queues.dedup-enabled=true; a_pid=$broker_pid
      port=$((base_port + 1)); start_broker w1-dedup-off --set queues.dedup-enabled=false; b_pid=$broker_pid
      port=$base_port
      paired_w1 w1-dedup on off "${DEDUP_PAIRS:-12}" 3000000 500000 ;;
    w1-pair)
      base_port=$port
      SLUICE_JAVA_OPTS="${PAIR_A_OPTS:-}" start_broker w1-pair-a; a_pid=$broker_pid
      port=$((base_port + 1)); SLUICE_JAVA_OPTS="${PAIR_B_OPTS:-}" start_broker w1-pair-b; b_pid=$broker_pid
      port=$base_port
      paired_w1 w1-pair a b "${PAIRS:-12}" 2000000 300000 ;;
    w1-tx)
      start_broker w1-tx
      perf_run w1-tx-broker-warmup --workload W1 --messages 1000000 > /dev/null
      perf_run w1-tx-broker-warmup-tx --workload W1 --transactional --messages 1000000 > /dev/null
      for i in $(seq "${TX_ROUNDS:-5}"); do
        perf_run "w1-tx-plain-$i" --workload W1 --warmup-messages 500000
        perf_run "w1-tx-$i" --workload W1 --transactional --warmup-messages 500000
        perf_run "w1-tx-4-$i" --workload W1 --transactional --tx-in-flight 4 --warmup-messages 500000
        perf_run "w1-tx-serial-$i" --workload W1 --transactional --tx-in-flight 1 --warmup-messages 500000
      done
      stop_broker ;;
    mq)
      SLUICE_JAVA_OPTS="${SLUICE_JAVA_OPTS:-} -XX:NativeMemoryTracking=summary" start_broker mq
      ( sleep 60; "$root/bench/scripts/rss-breakdown.sh" "$broker_pid" > "$out/mq-breakdown-60s.txt" 2>&1 ) &
      perf_run mq --workload MQ --broker-pid "$broker_pid" --data-dir "$out/data-mq" --keep-queues --queue-prefix mq
      "$root/bench/scripts/rss-breakdown.sh" "$broker_pid" > "$out/mq-breakdown-end.txt" 2>&1
      stop_broker ;;
    mq-10k)
      start_broker mq-10k
      perf_run mq-10k --workload MQ --queues 10000 --rate 1 --duration 60 --broker-pid "$broker_pid" \
          --data-dir "$out/data-mq-10k" --keep-queues --queue-prefix mq10k
      "$root/bench/scripts/rss-breakdown.sh" "$broker_pid" > "$out/mq-10k-breakdown-end.txt" 2>&1
      stop_broker ;;
    declare)
      for i in $(seq "${DECLARE_ROUNDS:-3}"); do
        for shape in "serial:--connections 1 --declare-window 1" "parallel-8:--connections 8 --declare-window 1" \
                     "pipelined:--connections 1 --declare-window 1000"; do
          label="declare-${shape%%:*}-$i"
          rm -rf "$out/data-$label"
          if [ -n "${BROKER_JAR:-}" ]; then
            java "${broker_jvm_options[@]}" ${SLUICE_JAVA_OPTS:-} -jar "$BROKER_JAR" --data-dir "$out/data-$label" --port $port --metrics-port 0 \
                > "$out/broker-$label.log" 2>&1 &
          else
            "$root/bin/sluice" --data-dir "$out/data-$label" --port $port --metrics-port 0 > "$out/broker-$label.log" 2>&1 &
          fi
          broker_pid=$!
          # bin/sluice first rebuilds the jar if a source is newer than it: up to a minute
          for _ in $(seq 600); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
          kill -0 "$broker_pid" 2>/dev/null || { echo "broker $label did not start; see $out/broker-$label.log" >&2; exit 1; }
          # shellcheck disable=SC2086 # the shape's options are words
          # A run whose declares time out exits 1 but still reports them: keep going to the next run.
          perf_run "$label" --workload DECLARE --queues 1000 ${shape#*:} --keep-queues || true
          stop_broker
        done
      done ;;
    w2)
      start_broker w2 --set metrics.port=$((port + 1))
      ( while kill -0 "$broker_pid" 2>/dev/null; do # heap in use, from the broker's own metrics (cheap)
          curl -s "127.0.0.1:$((port + 1))/metrics" | awk -v t="$(date +%s)" \
              'index($0, "jvm_memory_used_bytes{area=\"heap\"") == 1 {sum += $NF} END {if (sum > 0) printf "%d %.0f\n", t, sum}'
          sleep 1
        done ) > "$out/w2-heap.log" &
      sampler=$!
      perf_run w2 --workload W2 --keep-queues --queue-prefix w2
      sleep 3 # reclaim runs on the flusher after the last acks
      # Allocated bytes, not apparent sizes (segments are sparse files).
      echo "{\"run\":\"w2-disk\",\"data_dir_bytes\":$(du -s --block-size=1 "$out/data-w2" | cut -f1),\"segment_files\":$(ls "$out/data-w2/queues/w2-0/segments" | grep -c 'cq4$'),\"segments_dir_bytes\":$(du -s --block-size=1 "$out/data-w2/queues/w2-0/segments" | cut -f1)}"
      kill "$sampler" 2>/dev/null || true
      echo "{\"run\":\"w2-heap\",\"samples\":$(wc -l < "$out/w2-heap.log"),\"max_heap_used_bytes\":$(sort -k2 -n "$out/w2-heap.log" | tail -1 | cut -d' ' -f2)}"
      stop_broker ;;
    *) echo "unknown series $s" >&2; exit 2 ;;
  esac
done
