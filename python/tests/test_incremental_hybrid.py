"""ddm.IncrementalMatcher against full rematches, and angio.hybrid_ensemble against the CLI."""
import csv
import subprocess

import numpy as np
import pytest

from simkit import angio, ddm


def _regions(rng, n, d, dtype):
    if dtype == np.float64:
        lo = rng.uniform(0, 100, (n, d))
        return np.stack([lo, lo + rng.uniform(0, 12, (n, d))], axis=2)
    lo = rng.integers(0, 100, (n, d))
    return np.stack([lo, lo + rng.integers(0, 12, (n, d))], axis=2).astype(dtype)


def _pairs(s, s_ids, u, u_ids, rule):
    p = ddm.match(s, u, rule=rule, backend="cpu", threads=1) if len(s) and len(u) else np.zeros((0, 2), np.uint64)
    return {(int(s_ids[a]), int(u_ids[b])) for a, b in p.tolist()}


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64, np.float64])
@pytest.mark.parametrize("rule", ["ieee1516", "half-open", "closed"])
def test_random_batches_equal_full_rematches(dtype, rule):
    """Random moves, adds and removals on both sides: after every batch, the matcher's pair list is
    the full rematch of the current sets, and gained/lost are exactly the set differences."""
    rng = np.random.default_rng(11)
    d = 2
    s = {i: r for i, r in enumerate(_regions(rng, 120, d, dtype))}
    u = {100 + i: r for i, r in enumerate(_regions(rng, 150, d, dtype))}
    m = ddm.IncrementalMatcher(np.array(list(s.values())), np.array(list(u.values())),
                               subscription_ids=list(s), update_ids=list(u), rule=rule, backend="cpu", threads=1)
    current = _pairs(np.array(list(s.values())), list(s), np.array(list(u.values())), list(u), rule)
    assert set(map(tuple, m.pair_list().tolist())) == current
    next_id = 1000
    for _ in range(6):
        side, role = (s, "subscription") if rng.random() < 0.5 else (u, "update")
        what = rng.integers(0, 3)
        if what == 0:  # move
            ids = rng.choice(list(side), size=8, replace=False)
            new = _regions(rng, 8, d, dtype)
            gained, lost = m.move(role, ids, new)
            for i, r in zip(ids.tolist(), new):
                side[i] = r
        elif what == 1:  # add
            ids = np.arange(next_id, next_id + 5)
            next_id += 5
            new = _regions(rng, 5, d, dtype)
            gained, lost = m.add(role, ids, new)
            for i, r in zip(ids.tolist(), new):
                side[i] = r
        else:  # remove
            ids = rng.choice(list(side), size=4, replace=False)
            gained, lost = m.remove(role, ids)
            for i in ids.tolist():
                del side[i]
        after = _pairs(np.array(list(s.values())), list(s), np.array(list(u.values())), list(u), rule)
        assert set(map(tuple, m.pair_list().tolist())) == after
        assert m.pairs == len(after)
        assert set(map(tuple, gained.tolist())) == after - current
        assert set(map(tuple, lost.tolist())) == current - after
        current = after


def test_incremental_bad_input_is_a_value_error():
    rng = np.random.default_rng(3)
    s = _regions(rng, 10, 2, np.float64)
    m = ddm.IncrementalMatcher(s, s, backend="cpu", threads=1)
    with pytest.raises(ValueError, match="role"):
        m.move("subscriber", [0], s[:1])
    with pytest.raises(ValueError, match="dtype"):
        m.move("update", [0], s[:1].astype(np.float32))
    with pytest.raises(ValueError, match="shape"):
        m.move("update", [0, 1], s[:1])
    with pytest.raises(ValueError):
        m.move("update", [999], s[:1])  # no such id
    with pytest.raises(ValueError):
        m.add("update", [0], s[:1])  # id present
    bad = s[:1].copy()
    bad[0, 0] = (5.0, 1.0)  # lower > upper
    with pytest.raises(ValueError):
        m.move("update", [0], bad)
    assert m.pairs == ddm.match(s, s, output="count", backend="cpu", threads=1)  # unchanged after refusals


HYBRID = dict(grid=(41, 41, 1), t_max=2.0)


def test_hybrid_realisation_r_is_the_run_of_seed_plus_r_on_every_backend(repo_root):
    cfg = repo_root / "examples/angio/hybrid.toml"
    ens = angio.hybrid_ensemble(cfg, replicates=3, seed=5, backend="cpu", threads=2, **HYBRID)
    assert ens["backend"] == "cpu" and len(ens["realisations"]) == 3
    for r, real in enumerate(ens["realisations"]):
        single = angio.hybrid_ensemble(cfg, replicates=1, seed=5 + r, backend="reference", **HYBRID)["realisations"][0]
        assert real["seed"] == 5 + r
        for key in ("from", "to", "birth_step", "generation", "sprout", "kind"):
            np.testing.assert_array_equal(real["segments"][key], single["segments"][key])
        for key in ("step", "tips", "branches", "anastomoses", "length", "front"):
            np.testing.assert_array_equal(real["metrics"][key], single["metrics"][key])
        assert real["branches"] == single["branches"] and real["anastomoses"] == single["anastomoses"]
    # The network grows: segments have birth steps within the run, metrics have one row per step + 1.
    real = ens["realisations"][0]
    assert len(real["metrics"]["step"]) == real["steps"] + 1
    assert real["segments"]["birth_step"].max() <= real["steps"] + 1
    assert real["segments"]["from"].size > 10
    assert ens["realisations"][0]["segments"]["from"].size != ens["realisations"][1]["segments"]["from"].size or \
        not np.array_equal(ens["realisations"][0]["segments"]["to"], ens["realisations"][1]["segments"]["to"])


def test_hybrid_equals_the_cli(repo_root, simkit_bin, tmp_path):
    cfg = repo_root / "examples/angio/hybrid.toml"
    out = tmp_path / "hyb"
    subprocess.run([str(simkit_bin), "angio", "hybrid", "--config", str(cfg), "--grid", "41,41,1", "--t-max", "2",
                    "--replicates", "2", "--seed", "5", "--backend", "cpu", "--out", str(out), "-q"], check=True,
                   capture_output=True)
    rows = list(csv.DictReader(open(out / "ensemble.csv")))
    ens = angio.hybrid_ensemble(cfg, replicates=2, seed=5, backend="cpu", **HYBRID)
    for row, real in zip(rows, ens["realisations"]):
        assert int(row["seed"]) == real["seed"]
        assert int(row["branches"]) == real["branches"]
        assert int(row["anastomoses"]) == real["anastomoses"]
        assert int(row["passes"]) == real["passes"]
        for kind, n in real["anastomoses_by_kind"].items():
            assert int(row[f"anastomoses_{kind}"]) == n
        assert float(row["length"]) == real["metrics"]["length"][-1]
        assert float(row["front"]) == real["metrics"]["front"][-1]


def test_hybrid_bad_input_is_a_value_error(repo_root):
    with pytest.raises(ValueError, match="grid"):
        angio.hybrid_ensemble(grid=(2, 2, 1), t_max=1.0, backend="cpu")
    with pytest.raises(ValueError, match="replicates"):
        angio.hybrid_ensemble(repo_root / "examples/angio/hybrid.toml", replicates=0, backend="cpu", **HYBRID)
    with pytest.raises(ValueError):
        angio.hybrid_ensemble(repo_root / "examples/angio/nonexistent.toml", backend="cpu")
