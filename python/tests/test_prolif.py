"""simkit.prolif: the same numbers as `simkit prolif simulate` / `simkit prolif fit`, the backends
agree, replicates are seeded runs, bad input is a ValueError, and repeated calls do not leak."""
import csv
import json
import math

import numpy as np
import pytest

from simkit import prolif

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None

# H(0) with a zero-count row (skipped by both the CLI and the bindings); below 10^4, so nothing
# overflows the default bins.
H0_VALUES = np.array([1000.0, 500.0, 200.0, 3000.0])
H0_COUNTS = np.array([50, 30, 20, 0])
TARGET = ([100.0, 250.0, 500.0, 1000.0], [40, 60, 30, 5])

# Two models: (phi_min, times, start, populations as dicts)
CASES = {
    "sync-normal": dict(
        phi_min=10.0, times=[30.0, 60.0], start="sync",
        populations=[dict(name="resting", proportion=0.1, quiescent=True),
                     dict(name="cycling", proportion=0.9, mean=20.0, sd=5.0, distribution="normal")]),
    "async-gamma-lognormal": dict(
        phi_min=5.0, times=[72.0], start="procell-async",
        populations=[dict(name="q", proportion=0.2, quiescent=True),
                     dict(name="slow", proportion=0.3, mean=30.0, sd=9.0, distribution="gamma"),
                     dict(name="fast", proportion=0.5, mean=14.0, sd=4.0, distribution="lognormal")]),
}


def make_model(case):
    pops = []
    for p in case["populations"]:
        if p.get("quiescent"):
            pops.append(prolif.population(p["name"], p["proportion"], quiescent=True))
        else:
            pops.append(prolif.population(p["name"], p["proportion"], mean=p["mean"], sd=p["sd"],
                                          distribution=p["distribution"]))
    return prolif.model(pops, phi_min=case["phi_min"], times=case["times"], start=case["start"])


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, tuple):  # bounds
        return f"{{ min = {v[0]!r}, max = {v[1]!r} }}"
    if isinstance(v, list):
        return "[" + ", ".join(repr(float(x)) for x in v) + "]"
    return repr(float(v))


def write_toml(path, case):
    lines = [f"{k} = {toml_value(case[k])}" for k in ("phi_min", "times", "start") if k in case]
    for p in case["populations"]:
        lines += ["", "[[population]]"] + [f"{k} = {toml_value(v)}" for k, v in p.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_histogram(path, values, counts):
    path.write_text("".join(f"{float(v)!r} {int(c)}\n" for v, c in zip(values, counts)))
    return path


def read_tsv(path):
    values, counts = [], []
    for line in path.read_text().splitlines():
        v, c = line.split("\t")
        values.append(float(v))
        counts.append(int(c))
    return np.array(values), np.array(counts, dtype=np.uint64)


def assert_generations_equal(cli, py):
    """The CLI's by_generation stops at the last non-zero generation; the arrays run to the model's limit."""
    py = np.asarray(py)
    assert len(cli) <= len(py)
    assert py[: len(cli)].tolist() == list(cli)
    assert not py[len(cli):].any()


def small_model(phi_min=10.0, times=(60.0,)):
    return prolif.model([prolif.population("q", 0.1, quiescent=True),
                         prolif.population("p", 0.9, mean=20.0, sd=5.0)], phi_min=phi_min, times=times)


# ------------------------------------------------------------------------------------------------
# The CLI and the bindings: the same numbers for the same seed


@pytest.mark.parametrize("name", sorted(CASES))
def test_simulate_equals_cli(tmp_path, run_cli, name):
    case = CASES[name]
    seed = 17
    h0 = write_histogram(tmp_path / "h0.txt", H0_VALUES, H0_COUNTS)
    config = write_toml(tmp_path / "model.toml", case)
    out = tmp_path / "out"
    run_cli("prolif", "simulate", "--histogram", h0, "--config", config, "--backend", "cpu", "--seed", seed,
            "--out", out, "-q")
    r = prolif.simulate(H0_VALUES, H0_COUNTS, make_model(case), seed=seed, backend="cpu")
    assert r.backend == "cpu"
    assert r.counts.shape[:3] == (1, len(case["times"]), 3)  # the zero-count row is dropped
    assert r.values.tolist() == [1000.0, 500.0, 200.0]

    # histogram.tsv: the exact histogram at t_max, ascending; values read back exactly.
    values, counts = read_tsv(out / "histogram.tsv")
    hv, hc = r.histogram()
    assert np.all(np.diff(values) > 0)
    np.testing.assert_array_equal(hv, values)
    np.testing.assert_array_equal(hc, counts)
    assert int(counts.sum()) == int(r.total()[0])

    doc = json.loads((out / "result.json").read_text())
    assert doc["seed"] == seed
    assert doc["initial_cells"] == int(H0_COUNTS.sum())
    assert doc["divisions"] == int(r.divisions[0])
    assert doc["start"] == case["start"]
    assert [e["t"] for e in doc["times"]] == r.times.tolist()
    names = [p["name"] for p in case["populations"]]
    assert r.populations == names
    for t, entry in enumerate(doc["times"]):
        assert entry["total"] == int(r.total(t)[0])
        assert_generations_equal(entry["by_generation"], r.by_generation(t)[0])
        assert [entry["by_population"][n] for n in names] == r.by_population(t)[0].tolist()
    assert doc["times"][-1]["total"] > H0_COUNTS.sum()  # the cells did divide

    # binned.csv at t_max: the binned() counts and edges.
    with open(out / "binned.csv") as f:
        rows = [row for row in csv.DictReader(f) if float(row["t"]) == r.times[-1]]
    edges, binned = r.binned()
    np.testing.assert_array_equal(edges, [float(row["edge"]) for row in rows])
    np.testing.assert_array_equal(binned[0], [float(row["count"]) for row in rows])


def test_replicates_and_hellinger_equal_cli(tmp_path, run_cli):
    case = CASES["sync-normal"]
    h0 = write_histogram(tmp_path / "h0.txt", H0_VALUES, H0_COUNTS)
    target = write_histogram(tmp_path / "target.txt", *TARGET)
    config = write_toml(tmp_path / "model.toml", case)
    out = tmp_path / "out"
    run_cli("prolif", "simulate", "--histogram", h0, "--config", config, "--backend", "cpu", "--seed", 5,
            "--replicates", 3, "--target", target, "--out", out, "-q")
    r = prolif.simulate(H0_VALUES, H0_COUNTS, make_model(case), seed=5, replicates=3, backend="cpu", target=TARGET)
    assert r.seeds.tolist() == [5, 6, 7]
    assert r.hellinger.shape == (3,)
    last = json.loads((out / "result.json").read_text())["times"][-1]
    assert len(last["runs"]) == 3
    for k, run in enumerate(last["runs"]):
        assert run["seed"] == 5 + k
        assert run["total"] == int(r.total()[k])
        assert_generations_equal(run["by_generation"], r.by_generation()[k])
        assert abs(run["hellinger_normalized"] - r.hellinger[k]) <= 1e-12
    assert abs(last["hellinger_normalized"] - r.hellinger.mean()) <= 1e-12
    assert len(set(r.total().tolist())) > 1  # the replicates differ


def test_read_histogram_example(repo_root):
    path = repo_root / "examples" / "prolif" / "h0.txt"
    values, counts = prolif.read_histogram(path)
    assert values.dtype == np.float64 and counts.dtype == np.uint64
    # An independent parse: every line `value count` with count > 0.
    table = np.loadtxt(path, comments="#")
    keep = table[:, 1] > 0
    assert keep.sum() < len(table)  # the file has zero-count rows, which are left out
    np.testing.assert_array_equal(values, table[keep, 0])
    np.testing.assert_array_equal(counts, table[keep, 1].astype(np.uint64))


def test_read_histogram_csv_and_comments(tmp_path):
    p = tmp_path / "h.csv"
    p.write_text("value,count\r\n12.5,3\r\n# a comment\r\n\r\n250,0\r\n1e3,1e9\r\n")
    values, counts = prolif.read_histogram(p)
    assert values.tolist() == [12.5, 1000.0] and counts.tolist() == [3, 10**9]
    bad = tmp_path / "bad.txt"
    bad.write_text("100 5\n200 x\n")
    with pytest.raises(ValueError, match=r"bad\.txt:2"):
        prolif.read_histogram(bad)


def test_example_files_equal_cli(tmp_path, run_cli, repo_root):
    ex = repo_root / "examples" / "prolif"
    values, counts = prolif.read_histogram(ex / "h0.txt")
    out = tmp_path / "out"
    run_cli("prolif", "simulate", "--histogram", ex / "h0.txt", "--config", ex / "model.toml", "--backend", "cpu",
            "--out", out, "-q")
    doc = json.loads((out / "result.json").read_text())
    assert int(counts.sum()) == doc["initial_cells"]
    r = prolif.simulate(values, counts, ex / "model.toml", seed=doc["seed"], backend="cpu")
    assert r.times.tolist() == [120.0]
    assert int(r.total()[0]) == doc["times"][-1]["total"]


def test_read_model_example(repo_root):
    m = prolif.read_model(repo_root / "examples" / "prolif" / "model.toml")
    assert m.phi_min == 20.0
    assert m.times == [120.0]
    assert m.start == "procell-async"
    got = [(p.name, p.proportion, p.quiescent) for p in m.populations]
    assert got == [("quiescent", 0.12, True), ("slow", 0.38, False), ("fast", 0.5, False)]
    assert [(p.mean, p.sd, p.distribution) for p in m.populations[1:]] == [(32.0, 9.0, "normal"),
                                                                             (17.5, 4.0, "normal")]
    m.validate()
    types = prolif.read_model(repo_root / "examples" / "prolif" / "types.txt")
    assert [p.name for p in types.populations] == ["quiescent", "P1", "P2"]
    assert [p.proportion for p in types.populations] == [0.12, 0.38, 0.5]


def test_real_data_equals_cli(tmp_path, run_cli, shared_data, repo_root):
    d = shared_data / "procell"
    h0, target = d / "AML9_Exp3_t10d_UT1_BM_GFPpos.txt", d / "AML9_Exp3_t10d_DOX3_BM_GFPpos.txt"
    if not (h0.is_file() and target.is_file()):
        pytest.skip(f"the AML9 files are not in {d}")
    values, counts = prolif.read_histogram(h0)
    assert (values.size, int(counts.sum())) == (501, 53546)  # docs/prolif.md
    config = repo_root / "examples" / "prolif" / "procell-model3.toml"
    out = tmp_path / "out"
    run_cli("prolif", "simulate", "--histogram", h0, "--config", config, "--target", target, "--seed", 1,
            "--backend", "cpu", "--out", out, "-q")
    last = json.loads((out / "result.json").read_text())["times"][-1]
    r = prolif.simulate(values, counts, config, seed=1, backend="cpu", target=prolif.read_histogram(target))
    assert int(r.total()[0]) == last["total"]
    assert abs(r.hellinger[0] - last["hellinger_normalized"]) <= 1e-12


# ------------------------------------------------------------------------------------------------
# Backends, seeds, threads


def test_backends_reference_and_cpu_identical(repo_root):
    ex = repo_root / "examples" / "prolif"
    values, counts = prolif.read_histogram(ex / "h0.txt")
    m = prolif.read_model(ex / "model.toml")
    kw = dict(times=[40.0, 80.0, 120.0], seed=3, replicates=2)
    ref = prolif.simulate(values, counts, m, backend="reference", **kw)
    cpu = prolif.simulate(values, counts, m, backend="cpu", **kw)
    assert (ref.backend, cpu.backend) == ("reference", "cpu")
    assert ref.counts.dtype == np.uint64 and ref.counts.shape == cpu.counts.shape
    np.testing.assert_array_equal(ref.counts, cpu.counts)
    np.testing.assert_array_equal(ref.divisions, cpu.divisions)
    assert not np.array_equal(ref.counts[0], ref.counts[1])  # two seeds, two results


def test_replicate_equals_single_run_with_seed_plus_r():
    m = small_model(times=(30.0, 60.0))
    batch = prolif.simulate(H0_VALUES, H0_COUNTS, m, seed=11, replicates=3, backend="cpu")
    for r in range(3):
        single = prolif.simulate(H0_VALUES, H0_COUNTS, m, seed=11 + r, backend="cpu")
        np.testing.assert_array_equal(batch.counts[r], single.counts[0])
        assert batch.divisions[r] == single.divisions[0]
    other = prolif.simulate(H0_VALUES, H0_COUNTS, m, seed=12, backend="cpu")
    assert not np.array_equal(batch.counts[0], other.counts[0])


def test_threads_do_not_change_counts(repo_root):
    ex = repo_root / "examples" / "prolif"
    values, counts = prolif.read_histogram(ex / "h0.txt")
    one = prolif.simulate(values, counts, ex / "model.toml", backend="cpu", threads=1, seed=2)
    two = prolif.simulate(values, counts, ex / "model.toml", backend="cpu", threads=2, seed=2)
    np.testing.assert_array_equal(one.counts, two.counts)


def test_more_output_times_do_not_change_t_max():
    a = prolif.simulate(H0_VALUES, H0_COUNTS, small_model(), t_max=60, backend="cpu")
    b = prolif.simulate(H0_VALUES, H0_COUNTS, small_model(), times=[15, 60, 30], backend="cpu")
    assert b.times.tolist() == [15.0, 30.0, 60.0]
    np.testing.assert_array_equal(a.counts[:, -1], b.counts[:, -1])


def test_result_accessors_are_consistent():
    r = prolif.simulate(H0_VALUES, H0_COUNTS, small_model(times=(30.0, 60.0)), seed=4, replicates=2,
                        backend="cpu")
    for t in (0, 1, -1):
        tot = r.total(t)
        np.testing.assert_array_equal(r.by_generation(t).sum(axis=1), tot)
        np.testing.assert_array_equal(r.by_population(t).sum(axis=1), tot)
        for rep in range(2):
            assert int(r.histogram(t, replicate=rep)[1].sum()) == int(tot[rep])
    # The quiescent cells never divide: all of them are in generation 0, at their own values.
    assert r.counts[:, :, :, 1:, 0].sum() == 0
    fl = r.fluorescence()
    assert fl.shape == r.counts.shape[2:4]
    np.testing.assert_array_equal(fl[:, 3], r.values / 8)


# ------------------------------------------------------------------------------------------------
# Binning and the Hellinger distance against NumPy


def test_bin_edges_and_binned_match_numpy():
    edges = prolif.bin_edges(50, 10.0, 1e4)
    np.testing.assert_allclose(edges, np.logspace(1, 4, 50), rtol=1e-14)
    # H(0) values spread over 10^0.5 .. 10^4.5: some below LO, some below phi_min, some overflow.
    rng = np.random.default_rng(3)
    values = np.unique(10 ** rng.uniform(0.5, 4.5, 300))
    counts = rng.integers(1, 5, values.size)
    r = prolif.simulate(values, counts, small_model(phi_min=1.0), t_max=45, seed=2, replicates=2, backend="cpu")
    got_edges, got = r.binned(bins=50, range=(10.0, 1e4), phi_min=30.0)
    np.testing.assert_array_equal(got_edges, edges)
    v = r.fluorescence().ravel()
    keep = (v >= 10.0) & (v > 30.0) & (v <= edges[-1])
    assert keep.sum() > 100 and (v > edges[-1]).any() and ((v > 1.0) & (v < 30.0)).any()
    for rep in range(2):
        w = r.counts[rep, -1].sum(axis=2).ravel().astype(np.float64)
        expected = np.bincount(np.searchsorted(edges, v[keep], side="left"), weights=w[keep], minlength=50)
        np.testing.assert_array_equal(got[rep], expected)


def test_hellinger_matches_numpy():
    rng = np.random.default_rng(5)
    sim = rng.integers(0, 100, 30).astype(float)
    tgt = rng.integers(0, 50, 30).astype(float)
    h, hn = prolif.hellinger(sim, tgt)
    ratio = sim.sum() / tgt.sum()
    expected = np.linalg.norm(np.sqrt(sim / ratio) - np.sqrt(tgt)) / math.sqrt(2)
    assert h == pytest.approx(expected, rel=1e-12)
    assert hn == pytest.approx(expected / math.sqrt(tgt.sum()), rel=1e-12)
    assert prolif.hellinger(sim, sim)[0] == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="different numbers of bins"):
        prolif.hellinger(sim, tgt[:-1])


# ------------------------------------------------------------------------------------------------
# Bad input: ValueError with one clear line


def _sim(values=H0_VALUES, counts=H0_COUNTS, model=None, **kw):
    kw.setdefault("backend", "cpu")
    return prolif.simulate(values, counts, small_model() if model is None else model, **kw)


def _unbalanced():
    return prolif.model([prolif.population("q", 0.3, quiescent=True), prolif.population("p", 0.5, mean=20, sd=5)],
                        times=[10])


BAD = {
    "2-D values": (lambda: _sim(values=np.ones((2, 2)), counts=[1, 1]), r"h0 values: expected a 1-D array"),
    "2-D counts": (lambda: _sim(values=[1.0, 2.0], counts=np.ones((2, 1), int)), r"h0 counts: expected a 1-D"),
    "negative count": (lambda: _sim(values=[100.0, 200.0], counts=[10, -1]), r"counts must be >= 0"),
    "non-integral float count": (lambda: _sim(values=[100.0, 200.0], counts=[1.5, 2.0]),
                                 r"finite non-negative integers"),
    "NaN count": (lambda: _sim(values=[100.0], counts=[np.nan]), r"finite non-negative integers"),
    "mismatched lengths": (lambda: _sim(values=[100.0, 200.0], counts=[1, 2, 3]), r"differ in length \(2 and 3\)"),
    "string values": (lambda: _sim(values=np.array(["100", "200"]), counts=[1, 2]), r"h0 values: expected numbers"),
    "string counts": (lambda: _sim(values=[100.0, 200.0], counts=np.array(["1", "2"])),
                      r"h0 counts: expected integer counts"),
    "zero value": (lambda: _sim(values=[0.0, 200.0], counts=[1, 2]), r"finite and > 0.*index 0"),
    "negative value": (lambda: _sim(values=[100.0, -5.0], counts=[1, 2]), r"finite and > 0.*index 1"),
    "infinite value": (lambda: _sim(values=[np.inf], counts=[1]), r"finite and > 0"),
    "no cells": (lambda: _sim(values=[100.0], counts=[0]), r"no cells"),
    "proportions (validate)": (lambda: _unbalanced().validate(), r"proportions sum to 0\.8"),
    "proportions (simulate)": (lambda: _sim(model=_unbalanced()), r"proportions sum to 0\.8"),
    "mean <= 0": (lambda: _sim(model=prolif.model([prolif.population("p", 1, mean=-2, sd=1)], times=[9])),
                  r"mean.*must be > 0"),
    "unknown backend": (lambda: _sim(backend="gpu2"), r"'gpu2' is not a backend"),
    "replicates 0": (lambda: _sim(replicates=0), r"replicates: must be >= 1"),
    "negative seed": (lambda: _sim(seed=-1), r"seed: must be >= 0"),
    "negative threads": (lambda: _sim(threads=-1), r"threads: must be >= 0"),
    "unknown distribution": (lambda: prolif.population("p", 1, mean=2, sd=1, distribution="weibull"),
                             r"distribution: expected 'normal', 'gamma' or 'lognormal', got 'weibull'"),
    "unknown start": (lambda: _sim(start="later"), r"start: expected 'sync' or 'procell-async'"),
    "no times": (lambda: _sim(model=prolif.model([prolif.population("p", 1, mean=2, sd=1)])), r"t_max"),
    "t_max and times disagree": (lambda: _sim(t_max=50, times=[10, 40]), r"t_max 50 differs"),
    "repeated times": (lambda: _sim(times=[10, 10]), r"times.*strictly ascending"),
    "negative time": (lambda: _sim(times=[-1, 10]), r"times.*must be >= 0"),
    "NaN t_max": (lambda: _sim(t_max=float("nan")), r"times.*finite"),
    "negative phi_min": (lambda: _sim(phi_min=-1), r"phi_min.*must be >= 0"),
    "too many threads": (lambda: _sim(threads=10**6), r"threads 1000000: at most"),
    "bins < 2 with a target": (lambda: _sim(bins=1, target=TARGET), r"bins: must be >= 2"),
    "inverted range with a target": (lambda: _sim(range=(100.0, 10.0), target=TARGET), r"range: expected 0 < low"),
    "dividing without mean": (lambda: prolif.population("p", 1.0), r"needs mean and sd"),
    "missing histogram file": (lambda: prolif.read_histogram("/nonexistent/h0.txt"), r"/nonexistent/h0\.txt"),
    "missing model file": (lambda: prolif.read_model("/nonexistent/m.toml"), r"/nonexistent/m\.toml"),
    "target mismatched": (lambda: _sim(target=([100.0, 200.0], [1])), r"target: values and counts differ"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_raises_value_error(name):
    call, pattern = BAD[name]
    with pytest.raises(ValueError, match=pattern) as e:
        call()
    assert "\n" not in str(e.value)


def test_bad_model_file_names_file_and_field(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('t_max = 10\n[[population]]\nname = "p"\nproportion = 1\nmean = 5\nsd = 1\ncolour = "red"\n')
    with pytest.raises(ValueError, match=r"bad\.toml.*colour"):
        prolif.read_model(bad)


# ------------------------------------------------------------------------------------------------
# fit

FIT_TRUE = prolif.model([prolif.population("q", 0.25, quiescent=True), prolif.population("p", 0.75, mean=18, sd=5)],
                        phi_min=10)
FIT_FREE = {"q.proportion": (0.0, 1.0), "p.proportion": (0.0, 1.0), "p.mean": (10.0, 40.0)}
FIT_TOML = dict(phi_min=10.0, start="sync", populations=[
    dict(name="q", proportion=(0.0, 1.0), quiescent=True),
    dict(name="p", proportion=(0.0, 1.0), mean=(10.0, 40.0), sd=5.0)])


def fit_data():
    """A synthetic target: the true model's exact histogram at 60 h."""
    truth = prolif.simulate(H0_VALUES, H0_COUNTS, FIT_TRUE, t_max=60, seed=99, backend="cpu")
    return truth.histogram()


def fit_start_model():
    # Fixed values as in FIT_TOML; the free ones are placeholders the fit replaces.
    return prolif.model([prolif.population("q", 0.5, quiescent=True), prolif.population("p", 0.5, mean=25, sd=5)],
                        phi_min=10, start="sync")


def run_fit(**kw):
    tv, tc = fit_data()
    return prolif.fit(H0_VALUES, H0_COUNTS, fit_start_model(), FIT_FREE, [(tv, tc, 60.0)], particles=6,
                      iterations=2, seed=3, backend="cpu", **kw)


def test_fit_small():
    r = run_fit()
    assert isinstance(r, prolif.FitResult)
    assert r.evaluations == 18 and r.simulations == 18
    assert r.parameters == ["q.fraction", "p.mean"]
    assert set(r.history) == {"restart", "iteration", "evaluations", "best", "mean"}
    for k, a in r.history.items():
        assert len(a) == 3, k
    assert r.history["evaluations"].tolist() == [6, 12, 18]
    assert r.history["iteration"].tolist() == [0, 1, 2]
    assert np.all(np.diff(r.history["best"]) <= 0)
    assert r.fitness == r.history["best"][-1]
    assert 0 <= r.fitness <= 1 and r.fitness_per_target == [r.fitness]
    assert np.all((r.lower <= r.x) & (r.x <= r.upper))
    assert r.lower.tolist() == [0.0, 10.0] and r.upper.tolist() == [1.0, 40.0]
    assert r.backend == "cpu"
    best = r.model
    assert best.times == [60.0]
    assert sum(p.proportion for p in best.populations) == pytest.approx(1.0, abs=1e-12)
    assert best.populations[1].mean == r.x[1]
    assert best.populations[1].sd == 5.0  # fixed
    best.validate()


def test_fit_is_deterministic():
    a, b = run_fit(), run_fit()
    assert a.fitness == b.fitness
    np.testing.assert_array_equal(a.x, b.x)
    for k in a.history:
        np.testing.assert_array_equal(a.history[k], b.history[k])
    c = prolif.fit(H0_VALUES, H0_COUNTS, fit_start_model(), FIT_FREE, [(*fit_data(), 60.0)], particles=6,
                   iterations=2, seed=4, backend="cpu")
    assert not np.array_equal(a.x, c.x)  # another seed, another search


@pytest.mark.parametrize("free, pattern", [
    ({"p.bogus": (0, 1)}, r"unknown parameter 'p\.bogus'"),
    ({"nosuch.mean": (10, 40)}, r"unknown parameter 'nosuch\.mean'"),
    ({"mean": (10, 40)}, r"unknown parameter 'mean'"),
    ({}, r"free: expected a non-empty dict"),
    ({"p.mean": (40, 10)}, r"p\.mean.*inverted bounds"),
    ({"p.mean": (1, 2, 3)}, r"expected \(min, max\)"),
    ({"q.mean": (1, 2)}, r"quiescent population has no mean"),
])
def test_fit_bad_free(free, pattern):
    tv, tc = fit_data()
    with pytest.raises(ValueError, match=pattern):
        prolif.fit(H0_VALUES, H0_COUNTS, fit_start_model(), free, [(tv, tc, 60.0)], particles=4, iterations=0,
                   backend="cpu")


def test_fit_bad_targets_and_optimizer():
    tv, tc = fit_data()
    free = {"p.mean": (10, 40)}
    with pytest.raises(ValueError, match=r"targets"):
        prolif.fit(H0_VALUES, H0_COUNTS, fit_start_model(), free, [], backend="cpu")
    with pytest.raises(ValueError, match=r"targets\[0\]"):
        prolif.fit(H0_VALUES, H0_COUNTS, fit_start_model(), free, [(tv, tc)], backend="cpu")
    with pytest.raises(ValueError, match=r"optimizer"):
        prolif.fit(H0_VALUES, H0_COUNTS, fit_start_model(), free, [(tv, tc, 60.0)], optimizer="sgd", backend="cpu")


def test_fit_equals_cli(tmp_path, run_cli):
    tv, tc = fit_data()
    h0 = write_histogram(tmp_path / "h0.txt", H0_VALUES, H0_COUNTS)
    target = write_histogram(tmp_path / "target.txt", tv, tc)
    config = write_toml(tmp_path / "fit.toml", FIT_TOML)
    out = tmp_path / "out"
    run_cli("prolif", "fit", "--histogram", h0, "--config", config, "--target", f"{target}@60", "--particles", 6,
            "--iterations", 2, "--seed", 3, "--backend", "cpu", "--check-runs", 1, "--out", out, "-q")
    r = run_fit()
    doc = json.loads((out / "result.json").read_text())
    assert doc["fitness"] == r.fitness
    assert doc["evaluations"] == r.evaluations
    assert [doc["parameters"][n]["value"] for n in r.parameters] == r.x.tolist()
    with open(out / "history.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(row["evaluations"]) for row in rows] == r.history["evaluations"].tolist()
    assert [float(row["best_fitness"]) for row in rows] == r.history["best"].tolist()
    assert [float(row["mean_fitness"]) for row in rows] == r.history["mean"].tolist()
    if tomllib is not None:
        best = tomllib.loads((out / "best.toml").read_text())
        assert best["times"] == [60]
        got = [(p.name, p.proportion, p.mean if not p.quiescent else None) for p in r.model.populations]
        want = [(p["name"], p["proportion"], p.get("mean")) for p in best["population"]]
        assert got == want


# ------------------------------------------------------------------------------------------------
# Memory


def test_simulate_does_not_leak(rss_bytes):
    """300 runs whose count arrays are 200 rows x 63 generations x 2 populations x 8 bytes = 202 KB
    each: a leaked result (array, capsule or the vector it owns) would add about 60 MB; 20 MB leaves
    room for the allocator's own growth and fragmentation (measured: 0 MB)."""
    values = np.logspace(2, 4, 200)
    counts = np.full(200, 5)
    m = small_model(phi_min=0.0, times=(10.0,))  # phi_min 0: the full 63 generations
    first = prolif.simulate(values, counts, m, backend="cpu")
    assert first.counts.nbytes == 200 * 63 * 2 * 8
    for _ in range(30):  # warm-up: the allocator's arenas, OpenMP's threads, NumPy's caches
        prolif.simulate(values, counts, m, backend="cpu")
    before = rss_bytes()
    for _ in range(300):
        r = prolif.simulate(values, counts, m, backend="cpu")
        r.histogram()
    grown = rss_bytes() - before
    assert grown < 20e6, f"RSS grew by {grown / 1e6:.1f} MB over 300 simulations"
