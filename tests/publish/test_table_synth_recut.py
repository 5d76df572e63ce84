"""``TableSynthesizer(binning="auto")`` (the default): crowded columns re-cut from their
measured sub-bins before the tables.

The sub-bin histograms that ``decode="sub-bins"`` measures anyway are drawn first; a column
whose noisy sub-bins show its rows crowded into a few equal-width bins is re-cut from them
(post-processing: no extra ρ), keeping the equal-width edges where the rows are. Tested: the
rule on constructed histograms (a spread column and a thin one are left alone, a crowded one
is split where its rows are, never into more than ``n_bins`` intervals), every draw still
sums to the stated ρ with the histograms first, the cut points are a function of the
released histogram (a variant that cuts from the exact counts is caught), a strong pair
that equal widths lose is kept (equal widths, the control, lose it), and Parquet input gives
the in-memory release.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr
from test_table_synth import _intercept, drawn_rho

from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget
from ppdp.data import Schema
from ppdp.data.columns import NumericColumn
from ppdp.publish import TableSynthesizer
from ppdp.publish import table_synth as ts
from ppdp.publish import table_synth_model as model

N_BINS = 16


def _schema(*, label: bool = False) -> Schema:
    """``z`` is declared on [0, 60] but its values lie in [4, 7]: one bin of 16 holds them."""
    d: dict = {
        "columns": [
            {"name": "x", "type": "numeric", "lower": 0, "upper": 10},
            {"name": "z", "type": "numeric", "lower": 0, "upper": 60},
            {"name": "w", "type": "numeric", "lower": 0, "upper": 10},
            {"name": "g", "type": "categorical", "categories": ["a", "b", "c"]},
        ]
    }
    if label:
        d["label"] = {"name": "y", "classes": ["n", "p"]}
    return Schema.from_dict(d)


def _table(n: int, seed: int = 0) -> pd.DataFrame:
    """``z = 4 + 0.3 x + noise``: Spearman(x, z) = 0.99, every z in one equal-width bin."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 10, n)
    return pd.DataFrame(
        {
            "x": x,
            "z": 4 + 0.3 * x + rng.normal(0, 0.1, n),
            "w": rng.uniform(0, 10, n),
            "g": rng.choice(list("abc"), n),
            "y": np.where(x > 5, "p", "n"),
        }
    )


def _column(lower: float = 0.0, upper: float = 60.0) -> NumericColumn:
    return NumericColumn("z", lower=lower, upper=upper)


def _histogram(masses: dict[int, float]) -> np.ndarray:
    """Sub-bin counts: each bin's mass spread evenly over its 16 sub-bins."""
    h = np.zeros(N_BINS * model.SUB_BINS)
    for k, m in masses.items():
        h[k * model.SUB_BINS : (k + 1) * model.SUB_BINS] = m / model.SUB_BINS
    return h


# -- the rule --------------------------------------------------------------------------------


def test_a_spread_column_keeps_its_equal_widths():
    spread = _histogram({k: 3000.0 for k in range(N_BINS)})
    assert model.recut_from_sub_bins(spread, 1.0, _column(), N_BINS) is None
    # three occupied bins are not "a few" (the rule asks at most n_bins // 8 = 2) ...
    three = _histogram({1: 30000.0, 2: 10000.0, 3: 1000.0})
    assert model.recut_from_sub_bins(three, 1.0, _column(), N_BINS) is None
    # ... nor two holding 80 % of the mass, the rest in bins under 3σ_c each (σ_c = 400)
    tail = {k: 1000.0 for k in range(3, 13)}
    skewed = _histogram({1: 30000.0, 2: 10000.0, **tail})
    assert model.recut_from_sub_bins(skewed, 100.0, _column(), N_BINS) is None
    # the same two bins with a tail of 5 % are re-cut
    light = _histogram({1: 30000.0, 2: 10000.0, **{k: 200.0 for k in range(3, 13)}})
    assert model.recut_from_sub_bins(light, 100.0, _column(), N_BINS) is not None


def test_a_column_the_noise_cannot_resolve_keeps_its_equal_widths():
    """The same crowded shape, but its mass below n_bins · 3σ_c: not re-cut."""
    crowded = _histogram({1: 900.0, 2: 100.0})
    sigma = 10.0  # σ_c = 40 per bin, 3σ_c = 120: 16 · 120 > 1000 rows
    assert model.recut_from_sub_bins(crowded, sigma, _column(), N_BINS) is None
    assert model.recut_from_sub_bins(crowded * 100, sigma, _column(), N_BINS) is not None


def test_a_crowded_column_is_split_where_its_rows_are():
    # σ = 5: σ_c = 20 per bin, so bins 1 and 2 are occupied (3σ_c = 60) and bin 3 is not
    crowded = _histogram({1: 45000.0, 2: 4500.0, 3: 30.0})
    cuts = model.recut_from_sub_bins(crowded, 5.0, _column(), N_BINS)
    assert cuts is not None
    edges = np.asarray(cuts)
    width = 60.0 / N_BINS
    # the equal-width edges bordering the occupied bins 1 and 2 stay: 1, 2, 3 (× width)
    for k in (1, 2, 3):
        assert np.any(np.isclose(edges, k * width)), k
    # bins 3-15 are one interval: no edge beyond bin 3's lower edge
    assert edges.max() == pytest.approx(3 * width)
    # the freed intervals split bin 1 (it holds 90 %), at sub-bin edges, none elsewhere
    inside = edges[(edges > width) & (edges < 2 * width)]
    assert len(inside) >= 6
    steps = inside / (60.0 / (N_BINS * model.SUB_BINS))
    np.testing.assert_allclose(steps, np.round(steps), atol=1e-9)
    assert len(cuts) + 1 <= N_BINS  # never more intervals than the equal widths
    assert list(cuts) == sorted(set(cuts))


def test_the_bin_masses_of_a_tail_fall_away_from_the_rows():
    """A run of unoccupied bins above the rows gets a non-increasing fit of its noisy counts
    (raw noisy counts would scatter the tail's rows over the run)."""
    rng = np.random.default_rng(0)
    sigma = 20.0  # σ_c = 80 per bin, 3σ_c = 240
    tail = [200.0, 120.0, 60.0, 30.0, 10.0] + [0.0] * 9
    masses = {0: 5000.0, 1: 30000.0, **{k + 2: v for k, v in enumerate(tail)}}
    noisy = _histogram(masses) + rng.normal(0, sigma, N_BINS * model.SUB_BINS)
    fitted = model.recut_bin_masses(noisy, sigma, N_BINS)
    assert np.all(np.diff(fitted[2:]) <= 1e-9) and np.all(fitted >= 0)
    coarse = noisy.reshape(N_BINS, model.SUB_BINS).sum(axis=1)
    np.testing.assert_allclose(fitted[:2], coarse[:2])  # occupied bins keep their count
    # the least-squares fit keeps the run's total (before clipping)
    assert fitted[2:].sum() >= coarse[2:].sum() - 1e-6


# -- privacy ---------------------------------------------------------------------------------


def _fit(monkeypatch, relation: str = "add/remove") -> tuple[TableSynthesizer, dict, float]:
    seen = _intercept(monkeypatch, utility_sensitivity=1.0 if relation == "add/remove" else 2.0)
    eps, delta = 2.0, 1e-6
    synth = TableSynthesizer(
        eps, _schema(label=True), delta=delta, relation=relation, method="tree", random_state=0
    )
    acct = Accountant.in_memory(total=PrivacyBudget(10.0, 1e-3), relation=relation)
    synth.fit(_table(40_000), accountant=acct, allow_seeded=True)
    assert acct.spent == PrivacyBudget(eps, delta)
    return synth, seen, drawn_rho(seen, relation)


@pytest.mark.parametrize("relation", ["add/remove", "replace-one"])
def test_every_draw_sums_to_the_stated_rho_with_a_recut_column(monkeypatch, relation):
    synth, seen, rho = _fit(monkeypatch, relation)
    stated = synth.release_.guarantee.details["rho"]
    assert stated * (1 - 1e-9) <= rho <= stated * (1 + 1e-12)
    plan = synth.plan()
    assert plan.recut and plan.decode_columns == (0, 1, 2)
    m = len(plan.decode_columns)
    # the sub-bin histograms come first (they fix the codes the tables count)
    assert seen["sigma"][:m] == [plan.sigma_decode] * m
    assert plan.sigma_decode not in seen["sigma"][m:]
    bins = synth._plan.bins
    assert bins.kinds[1] == "cut" and bins.kinds[0] == "binned"  # z re-cut, x not
    assert bins.sizes[1] <= N_BINS + 2
    assert "z" in synth.release_.guarantee.details["cuts"]
    n_draws = len(seen["sigma"])
    synth.sample(50, random_state=1)  # decoding is post-processing: no further noise
    assert len(seen["sigma"]) == n_draws


def _check_follows_the_release(synth: TableSynthesizer) -> None:
    """z's cut points and decoding weights recomputed from the released noisy histogram and
    public σ equal those the fit used."""
    noisy = synth.release_.statistics["noisy-decode-sub-bins:z"]
    sigma, col = synth.plan().sigma_decode, synth.schema.column("z")
    cuts = model.recut_from_sub_bins(noisy, sigma, col, N_BINS)
    assert list(cuts) == synth.release_.guarantee.details["cuts"]["z"]
    decoder = model.SubBinDecoder.measured(col, N_BINS, noisy, sigma)
    shares = decoder.weights / decoder.weights.sum(axis=1, keepdims=True)
    masses = model.recut_bin_masses(noisy, sigma, N_BINS)
    expected = (shares * masses[:, None]).reshape(-1)
    np.testing.assert_allclose(synth._plan.bins.weights[1], expected, rtol=1e-12, atol=1e-9)


def test_the_cut_points_and_weights_are_a_function_of_the_released_histogram(monkeypatch):
    synth, _, _ = _fit(monkeypatch)
    _check_follows_the_release(synth)


def test_a_recut_read_from_the_exact_counts_is_caught(monkeypatch):
    """The broken variant: the re-cut reads the exact sub-bin counts, not the noisy ones.
    The draws still sum to ρ, but the cut column no longer follows from the release."""
    exact: dict[str, np.ndarray] = {}
    original, cut, masses = ts._sub_bin_histograms, ts.recut_from_sub_bins, ts.recut_bin_masses

    def keep_exact(schema, plan, X):
        found = original(schema, plan, X)
        if found is not None:
            exact["z"] = found.histogram(1).astype(float)
        return found

    monkeypatch.setattr(ts, "_sub_bin_histograms", keep_exact)

    def from_exact(noisy, sigma, col, n_bins):
        return cut(exact["z"] if col.name == "z" else noisy, sigma, col, n_bins)

    monkeypatch.setattr(ts, "recut_from_sub_bins", from_exact)
    # only z is re-cut here (checked above), so the masses are z's
    monkeypatch.setattr(ts, "recut_bin_masses", lambda y, s, n: masses(exact["z"], s, n))
    synth, _, rho = _fit(monkeypatch)
    assert math.isclose(rho, synth.release_.guarantee.details["rho"], rel_tol=1e-9)
    with pytest.raises(AssertionError):
        _check_follows_the_release(synth)


# -- utility ---------------------------------------------------------------------------------


def test_a_crowded_columns_strong_pair_is_kept_where_equal_widths_lose_it():
    """ε = 2, 40,000 rows, seeds 0-2; Spearman(x, z) = 0.99 in the rows. Every z lies in one
    of z's 16 equal-width bins, so equal widths (the control) decode z independently of x:
    measured over seeds 0-11, Spearman −0.006 … 0.009. Re-cut: 0.950 … 0.955 over the same
    seeds (the rule re-cut z in all 12). Bounds: ≥ 0.8 re-cut, ≤ 0.2 equal widths; the
    re-cut misses z when the noise on its histogram's total (σ·√256 = 800 rows, 2 % of the
    rows) hides that one bin holds 90 % (a 5σ event), or when noise alone lifts two of the
    15 empty bins above 3σ_c (0.13 % each): under 0.2 % per fit, under 1 % over the three."""
    df = _table(40_000)
    schema = _schema()
    fit_cols = list(schema.column_names)
    real = spearmanr(df.x, df.z)[0]
    assert real > 0.98
    for seed in range(3):
        recut = TableSynthesizer(2.0, schema, random_state=seed).fit(df[fit_cols]).release_
        assert spearmanr(recut.data.x, recut.data.z)[0] >= 0.8, seed
        control = TableSynthesizer(2.0, schema, random_state=seed, binning="equal-width")
        data = control.fit(df[fit_cols]).release_.data
        assert abs(spearmanr(data.x, data.z)[0]) <= 0.2, seed


# -- distributed input -----------------------------------------------------------------------


def test_parquet_input_gives_the_in_memory_release(tmp_path):
    """Pass 1 reduces the tables and the sub-bins; with z re-cut, pass 2 counts the tables
    again on its cut points: the same draws, so the same release."""
    pytest.importorskip("dask.dataframe")
    pytest.importorskip("pyarrow")
    df = _table(40_000, 2)
    folder = tmp_path / "in"
    folder.mkdir()
    df.iloc[:15_000].to_parquet(folder / "part-0.parquet", index=False)
    df.iloc[15_000:].to_parquet(folder / "part-1.parquet", index=False)
    kw = {"random_state": 11, "method": "tree"}
    mem = TableSynthesizer(2.0, _schema(label=True), **kw).fit(df)
    assert "z" in mem.release_.guarantee.details["cuts"]
    dist = TableSynthesizer(2.0, _schema(label=True), **kw)
    dist.fit(folder, scheduler="sync")
    assert dist.release_.guarantee.details["cuts"] == mem.release_.guarantee.details["cuts"]
    sa, sb = mem.release_.statistics, dist.release_.statistics
    assert sa.keys() == sb.keys()
    for key in sa:
        np.testing.assert_allclose(sb[key], sa[key], rtol=1e-9, atol=0, err_msg=key)
    one, two = mem.sample(300, random_state=5), dist.sample(300, random_state=5)
    pd.testing.assert_frame_equal(one, two)


# -- synthetic persons -----------------------------------------------------------------------


def test_synthetic_persons_keep_equal_widths_under_the_default():
    """With per_person columns the person model and the row model must cut those columns
    alike: the default ("auto") plans equal widths there, with nothing re-cut, and fits;
    private quantiles are still refused (tests/publish/test_synth_persons.py)."""
    from test_synth_persons import fit, panel
    from test_synth_persons import schema as persons_schema

    auto = TableSynthesizer(1.0, persons_schema(), random_state=0)
    equal = TableSynthesizer(1.0, persons_schema(), random_state=0, binning="equal-width")
    assert not auto.plan().recut and auto.plan().decode_columns
    assert auto.plan() == equal.plan()
    df = panel()
    a = fit(auto, df, allow_seeded=True).release_.data
    b = fit(equal, df, allow_seeded=True).release_.data
    pd.testing.assert_frame_equal(a, b)
