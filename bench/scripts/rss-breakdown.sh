#!/usr/bin/env bash
# Where a process's resident memory is, from /proc: the totals of smaps_rollup, then the resident
# KiB and number of mappings per kind of mapping in smaps (Chronicle segments and metadata, ack
# journals, other files, anonymous memory), and, if the JVM runs with
# -XX:NativeMemoryTracking=summary, jcmd's committed memory per JVM area (heap, threads, class,
# code, GC, "Other", which holds direct buffers such as Netty's pools).
#
#   bench/scripts/rss-breakdown.sh PID
set -euo pipefail
pid="${1:?usage: rss-breakdown.sh PID}"
echo "== /proc/$pid/status"
grep -E '^(VmRSS|VmHWM|RssAnon|RssFile|RssShmem|Threads):' "/proc/$pid/status"
echo "== /proc/$pid/smaps_rollup"
grep -E '^(Rss|Pss|Shared_Clean|Shared_Dirty|Private_Clean|Private_Dirty|Anonymous):' "/proc/$pid/smaps_rollup"
echo "== resident KiB by mapping (smaps)"
awk '
  /^[0-9a-f]+-[0-9a-f]+ / {
    path = (NF >= 6) ? $6 : "";
    if (path ~ /\.cq4$/) kind = "chronicle segment (.cq4)";
    else if (path ~ /\.cq4t$/) kind = "chronicle metadata (.cq4t)";
    else if (path ~ /acks\.journal/) kind = "ack journal";
    else if (path ~ /\.(jar|so[.0-9]*|jsa)$/ || path ~ /\/modules$/) kind = "code (jars, libraries, CDS)";
    else if (path == "[heap]") kind = "malloc [heap]";
    else if (path ~ /^\[stack/) kind = "[stack]";
    else if (path == "") kind = "anonymous (Java heap, direct buffers, thread stacks, malloc arenas)";
    else kind = "other: " path;
    maps[kind]++;
    next
  }
  /^Rss:/ { rss[kind] += $2 }
  END { for (k in rss) printf "%10d KiB %6d maps  %s\n", rss[k], maps[k], k }
' "/proc/$pid/smaps" | sort -rn
if command -v jcmd > /dev/null && jcmd "$pid" VM.native_memory summary > /tmp/nmt-$$.txt 2>&1 \
    && grep -q 'committed' /tmp/nmt-$$.txt; then
  echo "== jcmd VM.native_memory summary (committed)"
  grep -E '^(Total|-\s+[A-Za-z ]+ \(reserved)' /tmp/nmt-$$.txt | sed -E 's/reserved=[0-9]+KB, //'
fi
rm -f /tmp/nmt-$$.txt
