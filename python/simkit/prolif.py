"""Cell proliferation: the ProCell model (dye-dilution histograms), simulation and calibration.

The CLI's ``simkit prolif simulate`` and ``simkit prolif fit`` with NumPy in and out; the same
engine, the same seeds, the same numbers (docs/python.md, docs/prolif.md).
"""
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from . import _checks, _simkit

_p = _simkit.prolif
Population = _p.Population
Model = _p.Model
bin_edges = _p.bin_edges


def population(name, proportion, mean=None, sd=None, *, quiescent=False, distribution="normal"):
    """A population: quiescent, or dividing with division times of the given mean and sd (hours)."""
    p = Population()
    p.name = str(name)
    p.proportion = float(proportion)
    p.quiescent = bool(quiescent)
    if not quiescent:
        if mean is None or sd is None:
            raise ValueError(f"population {name!r}: a dividing population needs mean and sd")
        p.mean = float(mean)
        p.sd = float(sd)
        p.distribution = distribution
    return p


def model(populations, phi_min=0.0, times=(), start="sync"):
    """A model from populations (see :func:`population`), phi_min, output times and the start mode."""
    m = Model()
    m.populations = list(populations)
    m.phi_min = float(phi_min)
    m.times = [float(t) for t in times]
    m.start = start
    return m


def read_histogram(path, channel=None, gate=None, raw=False):
    """(values, counts) of a ProCell text, CSV or FCS file; FCS needs ``channel`` ($PnN or $PnS);
    ``gate=(channel, min, max)`` keeps the events inside the range."""
    return _p.read_histogram(str(path), channel or "", tuple(gate) if gate else None, bool(raw))


def read_model(path):
    """A model from a TOML file (simkit prolif simulate --config) or a cuProCell types file."""
    return _p.read_model(str(path))


@dataclass
class SimulationResult:
    """Counts of cells per (replicate, output time, H(0) row, generation, population).

    A cell of generation k from row i has fluorescence ``values[i] / 2**k``."""

    times: np.ndarray
    values: np.ndarray
    counts: np.ndarray
    divisions: np.ndarray
    seeds: np.ndarray
    populations: list
    backend: str
    target: Optional[tuple] = None
    bins: int = 100
    range: tuple = (10.0, 1e4)
    phi_min: float = 0.0
    hellinger: Optional[np.ndarray] = field(default=None)  # normalized, per replicate, at t_max

    def _t(self, t):
        return int(t) if t >= 0 else len(self.times) + int(t)

    def fluorescence(self):
        """(rows, generations): the fluorescence of each row's cells of each generation."""
        g = self.counts.shape[3]
        return self.values[:, None] / 2.0 ** np.arange(g)[None, :]

    def total(self, t=-1):
        """Cells at output time index t, per replicate."""
        return self.counts[:, self._t(t)].sum(axis=(1, 2, 3))

    def by_generation(self, t=-1):
        """(replicates, generations) at output time index t."""
        return self.counts[:, self._t(t)].sum(axis=(1, 3))

    def by_population(self, t=-1):
        """(replicates, populations) at output time index t."""
        return self.counts[:, self._t(t)].sum(axis=(1, 2))

    def histogram(self, t=-1, replicate=0):
        """The exact histogram at time index t: distinct fluorescence values ascending, counts."""
        c = self.counts[replicate, self._t(t)].sum(axis=2)  # (rows, generations)
        v = self.fluorescence()
        keep = c > 0
        values, inverse = np.unique(v[keep], return_inverse=True)
        counts = np.zeros(values.size, dtype=np.uint64)
        np.add.at(counts, inverse, c[keep])
        return values, counts

    def binned(self, t=-1, bins=None, range=None, phi_min=None):
        """(edges, counts per replicate and bin) on ProCell's logarithmic bins."""
        bins = self.bins if bins is None else bins
        lo, hi = self.range if range is None else range
        phi = self.phi_min if phi_min is None else phi_min
        v = self.fluorescence().ravel()
        out = []
        for r in np.arange(self.counts.shape[0]):
            w = self.counts[r, self._t(t)].sum(axis=2).ravel().astype(np.float64)
            out.append(_p.bin_values(v, w, bins, lo, hi, phi)[0])
        return bin_edges(bins, lo, hi), np.array(out)


def simulate(h0_values, h0_counts, model, t_max=None, times=None, phi_min=None, start=None, seed=1,
             replicates=1, backend="auto", device=0, threads=0, target=None, bins=100, range=(10.0, 1e4)):
    """Simulate H(t) from H(0) (``simkit prolif simulate``).

    ``model``: a :class:`Model` (or a path to a TOML/types file); ``t_max``/``times``/``phi_min``/``start``
    override it. Replicate r uses seed ``seed + r`` (as the CLI). With ``target=(values, counts)``,
    ``result.hellinger`` holds each replicate's normalized Hellinger distance at t_max."""
    values, counts = _checks.histogram(h0_values, h0_counts, "h0")
    m = read_model(model) if isinstance(model, (str, bytes)) or hasattr(model, "__fspath__") else model
    m = _copy_model(m)
    if times is not None:
        ts = sorted(float(t) for t in np.atleast_1d(times))
        if t_max is not None and float(t_max) != ts[-1]:
            raise ValueError(f"t_max {t_max} differs from the largest of times ({ts[-1]})")
        m.times = ts
    elif t_max is not None:
        m.times = [float(t_max)]
    if not m.times:
        raise ValueError("t_max: not given and the model has no times")
    if phi_min is not None:
        m.phi_min = float(phi_min)
    if start is not None:
        m.start = start
    if int(replicates) < 1:
        raise ValueError(f"replicates: must be >= 1, got {replicates}")
    if int(seed) < 0:
        raise ValueError(f"seed: must be >= 0, got {seed}")
    seeds = [int(seed) + r for r in np.arange(int(replicates)).tolist()]
    arrays, divisions, kept, used = _p.simulate(values, counts, m, seeds, backend, int(device), int(threads))
    result = SimulationResult(times=np.array(m.times), values=kept, counts=np.stack(arrays),
                              divisions=np.array(divisions, dtype=np.uint64), seeds=np.array(seeds, dtype=np.uint64),
                              populations=[p.name for p in m.populations], backend=used, bins=int(bins),
                              range=(float(range[0]), float(range[1])), phi_min=m.phi_min)
    if target is not None:
        tv, tc = _checks.histogram(target[0], target[1], "target")
        result.target = (tv, tc)
        edges, sim = result.binned(-1)
        tb = _p.bin_values(tv, tc.astype(np.float64), result.bins, result.range[0], result.range[1], m.phi_min)[0]
        h = [_p.hellinger(s.tolist(), tb.tolist()) for s in sim]
        result.hellinger = np.array([x[1] if x is not None else np.nan for x in h])
    return result


def _copy_model(m):
    c = Model()
    c.populations = list(m.populations)
    c.phi_min = m.phi_min
    c.times = list(m.times)
    c.start = m.start
    return c


@dataclass
class FitResult:
    """The best model of a fit and how it was found (``simkit prolif fit``)."""

    model: object
    parameters: list
    x: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    fitness: float
    fitness_per_target: list
    evaluations: int
    simulations: int
    seconds: float
    history: dict
    restart_fitness: list
    restart_chosen: int
    backend: str
    intervals: Optional[dict] = None  # name -> (best, low, high, mean, sd), with bootstrap=K


def fit(h0_values, h0_counts, model, free, targets, optimizer="fst-pso", particles=50, iterations=100,
        budget=0, replicates=1, crn=False, restarts=1, log_init=False, bootstrap=0, level=0.95, seed=1, bins=100,
        range=(10.0, 1e4), backend="auto", device=0, threads=0):
    """Calibrate a model's free values to measured histograms (``simkit prolif fit``).

    ``free``: ``{"fast.mean": (30, 63), "quiescent.proportion": (0, 1), "phi_min": (5, 20), ...}``;
    ``targets``: a list of ``(values, counts, hours)``. The model holds the fixed values. Returns a
    :class:`FitResult` whose ``history`` has per-iteration arrays (restart, iteration,
    evaluations, best, mean). With ``bootstrap=K``, ``intervals`` maps every free value and every
    population's proportion to (best, low, high, mean, sd) from K parametric-bootstrap refits."""
    values, counts = _checks.histogram(h0_values, h0_counts, "h0")
    if isinstance(model, (str, bytes)) or hasattr(model, "__fspath__"):
        model = read_model(model)
    if not isinstance(free, dict) or not free:
        raise ValueError("free: expected a non-empty dict {name: (min, max)}")
    free_list = []
    for name, bounds in free.items():
        b = tuple(bounds)
        if len(b) != 2:
            raise ValueError(f"free[{name!r}]: expected (min, max), got {bounds!r}")
        free_list.append((str(name), float(b[0]), float(b[1])))
    ts = []
    for k, t in enumerate(targets):
        if len(t) != 3:
            raise ValueError(f"targets[{k}]: expected (values, counts, hours)")
        tv, tc = _checks.histogram(t[0], t[1], f"targets[{k}]")
        ts.append((tv, tc, float(t[2])))
    if not ts:
        raise ValueError("targets: at least one (values, counts, hours) is needed")
    r = _p.fit(values, counts, model, free_list, ts, optimizer, int(particles), int(iterations), int(budget),
               int(replicates), bool(crn), int(restarts), bool(log_init), int(bootstrap), float(level), int(seed),
               int(bins), float(range[0]),
               float(range[1]),
               backend, int(device), int(threads))
    return FitResult(model=r["model"], parameters=list(r["parameters"]), x=np.array(r["x"]),
                     lower=np.array(r["lower"]), upper=np.array(r["upper"]), fitness=r["fitness"],
                     fitness_per_target=list(r["fitness_per_target"]), evaluations=r["evaluations"],
                     simulations=r["simulations"], seconds=r["seconds"], history=dict(r["history"]),
                     restart_fitness=list(r["restart_fitness"]), restart_chosen=r["restart_chosen"],
                     backend=r["backend"],
                     intervals=None if r["intervals"] is None else {k: tuple(v) for k, v in r["intervals"].items()})


def hellinger(simulated, target):
    """ProCell's Hellinger distance of two binned histograms: (H, H / sqrt(sum(target))), or None."""
    s = _checks.float_vector(simulated, "simulated")
    t = _checks.float_vector(target, "target")
    return _p.hellinger(s.tolist(), t.tolist())


__all__ = ["Population", "Model", "population", "model", "read_histogram", "read_model", "simulate",
           "SimulationResult", "fit", "FitResult", "hellinger", "bin_edges"]
