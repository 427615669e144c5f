#!/usr/bin/env bash
# Where the GPU matcher's time goes (docs/performance.md, "ddm"): on the GPU machine, from the
# bundle (scripts/gpu-bundle.sh), every kernel of one bench_ddm case with Nsight Compute: duration,
# achieved occupancy, memory and issue throughput. Output: $OUT/ncu.csv (or /tmp/ddm-profile) and
# a per-kernel summary on stdout.
# Usage: bash scripts/ddm-match-profile.sh [BENCH_FILTER [LAUNCHES [KERNEL_REGEX]]]
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bundle="$here/.bundle"
[ -x "$bundle/simkit" ] || tar xJf "$bundle/simkit-bundle.txz" -C "$bundle"
export LD_LIBRARY_PATH="$bundle${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
out="${OUT:-/tmp/ddm-profile}"
mkdir -p "$out"
filter="${1:-BM_Ddm/backend:3/N:1000000/d:2/alpha:100/count:0/algorithm:0}"
launches="${2:-40}"
kernel="${3:-.}"
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
[ -n "$ncu" ] || { echo "no ncu on this machine"; exit 0; }
"$ncu" --clock-control none --kernel-name "regex:$kernel" --launch-count "$launches" --csv --page raw \
  --metrics gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__inst_executed.avg.per_cycle_active,launch__registers_per_thread \
  "$bundle/bench_ddm" --benchmark_filter="$filter" --benchmark_min_time=0.01 > "$out/ncu.csv" 2> "$out/ncu.err"
python3 - "$out/ncu.csv" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if r]
head = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
names = rows[head]
k = names.index("Kernel Name")
want = ["gpu__time_duration.sum", "sm__warps_active.avg.pct_of_peak_sustained_active",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed", "sm__inst_executed.avg.per_cycle_active",
        "launch__registers_per_thread"]
at = {w: names.index(w) for w in want if w in names}
total = collections.defaultdict(lambda: [0, 0.0, []])
for r in rows[head + 2:]:
    t = total[r[k][:60]]
    t[0] += 1
    t[1] += float(r[at[want[0]]].replace(",", ""))
    t[2] = [r[at[w]] for w in want[1:] if w in at]
print("calls  total_us  kernel | occupancy% dram% ipc regs")
for name, (n, ns, other) in sorted(total.items(), key=lambda x: -x[1][1]):
    print(f"{n:5d} {ns/1000:9.1f}  {name} | {' '.join(other)}")
PY
