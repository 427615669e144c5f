"""What the Python binding adds to a call (docs/performance.md, "Python"): the smallest prolif
simulation (one H(0) row of 10 cells, 24 h; bench_prolif's prolif_tiny is the same call from C++),
a 4-region ddm count and one step of a 5x5 angio grid, each through the public API and through the
raw extension function, best of several repeats of many calls.

Usage: build/venv/bin/python3 bench/python_overhead.py [--backend cpu]
"""
import argparse
import json
import timeit

import numpy as np

import simkit
from simkit import _simkit, angio, ddm, prolif


def best_us(stmt, number, repeat=7):
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="cpu")
    a = ap.parse_args()
    m = prolif.model([prolif.population("P1", 1.0, 10, 2)], phi_min=1, times=[24])
    v, c = np.array([1000.0]), np.array([10], dtype=np.uint64)
    regions = np.array([[[0, 2]], [[1, 3]], [[5, 6]], [[2, 9]]], dtype=np.float64)
    lo, hi = np.ascontiguousarray(regions[:, :, 0].T), np.ascontiguousarray(regions[:, :, 1].T)
    solver = angio.ContinuousSolver((5, 5, 1), 0.25, backend=a.backend, threads=1)
    out = {
        "backend": a.backend,
        "version": simkit.__version__,
        "prolif_simulate_api_us": best_us(lambda: prolif.simulate(v, c, m, backend=a.backend, threads=1), 2000),
        "prolif_simulate_raw_us": best_us(lambda: _simkit.prolif.simulate(v, c, m, [1], a.backend, 0, 1), 2000),
        "ddm_count_api_us": best_us(lambda: ddm.match(regions, regions, output="count", backend=a.backend), 5000),
        "ddm_count_raw_us": best_us(lambda: _simkit.ddm.match_f64(lo, hi, lo, hi, "ieee1516", "count", "auto",
                                                                 a.backend, 0, 1), 5000),
        "angio_advance1_us": best_us(lambda: solver.advance(1, False), 5000),
        "angio_advance1_reduce_us": best_us(lambda: solver.advance(1, True), 5000),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
