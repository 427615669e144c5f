#!/usr/bin/env bash
# Scale-out figures (docs/performance.md, "scale-out"; docs/scale-out.md): on the GPU machine, from
# the bundle (scripts/gpu-bundle.sh, which carries OpenMPI), mpirun with one rank per GPU:
#   angio strong scaling 400x400x1400 fp32 (and fp64) on 1 and 2 GPUs, weak scaling (400x400x700 a
#   GPU), the series of every multi-rank run compared byte for byte with the single-rank one;
#   the hybrid ensemble and prolif replicates on 1 and 2 GPUs; prolif 10^8 initial cells on 1 and 2.
#   --largest: also 2000x2000x1000 fp64 (96 GB of fields) on two GPUs.
# With one GPU the 2-rank runs share it (correctness and exchange cost, not scaling).
# JSON summary lines into $OUT/scale.jsonl (or /tmp/scale-study); a table on stdout.
# Usage: bash scripts/scale-study.sh [--largest] [STEPS]
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bundle="$here/.bundle"
[ -x "$bundle/simkit" ] || tar xJf "$bundle/simkit-bundle.txz" -C "$bundle"
export LD_LIBRARY_PATH="$bundle${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" SIMKIT_HALO="${SIMKIT_HALO:-}"
{ keep="$here"; source "$bundle/ompi/env.sh"; here="$keep"; }
largest=0
[ "${1:-}" = "--largest" ] && { largest=1; shift; }
steps="${1:-400}"
out="${OUT:-/tmp/scale-study}"
mkdir -p "$out"
s="$bundle/simkit"
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
{ nproc; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nvidia-smi topo -m; cat "$bundle/COMMIT"; } \
  > "$out/machine.txt" 2>&1
w=/tmp/scale-work && rm -rf "$w" && mkdir -p "$w"
# one JSON line: tag, ranks, then simkit's --json summary
run() {
  local tag="$1" ranks="$2"; shift 2
  local line
  if [ "$ranks" = 1 ]; then
    line=$("$s" "$@" --json -q 2>> "$out/errors.txt")
  else
    line=$(mpirun -n "$ranks" --bind-to none -x SIMKIT_HALO "$s" "$@" --json -q 2>> "$out/errors.txt")
  fi
  echo "{\"tag\":\"$tag\",\"halo\":\"${SIMKIT_HALO:-auto}\",\"ranks\":$ranks,\"gpus\":$gpus,\"summary\":${line:-null}}" >> "$out/scale.jsonl"
  echo "$tag ranks=$ranks: $(echo "$line" | grep -oE '"(compute|simulate|fit)_seconds":[0-9.e+-]+' | head -1)"
}
angio=(angio run --backend cuda --form flux --series-every 100 --no-snapshots --no-quicklook --steps "$steps")
for p in fp32 fp64; do
  run "angio-strong-$p" 1 "${angio[@]}" --grid 400,400,1400 --precision $p --out "$w/s1$p"
  run "angio-strong-$p" 2 "${angio[@]}" --grid 400,400,1400 --precision $p --out "$w/s2$p"
  # the same-node peer copies (CUDA IPC) instead of the host-staged exchange
  SIMKIT_HALO=ipc run "angio-strong-$p-ipc" 2 "${angio[@]}" --grid 400,400,1400 --precision $p --out "$w/s3$p"
  cmp "$w/s1$p/series.csv" "$w/s3$p/series.csv" || echo "angio-strong-$p ipc: SERIES DIFFER" | tee -a "$out/equal.txt"
  cmp "$w/s1$p/series.csv" "$w/s2$p/series.csv" && echo "angio-strong-$p: series bitwise equal" | tee -a "$out/equal.txt" \
    || echo "angio-strong-$p: SERIES DIFFER" | tee -a "$out/equal.txt"
done
run "angio-weak-fp32" 1 "${angio[@]}" --grid 400,400,700 --out "$w/w1"
run "angio-weak-fp32" 2 "${angio[@]}" --grid 400,400,1400 --out "$w/w2"
# the hybrid ensemble (realisations split by range) and prolif (replicates; initial cells)
hybrid=(angio hybrid --backend cuda --grid 100,100,100 --replicates 20000 --t-max 2 --seed 3 --no-quicklook)
run "hybrid-ensemble" 1 "${hybrid[@]}" --out "$w/h1"
run "hybrid-ensemble" 2 "${hybrid[@]}" --out "$w/h2"
cmp "$w/h1/ensemble.csv" "$w/h2/ensemble.csv" && echo "hybrid-ensemble: ensemble.csv equal" | tee -a "$out/equal.txt"
# with TAF diffusion each realisation sweeps its own c field on the GPU (bandwidth-bound, not host-bound)
printf 'model = "hybrid"\n[grid]\nsize = [100, 100, 100]\n[time]\ndt = 0.01\nt_max = 2\n[parameters]\nD_c = 0.0003\n' > "$w/dc.toml"
hybrid_dc=(angio hybrid --backend cuda --config "$w/dc.toml" --replicates 4000 --seed 3 --no-quicklook)
run "hybrid-ensemble-Dc" 1 "${hybrid_dc[@]}" --out "$w/d1"
run "hybrid-ensemble-Dc" 2 "${hybrid_dc[@]}" --out "$w/d2"
cmp "$w/d1/ensemble.csv" "$w/d2/ensemble.csv" && echo "hybrid-ensemble-Dc: ensemble.csv equal" | tee -a "$out/equal.txt"
printf '1000 40000000\n500 30000000\n250 30000000\n' > "$w/h0_1e8.txt"
printf '1000 400000\n500 300000\n250 300000\n' > "$w/h0_1e6.txt"
prolif=(prolif simulate --backend cuda --config "$here/examples/prolif/model.toml")
run "prolif-1e8-cells" 1 "${prolif[@]}" --histogram "$w/h0_1e8.txt" --out "$w/p1"
run "prolif-1e8-cells" 2 "${prolif[@]}" --histogram "$w/h0_1e8.txt" --out "$w/p2"
for f in $(cd "$w/p1" && ls *.csv 2>/dev/null); do cmp "$w/p1/$f" "$w/p2/$f" || echo "prolif-1e8: $f DIFFERS" | tee -a "$out/equal.txt"; done
run "prolif-replicates" 1 "${prolif[@]}" --histogram "$w/h0_1e6.txt" --replicates 1024 --out "$w/r1"
run "prolif-replicates" 2 "${prolif[@]}" --histogram "$w/h0_1e6.txt" --replicates 1024 --out "$w/r2"
# calibration evaluations split by rank (the bone-marrow data of the bundle, ProCell's model 3)
d="$bundle/data/procell"
if [ -f "$d/AML9_Exp3_t10d_UT1_BM_GFPpos.txt" ]; then
  fit=(prolif fit --backend cuda --histogram "$d/AML9_Exp3_t10d_UT1_BM_GFPpos.txt" --config "$here/examples/prolif/fit/model3.toml"
       --target "$d/AML9_Exp3_t10d_DOX3_BM_GFPpos.txt@240" --particles 50 --iterations 100 --replicates 4 --seed 1)
  run "prolif-fit" 1 "${fit[@]}" --out "$w/f1"
  run "prolif-fit" 2 "${fit[@]}" --out "$w/f2"
  cmp "$w/f1/history.csv" "$w/f2/history.csv" && echo "prolif-fit: history.csv equal" | tee -a "$out/equal.txt"
fi
if [ $largest = 1 ]; then
  run "angio-largest-fp64" 2 angio run --backend cuda --form flux --series-every 5 --no-snapshots --no-quicklook \
    --steps 20 --grid 2000,2000,1000 --precision fp64 --out "$w/big"
fi
rm -rf "$w"
