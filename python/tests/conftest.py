"""Shared fixtures of the simkit Python tests.

- ``simkit_bin``: the CLI built from the same sources ($SIMKIT_BIN, else build/release/bin/simkit);
  the tests that compare with it are skipped when it is absent.
- ``run_cli``: runs the CLI, failing the test (with its stderr) on a non-zero exit.
- ``shared_data``: ../shared/data (or $SIMKIT_DATA_DIR); skipped when absent.
- ``rss_bytes``: the resident set size of this process now (/proc/self/statm).
"""
import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def repo_root():
    return REPO


@pytest.fixture(scope="session")
def simkit_bin():
    env = os.environ.get("SIMKIT_BIN")
    path = pathlib.Path(env) if env else REPO / "build" / "release" / "bin" / "simkit"
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.skip(f"no simkit CLI at {path} (build it, or set SIMKIT_BIN)")
    return path


@pytest.fixture(scope="session")
def run_cli(simkit_bin):
    def run(*args, expect=0, timeout=120):
        argv = [str(simkit_bin), *(str(a) for a in args)]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if expect is not None and r.returncode != expect:
            pytest.fail(f"{' '.join(argv)} exited {r.returncode} (expected {expect})\n"
                        f"stdout: {r.stdout}\nstderr: {r.stderr}")
        return r

    return run


@pytest.fixture(scope="session")
def shared_data():
    env = os.environ.get("SIMKIT_DATA_DIR")
    path = pathlib.Path(env) if env else REPO.parent / "shared" / "data"
    if not path.is_dir():
        pytest.skip(f"no shared data directory at {path} (set SIMKIT_DATA_DIR)")
    return path


def _rss():
    with open("/proc/self/statm") as f:
        resident_pages = int(f.read().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


@pytest.fixture
def rss_bytes():
    if not os.path.exists("/proc/self/statm"):
        pytest.skip("no /proc/self/statm on this system")
    return _rss


@pytest.fixture(scope="session")
def python_exe():
    return sys.executable
