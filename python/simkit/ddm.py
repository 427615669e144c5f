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


_INCREMENTAL = {np.dtype(np.uint32): _d.IncrementalU32, np.dtype(np.uint64): _d.IncrementalU64,
                np.dtype(np.float64): _d.IncrementalF64}
_ROLES = {"subscription": 0, "update": 1}


def _ids(ids, n, name):
    if ids is None:
        return np.arange(n, dtype=np.uint64)
    a = np.asarray(ids)
    if a.ndim != 1 or not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{name}: expected a 1-D integer array of ids, got dtype {a.dtype} shape {a.shape}")
    if a.size and a.min() < 0:
        raise ValueError(f"{name}: ids must be >= 0")
    return np.ascontiguousarray(a, dtype=np.uint64)


class IncrementalMatcher:
    """A matcher kept alive across ticks (``simkit ddm replay``'s engine): both sets stay in place and
    a batch of changes re-matches only what changed, returning the pairs gained and lost.

    ``subscriptions``/``updates``: (n, d, 2) arrays; ``*_ids`` default to positions. Pairs are
    (subscription id, update id)."""

    def __init__(self, subscriptions, updates, subscription_ids=None, update_ids=None, rule="ieee1516",
                 algorithm="auto", backend="auto", device=0, threads=0):
        sl, su, sd = _bounds(subscriptions, "subscriptions")
        ul, uu, ud = _bounds(updates, "updates")
        if sd != ud:
            raise ValueError(f"updates: dtype {ud} differs from the subscriptions' {sd} (simkit never converts)")
        self.dtype = sd
        self._m = _INCREMENTAL[sd](sl, su, _ids(subscription_ids, sl.shape[1], "subscription_ids"), ul, uu,
                                   _ids(update_ids, ul.shape[1], "update_ids"), rule, algorithm, backend,
                                   int(device), int(threads))

    def _apply(self, kind, role, ids, regions):
        if role not in _ROLES:
            raise ValueError(f"role: expected 'subscription' or 'update', got {role!r}")
        ids = _ids(ids, 0, "ids")
        k = ids.size
        d = self._m.dims
        if regions is None:
            lower = upper = np.zeros((k, d), dtype=self.dtype)
        else:
            a = np.asarray(regions)
            if a.shape != (k, d, 2):
                raise ValueError(f"regions: expected shape ({k}, {d}, 2) for {k} ids, got {a.shape}")
            if a.dtype != self.dtype:
                raise ValueError(f"regions: dtype must be {self.dtype} (the matcher's), got {a.dtype}")
            lower, upper = np.ascontiguousarray(a[:, :, 0]), np.ascontiguousarray(a[:, :, 1])
        kinds = np.full(k, kind, dtype=np.uint8)
        roles = np.full(k, _ROLES[role], dtype=np.uint8)
        return self._m.apply(kinds, roles, ids, lower, upper)

    def move(self, role, ids, regions):
        """Moves regions (by id) to new bounds; returns (gained, lost) pair arrays."""
        return self._apply(1, role, ids, regions)

    def add(self, role, ids, regions):
        """Adds regions with new ids; returns (gained, lost)."""
        return self._apply(0, role, ids, regions)

    def remove(self, role, ids):
        """Removes regions by id; returns (gained, lost)."""
        return self._apply(2, role, ids, None)

    @property
    def pairs(self):
        """The current number of intersecting pairs."""
        return self._m.pairs

    def pair_list(self):
        """Every current pair (subscription id, update id), sorted: an (k, 2) uint64 array."""
        return self._m.pair_list()

    @property
    def last_seconds(self):
        """Wall time of the last batch."""
        return self._m.last_seconds


def generate(n, alpha=1.0, dims=1, side="volume", integer=False, clustered=False, seed=1, length=1e6):
    """Marzolla's synthetic workload (``simkit ddm generate``): n regions, S gets ceil(n/2) and U the rest,
    overlap degree alpha. Returns (subscriptions, subscription_ids, updates, update_ids); regions as
    (n, d, 2) float64 arrays, or uint64 with ``integer=True``."""
    return _d.generate(int(n), float(alpha), int(dims), side, bool(integer), bool(clustered), int(seed), float(length))


def read_regions(path):
    """A region file as ``simkit ddm match --input`` reads it (CSV or simkit's binary): (subscriptions,
    subscription_ids, updates, update_ids), regions as (n, d, 2) arrays of the file's coordinate type."""
    return _d.read_regions(str(path))


__all__ = ["match", "IncrementalMatcher", "generate", "read_regions"]
