#!/usr/bin/env bash
# Installs simkit's build dependencies from Debian packages (idempotent). Run as root or with sudo.
# The CUDA toolkit (nvcc) is not a Debian package here: install NVIDIA's toolkit separately to build
# the CUDA backends; without it simkit builds its reference and cpu backends only.
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache git pkg-config
  libcli11-dev libfmt-dev libtomlplusplus-dev librandom123-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev libomp-dev libpng-dev zlib1g-dev
  libcgal-dev libboost-dev  # header-only, for the optional bench_ddm_peers baselines
  clang libclang-rt-dev      # the fuzz preset (libFuzzer, sanitizer runtimes) and the tsan preset
  openmpi-bin libopenmpi-dev # MPI: the distributed drivers and the `mpi` tests (docs/scale-out.md)
  python3 python3-venv       # build/venv: PyPI packages the tests use (flowio writes their FCS files)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
else
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# PyPI packages in a virtual environment of the checkout (never the system's): nanobind and
# scikit-build-core build the Python package (`build/venv/bin/pip install --no-build-isolation .`),
# pytest runs its tests, matplotlib draws the Python examples' plots, flowio writes the FCS files
# the FCS reader is tested on. Tests that need them skip when they are absent.
cd "$(dirname "$0")/.."
python_packages=(numpy nanobind scikit-build-core pytest matplotlib flowio)
if ! build/venv/bin/python3 -c "import flowio, numpy, nanobind, scikit_build_core, pytest, matplotlib" 2>/dev/null; then
  python3 -m venv build/venv
  build/venv/bin/python3 -m pip install -q --disable-pip-version-check "${python_packages[@]}"
fi
echo "setup: build/venv has ${python_packages[*]}"
