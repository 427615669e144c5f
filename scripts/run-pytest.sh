#!/usr/bin/env bash
# The Python package's tests (python/tests) with the interpreter of build/venv, where README's first
# command installs the package; CTest runs this as the test `python_pytest` (label cpu). Without
# that environment or an installed simkit, it says SKIPPED (CTest reports the test as skipped).
set -uo pipefail
cd "$(dirname "$0")/.."
py=${SIMKIT_TEST_PYTHON:-build/venv/bin/python3}
if ! "$py" -c "import simkit, pytest" 2>/dev/null; then
  echo "SKIPPED: no Python with simkit and pytest at $py (README command 1 installs them)"
  exit 0
fi
exec "$py" -m pytest -q -p no:cacheprovider python/tests "$@"
