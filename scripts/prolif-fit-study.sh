#!/usr/bin/env bash
# The calibration figures of docs/prolif.md ("Fitting") and docs/performance.md on the real data:
# ProCell's published model 3 as simkit simulates it, fits of model 3 under the optimizer's
# options, ProCell's models 1-4 compared, and bootstrap intervals. One JSON line per run on stdout.
# Usage: scripts/prolif-fit-study.sh SIMKIT DATA_DIR OUT_DIR [BACKEND] [ITERATIONS]
#   (on the GPU machine: bash scripts/prolif-fit-study.sh "$bundle/simkit" "$bundle/data/procell" "$OUT")
set -uo pipefail
simkit=$1 data=$2 out=$3 backend=${4:-auto} iterations=${5:-100}
h0="$data/AML9_Exp3_t10d_UT1_BM_GFPpos.txt"
target="$data/AML9_Exp3_t10d_DOX3_BM_GFPpos.txt"
examples="$(cd "$(dirname "$0")/../examples/prolif" && pwd)"
mkdir -p "$out"
run() {  # label, then simkit arguments
  local label=$1
  shift
  printf '%s\t' "$label"
  "$simkit" "$@" --backend "$backend" -q --json || echo "{\"failed\": \"$label\"}"
}
# ProCell's published model 3 (examples/prolif/procell-model3.toml), 20 seeds.
run procell-model3 prolif simulate --histogram "$h0" --config "$examples/procell-model3.toml" --target "$target" \
  --replicates 20 --out "$out/procell-model3"
for seed in 1 2 3; do
  run "fit-m3-seed$seed" prolif fit --histogram "$h0" --target "$target@240" --config "$examples/fit/model3.toml" \
    --particles 50 --iterations "$iterations" --seed "$seed" --out "$out/m3-seed$seed"
done
run fit-m3-rep4 prolif fit --histogram "$h0" --target "$target@240" --config "$examples/fit/model3.toml" \
  --particles 50 --iterations "$iterations" --replicates 4 --out "$out/m3-rep4"
run fit-m3-crn prolif fit --histogram "$h0" --target "$target@240" --config "$examples/fit/model3.toml" \
  --particles 50 --iterations "$iterations" --crn --out "$out/m3-crn"
run fit-m3-crn-rep4 prolif fit --histogram "$h0" --target "$target@240" --config "$examples/fit/model3.toml" \
  --particles 50 --iterations "$iterations" --crn --replicates 4 --out "$out/m3-crn-rep4"
run fit-m3-cmaes prolif fit --histogram "$h0" --target "$target@240" --config "$examples/fit/model3.toml" \
  --particles 50 --iterations "$iterations" --optimizer cma-es --out "$out/m3-cmaes"
run fit-m3-restarts4 prolif fit --histogram "$h0" --target "$target@240" --config "$examples/fit/model3.toml" \
  --particles 50 --iterations "$iterations" --restarts 4 --out "$out/m3-restarts4"
run fit-m3-crn-restarts4 prolif fit --histogram "$h0" --target "$target@240" --config "$examples/fit/model3.toml" \
  --particles 50 --iterations "$iterations" --crn --restarts 4 --out "$out/m3-crn-restarts4"
for seed in 2 3; do
  run "fit-m3-cmaes-seed$seed" prolif fit --histogram "$h0" --target "$target@240" \
    --config "$examples/fit/model3.toml" --particles 50 --iterations "$iterations" --optimizer cma-es --seed "$seed" \
    --out "$out/m3-cmaes-seed$seed"
done
run compare-m1-m4 prolif fit --histogram "$h0" --target "$target@240" --config "$examples/fit/model1.toml" \
  --config "$examples/fit/model2.toml" --config "$examples/fit/model3.toml" --config "$examples/fit/model4.toml" \
  --particles 50 --iterations "$iterations" --replicates 4 --out "$out/compare"
run bootstrap-m3 prolif fit --histogram "$h0" --target "$target@240" --config "$examples/fit/model3.toml" \
  --particles 50 --iterations "$iterations" --bootstrap 20 --out "$out/m3-bootstrap"
