#!/usr/bin/env python3
"""Resident memory of a JVM by what it is, joining the kernel's view (smaps) with the JVM's (NMT detail).

    jcmd PID VM.native_memory detail > nmt.txt      # the JVM started with -XX:NativeMemoryTracking=detail
    cat /proc/PID/smaps > smaps.txt                 # taken in the same second
    bench/scripts/rss-by-area.py nmt.txt smaps.txt

NMT's summary gives what the JVM has committed, which is not what is resident: G1, for one, commits its mark
stack and bitmaps up front and touches little of them. smaps gives what is resident, per mapping, without
saying whose. This prints, per JVM area, the resident memory of the anonymous mappings that lie inside the
area's reserved ranges (NMT's "Virtual memory map"), and, for the rest, file mappings by file kind and the
anonymous memory no area reserved (malloc's arenas, where direct buffers and the JVM's own mallocs live).
"""
import collections
import re
import sys


def reserved_ranges(nmt_path):
    ranges = []
    pattern = re.compile(r"\[(0x[0-9a-f]+) - (0x[0-9a-f]+)\] reserved \d+KB for (.+?) from")
    for line in open(nmt_path):
        m = pattern.match(line)
        if m:
            ranges.append((int(m.group(1), 16), int(m.group(2), 16), m.group(3)))
    if not ranges:
        sys.exit(f"{nmt_path}: no reserved ranges; was it `jcmd PID VM.native_memory detail` with NMT=detail?")
    return sorted(ranges)


def kind_of(start, end, path, ranges):
    if path.startswith("["):
        return "malloc [heap]" if path == "[heap]" else path
    if path:
        name = path.rsplit("/", 1)[-1].replace(" (deleted)", "")
        if name.endswith(".cq4"):
            return "file: chronicle segments (.cq4)"
        if name.endswith(".cq4t"):
            return "file: chronicle metadata (.cq4t)"
        if "journal" in name:
            return "file: ack journals"
        return "file: code and other (jars, libraries, class archive)"
    for r_start, r_end, area in ranges:
        if r_start < end and start < r_end:
            return "JVM: " + area
    return "anonymous, no JVM area (malloc arenas, direct buffers)"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    ranges = reserved_ranges(sys.argv[1])
    resident, mapped = collections.Counter(), collections.Counter()
    current = None
    header = re.compile(r"([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$")
    for line in open(sys.argv[2]):
        m = header.match(line)
        if m:
            start, end = int(m.group(1), 16), int(m.group(2), 16)
            current = kind_of(start, end, m.group(3).strip(), ranges)
            mapped[current] += (end - start) // 1024
        elif line.startswith("Rss:") and current:
            resident[current] += int(line.split()[1])
    print(f"{'resident MiB':>12} {'mapped MiB':>11}  what")
    for kind, kib in resident.most_common():
        if kib >= 512:
            print(f"{kib / 1024:12.1f} {mapped[kind] / 1024:11.1f}  {kind}")
    print(f"{sum(resident.values()) / 1024:12.1f} {'':>11}  total (areas under 0.5 MiB not listed)")


if __name__ == "__main__":
    main()
