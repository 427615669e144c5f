#!/usr/bin/env bash
# The incremental matcher at federation rates (docs/performance.md, "ddm replay"): on the GPU
# machine, from the bundle (scripts/gpu-bundle.sh), the ddm incremental tests, then `ddm replay`
# of the d = 2 case (N = 10^6, alpha = 100) moving 0.1 % and 1 % of the regions per tick, and
# entity workloads (generate --moving, replay --mobility waypoint) when the build has them, on the
# cpu and cuda backends; JSON lines into $OUT (or /tmp/ddm-study).
# Usage: bash scripts/ddm-federation-study.sh [TICKS_0.1% [TICKS_1%]]
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bundle="$here/.bundle"
[ -x "$bundle/simkit" ] || tar xJf "$bundle/simkit-bundle.txz" -C "$bundle"
export LD_LIBRARY_PATH="$bundle${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
out="${OUT:-/tmp/ddm-study}"
mkdir -p "$out"
s="$bundle/simkit"
ticks_small="${1:-300}" ticks_large="${2:-60}"
{ nproc; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; cat "$bundle/COMMIT"; } > "$out/machine.txt" 2>&1
for t in ddm_incremental_test ddm_resident_grid_test ddm_c_api_test; do
  [ -x "$bundle/$t" ] && "$bundle/$t" > "$out/$t.log" 2>&1; echo "$t exit $?" >> "$out/tests.txt"
done
w=/tmp/ddm-study-work && rm -rf "$w" && mkdir -p "$w"
"$s" ddm generate --n 1000000 --alpha 100 --dims 2 --seed 1 --out "$w/r2.bin" -q > "$out/generate.txt" 2>&1
for b in cuda cpu; do
  for case in "0.001 $ticks_small" "0.01 $ticks_large"; do
    set -- $case
    "$s" ddm replay --input "$w/r2.bin" --ticks "$2" --move-fraction "$1" --backend "$b" --json -q --verify \
      >> "$out/replay.jsonl" 2>> "$out/replay.err"
  done
done
if "$s" ddm generate --help 2>/dev/null | grep -q -- --moving; then
  "$s" ddm generate --moving --n 1000000 --alpha 100 --dims 2 --seed 2 --out "$w/fed.bin" -q >> "$out/generate.txt" 2>&1
  for b in cuda cpu; do
    for case in "0.001 $ticks_small" "0.01 $ticks_large"; do
      set -- $case
      "$s" ddm replay --input "$w/fed.bin" --mobility waypoint --ticks "$2" --move-fraction "$1" --backend "$b" \
        --json -q --verify >> "$out/replay-moving.jsonl" 2>> "$out/replay.err"
    done
  done
fi
[ -x "$bundle/bench_ddm_incremental" ] &&
  "$bundle/bench_ddm_incremental" --benchmark_min_time=0.5 --benchmark_out="$out/bench_ddm_incremental.json" \
    --benchmark_out_format=json > "$out/bench_ddm_incremental.txt" 2>&1
rm -rf "$w"
cat "$out/tests.txt" "$out/replay.jsonl" "$out/replay.err" 2>/dev/null
