"""HLA Data Distribution Management: every intersecting pair of subscription and update regions.

Regions are arrays of shape (n, d, 2): ``regions[i, k] = (lower, upper)`` of region i in dimension k,
dtype uint32, uint64 or float64 (both sets the same; never converted). docs/python.md, docs/ddm.md."""
import numpy as np

from . import _simkit

_d = _simkit.ddm
_MATCH = {np.dtype(np.uint32): _d.match_u32, np.dtype(np.uint64): _d.match_u64, np.dtype(np.float64): _d.match_f64}


def _bounds(regions, name):
    a = np.asarray(regions)
    if a.ndim != 3 or a.shape[2] != 2:
        raise ValueError(f"{name}: expected an array of shape (n, d, 2) (lower, upper per dimension), got {a.shape}")
    if a.dtype not in _MATCH:
        raise ValueError(f"{name}: dtype must be uint32, uint64 or float64, got {a.dtype}")
    lower = np.ascontiguousarray(a[:, :, 0].T)
    upper = np.ascontiguousarray(a[:, :, 1].T)
    return lower, upper, a.dtype


def match(subscriptions, updates, rule="ieee1516", output="pairs", algorithm="auto", backend="auto", device=0,
          threads=0):
    """Intersecting pairs (``simkit ddm match``).

    ``output="pairs"``: an (k, 2) uint64 array of positions (subscription, update), in the
    matcher's fixed order; ``"count"``: their number; ``"per_region"``: (per subscription, per
    update) counts. ``rule``: ``ieee1516`` | ``half-open`` | ``closed``."""
    sl, su, sd = _bounds(subscriptions, "subscriptions")
    ul, uu, ud = _bounds(updates, "updates")
    if sd != ud:
        raise ValueError(f"updates: dtype {ud} differs from the subscriptions' {sd} (simkit never converts)")
    return _MATCH[sd](sl, su, ul, uu, rule, output, algorithm, backend, int(device), int(threads))


__all__ = ["match"]
