"""The precision study (seed 003, challenge 2): its arithmetic against Fractions and the scalar
oracle, its table, its command, and the committed data and docs against what it computes."""

import json
import math
import re
import xml.dom.minidom
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from oracle import dot as oracle_dot

from tcsim import hw
from tcsim.cli import main
from tcsim.precision import (
    DISTRIBUTIONS,
    PrecisionRow,
    PrecisionTable,
    add_f32,
    dot_products,
    draw,
    exact_dots,
    fma_f32,
    precision_study,
    round_sum,
)

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "docs" / "data" / "precision.json"
PAGE = ROOT / "docs" / "precision.md"
HW_RUN = ROOT / "docs" / "evidence" / "precision_hw_h100_2026-11-23.json"
FIGURE = ROOT / "docs" / "figures" / "precision.svg"

F32 = (24, -126, 127)  # precision, smallest normal exponent, largest exponent
F16 = (11, -14, 15)


def round_nearest_even(x: Fraction, fmt: tuple[int, int, int]) -> float:
    """IEEE round-to-nearest-even of an exact value into a binary format, written from the
    definition: the grid at x's binade (subnormal grid below the normals), ties to even."""
    precision, emin, emax = fmt
    if x == 0:
        return 0.0
    m = abs(x)
    e = m.numerator.bit_length() - m.denominator.bit_length()
    if Fraction(2) ** e > m:
        e -= 1
    ulp = Fraction(2) ** (max(e, emin) - precision + 1)
    r = round(m / ulp) * ulp  # Fraction rounds half to even
    largest = (2 - Fraction(2) ** (1 - precision)) * Fraction(2) ** emax
    value = math.inf if r > largest else float(r)
    return value if x > 0 else -value


def f16(values) -> np.ndarray:
    return np.asarray(values, np.float64).astype(np.float16)


# ---- correctly rounded FMA and rounding ---------------------------------------------------------


def test_fma_matches_fractions_on_random_operands(rng):
    n = 20000
    bits = rng.integers(0, 1 << 16, n, dtype=np.uint16)
    a = bits.view(np.float16)
    b = rng.integers(0, 1 << 16, n, dtype=np.uint16).view(np.float16)
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    # accumulators from tiny to huge, so that the product and acc are far apart or cancel
    acc = (rng.standard_normal(a.size) * 2.0 ** rng.integers(-140, 40, a.size)).astype(np.float32)
    cancel = rng.random(a.size) < 0.2
    acc[cancel] = -(a[cancel].astype(np.float32) * b[cancel].astype(np.float32))
    got = fma_f32(a, b, acc)
    for x, y, c, g in zip(a.tolist(), b.tolist(), acc.tolist(), got.tolist()):
        want = round_nearest_even(Fraction(x) * Fraction(y) + Fraction(c), F32)
        assert g == want, (x, y, c, g, want)


@pytest.mark.parametrize("sign", [1, -1])
def test_fma_halfway_cases(sign):
    half = 2.0**-24  # half an ulp of 1.0 in f32
    cases = [
        # (a, b, acc, expected): ties go to the even neighbour
        (1.0, half, 1.0, 1.0),
        (1.0, half, 1.0 + 2**-23, 1.0 + 2**-22),
        (1.0, half, 1.0 + 3 * 2**-23, 1.0 + 4 * 2**-23),
        (1.0, -half, 1.0 + 2**-23, 1.0),  # down to 1 + 2**-24: a tie again, to the even 1
        # just above and just below a tie: away from and toward the accumulator
        (1 + 2**-10, half, 1.0, 1.0 + 2**-23),
        (1 - 2**-11, half, 1.0, 1.0),
        # a tie far up: acc 2**20 has ulp 2**-3
        (0.25, 0.25, 2.0**20, 2.0**20),
        (0.25, 0.25, 2.0**20 + 2**-3, 2.0**20 + 2**-2),
        # cancellation: exact
        (1.0, 1.0, -(1 - 2**-24), 2.0**-24),
    ]
    for a, b, acc, want in cases:
        got = fma_f32(f16([sign * a]), f16([b]), np.float32([sign * acc]))[0]
        exact = Fraction(sign * a) * Fraction(b) + Fraction(sign * acc)
        assert float(got) == round_nearest_even(exact, F32) == float(np.float32(sign * want)), \
            (a, b, acc)


def F(base: int, exponent: int) -> Fraction:
    return Fraction(base) ** exponent


def test_add_f32_rounds_once_where_float64_rounds_first(rng):
    # acc + p needs more than 53 bits: float64 rounds it onto an f32 midpoint, and a cast would
    # then tie to even; the remainder TwoSum keeps says which way the exact value lies.
    acc = np.float32([1.0, 1.0 + 2**-23, -1.0, 2.0**20, 1.0])
    exact_p = [F(2, -24) + F(2, -76), F(2, -24) - F(2, -77), -F(2, -24) - F(2, -76),
               F(2, -4) + F(2, -56), F(2, -24) - F(2, -77)]
    p = np.array([float(x) for x in exact_p])
    assert [Fraction(x) for x in p.tolist()] == exact_p  # each p fits in 53 bits; acc + p not
    assert (acc.astype(np.float64) + p).astype(np.float32).tolist() == [
        1.0, 1.0 + 2**-22, -1.0, 2.0**20, 1.0]  # what rounding twice gives
    assert add_f32(acc, p).tolist() == [1.0 + 2**-23, 1.0 + 2**-23, -(1.0 + 2**-23),
                                        2.0**20 + 2**-3, 1.0]
    # and random float64 addends of every size against Fractions
    acc = (rng.standard_normal(4000) * 2.0 ** rng.integers(-30, 30, 4000)).astype(np.float32)
    p = rng.standard_normal(4000) * 2.0 ** rng.integers(-90, 30, 4000)
    for c, x, g in zip(acc.tolist(), p.tolist(), add_f32(acc, p).tolist()):
        assert g == round_nearest_even(Fraction(c) + Fraction(x), F32), (c, x)


def test_round_sum_breaks_double_rounding_ties():
    # hi alone sits on an f32 / f16 midpoint; lo decides, where a plain cast ties to even.
    hi = np.array([1 + 2**-24, 1 + 2**-24, 1 + 2**-24, -(1 + 2**-24)])
    lo = np.array([2.0**-80, -(2.0**-80), 0.0, -(2.0**-80)])
    assert round_sum(hi, lo, np.float32).tolist() == [1 + 2**-23, 1.0, 1.0, -(1 + 2**-23)]
    assert np.float32(hi[0]) == 1.0  # what the single cast gives
    hi16 = np.array([1 + 2**-11, 1 + 2**-11, 65520.0, 65520.0, 65520.0, -65520.0])
    lo16 = np.array([2.0**-60, -(2.0**-60), -(2.0**-40), 2.0**-40, 0.0, 2.0**-40])
    assert round_sum(hi16, lo16, np.float16).tolist() == [
        1 + 2**-10, 1.0, 65504.0, math.inf, math.inf, -65504.0]


@pytest.mark.parametrize("dtype,fmt", [(np.float32, F32), (np.float16, F16)])
def test_round_sum_matches_fractions_at_midpoints(rng, dtype, fmt):
    n = 3000
    low = (rng.standard_normal(n) * 2.0 ** rng.integers(-20, 12, n)).astype(dtype)
    high = np.nextafter(low, np.where(rng.random(n) < 0.5, np.inf, -np.inf).astype(dtype))
    keep = np.isfinite(low) & np.isfinite(high)
    hi = (low[keep].astype(np.float64) + high[keep].astype(np.float64)) / 2  # midpoints
    hi[::3] += hi[::3] * 2.0**-40  # and points near them
    lo = rng.uniform(-1, 1, hi.size) * np.spacing(hi) / 2
    lo[::4] = 0.0
    got = round_sum(hi, lo, dtype)
    for h, x, g in zip(hi.tolist(), lo.tolist(), got.tolist()):
        assert g == round_nearest_even(Fraction(h) + Fraction(x), fmt), (h, x)


# ---- the exact reference ----------------------------------------------------------------------


def test_exact_dots_match_fractions(rng):
    k, n = 64, 40
    a = rng.integers(0, 1 << 16, (k, n), dtype=np.uint16).view(np.float16)
    b = rng.integers(0, 1 << 16, (k, n), dtype=np.uint16).view(np.float16)
    a[~np.isfinite(a)] = 65504.0  # the largest product, 65504**2, is in range
    b[~np.isfinite(b)] = -65504.0
    got = exact_dots(a, b)
    for j in range(n):
        want = sum(Fraction(float(x)) * Fraction(float(y)) for x, y in zip(a[:, j], b[:, j]))
        assert got[j] == want


def test_exact_dots_do_not_overflow_at_the_extremes():
    k = 8192
    a = np.full((k, 2), 65504.0, np.float16)
    b = np.full((k, 2), 65504.0, np.float16)
    b[::2, 1] = -65504.0
    a[-1] = 2.0**-24  # the smallest subnormal beside the largest values
    b[-1] = 2.0**-24
    got = exact_dots(a, b)
    assert got[0] == (k - 1) * 65504**2 + Fraction(1, 2**48)
    assert got[1] == -65504**2 + Fraction(1, 2**48)  # (k-1) terms alternate, one left over


# ---- the tensor-core chains -------------------------------------------------------------------


def test_chains_are_exact_when_every_partial_sum_is_representable(rng):
    a = rng.integers(-4, 5, (32, 24)).astype(np.float16)
    b = rng.integers(-4, 5, (32, 24)).astype(np.float16)
    want = (a.astype(np.int64) * b.astype(np.int64)).sum(0)  # |sum| <= 512: exact in f16
    got = dot_products(a, b)
    for method in ("tc_f16", "tc_f32", "fma_f32", "round_f16"):
        assert getattr(got, method).astype(np.int64).tolist() == want.tolist(), method
    assert got.exact.tolist() == [Fraction(int(x)) for x in want]


def test_f16_chain_loses_addends_below_half_an_ulp():
    a = np.zeros((48, 2), np.float16)
    b = np.ones((48, 2), np.float16)
    a[0, :] = 2048.0
    a[[1, 2], 0] = 1.0  # dot 0: 2048 + 1 + 1 in one step: summed exactly, 2050
    a[[16, 32], 1] = 1.0  # dot 1: 2048, then + 1 twice in later steps: each a tie, to 2048
    got = dot_products(a, b)
    assert got.exact.tolist() == [2050, 2050]
    assert got.tc_f16.tolist() == [2050.0, 2048.0]
    assert got.round_f16.tolist() == [2050.0, 2050.0]  # 2050 is an f16 value
    assert got.tc_f32.tolist() == got.fma_f32.tolist() == [2050.0, 2050.0]


def test_f16_chain_overflows_past_65504():
    a = np.full((4096, 1), 4.0, np.float16)  # every step adds 16 * 16 = 256
    got = dot_products(a, a)
    assert got.exact[0] == 65536
    assert np.isposinf(got.tc_f16[0]) and np.isposinf(got.round_f16[0])
    assert got.tc_f32[0] == got.fma_f32[0] == 65536.0
    short = dot_products(a[:4080], a[:4080])
    assert short.tc_f16[0] == 65280.0


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_chains_match_the_scalar_oracle(distribution):
    """tests/oracle.py restates the sm_90 rule (groups of 16, F = 25, zero exponents -21 for an
    f16 and -133 for an f32 accumulator; docs/numerics.md) and chains the groups itself."""
    a, b = draw(distribution, 64, 12, seed=7)
    got = dot_products(a, b)
    for j in range(a.shape[1]):
        ab, bb = a[:, j].view(np.uint16).tolist(), b[:, j].view(np.uint16).tolist()
        want16 = oracle_dot("f16", "f16", "f16", ab, bb, 0, group=16, F=25, zero_exp=-21,
                            nan_bits=0x7FFF)
        want32 = oracle_dot("f16", "f32", "f32", ab, bb, 0, group=16, F=25, zero_exp=-133,
                            nan_bits=0x7FFFFFFF)
        assert int(got.tc_f16[j:j + 1].view(np.uint16)[0]) == want16, j
        assert int(got.tc_f32[j:j + 1].view(np.uint32)[0]) == want32, j


def test_padding_and_batch_layout_do_not_change_results(rng):
    a, b = draw("mixed", 32, 21, seed=3)
    whole = dot_products(a, b)
    part = dot_products(a[:, 5:10], b[:, 5:10])  # 5 dots: padded to one 8-dot instruction
    for method in ("tc_f16", "tc_f32", "fma_f32", "round_f16", "exact"):
        assert getattr(part, method).tolist() == getattr(whole, method)[5:10].tolist(), method
    shaped = dot_products(a.reshape(32, 3, 7), b.reshape(32, 3, 7))
    assert shaped.tc_f16.reshape(-1).tolist() == whole.tc_f16.tolist()


# ---- inputs, parameters, backends ---------------------------------------------------------------


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_draws_are_prefixes_and_in_range(distribution):
    a, b = draw(distribution, 64, 10, seed=1)
    a2, b2 = draw(distribution, 32, 10, seed=1)
    assert np.array_equal(a[:32], a2) and np.array_equal(b[:32], b2)
    assert a.dtype == np.float16 and np.count_nonzero(a) > 600 and not np.array_equal(a, b)
    if distribution == "positive":
        assert a.min() >= 0 and a.max() <= 1
    if distribution == "mixed":
        mags = np.abs(a.astype(np.float64))
        assert mags.min() >= 2.0**-10 and mags.max() <= 16 and (a < 0).any()


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError, match="multiple of 16"):
        precision_study(ks=(24,), backend="sim")
    with pytest.raises(ValueError, match="unknown distribution"):
        precision_study(ks=(16,), distributions=("cauchy",), backend="sim")
    with pytest.raises(ValueError, match="backend"):
        precision_study(ks=(16,), backend="gpu")
    with pytest.raises(TypeError):
        precision_study(ks=(16.0,), backend="sim")
    with pytest.raises(ValueError):
        precision_study(ks=(16,), dots=0, backend="sim")
    with pytest.raises(TypeError):
        dot_products(np.zeros((16, 2)), np.zeros((16, 2)))


def test_auto_backend_takes_the_simulator_without_a_gpu():
    table = precision_study(ks=(16,), dots=8, backend="auto")
    assert table.params["backend"] == ("sim" if hw.unavailable_reason() else "hw")
    if hw.unavailable_reason():
        with pytest.raises(hw.HardwareUnavailable):
            precision_study(ks=(16,), dots=8, backend="hw")


@pytest.mark.hw
def test_gpu_backend_gives_the_simulator_rows():
    kw = dict(ks=(16, 256), dots=64, seed=5)
    assert precision_study(backend="hw", **kw).rows == precision_study(backend="sim", **kw).rows


# ---- the table ---------------------------------------------------------------------------------


def _row(k, dist, method, median, overflows=0):
    return PrecisionRow(k=k, distribution=dist, method=method, count=4, overflows=overflows,
                        exact_zero=0, median_rel=median, max_rel=median, max_abs=median,
                        median_norm=median, max_norm=median, toward_zero=0.5)


def test_usable_limit_flags_the_median_or_an_overflow():
    params = {"ks": [16, 64, 256], "distributions": ["uniform", "positive"], "dots": 4,
              "seed": 0, "backend": "sim"}
    rows = [_row(k, d, m, 1e-4) for k in params["ks"] for d in params["distributions"]
            for m in ("tc_f16", "tc_f32", "fma_f32", "round_f16")]
    table = PrecisionTable(params, rows)
    assert table.usable_limit() == {"uniform": None, "positive": None}
    rows[[i for i, r in enumerate(rows) if (r.k, r.distribution, r.method)
          == (64, "uniform", "tc_f16")][0]] = _row(64, "uniform", "tc_f16", 0.02)
    rows[[i for i, r in enumerate(rows) if (r.k, r.distribution, r.method)
          == (256, "positive", "tc_f16")][0]] = _row(256, "positive", "tc_f16", None, 4)
    assert table.usable_limit() == {"uniform": 64, "positive": 256}
    assert table.usable_limit(threshold=0.05) == {"uniform": None, "positive": 256}
    assert "tc_f16:4" in str(table)


def test_json_round_trip_and_refusal():
    table = precision_study(ks=(16, 32), dots=9, seed=2, backend="sim")
    text = table.to_json()
    again = PrecisionTable.from_json(text)
    assert again == table and again.to_json() == text and str(again) == str(table)
    assert json.loads(text)["params"]["ks"] == [16, 32]
    with pytest.raises(ValueError, match="precision study"):
        PrecisionTable.from_json('{"rows": []}')


def test_study_rows_are_what_the_dot_products_give():
    table = precision_study(ks=(32,), distributions=("normal",), dots=10, seed=4, backend="sim")
    a, b = draw("normal", 32, 10, seed=4)
    got = dot_products(a, b)
    exact = np.array([float(x) for x in got.exact])
    for method in ("tc_f16", "tc_f32", "fma_f32", "round_f16"):
        err = np.abs(getattr(got, method).astype(np.float64) - exact) / np.abs(exact)
        row = table.row(32, "normal", method)
        assert row.median_rel == pytest.approx(np.median(err), rel=1e-9)
        assert row.max_rel == pytest.approx(err.max(), rel=1e-9)


# ---- the committed data, page and figure ------------------------------------------------------


def test_committed_data_is_what_the_study_computes_today():
    committed = PrecisionTable.from_json(DATA.read_text())
    p = committed.params
    assert p["ks"][-1] == 65536 and p["dots"] == 256 and len(p["distributions"]) == 4
    # A distribution's first K terms do not depend on the largest K: recompute two rows' worth.
    ks = (16, 1024)
    today = precision_study(ks=ks, distributions=p["distributions"], dots=p["dots"],
                            seed=p["seed"], backend="sim")
    assert today.rows == [r for r in committed.rows if r.k in ks]
    assert len(committed.rows) == len(p["ks"]) * len(p["distributions"]) * 4


def test_the_h100_run_gave_the_committed_table():
    """`tcsim precision --backend hw` on the H100 (2026-11-23) against the simulator's data."""
    gpu = PrecisionTable.from_json(HW_RUN.read_text())
    committed = PrecisionTable.from_json(DATA.read_text())
    assert gpu.params == dict(committed.params, backend="hw")
    assert gpu.rows == committed.rows


def test_precision_page_shows_the_committed_table():
    text = PAGE.read_text()
    source, shown = re.search(r"<!-- precision-table (\S+) -->\n```text\n(.*?)\n```\n"
                              r"<!-- /precision-table -->", text, re.S).groups()
    assert ROOT / source == DATA
    assert shown == str(PrecisionTable.from_json(DATA.read_text()))
    assert "figures/precision.svg" in text


def test_committed_figure_draws_the_committed_data(tmp_path):
    svg = FIGURE.read_text()
    dom = xml.dom.minidom.parseString(svg)
    texts = " ".join(t.firstChild.data for t in dom.getElementsByTagName("text") if t.firstChild)
    for name in DISTRIBUTIONS:
        assert name in texts
    try:
        import matplotlib
    except ImportError:
        pytest.skip("matplotlib is not installed (pip install 'tcsim[docs]'): the figure is "
                    "checked only for its panels")
    if f"Matplotlib v{matplotlib.__version__}" not in svg:
        pytest.skip(f"the figure was drawn by another matplotlib than {matplotlib.__version__}")
    from tcsim.views import plot_precision

    out = plot_precision(PrecisionTable.from_json(DATA.read_text()), tmp_path / "p.svg")
    assert out.read_text() == svg, "regenerate it (docs/precision.md says how)"


def test_plot_draws_one_panel_per_distribution(tmp_path):
    pytest.importorskip("matplotlib", reason="plots need matplotlib (pip install 'tcsim[docs]')")
    from tcsim.views import plot_precision

    table = precision_study(ks=(16, 64), distributions=("uniform", "positive"), dots=8,
                            backend="sim")
    first = plot_precision(table, tmp_path / "a.svg").read_text()
    second = plot_precision(table, tmp_path / "b.svg").read_text()
    assert first == second  # no dates, fixed ids
    dom = xml.dom.minidom.parseString(first)
    titles = [t.firstChild.data for t in dom.getElementsByTagName("text") if t.firstChild]
    assert "uniform" in titles and "positive" in titles and "normal" not in titles


# ---- the command --------------------------------------------------------------------------------


def test_cli_prints_the_table_and_writes_json(tmp_path, capsys):
    path = tmp_path / "p.json"
    assert main(["precision", "--k", "16", "32", "--dots", "8", "--backend", "sim",
                 "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "tc_f16 rel" in out and "positive: U[0, 1]" in out
    table = PrecisionTable.from_json(path.read_text())
    assert table.params["ks"] == [16, 32] and table.params["dots"] == 8
    assert str(table) in out


@pytest.mark.parametrize("argv,fragment", [
    (["--k", "24"], "multiple of 16"),
    (["--k", "16", "--json", "/no/such/dir/p.json"], "does not exist"),
    (["--k", "16", "--backend", "gpu"], "invalid choice"),
    (["--k", "x"], "invalid int value"),
    (["--dots", "0"], "at least 1"),
])
def test_cli_bad_arguments_are_one_line_and_exit_2(capsys, argv, fragment):
    try:
        code = main(["precision"] + argv)
    except SystemExit as done:  # argparse's own refusals
        code = done.code
    err = capsys.readouterr().err.strip()
    assert code == 2 and fragment in err and "\n" not in err, err


def test_cli_without_a_gpu_or_matplotlib_says_so(tmp_path, capsys):
    if hw.unavailable_reason() is not None:
        assert main(["precision", "--k", "16", "--backend", "hw"]) == 2
        assert "no GPU" in capsys.readouterr().err
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert main(["precision", "--k", "16", "--plot", str(tmp_path / "p.svg")]) == 2
        assert "matplotlib" in capsys.readouterr().err
        assert not (tmp_path / "p.svg").exists()
