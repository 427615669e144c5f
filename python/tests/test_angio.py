"""simkit.angio.ContinuousSolver: the backends agree bit for bit, the fields and reductions are
consistent with NumPy, run_series, the argument checks, and the same state as `simkit angio run`."""
import csv
import json
import re

import numpy as np
import pytest

from simkit import angio

S = angio.ContinuousSolver
GRID_2D = ((31, 31, 1), 1 / 30)
GRID_3D = ((13, 12, 11), 1 / 12)


def trapezoid_integral(a, h):
    """Trapezoid rule on the vertex-centred grid: weight 1/2 per boundary face a node lies on, times
    h^dims (dimensions with one node do not count)."""
    w = np.ones(a.shape)
    dims = 0
    for axis, n in enumerate(a.shape):
        if n == 1:
            continue
        dims += 1
        line = np.ones(n)
        line[[0, -1]] = 0.5
        shape = [1] * a.ndim
        shape[axis] = n
        w = w * line.reshape(shape)
    return float(np.sum(w * a.astype(np.float64)) * h**dims)


@pytest.mark.parametrize("precision", ["fp32", "fp64"])
@pytest.mark.parametrize("form", ["expanded", "flux"])
@pytest.mark.parametrize("grid", [GRID_2D, GRID_3D], ids=["2d", "3d"])
def test_reference_and_cpu_bitwise_identical(grid, form, precision):
    shape, h = grid
    ref = S(shape, h, form=form, precision=precision, backend="reference")
    cpu = S(shape, h, form=form, precision=precision, backend="cpu")
    assert (ref.backend, cpu.backend) == ("reference", "cpu")
    assert ref.dt == cpu.dt > 0
    start = ref.fields()["n"].copy()
    r_ref = ref.advance(15)
    r_cpu = cpu.advance(15)
    assert r_ref == r_cpu
    f_ref, f_cpu = ref.fields(), cpu.fields()
    for q in ("n", "f", "c"):
        assert np.isfinite(f_ref[q]).all()
        np.testing.assert_array_equal(f_ref[q], f_cpu[q], err_msg=q)
    assert not np.array_equal(start, f_ref["n"])  # the steps did change n


@pytest.mark.parametrize("precision, dtype", [("fp32", np.float32), ("fp64", np.float64)])
@pytest.mark.parametrize("grid", [GRID_2D, GRID_3D], ids=["2d", "3d"])
def test_fields_shape_dtype_and_copies(grid, precision, dtype):
    (nx, ny, nz), h = grid
    s = S((nx, ny, nz), h, precision=precision, backend="cpu")
    f = s.fields()
    assert set(f) == {"n", "f", "c"}
    for q, a in f.items():
        assert a.shape == (nz, ny, nx), q
        assert a.dtype == dtype, q
    # Initial conditions (docs/angio.md): c = exp(-(1-x)^2/0.45), f = 0.75 exp(-x^2/0.45), x along the last axis.
    x = np.arange(nx) / (nx - 1)
    tol = 1e-6 if precision == "fp32" else 1e-14
    np.testing.assert_allclose(f["c"][0, 0], np.exp(-(1 - x) ** 2 / 0.45), rtol=tol)
    np.testing.assert_allclose(f["f"][0, 0], 0.75 * np.exp(-x**2 / 0.45), rtol=tol)
    # fields() returns copies: writing to them leaves the solver alone.
    f["n"][...] = 123
    assert not (s.fields()["n"] == 123).any()


@pytest.mark.parametrize("precision", ["fp32", "fp64"])
@pytest.mark.parametrize("grid", [GRID_2D, GRID_3D], ids=["2d", "3d"])
def test_reductions_match_numpy(grid, precision):
    shape, h = grid
    s = S(shape, h, precision=precision, form="flux", backend="cpu")
    for step in (s.reduce, lambda: s.advance(12), s.reduce):
        reductions = step()
        f = s.fields()
        for q in ("n", "f", "c"):
            r = reductions[q]
            assert r["integral"] == pytest.approx(trapezoid_integral(f[q], h), rel=1e-6, abs=0), q
            assert r["min"] == float(f[q].min()) and r["max"] == float(f[q].max()), q
    assert s.advance(3, False) == {}


def test_flux_form_conserves_n():
    s = S(*GRID_2D, form="flux", precision="fp64", backend="cpu")
    before = s.reduce()["n"]["integral"]
    after = s.advance(100)["n"]["integral"]
    assert after == pytest.approx(before, rel=1e-12)
    assert s.reduce()["n"]["min"] >= 0


def test_step_t_and_dt():
    s = S(*GRID_2D, dt=0.01, backend="cpu")
    assert (s.step, s.t, s.dt) == (0, 0.0, 0.01)
    s.advance(7)
    s.advance(0)
    assert s.step == 7 and s.t == pytest.approx(0.07, rel=1e-15)
    auto = S(*GRID_2D, backend="cpu")
    k = auto.stability["largest_stable_k"]
    assert 0 < auto.dt <= 0.9 * k  # 0.9 x the largest stable k, rounded down (docs/angio.md)
    assert float(f"{auto.dt:.2g}") == auto.dt


def test_advance_in_pieces_equals_one_call():
    a = S(*GRID_2D, form="flux", backend="cpu")
    b = S(*GRID_2D, form="flux", backend="cpu")
    a.advance(4)
    a.advance(6, False)
    b.advance(10)
    for q in ("n", "f", "c"):
        np.testing.assert_array_equal(a.fields()[q], b.fields()[q])


def test_parameters_by_name_and_symbol():
    by_name = S(*GRID_2D, parameters={"diffusion": 0.001, "haptotaxis": 0.1}, form="flux", backend="cpu")
    by_symbol = S(*GRID_2D, parameters={"D": 0.001, "rho": 0.1}, form="flux", backend="cpu")
    default = S(*GRID_2D, form="flux", backend="cpu")
    for s in (by_name, by_symbol, default):
        s.advance(10)
    np.testing.assert_array_equal(by_name.fields()["n"], by_symbol.fields()["n"])
    assert not np.array_equal(by_name.fields()["n"], default.fields()["n"])


def test_run_series_rows_and_columns():
    s = S(*GRID_2D, form="flux", backend="cpu")
    rows = angio.run_series(s, 25, every=10)
    cols = {"step", "t"} | {f"{q}_{k}" for q in "nfc" for k in ("integral", "min", "max")}
    assert set(rows) == cols
    assert rows["step"].tolist() == [10, 20, 25]
    np.testing.assert_allclose(rows["t"], rows["step"] * s.dt, rtol=1e-15)
    for col in cols:
        assert rows[col].shape == (3,), col
    final = s.reduce()
    for q in "nfc":
        assert rows[f"{q}_integral"][-1] == pytest.approx(final[q]["integral"], rel=1e-12)
        assert rows[f"{q}_max"][-1] == final[q]["max"]
    assert s.step == 25
    empty = angio.run_series(s, 0)
    assert all(len(v) == 0 for v in empty.values()) and s.step == 25
    with pytest.raises(ValueError):
        angio.run_series(s, 10, every=0)
    with pytest.raises(ValueError):
        angio.run_series(s, -1)


BAD = {
    "unknown parameter": (dict(parameters={"viscosity": 1.0}), r"unknown parameter 'viscosity' \(known: diffusion"),
    "unknown form": (dict(form="upwind"), r"form: expected 'expanded' or 'flux', got 'upwind'"),
    "unknown precision": (dict(precision="fp16"), r"precision: expected 'fp32' or 'fp64', got 'fp16'"),
    "unknown backend": (dict(backend="gpu2"), r"'gpu2' is not a backend"),
    "unknown sensitivity": (dict(sensitivity="linear"), r"sensitivity: expected 'receptor' or 'constant'"),
    "unknown initial TAF": (dict(initial_taf="point"), r"initial_taf: expected 'linear' or 'tumour'"),
    "dt too large": (dict(dt=1.0), r"unstable.*limit allows at most k = .*force"),
    "negative threads": (dict(threads=-2), r"threads"),
    "too many threads": (dict(threads=10**6), r"threads 1000000: at most"),
    "negative device": (dict(device=-1), r"device: must be >= 0"),
    "negative dt": (dict(dt=-0.01), r"dt: -0\.01: the step must be a positive number"),
    "negative parameter": (dict(parameters={"D": -1.0}), r"diffusion \(D\): must be >= 0"),
    "NaN parameter": (dict(parameters={"chi0": float("nan")}), r"chemotaxis.*must be finite"),
}


@pytest.mark.parametrize("grid, h, pattern", [
    ((1, 5, 1), 0.1, r"grid: 1,5,1: need NX >= 2"),
    ((5, 5, 0), 0.1, r"grid: 5,5,0"),
    ((5, 5, 1), 0.0, r"h: 0: the spacing must be a positive number"),
    ((5, 5, 1), float("nan"), r"h: nan"),
])
def test_bad_grid(grid, h, pattern):
    with pytest.raises(ValueError, match=pattern):
        S(grid, h, backend="cpu")


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_arguments(name):
    kw, pattern = BAD[name]
    with pytest.raises(ValueError, match=pattern):
        S(*GRID_2D, **kw)


def test_force_and_negative_steps():
    s = S(*GRID_2D, dt=0.05, force=True, backend="cpu")  # above the stable k, allowed with force
    assert s.dt == 0.05 and s.dt > s.stability["largest_stable_k"]
    with pytest.raises(ValueError, match=r"steps: must be >= 0"):
        s.advance(-1)
    assert s.step == 0


def test_fields_do_not_leak(rss_bytes):
    """300 fields() calls of 3 x 64 x 64 x 4 doubles (393 KB): a leaked copy would add 118 MB."""
    s = S((64, 64, 4), 1 / 63, precision="fp64", backend="cpu")
    for _ in range(20):
        s.fields()
    before = rss_bytes()
    for _ in range(300):
        s.fields()
        s.reduce()
    grown = rss_bytes() - before
    assert grown < 20e6, f"RSS grew by {grown / 1e6:.1f} MB over 300 fields() calls"


# ------------------------------------------------------------------------------------------------
# `simkit angio run`: its step-0 and final snapshots (VTK ImageData, appended raw) and series.csv


def read_vti(path):
    """{name: array (nz, ny, nx)} of an uncompressed, appended-raw VTK ImageData file."""
    data = path.read_bytes()
    at = data.index(b"<AppendedData")
    xml = data[:at].decode()
    base = data.index(b"_", at) + 1
    header = {"UInt64": 8, "UInt32": 4}[re.search(r'header_type="(\w+)"', xml).group(1)]
    e = [int(v) for v in re.search(r'WholeExtent="([^"]+)"', xml).group(1).split()]
    shape = (e[5] - e[4] + 1, e[3] - e[2] + 1, e[1] - e[0] + 1)
    out = {}
    for tag in re.findall(r"<DataArray[^>]*>", xml):
        attr = dict(re.findall(r'(\w+)="([^"]*)"', tag))
        dtype = {"Float32": "<f4", "Float64": "<f8"}[attr["type"]]
        start = base + int(attr["offset"])
        nbytes = int.from_bytes(data[start:start + header], "little")
        a = np.frombuffer(data, dtype=dtype, count=nbytes // np.dtype(dtype).itemsize, offset=start + header)
        out[attr["Name"]] = a.reshape(shape)
    return out


@pytest.mark.parametrize("grid, form, precision", [
    ((31, 31, 1), "expanded", "fp32"),
    ((12, 11, 10), "flux", "fp64"),
], ids=["2d-expanded-fp32", "3d-flux-fp64"])
def test_solver_equals_cli(tmp_path, run_cli, grid, form, precision):
    out = tmp_path / "out"
    run_cli("angio", "run", "--grid", ",".join(map(str, grid)), "--form", form, "--precision", precision,
            "--steps", 10, "--series-every", 5, "--output-every", 0, "--backend", "cpu", "--no-quicklook",
            "--out", out, "-q")
    run = json.loads((out / "run.json").read_text())
    s = S(grid, 1 / (grid[0] - 1), form=form, precision=precision, backend="cpu")
    assert s.dt == run["problem"]["dt"]
    for k, v in s.stability.items():
        assert v == run["stability"][k], k
    with open(out / "series.csv") as f:
        series = {int(row["step"]): row for row in csv.DictReader(f)}
    assert sorted(series) == [0, 5, 10]

    def check_row(step, red):
        row = series[step]
        for q in "nfc":
            assert float(row[f"int_{q}"]) == red[q]["integral"], (step, q)
            assert float(row[f"min_{q}"]) == red[q]["min"], (step, q)
            assert float(row[f"max_{q}"]) == red[q]["max"], (step, q)

    initial = read_vti(out / "snapshots" / "angio_000000.vti")
    check_row(0, s.reduce())
    fields = s.fields()
    for q in "nfc":
        assert initial[q].dtype == fields[q].dtype
        np.testing.assert_array_equal(initial[q], fields[q], err_msg=q)
    check_row(5, s.advance(5))
    check_row(10, s.advance(5))
    final = read_vti(out / "snapshots" / "angio_000010.vti")
    fields = s.fields()
    for q in "nfc":
        np.testing.assert_array_equal(final[q], fields[q], err_msg=q)
