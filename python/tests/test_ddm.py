"""simkit.ddm.match against a brute-force NumPy implementation of the three rules, every algorithm
and backend, the CLI on the same regions, and the argument checks."""
import csv
import json

import numpy as np
import pytest

from simkit import ddm

DTYPES = {"u32": np.uint32, "u64": np.uint64, "f64": np.float64}
RULES = ("ieee1516", "half-open", "closed")
# (backend, algorithm) pairs that run without a GPU.
CPU_ALGORITHMS = [("reference", "brute-force"), ("reference", "grid"), ("reference", "sbm"),
                  ("reference", "interval-tree"), ("cpu", "parallel"), ("cpu", "auto"), ("reference", "auto")]


def brute_force(s, u, rule):
    """(n_s, n_u) boolean: does subscription i meet update j (every dimension overlaps)."""
    a_lo, a_hi = s[:, None, :, 0], s[:, None, :, 1]
    b_lo, b_hi = u[None, :, :, 0], u[None, :, :, 1]
    if rule == "ieee1516":
        ok = (a_lo == b_lo) | ((a_lo < b_hi) & (b_lo < a_hi))
    elif rule == "half-open":
        ok = (a_lo < b_hi) & (b_lo < a_hi)
    else:
        ok = (a_lo <= b_hi) & (b_lo <= a_hi)
    return ok.all(axis=2)


def random_regions(rng, n, d, dtype):
    """Regions on a coarse lattice, so that touching ranges, shared lower bounds and points
    (lower == upper, about one range in five) are frequent; u32/u64 near the top of their range
    (u64 above 2^53, where a double would round), f64 with non-integral values."""
    lo = rng.integers(0, 40, (n, d))
    length = rng.integers(0, 12, (n, d)) * (rng.random((n, d)) > 0.2)
    if dtype == "f64":
        base = np.array([[-7.25, 1e6, 0.0]])[:, :d]
        lo_f, hi_f = base + lo * 0.5, base + (lo + length) * 0.5
        return np.stack([lo_f, hi_f], axis=-1).astype(np.float64)
    if dtype == "u32":
        base = np.uint64(2**32 - 100)
    else:
        base = np.uint64(2**63 + 12345)
    lo_u = base + lo.astype(np.uint64)
    out = np.stack([lo_u, lo_u + length.astype(np.uint64)], axis=-1)
    return out.astype(DTYPES[dtype])


def pair_set(pairs):
    return {(int(s), int(u)) for s, u in pairs}


def expected_pairs(mask):
    return {(int(i), int(j)) for i, j in np.argwhere(mask)}


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("rule", RULES)
def test_match_equals_brute_force(rule, dtype, dims):
    rng = np.random.default_rng(100 * RULES.index(rule) + 10 * sorted(DTYPES).index(dtype) + dims)
    s = random_regions(rng, 70, dims, dtype)
    u = random_regions(rng, 60, dims, dtype)
    mask = brute_force(s, u, rule)
    assert 0 < mask.sum() < mask.size  # neither trivial case
    pairs = ddm.match(s, u, rule=rule, backend="cpu")
    assert pairs.dtype == np.uint64 and pairs.ndim == 2 and pairs.shape[1] == 2
    assert len(pair_set(pairs)) == len(pairs)  # no pair twice
    assert pair_set(pairs) == expected_pairs(mask)
    # (threads=1: on a loaded 2-core machine each OpenMP region of 2 threads can wait a time slice)
    assert ddm.match(s, u, rule=rule, output="count", backend="cpu", threads=1) == int(mask.sum())
    per_s, per_u = ddm.match(s, u, rule=rule, output="per_region", backend="cpu", threads=1)
    np.testing.assert_array_equal(per_s, mask.sum(axis=1))
    np.testing.assert_array_equal(per_u, mask.sum(axis=0))


def test_rules_differ_on_the_documented_examples():
    # docs/ddm.md: [5,8] vs [5,5]; [5,8] vs [8,9]; [3,8] vs [5,5]; [0,10] vs [5,15].
    s = np.array([[[5, 8]], [[5, 8]], [[3, 8]], [[0, 10]]], dtype=np.uint64)
    u = np.array([[[5, 5]], [[8, 9]], [[5, 5]], [[5, 15]]], dtype=np.uint64)
    want = {"ieee1516": [True, False, True, True], "half-open": [False, False, True, True],
            "closed": [True, True, True, True]}
    for rule, row in want.items():
        got = pair_set(ddm.match(s, u, rule=rule, backend="reference"))
        assert [(k, k) in got for k in range(4)] == row, rule


def test_u64_bounds_are_not_rounded():
    big = 2**60
    s = np.array([[[big, big + 1]]], dtype=np.uint64)
    u = np.array([[[big + 1, big + 2]]], dtype=np.uint64)
    # Touching at big + 1 (a double would see the same number three times): only closed matches.
    assert ddm.match(s, u, rule="half-open", output="count") == 0
    assert ddm.match(s, u, rule="ieee1516", output="count") == 0
    assert ddm.match(s, u, rule="closed", output="count") == 1


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_backends_and_algorithms_agree(rule, dtype):
    rng = np.random.default_rng(7)
    s = random_regions(rng, 150, 2, dtype)
    u = random_regions(rng, 120, 2, dtype)
    want = expected_pairs(brute_force(s, u, rule))
    for backend, algorithm in CPU_ALGORITHMS:
        got = ddm.match(s, u, rule=rule, backend=backend, algorithm=algorithm)
        assert pair_set(got) == want, (backend, algorithm)
    one = ddm.match(s, u, rule=rule, backend="cpu", threads=1, output="per_region")
    two = ddm.match(s, u, rule=rule, backend="cpu", threads=2, output="per_region")
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)


def test_empty_sets_and_non_contiguous_input():
    rng = np.random.default_rng(2)
    s = random_regions(rng, 40, 2, "f64")
    u = random_regions(rng, 30, 2, "f64")
    empty = np.zeros((0, 2, 2))
    assert ddm.match(empty, u).shape == (0, 2)
    assert ddm.match(s, empty, output="count") == 0
    per_s, per_u = ddm.match(empty, u, output="per_region")
    assert per_s.size == 0 and per_u.tolist() == [0] * 30
    # Strided views (every other region; a Fortran-ordered copy) give the views' own positions.
    view = s[::2]
    assert pair_set(ddm.match(view, u)) == expected_pairs(brute_force(view, u, "ieee1516"))
    fortran = np.asfortranarray(s)
    assert pair_set(ddm.match(fortran, u)) == pair_set(ddm.match(s, u))


BAD = {
    "int32": (lambda s, u: ddm.match(s.astype(np.int32), u.astype(np.int32)),
              r"subscriptions: dtype must be uint32, uint64 or float64, got int32"),
    "int64 list": (lambda s, u: ddm.match([[[0, 1], [2, 3]]], u), r"subscriptions: dtype must be .* got int64"),
    "mixed dtypes": (lambda s, u: ddm.match(s, u.astype(np.float64)),
                     r"updates: dtype float64 differs from the subscriptions' uint64"),
    "shape (n, d)": (lambda s, u: ddm.match(s[:, :, 0], u), r"subscriptions: expected an array of shape \(n, d, 2\)"),
    "shape (n, d, 3)": (lambda s, u: ddm.match(s, np.concatenate([u, u[:, :, :1]], axis=2)),
                        r"updates: expected an array of shape \(n, d, 2\).*\(5, 2, 3\)"),
    "9 dimensions": (lambda s, u: ddm.match(np.zeros((2, 9, 2), np.uint64), np.zeros((3, 9, 2), np.uint64)),
                     r"1 to 8 dimensions, got 9"),
    "0 dimensions": (lambda s, u: ddm.match(np.zeros((2, 0, 2), np.uint64), np.zeros((3, 0, 2), np.uint64)),
                     r"1 to 8 dimensions, got 0"),
    "dimensions differ": (lambda s, u: ddm.match(s, u[:, :1]), r"subscriptions have 2 dimensions, updates 1"),
    "unknown rule": (lambda s, u: ddm.match(s, u, rule="open"), r"rule open: expected ieee1516, half-open or closed"),
    "unknown output": (lambda s, u: ddm.match(s, u, output="list"), r"output: expected 'pairs', 'count'"),
    "unknown algorithm": (lambda s, u: ddm.match(s, u, algorithm="quick"), r"algorithm quick"),
    "algorithm of another backend": (lambda s, u: ddm.match(s, u, algorithm="parallel", backend="reference"),
                                     r"parallel"),
    "unknown backend": (lambda s, u: ddm.match(s, u, backend="gpu2"), r"'gpu2' is not a backend"),
    "negative threads": (lambda s, u: ddm.match(s, u, threads=-1), r"threads"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_arguments(name):
    rng = np.random.default_rng(0)
    s, u = random_regions(rng, 4, 2, "u64"), random_regions(rng, 5, 2, "u64")
    call, pattern = BAD[name]
    with pytest.raises(ValueError, match=pattern):
        call(s, u)


@pytest.mark.parametrize("which", ["subscriptions", "updates"])
@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_lower_above_upper_is_named(which, dtype):
    rng = np.random.default_rng(1)
    s, u = random_regions(rng, 4, 3, dtype), random_regions(rng, 5, 3, dtype)
    bad = s if which == "subscriptions" else u
    bad[2, 1] = bad[2, 1, ::-1] if bad[2, 1, 0] != bad[2, 1, 1] else (bad[2, 1, 0] + 1, bad[2, 1, 0])
    letter = "S" if which == "subscriptions" else "U"
    with pytest.raises(ValueError, match=rf"{letter} region 2, dimension 1: lower .* > upper"):
        ddm.match(s, u)


def test_nan_bound_is_refused():
    rng = np.random.default_rng(1)
    s, u = random_regions(rng, 4, 2, "f64"), random_regions(rng, 5, 2, "f64")
    u[3, 0, 1] = np.nan
    with pytest.raises(ValueError, match=r"U region 3, dimension 0: NaN"):
        ddm.match(s, u)
    s[0, 1, 0] = np.nan
    with pytest.raises(ValueError, match=r"NaN"):
        ddm.match(s, u, backend="reference")


# ------------------------------------------------------------------------------------------------
# The CLI on the same regions (docs/ddm.md: CSV `set,id,lowerK,upperK...`; pairs and per-region by id)


def write_regions_csv(path, s, u, s_ids, u_ids):
    d = s.shape[1]
    fmt = (lambda x: repr(float(x))) if s.dtype == np.float64 else (lambda x: str(int(x)))
    lines = ["# written by test_ddm.py", "set,id," + ",".join(f"lower{k},upper{k}" for k in range(d))]
    for letter, regions, ids in (("S", s, s_ids), ("U", u, u_ids)):
        for i, r in zip(ids, regions):
            lines.append(f"{letter},{i}," + ",".join(fmt(x) for x in r.ravel()))
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_match_equals_cli(tmp_path, run_cli, dtype, rule):
    rng = np.random.default_rng(11)
    s, u = random_regions(rng, 50, 3, dtype), random_regions(rng, 45, 3, dtype)
    s_ids, u_ids = 1000 + 3 * np.arange(50), 7 + 2 * np.arange(45)  # ids are not positions
    regions = tmp_path / "regions.csv"
    write_regions_csv(regions, s, u, s_ids, u_ids)
    common = ["ddm", "match", "--input", regions, "--rule", rule, "--coords", dtype, "--backend", "cpu",
              "--threads", 1, "-q"]
    run_cli(*common, "--pairs", tmp_path / "pairs.csv")
    with open(tmp_path / "pairs.csv") as f:
        cli = {(int(row["subscription"]), int(row["update"])) for row in csv.DictReader(f)}
    py = {(int(s_ids[i]), int(u_ids[j])) for i, j in ddm.match(s, u, rule=rule, backend="cpu", threads=1)}
    assert len(py) > 0
    assert cli == py

    run_cli(*common, "--per-region", tmp_path / "per.csv")
    with open(tmp_path / "per.csv") as f:
        rows = list(csv.DictReader(f))
    per_s, per_u = ddm.match(s, u, rule=rule, output="per_region", backend="reference")
    assert [(r["set"], int(r["id"])) for r in rows] == [("S", int(i)) for i in s_ids] + [("U", int(i)) for i in u_ids]
    assert [int(r["count"]) for r in rows] == per_s.tolist() + per_u.tolist()


def test_match_example_file_counts(run_cli, repo_root):
    """examples/ddm/regions.csv: 1, 2 and 4 pairs under half-open, ieee1516 and closed."""
    s = np.array([[[0, 10], [0, 10]], [[20, 30], [0, 10]]], dtype=np.uint64)
    u = np.array([[[5, 15], [5, 15]], [[10, 20], [0, 10]], [[20, 20], [5, 5]]], dtype=np.uint64)
    for rule, n in (("half-open", 1), ("ieee1516", 2), ("closed", 4)):
        assert ddm.match(s, u, rule=rule, output="count") == n
        r = run_cli("ddm", "match", "--input", repo_root / "examples" / "ddm" / "regions.csv", "--rule", rule,
                    "--backend", "cpu", "--threads", 1, "--count", "--json", "-q")
        assert json.loads(r.stdout)["pairs"] == n, r.stdout


def test_match_does_not_leak(rss_bytes):
    """200 calls returning about 25,000 pairs (400 KB) each: a leaked result would add 80 MB."""
    rng = np.random.default_rng(4)
    lo = rng.uniform(0, 100, (400, 1))
    s = np.stack([lo, lo + 25], axis=-1)
    u = s[::-1].copy()
    n = len(ddm.match(s, u, backend="cpu", threads=1))
    assert n * 16 > 300_000
    for _ in range(20):
        ddm.match(s, u, backend="cpu", threads=1)
    before = rss_bytes()
    for _ in range(200):
        ddm.match(s, u, backend="cpu", threads=1)
    grown = rss_bytes() - before
    assert grown < 20e6, f"RSS grew by {grown / 1e6:.1f} MB over 200 matches"
