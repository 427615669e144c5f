"""The Python package's cuda backend against its cpu backend, on the GPU machine (docs/python.md).

Usage: python3 scripts/python-gpu-check.py [DATA_DIR]   (with simkit importable, e.g. PYTHONPATH)
Prints one line per check and exits 1 if any fails. Results must be equal where docs/reproducibility.md
says the backends are bitwise equal: prolif counts, ddm pair sets, angio fields, hybrid realisations,
and therefore fits.
"""
import pathlib
import sys
import time

import numpy as np

import simkit
from simkit import angio, ddm, prolif

failures = 0


def check(name, ok, detail=""):
    global failures
    print(f"{'OK  ' if ok else 'FAIL'} {name} {detail}")
    failures += 0 if ok else 1


info = simkit.info()
print(f"simkit {info['version']} commit {info['commit']}, cuda built {info['cuda_built']}, devices {info['cuda']}")
check("cuda usable", info["cuda"]["usable"])

# prolif: a three-population problem, 5 replicates in one batch.
rng = np.random.default_rng(1)
values = np.sort(rng.uniform(200, 9000, 300))
counts = rng.integers(0, 400, 300)
m = prolif.model([prolif.population("q", 0.1, quiescent=True), prolif.population("slow", 0.4, 40, 12, distribution="gamma"),
                  prolif.population("fast", 0.5, 18, 4)], phi_min=5, times=[48, 96, 144], start="procell-async")
a = prolif.simulate(values, counts, m, replicates=5, seed=3, backend="cpu")
b = prolif.simulate(values, counts, m, replicates=5, seed=3, backend="cuda")
check("prolif simulate cuda == cpu", b.backend == "cuda" and np.array_equal(a.counts, b.counts),
      f"(cells at 144 h: {a.total().tolist()})")

# ddm: random 2-D float regions, pairs and counts.
def regions(n):
    lo = rng.uniform(0, 1000, (n, 2))
    return np.stack([lo, lo + rng.uniform(0, 20, (n, 2))], axis=2)


s, u = regions(20000), regions(30000)
pa = ddm.match(s, u, backend="cpu")
pb = ddm.match(s, u, backend="cuda")
same = set(map(tuple, pa.tolist())) == set(map(tuple, pb.tolist()))
check("ddm match cuda == cpu", same and len(pa) == ddm.match(s, u, output="count", backend="cuda"), f"({len(pa)} pairs)")
inc = ddm.IncrementalMatcher(s, u, backend="cuda")
moved = regions(100)
g, l = inc.move("update", np.arange(100), moved)
u2 = u.copy()
u2[:100] = moved
check("ddm incremental on cuda == full rematch", inc.pairs == ddm.match(s, u2, output="count", backend="cpu"),
      f"(+{len(g)} -{len(l)})")

# angio: fields after 40 steps, 3D, both precisions and forms.
for precision in ("fp32", "fp64"):
    for form in ("expanded", "flux"):
        kw = dict(grid=(48, 40, 24), h=1 / 47, precision=precision, form=form)
        x = angio.ContinuousSolver(backend="cpu", **kw)
        y = angio.ContinuousSolver(backend="cuda", **kw)
        x.advance(40, False)
        y.advance(40, False)
        fx, fy = x.fields(), y.fields()
        check(f"angio {precision} {form} cuda == cpu", all(np.array_equal(fx[k], fy[k]) for k in "nfc"),
              f"({y.device})")

# hybrid: 8 realisations.
root = pathlib.Path(__file__).resolve().parents[1]
cfg = root / "examples/angio/hybrid.toml"
ha = angio.hybrid_ensemble(cfg, grid=(61, 61, 1), t_max=3, replicates=8, seed=2, backend="cpu")
hb = angio.hybrid_ensemble(cfg, grid=(61, 61, 1), t_max=3, replicates=8, seed=2, backend="cuda")
same = all(np.array_equal(ra["segments"][k], rb["segments"][k])
           for ra, rb in zip(ha["realisations"], hb["realisations"]) for k in ("from", "to", "birth_step"))
check("angio hybrid cuda == cpu", hb["backend"] == "cuda" and same)

# prolif fit: the same fit on both backends; with the data, the bone-marrow calibration timed.
target = prolif.simulate(values, counts, m, seed=99, backend="cuda").histogram(-1)
free = {"fast.mean": (10, 30), "fast.sd": (1, 8), "q.proportion": (0, 1), "slow.proportion": (0, 1),
        "fast.proportion": (0, 1)}
fa = prolif.fit(values, counts, m, free, [(*target, 144)], particles=12, iterations=5, backend="cpu")
fb = prolif.fit(values, counts, m, free, [(*target, 144)], particles=12, iterations=5, backend="cuda")
check("prolif fit cuda == cpu", fa.fitness == fb.fitness and np.array_equal(fa.x, fb.x), f"(fitness {fb.fitness:.4f})")

data = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else root.parent / "shared/data/procell"
if (data / "AML9_Exp3_t10d_UT1_BM_GFPpos.txt").exists():
    h0 = prolif.read_histogram(data / "AML9_Exp3_t10d_UT1_BM_GFPpos.txt")
    tg = prolif.read_histogram(data / "AML9_Exp3_t10d_DOX3_BM_GFPpos.txt")
    m3 = prolif.read_model(root / "examples/prolif/procell-model3.toml")
    free3 = {"quiescent.proportion": (0, 1), "slow.proportion": (0, 1), "fast.proportion": (0, 1),
             "slow.mean": (63, 504), "slow.sd": (0.1, 30), "fast.mean": (30, 63), "fast.sd": (0.1, 20)}
    start = time.perf_counter()
    f3 = prolif.fit(*h0, m3, free3, [(*tg, 240)], particles=50, iterations=100, backend="cuda")
    seconds = time.perf_counter() - start
    check("prolif fit, bone marrow, 50 x 100 from Python under 10 s", seconds < 10,
          f"({seconds:.2f} s, {f3.evaluations} evaluations, fitness {f3.fitness:.4f})")
sys.exit(1 if failures else 0)
