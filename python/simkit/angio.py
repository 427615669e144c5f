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


def hybrid_ensemble(config=None, grid=None, h=None, t_max=None, dt=None, force=False, replicates=1, seed=1,
                    backend="auto", device=0, threads=0):
    """Realisations of the hybrid tip-cell model (``simkit angio hybrid``); realisation r has seed
    ``seed + r``, the same on every backend. ``config``: a TOML file as for the CLI (``[hybrid]``
    options, grid, parameters); ``grid``, ``h``, ``t_max``, ``dt`` override it.

    Returns a dict with ``realisations`` (one dict each: ``reached``, ``reach_time``, ``branches``,
    ``anastomoses`` and ``anastomoses_by_kind``, ``segments`` as arrays ``from``, ``to`` (node
    indices), ``birth_step``, ``generation``, ``sprout``, ``kind``; ``metrics`` per step as arrays;
    ``occupied``, ``branch_points``, ``anastomosis_points``, ``active_tip_nodes``), ``backend``,
    ``device``, ``dt``, ``grid`` and ``h``. A node index is i + nx (j + ny l)."""
    return _simkit.angio.hybrid_ensemble(None if config is None else str(config),
                                         None if grid is None else tuple(int(g) for g in grid), h, t_max, dt,
                                         bool(force), int(replicates), int(seed), backend, int(device), int(threads))


__all__ = ["ContinuousSolver", "run_series", "hybrid_ensemble"]
