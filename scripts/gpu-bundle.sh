#!/usr/bin/env bash
# Builds, on this machine, a small self-contained bundle for the GPU machine (which has no package
# registry): simkit, the test and benchmark binaries, and the few shared libraries they need,
# all side by side with RPATH $ORIGIN (CUDA runtime linked statically, fmt header-only, GoogleTest
# static). Output: .bundle/simkit-bundle.txz (git-ignored; the binaries and OpenMPI are about 180 MB,
# the carry limit is 64 MiB, so they travel xz-compressed: about 31 MB), carried to the GPU machine with the device tool, where
# scripts/gpu-check.sh unpacks it.
# Usage: scripts/gpu-bundle.sh [--data DIR]   (DIR: test data to include; default ../shared/data)
set -euo pipefail
cd "$(dirname "$0")/.."
data="../shared/data"
[ "${1:-}" = "--data" ] && data="$2"
command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"

cmake --preset bundle >/dev/null
cmake --build --preset bundle

out=build/bundle-stage
rm -rf "$out" build/bundle-install
# The install tree's bundle component: binaries and the shared libraries they need (cmake/install.cmake).
cmake --install build/bundle --prefix build/bundle-install --component bundle >/dev/null
mv build/bundle-install/bundle "$out"
rm -rf build/bundle-install
cp scripts/gpu-check.sh "$out/"
# Symbols are not needed there, and the carry limit is 64 MiB.
for bin in "$out"/simkit "$out"/ddm_c_example "$out"/ddm_rti_ticks "$out"/*_test "$out"/bench_*; do
  [ -f "$bin" ] && strip --strip-unneeded "$bin"
done

# OpenMPI's runtime, relocatable (the GPU machine has no MPI): mpirun -n 2 for the mpi tests and the
# scale-out benchmarks (scripts/scale-study.sh); gpu-check.sh sources ompi/env.sh.
if [ -x /usr/bin/orterun ]; then
  bash scripts/mpi-bundle.sh "$out/ompi" > /dev/null
  strip --strip-unneeded "$out"/ompi/libs/*.so* "$out"/ompi/bin/orterun 2>/dev/null || true
fi

if [ -d "$data" ]; then
  mkdir -p "$out/data"
  cp -r "$data"/. "$out/data/"
fi
git rev-parse --short=10 HEAD > "$out/COMMIT" 2>/dev/null || echo unknown > "$out/COMMIT"
[ -n "$(git status --porcelain 2>/dev/null)" ] && echo "+dirty" >> "$out/COMMIT"
rm -rf .bundle && mkdir -p .bundle
tar cf - -C "$out" . | xz -T0 -6 > .bundle/simkit-bundle.txz
du -sh "$out" .bundle/simkit-bundle.txz
ls "$out"
