"""Tumour-induced angiogenesis (Anderson & Chaplain): the continuous model stepped from Python.

``ContinuousSolver(grid=(nx, ny, nz), h=...)`` holds the state (on the GPU with the cuda backend);
``advance(steps)`` runs with the GIL released; ``fields()`` copies n, f, c into arrays of shape
(nz, ny, nx). docs/python.md, docs/angio.md."""
import numpy as np

from . import _simkit

ContinuousSolver = _simkit.angio.ContinuousSolver


def run_series(solver, steps, every=1):
    """Advance ``steps`` steps, recording a row every ``every`` steps: a dict of arrays (step, t, and
    integral/min/max of n, f, c) that ``pandas.DataFrame`` takes as it is."""
    if every < 1 or steps < 0:
        raise ValueError("steps must be >= 0 and every >= 1")
    rows = {"step": [], "t": []}
    for q in ("n", "f", "c"):
        for k in ("integral", "min", "max"):
            rows[f"{q}_{k}"] = []
    done = 0
    while done < steps:
        n = min(every, steps - done)
        r = solver.advance(n, True)
        done += n
        rows["step"].append(solver.step)
        rows["t"].append(solver.t)
        for q in ("n", "f", "c"):
            for k in ("integral", "min", "max"):
                rows[f"{q}_{k}"].append(r[q][k])
    return {k: np.array(v) for k, v in rows.items()}


__all__ = ["ContinuousSolver", "run_series"]
