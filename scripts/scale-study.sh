#!/usr/bin/env bash
# Scale-out figures (docs/performance.md, "scale-out"; docs/scale-out.md): on the GPU machine, from
# the bundle (scripts/gpu-bundle.sh, which carries OpenMPI), mpirun with one rank per GPU. Parts,
# in the order given (a device lease is short: put first what matters most):
#   hybrid  the hybrid ensemble on 1 and 2 GPUs: D_c > 0 (GPU-bound) at R = 4000 and 16 000, D_c = 0
#           at R = 20 000, the 2-rank runs with each rank bound to half the host's cores (D_c = 0
#           unbound too, and on one GPU bound to half the cores: a rank's share); and the 1-GPU
#           D_c = 0 run on a quarter and half of the cores (host-bound?);
#   angio   strong scaling 400x400x1400 on 1 and 2 GPUs in fp32 and fp64, the flux form and the
#           expanded one (the default: two steps per pass, on one GPU and on slabs), fp32 with the
#           same-node CUDA IPC exchange too; weak scaling of the default form
#           (400x400x700 a GPU); the series of every multi-rank run compared byte for byte with the
#           single-rank one;
#   angio-expanded  the same for the expanded form only (strong fp32 with IPC, fp64, weak);
#   hybrid-quick  the D_c = 0 ensemble, then D_c > 0 at R = 4000 only;
#   hybrid-large  the D_c = 0 ensemble of 10^5 realisations;
#   hybrid-million  the D_c = 0 ensemble of 10^5, 4*10^5 and 10^6 realisations (STUDY_REPLICATES), the
#           metrics files of the first 16 only, on 1 and 2 GPUs, twice each;
#   prolif  prolif 10^8 initial cells (cells split) and 1024 replicates on 1 and 2 GPUs;
#   fit     a calibration (ProCell's model 3 on the bundle's bone-marrow data) on 1 and 2 GPUs;
#   largest 2000x2000x1000 fp64 (96 GB of fields) on two GPUs.
# With one GPU the 2-rank runs share it (correctness and exchange cost, not scaling).
# JSON summary lines into $OUT/scale.jsonl (or /tmp/scale-study); a table on stdout.
# Usage: bash scripts/scale-study.sh [--parts LIST] [--largest] [STEPS]
#        (LIST: comma-separated parts; default hybrid,angio,prolif,fit; --largest adds largest)
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bundle="$here/.bundle"
parts="hybrid,angio,prolif,fit" largest=""
while [ $# -gt 0 ]; do
  case "$1" in
    --largest) largest=",largest"; shift ;;
    --parts) [ $# -ge 2 ] || { echo "scale-study: --parts needs a list" >&2; exit 2; }; parts="$2"; shift 2 ;;
    -*) echo "scale-study: unknown option '$1' (--parts LIST, --largest, STEPS)" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -le 1 ] || { echo "scale-study: one STEPS at most (got: $*)" >&2; exit 2; }
[[ "${1:-400}" =~ ^[1-9][0-9]*$ ]] || { echo "scale-study: STEPS must be a positive integer (got '$1')" >&2; exit 2; }
parts="$parts$largest"
for part in ${parts//,/ }; do  # every part known before any runs
  case "$part" in
    hybrid|hybrid-quick|hybrid-large|hybrid-million|angio|angio-expanded|prolif|fit|largest) ;;
    *) echo "scale-study: unknown part '$part' (hybrid, hybrid-quick, hybrid-large, hybrid-million, angio, angio-expanded, prolif, fit, largest)" >&2; exit 2 ;;
  esac
done
steps="${1:-400}"
[ -x "$bundle/simkit" ] || tar xJf "$bundle/simkit-bundle.txz" -C "$bundle" \
  || { echo "scale-study: no bundle in $bundle (scripts/gpu-bundle.sh makes it)" >&2; exit 1; }
export LD_LIBRARY_PATH="$bundle${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" SIMKIT_HALO="${SIMKIT_HALO:-}"
{ keep="$here"; source "$bundle/ompi/env.sh"; here="$keep"; }
out="${OUT:-/tmp/scale-study}"
mkdir -p "$out"
s="$bundle/simkit"
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
cores=$(nproc --all)  # the host's, whatever OMP_NUM_THREADS or the affinity says
half=$(( cores / 2 > 0 ? cores / 2 : 1 ))
{ echo "$cores"; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nvidia-smi topo -m; cat "$bundle/COMMIT"; } \
  > "$out/machine.txt" 2>&1
w=/tmp/scale-work && rm -rf "$w" && mkdir -p "$w"
# one JSON line: tag, ranks, then simkit's --json summary. MPIRUN_OPTS: the 2-rank runs' placement
# (default: no binding); a run that takes more than STUDY_RUN_LIMIT seconds (default 150) is stopped.
run() {
  local tag="$1" ranks="$2"; shift 2
  local line limit="${STUDY_RUN_LIMIT:-150}" rc
  if [ "$ranks" = 1 ]; then
    # STUDY_CPUS: the one rank's cores (taskset -c), e.g. half the host, a rank's share in the 2-rank runs
    line=$(timeout -k 10 "$limit" ${STUDY_CPUS:+taskset -c "$STUDY_CPUS"} "$s" "$@" --json -q 2>> "$out/errors.txt")
  else
    local pass=(-x SIMKIT_HALO)
    [ -n "${OMP_NUM_THREADS:-}" ] && pass+=(-x OMP_NUM_THREADS)
    # shellcheck disable=SC2086
    line=$(timeout -k 10 "$limit" mpirun -n "$ranks" ${MPIRUN_OPTS:---bind-to none} "${pass[@]}" "$s" "$@" --json -q \
           2>> "$out/errors.txt")
    rc=$?
    # a placement this host cannot give (not a run stopped at its limit): once more, unbound
    if [ -z "$line" ] && [ -n "${MPIRUN_OPTS:-}" ] && [ $rc -ne 124 ] && [ $rc -ne 137 ]; then
      echo "$tag: mpirun $MPIRUN_OPTS failed, run again unbound" | tee -a "$out/errors.txt"
      MPIRUN_OPTS="" run "$tag" "$ranks" "$@"
      return
    fi
  fi
  echo "{\"tag\":\"$tag\",\"halo\":\"${SIMKIT_HALO:-auto}\",\"ranks\":$ranks,\"gpus\":$gpus,\"mpirun\":\"${MPIRUN_OPTS:-}\",\"threads\":\"${OMP_NUM_THREADS:-}\",\"summary\":${line:-null}}" >> "$out/scale.jsonl"
  echo "$tag ranks=$ranks ${MPIRUN_OPTS:-} ${OMP_NUM_THREADS:+threads=$OMP_NUM_THREADS}: $(echo "$line" | grep -oE '"(compute|simulate|fit)_seconds":[0-9.e+-]+' | head -1)"
}
same() {  # same TAG FILE1 FILE2: byte for byte, into equal.txt
  local verdict=DIFFER
  if [ ! -f "$2" ] || [ ! -f "$3" ]; then verdict="MISSING (a run failed)"; elif cmp -s "$2" "$3"; then verdict=equal; fi
  echo "$1: $verdict" | tee -a "$out/equal.txt"
}

hybrid_dc() {  # R: with TAF diffusion each realisation sweeps its own c field on the GPU (bandwidth-bound)
  printf 'model = "hybrid"\n[grid]\nsize = [100, 100, 100]\n[time]\ndt = 0.01\nt_max = 2\n[parameters]\nD_c = 0.0003\n' > "$w/dc.toml"
  local dc=(angio hybrid --backend cuda --config "$w/dc.toml" --replicates "$1" --seed 3 --no-quicklook)
  run "hybrid-ensemble-Dc-R$1" 1 "${dc[@]}" --out "$w/d1"
  MPIRUN_OPTS="--map-by slot:PE=$half" run "hybrid-ensemble-Dc-R$1" 2 "${dc[@]}" --out "$w/d2"
  same "hybrid-ensemble-Dc-R$1 ensemble.csv" "$w/d1/ensemble.csv" "$w/d2/ensemble.csv"
  rm -rf "$w/d1" "$w/d2"
}
hybrid_d0() {  # D_c = 0, R (default 20 000; each run also writes R metrics files, not in the compute time)
  local r="${1:-20000}"
  local h=(angio hybrid --backend cuda --grid 100,100,100 --replicates "$r" --t-max 2 --seed 3 --no-quicklook)
  run "hybrid-ensemble-R$r" 1 "${h[@]}" --out "$w/h1"
  # one GPU with a rank's share of the host (half the cores, as in the bound 2-rank run below)
  STUDY_CPUS="0-$((half - 1))" run "hybrid-ensemble-R$r-half-host" 1 "${h[@]}" --out "$w/h4"
  rm -rf "$w/h4"
  MPIRUN_OPTS="--map-by slot:PE=$half" run "hybrid-ensemble-R$r" 2 "${h[@]}" --out "$w/h2"
  run "hybrid-ensemble-R$r" 2 "${h[@]}" --out "$w/h3"
  same "hybrid-ensemble-R$r ensemble.csv" "$w/h1/ensemble.csv" "$w/h2/ensemble.csv"
  same "hybrid-ensemble-R$r ensemble.csv, unbound" "$w/h1/ensemble.csv" "$w/h3/ensemble.csv"
  same "hybrid-ensemble-R$r metrics/realisation_$((r - 1)).csv" "$w/h1/metrics/realisation_$((r - 1)).csv" \
    "$w/h2/metrics/realisation_$((r - 1)).csv"
  rm -rf "$w/h1" "$w/h2" "$w/h3"
}
# hybrid_many R M: D_c = 0 at R realisations, writing the metrics files of the first M only (so that
# 10^5-10^6 realisations measure the ensemble, not a file system); 1 and 2 GPUs, twice each, each pair
# compared (ensemble.csv, the last metrics file written, none past it). With M = 16 every file is
# rank 0's; rank 1's realisations are compared through ensemble.csv.
hybrid_many() {
  local r="$1" m="$2"
  local h=(angio hybrid --backend cuda --grid 100,100,100 --replicates "$r" --t-max 2 --seed 3 --no-quicklook
           --metrics-files "$m")
  local k last
  last="realisation_$(printf %05d $((m - 1))).csv"
  for k in 1 2; do
    rm -rf "$w/m1" "$w/m2"
    run "hybrid-ensemble-R$r-files$m" 1 "${h[@]}" --out "$w/m1"
    MPIRUN_OPTS="--map-by slot:PE=$half" run "hybrid-ensemble-R$r-files$m" 2 "${h[@]}" --out "$w/m2"
    same "hybrid-ensemble-R$r-files$m ensemble.csv" "$w/m1/ensemble.csv" "$w/m2/ensemble.csv"
    same "hybrid-ensemble-R$r-files$m metrics/$last" "$w/m1/metrics/$last" "$w/m2/metrics/$last"
    if [ -e "$w/m2/metrics/realisation_$(printf %05d "$m").csv" ]; then
      echo "hybrid-ensemble-R$r-files$m: a metrics file past the first $m" | tee -a "$out/equal.txt"
    fi
  done
  rm -rf "$w/m1" "$w/m2"
}
part_hybrid() {
  hybrid_dc 4000
  hybrid_dc 16000
  hybrid_d0
  # is the D_c = 0 ensemble bound by the host's rebuild? the same run on fewer cores
  local h=(angio hybrid --backend cuda --grid 100,100,100 --replicates 20000 --t-max 2 --seed 3 --no-quicklook)
  for t in $(( cores / 4 > 0 ? cores / 4 : 1 )) $half; do
    OMP_NUM_THREADS=$t run "hybrid-ensemble-R20000-threads" 1 "${h[@]}" --threads $t --out "$w/t$t"
    rm -rf "$w/t$t"
  done
}
part_hybrid-large() {  # the D_c = 0 ensemble of 10^5 realisations (several batches on one GPU)
  hybrid_d0 100000
}
part_hybrid-million() {  # the D_c = 0 ensemble of 10^5, 4*10^5 and 10^6 realisations, 16 metrics files
  local r
  for r in ${STUDY_REPLICATES:-100000 400000 1000000}; do hybrid_many "$r" 16; done
}
part_hybrid-quick() {  # the D_c = 0 ensemble, then D_c > 0 at R = 4000
  hybrid_d0
  hybrid_dc 4000
}

part_angio() {
  for form in ${angio_forms:-flux expanded}; do
    local angio=(angio run --backend cuda --form $form --series-every 100 --no-snapshots --no-quicklook --steps "$steps")
    for p in fp32 fp64; do
      run "angio-strong-$form-$p" 1 "${angio[@]}" --grid 400,400,1400 --precision $p --out "$w/s1"
      run "angio-strong-$form-$p" 2 "${angio[@]}" --grid 400,400,1400 --precision $p --out "$w/s2"
      same "angio-strong-$form-$p series" "$w/s1/series.csv" "$w/s2/series.csv"
      if [ $p = fp32 ]; then  # the same-node peer copies (CUDA IPC), not host-staged
        SIMKIT_HALO=ipc run "angio-strong-$form-$p-ipc" 2 "${angio[@]}" --grid 400,400,1400 --precision $p --out "$w/s3"
        same "angio-strong-$form-$p ipc series" "$w/s1/series.csv" "$w/s3/series.csv"
      fi
      rm -rf "$w/s1" "$w/s2" "$w/s3"
    done
  done
  # weak scaling, the default (expanded) form: 400x400x700 a GPU
  local angio=(angio run --backend cuda --series-every 100 --no-snapshots --no-quicklook --steps "$steps")
  run "angio-weak-expanded-fp32" 1 "${angio[@]}" --grid 400,400,700 --out "$w/w1"
  run "angio-weak-expanded-fp32" 2 "${angio[@]}" --grid 400,400,1400 --out "$w/w2"
  rm -rf "$w/w1" "$w/w2"
}

part_prolif() {
  printf '1000 40000000\n500 30000000\n250 30000000\n' > "$w/h0_1e8.txt"
  printf '1000 400000\n500 300000\n250 300000\n' > "$w/h0_1e6.txt"
  local prolif=(prolif simulate --backend cuda --config "$here/examples/prolif/model.toml")
  run "prolif-1e8-cells" 1 "${prolif[@]}" --histogram "$w/h0_1e8.txt" --out "$w/p1"
  run "prolif-1e8-cells" 2 "${prolif[@]}" --histogram "$w/h0_1e8.txt" --out "$w/p2"
  for f in $(cd "$w/p1" && ls *.csv 2>/dev/null); do same "prolif-1e8 $f" "$w/p1/$f" "$w/p2/$f"; done
  run "prolif-replicates" 1 "${prolif[@]}" --histogram "$w/h0_1e6.txt" --replicates 1024 --out "$w/r1"
  run "prolif-replicates" 2 "${prolif[@]}" --histogram "$w/h0_1e6.txt" --replicates 1024 --out "$w/r2"
  rm -rf "$w/p1" "$w/p2" "$w/r1" "$w/r2"
}

part_fit() {
  # calibration evaluations split by rank (the bone-marrow data of the bundle, ProCell's model 3)
  local d="$bundle/data/procell"
  [ -f "$d/AML9_Exp3_t10d_UT1_BM_GFPpos.txt" ] || { echo "fit: no bone-marrow data in the bundle"; return; }
  local fit=(prolif fit --backend cuda --histogram "$d/AML9_Exp3_t10d_UT1_BM_GFPpos.txt"
             --config "$here/examples/prolif/fit/model3.toml" --target "$d/AML9_Exp3_t10d_DOX3_BM_GFPpos.txt@240"
             --particles 50 --iterations 100 --replicates 4 --seed 1)
  run "prolif-fit" 1 "${fit[@]}" --out "$w/f1"
  run "prolif-fit" 2 "${fit[@]}" --out "$w/f2"
  same "prolif-fit history.csv" "$w/f1/history.csv" "$w/f2/history.csv"
  rm -rf "$w/f1" "$w/f2"
}

part_largest() {
  run "angio-largest-fp64" 2 angio run --backend cuda --form flux --series-every 5 --no-snapshots --no-quicklook \
    --steps 20 --grid 2000,2000,1000 --precision fp64 --out "$w/big"
  rm -rf "$w/big"
}

part_angio-expanded() { angio_forms=expanded part_angio; }

for part in ${parts//,/ }; do
  echo "== $part"
  "part_$part"
done
rm -rf "$w"
