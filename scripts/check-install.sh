#!/usr/bin/env bash
# Installs a built tree into a fresh prefix and builds the two out-of-tree consumers against it with
# find_package(simkit): the ddm C API examples (C99) and the prolif C++ example; runs them.
# Usage: scripts/check-install.sh BUILD_DIR WORK_DIR   (CTest runs it as install_consumers)
set -euo pipefail
build="$1"
work="$2"
src="$(cd "$(dirname "$0")/.." && pwd)"
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
for example in ddm prolif/cpp; do
  name="${example//\//-}"
  cmake -S "$src/examples/$example" -B "$work/$name" "${generator[@]}" -DCMAKE_PREFIX_PATH="$work/prefix" \
    -DCMAKE_BUILD_TYPE=Release >"$work/$name.configure.log" 2>&1 || { cat "$work/$name.configure.log"; exit 1; }
  cmake --build "$work/$name" >"$work/$name.build.log" 2>&1 || { cat "$work/$name.build.log"; exit 1; }
done
"$work/ddm/examples/ddm_c_example"
"$work/ddm/examples/ddm_rti_ticks"
"$work/prolif-cpp/prolif_example"
echo "install_consumers: the examples built against $work/prefix and ran"
