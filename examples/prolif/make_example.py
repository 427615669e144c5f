#!/usr/bin/env python3
"""Regenerates the synthetic prolif example (standard library only).

h0.txt: 20,000 cells whose log10 fluorescence is normal(3.3, 0.25), in 300 logarithmic rows
between 10^2 and 10^4.6 (ProCell's two-column text format).
target.txt: what simkit gives at 120 h from h0.txt with the "true" model below (seed 2024):
quiescent 0.1, slow 0.4 (mean 30 h, sd 8 h), fast 0.5 (mean 18 h, sd 4 h), phi_min 20,
procell-async start. model.toml holds a slightly different model, so that the example's
Hellinger distance is small but not zero.
Usage: python3 make_example.py path/to/simkit
"""
import math
import os
import random
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
rng = random.Random(7)
rows = 300
edges = [10 ** (2 + 2.6 * i / rows) for i in range(rows + 1)]
counts = [0] * rows
for _ in range(20000):
    v = 10 ** rng.gauss(3.3, 0.25)
    for i in range(rows):
        if edges[i] <= v < edges[i + 1]:
            counts[i] += 1
            break
with open(os.path.join(here, "h0.txt"), "w") as f:
    for i in range(rows):
        f.write(f"{math.sqrt(edges[i] * edges[i + 1]):.6f}\t{counts[i]}\n")

true_model = """phi_min = 20
t_max = 120
start = "procell-async"
seed = 2024

[[population]]
name = "quiescent"
proportion = 0.1
quiescent = true

[[population]]
name = "slow"
proportion = 0.4
mean = 30.0
sd = 8.0

[[population]]
name = "fast"
proportion = 0.5
mean = 18.0
sd = 4.0
"""
with tempfile.TemporaryDirectory() as tmp:
    model = os.path.join(tmp, "true.toml")
    with open(model, "w") as f:
        f.write(true_model)
    subprocess.run([sys.argv[1], "prolif", "simulate", "--histogram", os.path.join(here, "h0.txt"),
                    "--config", model, "--backend", "cpu", "--quiet", "--out", tmp], check=True)
    with open(os.path.join(tmp, "histogram.tsv")) as src, open(os.path.join(here, "target.txt"), "w") as dst:
        dst.write(src.read())
