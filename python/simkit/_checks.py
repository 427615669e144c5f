"""Array checks shared by the engines: every dtype or shape problem is a ValueError naming the argument."""
import numpy as np


def float_vector(x, name):
    a = np.asarray(x)
    if a.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array, got shape {a.shape}")
    if not (np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)):
        raise ValueError(f"{name}: expected numbers, got dtype {a.dtype}")
    return np.ascontiguousarray(a, dtype=np.float64)


def count_vector(x, name):
    a = np.asarray(x)
    if a.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array, got shape {a.shape}")
    if np.issubdtype(a.dtype, np.integer):
        if a.size and a.min() < 0:
            raise ValueError(f"{name}: counts must be >= 0, got {a.min()}")
        return np.ascontiguousarray(a, dtype=np.uint64)
    if np.issubdtype(a.dtype, np.floating):
        if a.size and (not np.all(np.isfinite(a)) or np.any(a < 0) or np.any(np.floor(a) != a)):
            raise ValueError(f"{name}: counts must be finite non-negative integers")
        if a.size and a.max() >= 2.0**64:
            raise ValueError(f"{name}: a count does not fit in 64 bits")
        return np.ascontiguousarray(a, dtype=np.uint64)
    raise ValueError(f"{name}: expected integer counts, got dtype {a.dtype}")


def histogram(values, counts, name):
    v = float_vector(values, f"{name} values")
    c = count_vector(counts, f"{name} counts")
    if v.shape != c.shape:
        raise ValueError(f"{name}: values and counts differ in length ({v.size} and {c.size})")
    return v, c
