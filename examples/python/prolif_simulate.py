"""Simulate a dye-dilution histogram with simkit from Python and plot it against the measured one.

Run from the repository root: build/venv/bin/python3 examples/python/prolif_simulate.py
Writes build/example-python/prolif.png (matplotlib) and prints the normalized Hellinger distance.
"""
import os
import pathlib

import numpy as np

import simkit
from simkit import prolif

root = pathlib.Path(__file__).resolve().parents[2]
out = root / "build" / "example-python"
out.mkdir(parents=True, exist_ok=True)

h0_values, h0_counts = prolif.read_histogram(root / "examples/prolif/h0.txt")
target = prolif.read_histogram(root / "examples/prolif/target.txt")
model = prolif.read_model(root / "examples/prolif/model.toml")

# 20 replicates (seeds 1..20) in one batch; the GPU when there is one.
result = prolif.simulate(h0_values, h0_counts, model, replicates=20, seed=1, target=target)
print(f"simkit {simkit.__version__}, backend {result.backend}: {result.total().mean():.4g} cells at "
      f"t = {result.times[-1]:g} h, normalized Hellinger {result.hellinger.mean():.4f} "
      f"(sd {result.hellinger.std(ddof=1):.4f} over {len(result.seeds)} replicates)")

edges, sim = result.binned()
fractions = sim / sim.sum(axis=1, keepdims=True)
tb = prolif._p.bin_values(target[0], target[1].astype(float), result.bins, *result.range, result.phi_min)[0]
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib not installed: no plot")
else:
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.fill_between(edges, np.percentile(fractions, 5, axis=0), np.percentile(fractions, 95, axis=0),
                    alpha=0.3, label="simulated, 5-95 %")
    ax.plot(edges, fractions.mean(axis=0), label="simulated, mean")
    ax.plot(edges, tb / tb.sum(), "--", color="C3", label="target")
    ax.set_xscale("log")
    ax.set_xlabel("fluorescence")
    ax.set_ylabel("fraction of cells per bin")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "prolif.png", dpi=120)
    print(f"plot: {os.path.relpath(out / 'prolif.png')}")
