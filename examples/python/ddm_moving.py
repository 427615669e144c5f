"""DDM matching of moving entities from Python: each entity has a subscription region (what it
wants to hear about) and an update region (where it is); they walk, and every tick the intersecting
pairs are matched again.

Run from the repository root: build/venv/bin/python3 examples/python/ddm_moving.py
"""
import time

import numpy as np

from simkit import ddm

rng = np.random.default_rng(7)
entities, ticks, size = 20000, 10, 1000.0
position = rng.uniform(0, size, (entities, 2))
heading = rng.uniform(0, 2 * np.pi, entities)


def regions(centre, half_width):
    lo = centre - half_width
    return np.stack([lo, lo + 2 * half_width], axis=2)  # (n, 2 dimensions, [lower, upper])


previous = None
for tick in range(ticks):
    subscriptions = regions(position, 10.0)  # an area of interest around each entity
    updates = regions(position, 0.5)  # the entity itself
    start = time.perf_counter()
    pairs = ddm.match(subscriptions, updates)
    seconds = time.perf_counter() - start
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]  # an entity does not subscribe to itself
    current = set(map(tuple, pairs.tolist()))
    changed = "" if previous is None else f", {len(current - previous)} new, {len(previous - current)} gone"
    print(f"tick {tick}: {len(current)} pairs in {seconds * 1e3:.1f} ms{changed}")
    previous = current
    heading += rng.normal(0, 0.3, entities)
    position = np.clip(position + 3.0 * np.stack([np.cos(heading), np.sin(heading)], axis=1), 0, size)
