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


@pytest.mark.parametrize("integer", [False, True])
def test_generate_equals_the_cli_and_reads_back(simkit_bin, tmp_path, integer):
    out = tmp_path / "regions.bin"
    cmd = [str(simkit_bin), "ddm", "generate", "--n", "3001", "--alpha", "5", "--dims", "2", "--seed", "9",
           "--out", str(out)] + (["--integer"] if integer else [])
    subprocess.run(cmd, check=True, capture_output=True)
    s, s_ids, u, u_ids = ddm.generate(3001, alpha=5, dims=2, seed=9, integer=integer)
    assert s.shape == (1501, 2, 2) and u.shape == (1500, 2, 2)
    assert s.dtype == (np.uint64 if integer else np.float64)
    fs, fs_ids, fu, fu_ids = ddm.read_regions(out)
    for a, b in ((s, fs), (s_ids, fs_ids), (u, fu), (u_ids, fu_ids)):
        np.testing.assert_array_equal(a, b)
    assert np.all(s[:, :, 0] <= s[:, :, 1])
    # alpha is the mean number of regions overlapping a point: in 2-D about 2^(d-2) alpha N pairs.
    pairs = ddm.match(s, u, output="count", backend="cpu", threads=1)
    assert 0.3 * 5 * 3001 / 2 < pairs < 3 * 5 * 3001


def test_generate_bad_options_are_value_errors():
    with pytest.raises(ValueError):
        ddm.generate(100, alpha=5, dims=9)
    with pytest.raises(ValueError):
        ddm.generate(100, alpha=5, dims=2, side="area")


def test_fit_bootstrap_intervals_equal_the_cli(repo_root, simkit_bin, tmp_path):
    """prolif.fit(bootstrap=K) gives the intervals `simkit prolif fit --bootstrap K` writes."""
    from simkit import prolif
    import json

    h0 = tmp_path / "h0.txt"
    h0.write_text("".join(f"{v} {c}\n" for v, c in [(800, 300), (1600, 400), (3200, 500), (6400, 300)]))
    m = prolif.model([prolif.population("q", 0.2, quiescent=True), prolif.population("fast", 0.8, 20, 4)],
                     phi_min=1, times=[72])
    values, counts = prolif.read_histogram(h0)
    target = prolif.simulate(values, counts, m, seed=4, backend="cpu").histogram()
    tfile = tmp_path / "t.txt"
    tfile.write_text("".join(f"{float(v)!r} {int(c)}\n" for v, c in zip(*target)))
    cfg = tmp_path / "m.toml"
    cfg.write_text('phi_min = 1\n[[population]]\nname = "q"\nproportion = { min = 0, max = 1 }\nquiescent = true\n'
                   '[[population]]\nname = "fast"\nproportion = { min = 0, max = 1 }\n'
                   'mean = { min = 10, max = 40 }\nsd = 4\n')
    subprocess.run([str(simkit_bin), "prolif", "fit", "--histogram", str(h0), "--target", f"{tfile}@72", "--config",
                    str(cfg), "--particles", "6", "--iterations", "3", "--bootstrap", "4", "--seed", "3",
                    "--backend", "cpu", "--out", str(tmp_path / "fit"), "-q"], check=True, capture_output=True)
    doc = json.loads((tmp_path / "fit/result.json").read_text())
    f = prolif.fit(values, counts, m, {"q.proportion": (0, 1), "fast.proportion": (0, 1), "fast.mean": (10, 40)},
                   [(*prolif.read_histogram(tfile), 72)], particles=6, iterations=3, bootstrap=4, seed=3,
                   backend="cpu")
    assert f.fitness == doc["fitness"]
    cli = {**doc["uncertainty"]["parameters"], **doc["uncertainty"]["proportions"]}
    assert set(f.intervals) == set(cli)
    for name, (best, low, high, mean, sd) in f.intervals.items():
        assert (best, low, high) == (cli[name]["best"], cli[name]["low"], cli[name]["high"]), name
        assert low <= high
