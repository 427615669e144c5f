"""A 2D run of Anderson & Chaplain's continuous angiogenesis model from Python: step it, record the
series, and draw the endothelial-cell density n as an image.

Run from the repository root: build/venv/bin/python3 examples/python/angio_field.py
Writes build/example-python/angio_n.png.
"""
import pathlib

import numpy as np

from simkit import angio

root = pathlib.Path(__file__).resolve().parents[2]
out = root / "build" / "example-python"
out.mkdir(parents=True, exist_ok=True)

solver = angio.ContinuousSolver(grid=(101, 101, 1), h=0.01, precision="fp64")
print(f"backend {solver.backend} ({solver.device}), k = {solver.dt:g} "
      f"(largest stable {solver.stability['largest_stable_k']:.3g}, {solver.stability['binding_limit']})")
steps = int(round(1.0 / solver.dt))
series = angio.run_series(solver, steps, every=max(1, steps // 10))
for s, t, n in zip(series["step"], series["t"], series["n_integral"]):
    print(f"step {s:6d}  t = {t:6.3f}  integral of n = {n:.6f}")

n = solver.fields()["n"][0]  # (ny, nx)
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib not installed: no image")
else:
    fig, ax = plt.subplots(figsize=(5, 4.5))
    im = ax.imshow(n, origin="lower", extent=(0, 1, 0, 1), cmap="magma")
    ax.set_title(f"endothelial density n at t = {solver.t:g}")
    ax.set_xlabel("x (towards the tumour)")
    ax.set_ylabel("y")
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    fig.savefig(out / "angio_n.png", dpi=120)
    print(f"image: {out / 'angio_n.png'}")
