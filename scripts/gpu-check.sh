#!/usr/bin/env bash
# On the GPU machine: runs every test binary of the bundle (the gpu-labelled ones included) and
# the benchmarks, without CMake or CTest, and ends with a short table. Logs go to $OUT when set.
# Usage (from the repository root, .bundle carried):
#   bash scripts/gpu-check.sh [--tests-only|--bench-only] [BENCH_FILTER]
#   bash scripts/gpu-check.sh --profile BENCH_FILTER [KERNEL_REGEX]   (Nsight Compute on one kernel)
#   bash scripts/gpu-check.sh --sanitize [TOOLS]   (compute-sanitizer over every test of CUDA code)
# GPU_CHECK_TESTS=REGEX runs only the test binaries whose names match (the CUDA IPC run of the slab
# tests only when it matches "dist_angio_ipc", the CLI checks only when it matches "cli"); a regex
# that selects nothing is a failure. GPU_CHECK_DEADLINE=EPOCH_SECONDS (tests only, not benchmarks)
# starts no test after that time and stops a test binary still running then (a lease is short:
# what was not run or was stopped is listed as such).
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bundle="$here/.bundle"
if [ ! -x "$bundle/simkit" ] && [ -f "$bundle/simkit-bundle.txz" ]; then  # scripts/gpu-bundle.sh's archive
  tar xJf "$bundle/simkit-bundle.txz" -C "$bundle"
fi
[ -x "$bundle/simkit" ] || bundle="$here"   # also works when run from inside the bundle
# Logs go to a work folder; with $OUT set (the device tool), they come back packed as one file
# (the tool returns at most 8 files).
out=/tmp/simkit-gpu-check
mkdir -p "$out"
pack() { [ -n "${OUT:-}" ] && tar czf "$OUT/gpu-check-logs-${mode#--}.tgz" -C "$out" . 2>/dev/null; }
trap pack EXIT
mode="${1:-all}"
filter="${2:-.}"
export SIMKIT_BIN="$bundle/simkit" SIMKIT_DATA_DIR="$bundle/data" LD_LIBRARY_PATH="$bundle${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The bundled OpenMPI (scripts/mpi-bundle.sh): mpirun for the mpi-labelled tests (SIMKIT_MPIEXEC).
[ -f "$bundle/ompi/env.sh" ] && { keep="$here"; source "$bundle/ompi/env.sh"; here="$keep"; }
commit=$(cat "$bundle/COMMIT" 2>/dev/null | tr '\n' ' ')

echo "== simkit info (bundle commit $commit)"
"$bundle/simkit" info | tee "$out/info.txt"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv 2>/dev/null | tee -a "$out/info.txt"

if [ "$mode" = "--sanitize" ]; then
  # compute-sanitizer over every test that runs CUDA code: memcheck (out-of-bounds and misaligned
  # accesses, device-memory leaks), racecheck (shared-memory hazards: the staged kernels' plane
  # rings), synccheck (barriers) and initcheck (reads of uninitialised device memory). TOOLS
  # (optional, comma-separated) picks some. CudaCheck.FailedAllocationIsADeviceMemoryError asks for
  # an impossible allocation on purpose, which memcheck reports as an API error: it is left out.
  # Results in docs/reliability.md.
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  [ -n "$cs" ] || { echo "no compute-sanitizer on this machine"; exit 1; }
  tools="${2:-memcheck,initcheck,synccheck,racecheck}"
  # The sanitizers slow kernels 10-100x: the suites' smaller cases, which still reach every kernel
  # (each staged variant, the hybrid sweep, every prolif start mode, each ddm output mode).
  targets=("angio_solver_test:*cuda*" "angio_hybrid_test:*cuda*" "angio_hybrid_cuda_test:*"
           "core_rng_cuda_test:*-CudaCheck.FailedAllocationIsADeviceMemoryError"
           "prolif_backends_test:*MoreThan62*cuda*"
           "ddm_match_test:*EdgeCases/gpu:*EdgeCases/bitmatrix:*SixtyFour*/gpu:DdmMatch.Gpu*"
           "ddm_incremental_test:*Cuda*" "angio_solver_cuda_test:*" "cli-prolif:" "cli-ddm:")
  # Small whole runs through the CLI (the test suites' prolif and ddm cases are too long under
  # memcheck): 400 initial cells, every start mode's kernel; the example regions, every output.
  sdir=/tmp/simkit-sanitize && rm -rf "$sdir" && mkdir -p "$sdir"
  printf '100 100\n300 200\n900 100\n' > "$sdir/h0.txt"
  "$bundle/simkit" ddm generate --n 4000 --alpha 8 --dims 2 --seed 3 --out "$sdir/r.bin" > /dev/null
  cat > "$sdir/cli-prolif.sh" <<EOS
set -e
for start in sync procell-async; do
  "$bundle/simkit" prolif simulate --histogram "$sdir/h0.txt" --config "$here/examples/prolif/model.toml" \\
    --start \$start --replicates 3 --backend cuda --out "$sdir/p" -q
done
EOS
  cat > "$sdir/cli-ddm.sh" <<EOS
set -e
for algorithm in gpu bitmatrix; do
  "$bundle/simkit" ddm match --input "$sdir/r.bin" --backend cuda --algorithm \$algorithm -q
  "$bundle/simkit" ddm match --input "$sdir/r.bin" --backend cuda --algorithm \$algorithm --per-region "$sdir/per.csv" -q
  "$bundle/simkit" ddm match --input "$sdir/r.bin" --backend cuda --algorithm \$algorithm --pairs "$sdir/pairs.csv" -q
done
EOS
  limit="${SANITIZE_LIMIT:-150}"  # seconds per test binary and tool
  failed=0
  for tool in ${tools//,/ }; do
    for target in "${targets[@]}"; do
      name="${target%%:*}" gfilter="${target#*:}"
      [ -n "${SANITIZE_ONLY:-}" ] && ! [[ "$name" =~ $SANITIZE_ONLY ]] && continue  # a regex of names
      extra=()
      [ "$tool" = memcheck ] && extra=(--leak-check full)
      start=$(date +%s)
      log="$out/sanitize-$tool-$name.log"
      if [ "${name#cli-}" != "$name" ]; then  # a CLI run: the sanitizer follows the shell's children
        timeout "$limit" "$cs" --tool "$tool" "${extra[@]}" --error-exitcode 99 --target-processes all --require-cuda-init no \
          bash "$sdir/$name.sh" > "$log" 2>&1
      else
        timeout "$limit" "$cs" --tool "$tool" "${extra[@]}" --error-exitcode 99 "$bundle/$name" --gtest_brief=1 \
          --gtest_filter="$gfilter" > "$log" 2>&1
      fi
      rc=$?
      # Every process the sanitizer followed prints a summary; none means nothing ran on the GPU.
      grep -qE "ERROR SUMMARY|RACECHECK SUMMARY" "$log" || { [ $rc -eq 0 ] && rc=98; }
      if [ $rc -eq 124 ]; then  # too slow under this tool: reported, not a finding
        printf 'sanitize %-10s %-22s not finished in %ss\n' "$tool" "$name" "$limit"
        continue
      fi
      summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1 | sed 's/^=* *//')
      tests=$(grep -oE '^\[  PASSED  \] [0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)
      printf 'sanitize %-10s %-22s rc=%-3s tests passed=%-3s %4ss  %s\n' "$tool" "$name" "$rc" "$tests" \
        "$(( $(date +%s) - start ))" "$summary"
      if [ $rc -ne 0 ]; then
        failed=1
        grep -E "(Invalid|Race|Barrier|Uninitialized|Leaked|Program hit|Error:|hazard)" "$log" | head -8 | sed 's/^=* */  | /'
      fi
    done
  done
  [ $failed -eq 0 ] && echo "gpu-check --sanitize: OK" || echo "gpu-check --sanitize: FINDINGS (logs in $out)"
  exit $failed
fi

if [ "$mode" = "--profile" ]; then
  # One launch of the kernels matching KERNEL_REGEX inside the benchmark case BENCH_FILTER, with the
  # sections that say where issue slots and memory go. Clocks are left as they are.
  kernel="${3:-.}"
  ncu --clock-control none --kernel-name "regex:$kernel" --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats \
    --section MemoryWorkloadAnalysis --section LaunchStats \
    "$bundle/bench_angio" --benchmark_filter="$filter" --benchmark_min_time=0.01 > "$out/ncu.txt" 2>&1
  rc=$?
  grep -vE '^==PROF==|^ +-+$' "$out/ncu.txt" | grep -E 'Duration|Throughput|Issue|Occupancy|Registers|Stall|Warp Cycles|Eligible|Active Warps|Hit Rate|Block Size|Executed Ipc|L1/TEX|L2|DRAM|Memory \[' | head -80
  exit $rc
fi

rows=()
failed=0
notrun=0
not_run() {  # a summary row for what the deadline left out
  rows+=("$(printf '%-32s %s' "$1" "not run (deadline)")")
  notrun=$((notrun + 1))
}
deadline="${GPU_CHECK_DEADLINE:-}"
left() {  # seconds left before the deadline (a large number without one)
  if [ -n "$deadline" ]; then echo $(( deadline - $(date +%s) )); else echo 999999; fi
}
in_filter() {  # 0: selected; 1: not; 2 (an invalid regex) stops the script
  [ -z "${GPU_CHECK_TESTS:-}" ] && return 0
  [[ "$1" =~ $GPU_CHECK_TESTS ]]
  local rc=$?
  [ $rc -eq 2 ] && { echo "gpu-check: GPU_CHECK_TESTS='$GPU_CHECK_TESTS' is not a valid regex"; exit 2; }
  return $rc
}
if [ "$mode" != "--bench-only" ] && [ -n "${GPU_CHECK_TESTS:-}" ]; then
  selected=0
  for name in "$bundle"/*_test dist_angio_ipc cli; do in_filter "$(basename "$name")" && selected=$((selected + 1)); done
  [ $selected -eq 0 ] && { echo "gpu-check: GPU_CHECK_TESTS='$GPU_CHECK_TESTS' selects no test"; exit 2; }
fi
if [ "$mode" != "--bench-only" ]; then
  for t in "$bundle"/*_test; do
    name=$(basename "$t")
    in_filter "$name" || continue
    if [ "$(left)" -le 5 ]; then
      not_run "$name"
      continue
    fi
    start=$(date +%s%N)
    timeout -k 10 "$(left)" "$t" --gtest_brief=1 > "$out/$name.log" 2>&1
    rc=$?
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
      echo "$name: stopped at the deadline" >> "$out/$name.log"
      failed=1
      rows+=("$(printf '%-32s %s' "$name" "stopped (deadline)")")
      continue
    fi
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    pass=$(grep -c '^\[       OK \]' "$out/$name.log" || true)
    total=$(grep -oE '^\[==========\] [0-9]+ tests? from' "$out/$name.log" | tail -1 | grep -oE '[0-9]+' | head -1)
    passed=$(grep -oE '^\[  PASSED  \] [0-9]+' "$out/$name.log" | grep -oE '[0-9]+$' || echo 0)
    skipped=$(grep -oE '^\[  SKIPPED \] [0-9]+' "$out/$name.log" | grep -oE '[0-9]+$' || echo 0)
    failn=$(grep -oE '^\[  FAILED  \] [0-9]+' "$out/$name.log" | grep -oE '[0-9]+$' || echo 0)
    [ $rc -ne 0 ] && failed=1 && grep -E '^\[  FAILED  \]|Failure|error' "$out/$name.log" | head -20
    rows+=("$(printf '%-32s %6s %7s %7s %6s %7dms' "$name" "${total:-?}" "${passed:-0}" "${skipped:-0}" "${failn:-0}" "$ms")")
  done
fi
if [ "$mode" != "--bench-only" ] && [ -x "$bundle/dist_angio_mpi_test" ] && [ -n "${SIMKIT_MPIEXEC:-}" ] &&
   in_filter dist_angio_ipc; then
  if [ "$(left)" -le 5 ]; then
    not_run "dist_angio cuda, CUDA IPC"
  else
    # the slabs' cuda cases again with the same-node CUDA IPC exchange (opt-in; the default stages through the host)
    start=$(date +%s%N)
    SIMKIT_HALO=ipc timeout -k 10 "$(left)" "$bundle/dist_angio_mpi_test" --gtest_brief=1 --gtest_filter='*cuda*' > "$out/dist_angio_ipc.log" 2>&1
    rc=$?
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    passed=$(grep -oE '^\[  PASSED  \] [0-9]+' "$out/dist_angio_ipc.log" | grep -oE '[0-9]+$' || echo 0)
    [ $rc -ne 0 ] && failed=1 && grep -E '^\[  FAILED  \]|Failure' "$out/dist_angio_ipc.log" | head -10
    rows+=("$(printf '%-32s %6s %7s %7s %6s %7dms' "dist_angio cuda, CUDA IPC" 2 "${passed:-0}" 0 $((rc != 0)) "$ms")")
  fi
fi
if [ "$mode" != "--bench-only" ] && in_filter cli && [ "$(left)" -gt 60 ]; then
  # angio through the CLI on the GPU: cuda and cpu write the same bits, and a run restarted from
  # its checkpoint ends bitwise equal to the uninterrupted one (outputs in /tmp: they are large).
  s="$bundle/simkit" d=/tmp/simkit-angio-cli
  rm -rf "$d" && mkdir -p "$d"
  start=$(date +%s%N)
  ok=1
  args=(angio run --grid 100,100,40 --form flux -q)
  "$s" "${args[@]}" --steps 200 --backend cuda --out "$d/cuda" > "$out/angio-cli.log" 2>&1 || ok=0
  "$s" "${args[@]}" --steps 200 --backend cpu --out "$d/cpu" >> "$out/angio-cli.log" 2>&1 || ok=0
  cmp "$d/cuda/snapshots/angio_000200.vti" "$d/cpu/snapshots/angio_000200.vti" >> "$out/angio-cli.log" 2>&1 || ok=0
  "$s" "${args[@]}" --steps 100 --checkpoint-every 100 --backend cuda --out "$d/r" >> "$out/angio-cli.log" 2>&1 || ok=0
  "$s" angio run --restart "$d/r/checkpoint.ckpt" --steps 200 --backend cuda --out "$d/r" -q >> "$out/angio-cli.log" 2>&1 || ok=0
  cmp "$d/r/snapshots/angio_000200.vti" "$d/cuda/snapshots/angio_000200.vti" >> "$out/angio-cli.log" 2>&1 || ok=0
  cmp "$d/r/series.csv" "$d/cuda/series.csv" >> "$out/angio-cli.log" 2>&1 || ok=0
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  [ $ok -eq 1 ] || { failed=1; cat "$out/angio-cli.log"; }
  rows+=("$(printf '%-32s %6s %7s %7s %6s %7dms' "angio CLI cuda=cpu, restart" 3 $((ok * 3)) 0 $((3 - ok * 3)) "$ms")")
  rm -rf "$d"
  # the hybrid model through the CLI: a cuda ensemble writes the same files as a cpu one.
  d=/tmp/simkit-angio-hybrid
  rm -rf "$d" && mkdir -p "$d"
  start=$(date +%s%N)
  ok=1
  args=(angio hybrid --grid 60,60,60 --replicates 50 --seed 11 -q --no-quicklook)
  "$s" "${args[@]}" --backend cuda --out "$d/cuda" > "$out/angio-hybrid-cli.log" 2>&1 || ok=0
  "$s" "${args[@]}" --backend cpu --out "$d/cpu" >> "$out/angio-hybrid-cli.log" 2>&1 || ok=0
  for f in ensemble.csv network.vtp metrics/realisation_00000.csv metrics/realisation_00049.csv; do
    cmp "$d/cuda/$f" "$d/cpu/$f" >> "$out/angio-hybrid-cli.log" 2>&1 || ok=0
  done
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  [ $ok -eq 1 ] || { failed=1; cat "$out/angio-hybrid-cli.log"; }
  rows+=("$(printf '%-32s %6s %7s %7s %6s %7dms' "angio hybrid CLI cuda=cpu" 1 $ok 0 $((1 - ok)) "$ms")")
  rm -rf "$d"
  # the same with every rule option changed (Angio_TDA's rules, examples/angio/angio_tda.toml).
  d=/tmp/simkit-angio-tda
  rm -rf "$d" && mkdir -p "$d"
  start=$(date +%s%N)
  ok=1
  args=(angio run --config "$here/examples/angio/angio_tda.toml" --replicates 64 -q --no-quicklook)
  "$s" "${args[@]}" --backend cuda --out "$d/cuda" > "$out/angio-tda-cli.log" 2>&1 || ok=0
  "$s" "${args[@]}" --backend cpu --out "$d/cpu" >> "$out/angio-tda-cli.log" 2>&1 || ok=0
  for f in ensemble.csv network.vtp metrics/realisation_00063.csv; do
    cmp "$d/cuda/$f" "$d/cpu/$f" >> "$out/angio-tda-cli.log" 2>&1 || ok=0
  done
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  [ $ok -eq 1 ] || { failed=1; cat "$out/angio-tda-cli.log"; }
  rows+=("$(printf '%-32s %6s %7s %7s %6s %7dms' "angio_tda.toml CLI cuda=cpu" 1 $ok 0 $((1 - ok)) "$ms")")
  rm -rf "$d"  # ddm through the CLI: the GPU matchers' per-region counts and sorted pair lists equal the cpu's.
  d=/tmp/simkit-ddm-cli
  rm -rf "$d" && mkdir -p "$d"
  start=$(date +%s%N)
  ok=1
  "$s" ddm generate --n 100000 --alpha 50 --dims 2 --integer --seed 3 --out "$d/r.bin" > "$out/ddm-cli.log" 2>&1 || ok=0
  for b in cuda cpu; do
    "$s" ddm match --input "$d/r.bin" --backend $b --per-region "$d/per_$b.csv" -q >> "$out/ddm-cli.log" 2>&1 || ok=0
    "$s" ddm match --input "$d/r.bin" --backend $b --rule closed --pairs "$d/pairs_$b.csv" -q >> "$out/ddm-cli.log" 2>&1 || ok=0
    sort "$d/pairs_$b.csv" > "$d/sorted_$b.csv"
  done
  "$s" ddm match --input "$d/r.bin" --algorithm bitmatrix --rule closed --pairs "$d/pairs_bm.csv" -q >> "$out/ddm-cli.log" 2>&1 || ok=0
  sort "$d/pairs_bm.csv" > "$d/sorted_bm.csv"
  cmp "$d/per_cuda.csv" "$d/per_cpu.csv" >> "$out/ddm-cli.log" 2>&1 || ok=0
  cmp "$d/sorted_cuda.csv" "$d/sorted_cpu.csv" >> "$out/ddm-cli.log" 2>&1 || ok=0
  cmp "$d/sorted_bm.csv" "$d/sorted_cpu.csv" >> "$out/ddm-cli.log" 2>&1 || ok=0
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  [ $ok -eq 1 ] || { failed=1; cat "$out/ddm-cli.log"; }
  rows+=("$(printf '%-32s %6s %7s %7s %6s %7dms' "ddm CLI gpu/bitmatrix=cpu" 1 $ok 0 $((1 - ok)) "$ms")")
  rm -rf "$d"
elif [ "$mode" != "--bench-only" ] && in_filter cli; then
  not_run "CLI cuda=cpu checks"
fi
if [ "$mode" != "--tests-only" ]; then
  for b in "$bundle"/bench_*; do
    [ -x "$b" ] || continue
    name=$(basename "$b")
    "$b" --benchmark_filter="$filter" --benchmark_min_time=0.2 --benchmark_out="$out/$name.json" \
      --benchmark_out_format=json > "$out/$name.txt" 2>&1 || failed=1
    cat "$out/$name.txt"
  done
fi
echo
echo "== summary (bundle commit $commit)"
printf '%-32s %6s %7s %7s %6s %8s\n' test tests passed skipped failed time
for r in "${rows[@]}"; do echo "$r"; done
if [ $failed -ne 0 ]; then
  echo "gpu-check: FAILURES (logs in $out)"
elif [ $notrun -gt 0 ]; then
  echo "gpu-check: OK for what ran; $notrun not run (deadline)"
else
  echo "gpu-check: OK"
fi
exit $failed
