"""The package around the engines: `python -m simkit info`, simkit.info(), the version, the type
stubs, and Ctrl-C during a run (the GIL-released path) raising KeyboardInterrupt."""
import importlib.metadata
import pathlib
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import simkit

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None


def test_version(repo_root):
    assert simkit.__version__ == "0.1.0"
    assert importlib.metadata.version("simkit") == simkit.__version__
    if tomllib is not None:
        project = tomllib.loads((repo_root / "pyproject.toml").read_text())["project"]
        assert project["version"] == simkit.__version__


def test_info_keys():
    i = simkit.info()
    assert set(i) == {"version", "commit", "build_type", "compiler", "cuda_built", "cuda_compiler",
                      "cuda_architectures", "openmp", "cuda"}
    assert i["version"] == simkit.__version__
    assert isinstance(i["cuda_built"], bool)
    assert set(i["cuda"]) == {"usable", "reason", "devices"}
    assert isinstance(i["cuda"]["usable"], bool) and isinstance(i["cuda"]["devices"], list)
    if not i["cuda"]["usable"]:
        assert i["cuda"]["reason"] and i["cuda"]["devices"] == []


def test_python_m_simkit_info():
    r = subprocess.run([sys.executable, "-m", "simkit", "info"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert re.fullmatch(r"simkit 0\.1\.0 \(commit \S+\)", lines[0]), lines[0]
    usable = simkit.info()["cuda"]["usable"]
    assert lines[-1] == "backend auto -> " + ("cuda" if usable else "cpu")
    bad = subprocess.run([sys.executable, "-m", "simkit", "frobnicate"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "usage: python -m simkit info" in bad.stderr


def test_public_api():
    assert sorted(simkit.__all__) == ["__version__", "angio", "ddm", "info", "prolif"]
    for name in ("simulate", "fit", "read_histogram", "read_model", "population", "model", "hellinger"):
        assert callable(getattr(simkit.prolif, name)), name
    assert callable(simkit.ddm.match)
    assert callable(simkit.angio.ContinuousSolver) and callable(simkit.angio.run_series)


def test_type_stubs_are_installed():
    pkg = pathlib.Path(simkit._simkit.__file__).parent
    assert (pkg / "py.typed").is_file()
    stubs = [p for p in [pkg / "_simkit.pyi", *sorted((pkg / "_simkit").glob("*.pyi"))] if p.is_file()]
    assert stubs, f"no _simkit stub in {pkg}"
    text = "\n".join(p.read_text() for p in stubs)
    for needle in ("def build_info", "def simulate", "def match_f64", "class ContinuousSolver"):
        assert needle in text, needle


# ------------------------------------------------------------------------------------------------
# Ctrl-C


def start_child(code):
    p = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()  # "ready": the imports are done and the engine is about to start
    if line.strip() != "ready":
        p.kill()
        out, err = p.communicate()
        pytest.fail(f"child did not start: {line}{out}\n{err}")
    return p


def interrupt(p, after, timeout):
    time.sleep(after)
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        pytest.fail(f"still running {timeout} s after SIGINT\nstdout: {out}\nstderr: {err}")
    return out, err, time.monotonic() - sent


PROLIF_CHILD = """
import os, signal, time
from simkit import prolif
m = prolif.model([prolif.population("p", 1.0, mean=20, sd=5)], phi_min=1.0)
# A normal run restores Python's own SIGINT handling when it returns.
prolif.simulate([1000.0], [10], m, t_max=30, backend="cpu")
try:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(2)
except KeyboardInterrupt:
    print("handler restored", flush=True)
print("ready", flush=True)
# 10^7 cells, about 10 divisions each: minutes of work on two cores.
try:
    prolif.simulate([1e6], [10**7], m, t_max=200, backend="cpu")
except KeyboardInterrupt:
    # The next run is not stopped by the old request, and gives the usual numbers.
    r = prolif.simulate([1000.0], [10], m, t_max=30, seed=3, backend="cpu")
    print(f"after {int(r.total()[0])}", flush=True)
    raise
print("finished", flush=True)
"""


def test_ctrl_c_stops_a_simulation():
    p = start_child(PROLIF_CHILD.replace('    print("handler restored", flush=True)', "    pass"))
    out, err, seconds = interrupt(p, after=1.0, timeout=4.0)
    assert "finished" not in out
    assert "Traceback" in err and err.rstrip().endswith("KeyboardInterrupt"), err
    assert p.returncode != 0
    assert seconds < 3.0, f"{seconds:.1f} s from SIGINT to exit"
    expected = simkit.prolif.simulate([1000.0], [10], simkit.prolif.model(
        [simkit.prolif.population("p", 1.0, mean=20, sd=5)], phi_min=1.0), t_max=30, seed=3, backend="cpu")
    assert f"after {int(expected.total()[0])}" in out, out


def test_handler_restored_after_a_run():
    # The same child's first lines, checked separately: prints "handler restored" before "ready".
    code = PROLIF_CHILD.split('print("ready"')[0] + 'print("done", flush=True)\n'
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["handler", "restored", "done"]


ANGIO_CHILD = """
import time
import numpy as np
from simkit import angio

def solver():
    return angio.ContinuousSolver((101, 101, 1), 0.01, form="flux", backend="cpu", threads=1)

s = solver()
t = time.monotonic()
s.advance(1000)
steps = int(2.0 * 1000 / (time.monotonic() - t))  # about 2 s of steps
print("ready", flush=True)
t = time.monotonic()
try:
    s.advance(steps)
    print("finished", flush=True)
except KeyboardInterrupt:
    seconds = time.monotonic() - t
    ref = solver()
    ref.advance(s.step)
    same = np.array_equal(ref.fields()["n"], s.fields()["n"])
    print(f"interrupted {seconds:.3f} step {s.step} of {1000 + steps} consistent {same}", flush=True)
"""


def test_ctrl_c_stops_an_angio_advance():
    p = start_child(ANGIO_CHILD)
    out, err, seconds = interrupt(p, after=0.3, timeout=6.0)
    assert "interrupted" in out, out + err
    m = re.search(r"interrupted ([\d.]+) step (\d+) of (\d+) consistent (\w+)", out)
    # solver.step says where the state is, and the run stopped soon after the signal.
    assert m.group(4) == "True", out
    assert int(m.group(2)) < int(m.group(3)), out
    assert float(m.group(1)) < 1.3, out


THREADS_CHILD = """
import os, signal, threading, time
from simkit import prolif
m = prolif.model([prolif.population("p", 1.0, mean=20, sd=5)], phi_min=1.0)

def run(cells):
    prolif.simulate([1e6], [cells], m, t_max=100, backend="cpu", threads=1)

# Two runs from two Python threads (the GIL is released while they run), overlapping so that the
# first one to start is the first one to end.
a = threading.Thread(target=run, args=(300000,))
b = threading.Thread(target=run, args=(600000,))
a.start()
time.sleep(0.05)
b.start()
a.join()
b.join()
try:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(1.0)
    print("SIGINT lost", flush=True)
except KeyboardInterrupt:
    print("handler restored", flush=True)
"""


def test_overlapping_runs_in_threads_restore_sigint():
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(THREADS_CHILD)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "handler restored"


# ------------------------------------------------------------------------------------------------
# Backends: auto without a GPU is cpu; cuda without a GPU is a clear ValueError


def test_backend_auto_and_cuda_without_a_gpu():
    import numpy as np

    if simkit.info()["cuda"]["usable"]:
        pytest.skip("a GPU is usable here: auto picks cuda")
    m = simkit.prolif.model([simkit.prolif.population("p", 1.0, mean=20, sd=5)], times=[10])
    assert simkit.prolif.simulate([100.0], [5], m).backend == "cpu"
    assert simkit.angio.ContinuousSolver((5, 5, 1), 0.25).backend == "cpu"
    regions = np.array([[[0.0, 1.0]]])
    calls = [lambda: simkit.prolif.simulate([100.0], [5], m, backend="cuda"),
             lambda: simkit.angio.ContinuousSolver((5, 5, 1), 0.25, backend="cuda"),
             lambda: simkit.ddm.match(regions, regions, backend="cuda")]
    for call in calls:
        with pytest.raises(ValueError, match=r"cuda|CUDA"):
            call()
