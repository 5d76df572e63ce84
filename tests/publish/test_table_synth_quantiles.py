"""``TableSynthesizer(binning="private-quantiles")``: cut points measured with part of ρ.

A numeric column without declared cuts gets two Gaussian histograms first (16 coarse bins,
then 16 sub-bins of each coarse bin whose noisy count shows rows); its cut points are placed
near the noisy quantiles (post-processing), then the usual tables are measured on those
bins. Tested: every draw sums to the stated ρ (the histograms
included), the histogram's noise passes the black-box audit at its own σ with the half-noise
control failing, a skewed income keeps its quantiles, and Parquet input is fitted in two passes
with one charge (its equality with in memory: ``test_table_synth_quantiles_parquet.py``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from test_table_synth import _intercept, drawn_rho

from ppdp.accounting import Accountant
from ppdp.audit import ScaledNoise, audit
from ppdp.budget import PrivacyBudget
from ppdp.cli import main
from ppdp.data import Schema
from ppdp.data.columns import NumericColumn
from ppdp.exceptions import ParameterError
from ppdp.mechanisms.calibration import gaussian_delta
from ppdp.publish import TableSynthesizer
from ppdp.publish import table_synth_model as model
from ppdp.publish.table_synth_check import CHECK_SHARE


def _schema(*, label: bool = True) -> Schema:
    d: dict = {
        "columns": [
            {"name": "income", "type": "numeric", "lower": 0, "upper": 1_000_000},
            {"name": "age", "type": "numeric", "lower": 18, "upper": 100, "integer": True},
            {"name": "visits", "type": "numeric", "lower": 0, "upper": 9, "integer": True},
            {"name": "region", "type": "categorical", "categories": ["n", "s", "e", "w"]},
        ]
    }
    if label:
        d["label"] = {"name": "y", "classes": ["a", "b"]}
    return Schema.from_dict(d)


def _table(n: int = 6000, seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    income = np.round(rng.lognormal(10.0, 0.9, n), 2)
    return pd.DataFrame(
        {
            "income": income,
            "age": rng.integers(18, 100, n),
            "visits": rng.integers(0, 10, n),
            "region": rng.choice(["n", "s", "e", "w"], n),
            "y": np.where(income > 30_000, "b", "a"),
        }
    )


def test_the_plan_measures_one_histogram_per_equal_width_column_only():
    plan = TableSynthesizer(1.0, _schema(), binning="private-quantiles").plan()
    # income and age are cut at equal widths by default; visits is one code per integer
    assert [plan.bins.names[a] for a in plan.quantile_columns] == ["income", "age"]
    assert plan.details()["quantile_histograms"] == 4  # two per column
    assert not TableSynthesizer(1.0, _schema()).plan().quantile_columns  # the default
    categorical = Schema.from_dict(
        {"columns": [{"name": "r", "type": "categorical", "categories": ["a", "b"]}] * 1}
    )
    only = TableSynthesizer(1.0, categorical, binning="private-quantiles").plan()
    assert not only.quantile_columns and only.sigma_quantiles == 0.0


@pytest.mark.parametrize(("method", "relation"), [("tree", "replace-one"), ("pairs", "add/remove")])
def test_every_draw_sums_to_the_stated_rho_with_the_histograms(monkeypatch, method, relation):
    seen = _intercept(monkeypatch, utility_sensitivity=2.0 if relation == "replace-one" else 1.0)
    eps, delta = 0.8, 1e-6
    schema = _schema(label=method == "tree")
    kw = {"delta": delta, "method": method, "relation": relation, "random_state": 3}
    synth = TableSynthesizer(eps, schema, binning="private-quantiles", n_bins=4, **kw)
    acct = Accountant.in_memory(total=PrivacyBudget(10.0, 1e-3), relation=relation)
    df = _table(800)
    synth.fit(df if method == "tree" else df.drop(columns="y"), accountant=acct, allow_seeded=True)
    half_sq = (2.0 if relation == "replace-one" else 1.0) / 2.0
    rho = drawn_rho(seen, relation)
    stats = synth.release_.statistics
    # a column whose coarse histogram shows no rows (3σ) skips its second one: spent less
    skipped = sum(stats[k].size == 0 for k in stats if k.startswith("noisy-sub-bins:"))
    rho += skipped * half_sq / synth.plan().sigma_quantiles ** 2
    stated = synth.release_.guarantee.details["rho"]
    assert stated * (1 - 1e-9) <= rho <= stated * (1 + 1e-12)
    assert model.cdp_delta(rho, eps) <= delta and acct.spent == PrivacyBudget(eps, delta)
    plan = synth.plan()
    # the histograms come first, two per quantile column (coarse, then the occupied bins'
    # sub-bins), at their own σ
    k = 2 * len(plan.quantile_columns) - skipped
    assert seen["sigma"][:k] == [plan.sigma_quantiles] * k
    assert seen["size"].count(float(model.COARSE_BINS)) >= len(plan.quantile_columns)
    planned = 2 * len(plan.quantile_columns) * half_sq / plan.sigma_quantiles**2
    # QUANTILE_SHARE of what the pair check leaves (CHECK_SHARE of ρ, when it runs; the
    # second parents' pool comes from the edge tables)
    left = plan.rho * (1 - CHECK_SHARE if plan.check is not None else 1.0)
    assert math.isclose(planned, 0.1 * left, rel_tol=1e-9)


def test_the_cut_points_are_released_and_fix_the_codes():
    synth = TableSynthesizer(2.0, _schema(), binning="private-quantiles", random_state=0)
    synth.fit(_table(3000))
    cuts = synth.release_.guarantee.details["cuts"]
    assert set(cuts) == {"income", "age"}
    grid = 1_000_000 / model.FINE_BINS
    assert all(abs(c / grid - round(c / grid)) < 1e-9 for c in cuts["income"])  # fine edges
    assert cuts["income"] == sorted(set(cuts["income"])) and len(cuts["income"]) <= 15
    stats = synth.release_.statistics
    keys = ("noisy-coarse:income", "noisy-sub-bins:income", "occupied-bins:income")
    assert set(keys) <= set(stats)
    assert stats[keys[1]].size == model.SUB_BINS * stats[keys[2]].size
    stated = " ".join(synth.release_.guarantee.assumptions)
    assert "'income', 'age': each cut near its quantiles" in stated
    bins = synth._plan.bins
    assert bins.kinds[0] == "cut" and bins.sizes[0] == len(cuts["income"]) + 3
    data = synth.sample(2000, random_state=1)
    assert data.income.between(0, 1_000_000).all()


def test_a_skewed_columns_quantiles_survive_without_declared_cuts():
    """Median and 90th percentile of a lognormal income within 10 % at ε = 1 on 20,000 rows
    (3 seeds); equal widths decoded uniformly within the bin miss the median by more than
    40 % (control). Equal widths with the default sub-bin decoding: median 0.3-4.3 % off,
    90th percentile 10-16 % off (seeds 0-5; bin [62500, 125000) is decoded near uniformly,
    its sub-bins' shape being within the noise of 2 % of ρ)."""
    df = _table(20_000)
    real = df.income.quantile([0.5, 0.9]).to_numpy()
    for seed in range(3):
        synth = TableSynthesizer(1.0, _schema(), binning="private-quantiles", random_state=seed)
        q = synth.fit(df).release_.data.income.quantile([0.5, 0.9]).to_numpy()
        assert np.all(np.abs(q / real - 1) < 0.10), (seed, q, real)
    with pytest.warns(Warning, match="first bin"):
        equal = TableSynthesizer(1.0, _schema(), random_state=0, decode="uniform").fit(df)
    assert abs(equal.release_.data.income.median() / real[0] - 1) > 0.4


def test_quantile_cuts_of_exact_counts_are_their_quantile_edges():
    col = NumericColumn("x", 0.0, 256.0)  # fine bin k is [k, k + 1)
    values = np.repeat([0.0, 100.5, 101.5, 102.5, 103.5], [1000, 25, 25, 25, 25])
    fine = model.fine_codes(col, values / 256.0)
    assert np.count_nonzero(fine < 0) == 1000  # the lower bound keeps its own code
    coarse = model.coarse_table(fine)
    assert coarse.tolist() == [0.0] * 6 + [100.0] + [0.0] * 9  # fine 100..103: coarse 6
    occupied = model.occupied_bins(coarse, sigma=10.0)
    assert occupied.tolist() == [6]
    sub = model.sub_table(fine, occupied)
    # quartiles on the fine edges, and one cut closing coarse bin 6 (at 112)
    assert model.quantile_cuts(sub, occupied, col, 4) == (101.0, 102.0, 103.0, 112.0)
    assert model.quantile_cuts(sub, occupied, col, 16) == (101.0, 102.0, 103.0, 104.0, 112.0)
    nothing = np.zeros(0, dtype=np.int64)
    assert model.quantile_cuts(np.zeros(0), nothing, col, 4) == (64.0, 128.0, 192.0)
    noisy = sub.copy()
    noisy[:4] = [20.0, -20.0, 20.0, -20.0]  # noise before the mass, summing to 0
    assert model.quantile_cuts(noisy, occupied, col, 4) == (101.0, 102.0, 103.0, 112.0)
    clipped = np.maximum(noisy, 0.0)  # its positive half alone shifts the first quartile
    assert model.quantile_cuts(clipped, occupied, col, 4)[0] < 101.0


def test_sub_bins_move_one_cell_per_row_and_skip_unoccupied_bins():
    fine = np.array([-1, 3, 17, 17, 200, 255])
    sub = model.sub_table(fine, np.array([0, 1]))
    assert sub.size == 2 * model.SUB_BINS and sub.sum() == 3  # 200 and 255: not occupied
    assert sub[3] == 1 and sub[model.SUB_BINS + 1] == 2


def test_parquet_input_is_fitted_in_two_passes_for_one_charge(tmp_path):
    pytest.importorskip("dask.dataframe")
    pytest.importorskip("pyarrow")
    folder = tmp_path / "in"
    folder.mkdir()
    _table(300).to_parquet(folder / "part-0.parquet", index=False)
    acct = Accountant.in_memory(total=PrivacyBudget(10.0, 1e-3))
    synth = TableSynthesizer(1.0, _schema(), binning="private-quantiles")
    synth.fit(folder, accountant=acct, output=tmp_path / "out", scheduler="sync")
    assert acct.spent == PrivacyBudget(1.0, 1e-9) and len(acct.history()) == 1
    assert set(synth.release_.guarantee.details["cuts"]) == {"income", "age"}
    assert len(synth.release_.data.compute()) == 300
    with pytest.raises(ParameterError, match=r"binning \('quantile'\) must be one of"):
        TableSynthesizer(1.0, _schema(), binning="quantile").plan()


def test_cli_flag_and_dry_run(tmp_path, capsys):
    _table(1000).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.json").write_text(_schema().to_json())
    argv = ["publish", "synth", str(tmp_path / "t.csv"), "--schema", str(tmp_path / "s.json")]
    argv += ["--epsilon", "1", "-o", str(tmp_path / "o.csv"), "--binning", "private-quantiles"]
    assert main([*argv, "--dry-run"]) == 0
    out = capsys.readouterr().out
    plan = TableSynthesizer(1.0, _schema(), binning="private-quantiles").plan()
    assert f"sigma = {plan.sigma_quantiles:.4g} per cell of the 4 histograms (16 bins, then" in out
    assert main([*argv, "--seed", "2"]) == 0
    assert "'income'" in (tmp_path / "o.csv.guarantee.json").read_text()


@pytest.mark.statistical
@pytest.mark.parametrize("multiplier", [1.0, 0.5])
def test_the_histogram_passes_its_audit_and_half_noise_fails(multiplier, seed):
    """Neighbours replace one value by one 2 sub-bins away: in the second-level histogram
    one sub-bin −1, another +1 (L2 distance √2, the sensitivity the plan uses). The draws
    come from the release path (``draw_tables``) at the plan's σ (ε = 8 on one column puts
    it near the σ of the table audit, where 10⁶ draws tell half the noise). Claim: the tight
    point (ε′ = 0.25, δ(ε′)) of the Gaussian profile of that σ; the half-noise control must
    fail it. Each audit of the correct mechanism fails with probability at most 1e-6
    (docs/audit.md)."""
    column = {"name": "x", "type": "numeric", "lower": 0, "upper": 1}
    schema = Schema.from_dict({"columns": [column]})
    synth = TableSynthesizer(8.0, schema, delta=1e-5, allow_large_epsilon=True,
                             binning="private-quantiles")  # fmt: skip
    plan = synth.plan()
    col = schema.columns[0]
    base = np.full(19, 0.3)
    d = model.fine_codes(col, np.append(base, 0.5))
    d2 = model.fine_codes(col, np.append(base, 0.5 + 2.0 / model.FINE_BINS))
    occupied = np.array([4, 8])  # the coarse bins of 0.3 and 0.5, as the first level says
    f_d, f_d2 = model.sub_table(d, occupied), model.sub_table(d2, occupied)
    diff = f_d - f_d2
    assert sorted(diff[diff != 0].tolist()) == [-1.0, 1.0]
    moved = [int(np.argmax(diff)), int(np.argmin(diff))]

    def on(exact):
        # The cells' noise is independent and the statistic reads the two moved cells only,
        # so drawing those two cells alone has the statistic's law (and is 16x faster).
        def sample(n, source):
            scaled = ScaledNoise(source, multiplier)
            v = model.draw_tables(exact[moved], plan.sigma_quantiles, n, scaled)
            return v[:, 0] - v[:, 1]

        return sample

    eps = 0.25
    delta = min(gaussian_delta(plan.sigma_quantiles, eps, math.sqrt(2.0)) * (1 + 1e-9), 0.999)
    draws = {"n_select": 100_000, "n_measure": 1_000_000, "random_state": seed}
    result = audit(on(f_d), on(f_d2), claimed_epsilon=eps, delta=delta, **draws)
    assert result.passed == (multiplier == 1.0), str(result)


def test_values_decode_by_the_sub_bin_weights_within_their_bin():
    """Within a bin, values fall in its fine bins in proportion to the released (clipped)
    sub-bin counts; a bin with no weight decodes uniformly. χ² over 20,000 draws (seeded,
    false-positive rate 1e-6); the uniform decoding (the control) fails it."""
    from scipy import stats

    col = NumericColumn("x", 0.0, 256.0)  # fine bin k is [k, k + 1)
    occupied = np.array([1])  # fine bins 16..31
    sub = np.zeros(model.SUB_BINS)
    sub[[2, 3, 9]] = [100.0, 300.0, 600.0]  # fine bins 18, 19, 25
    sub[5] = -40.0  # negative noise: no weight
    weights = model.decoding_weights(sub, occupied)
    assert weights.sum() == 1000.0 and weights[21] == 0.0
    cuts = (16.0, 32.0)  # codes: 1 = [0, 16), 2 = [16, 32), 3 = [32, 256)
    n = 20_000
    rng = np.random.default_rng(0)
    codes = np.full(n, 2)
    v = model._within_weighted(col, cuts, weights, codes, rng.random(n), rng.random(n))
    assert np.all((v >= 16.0) & (v < 32.0))
    seen = np.bincount(np.floor(v).astype(int) - 16, minlength=16)
    assert seen[[0, 1, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15]].sum() == 0
    expected = np.array([100.0, 300.0, 600.0]) / 1000.0 * n
    assert stats.chisquare(seen[[2, 3, 9]], expected).pvalue > 1e-6
    uniform = model._within_cuts(col, cuts, codes, rng.random(n))
    control = np.bincount(np.floor(uniform).astype(int) - 16, minlength=16)
    assert (
        stats.chisquare(control[[2, 3, 9]], control[[2, 3, 9]].sum() * expected / n).pvalue < 1e-6
    )
    # a bin without weight (code 3) and the lower bound's code (0)
    other = model._within_weighted(
        col, cuts, weights, np.array([3] * 500 + [0]), rng.random(501), rng.random(501)
    )
    assert np.all((other[:500] >= 32.0) & (other[:500] <= 256.0)) and other[500] == 0.0
    assert other[:500].std() > 50  # spread over [32, 256), not piled in one fine bin


def test_parquet_samples_of_an_in_memory_fit_keep_the_private_cuts(tmp_path):
    # The cut points and decoding weights travel with the bins to the partition tasks.
    from ppdp.data.distributed import read_parquet_dataset

    df = _table(20_000)
    synth = TableSynthesizer(1.0, _schema(), binning="private-quantiles", random_state=0)
    synth.fit(df)
    synth.sample_to_parquet(20_000, tmp_path / "out", random_state=1, scheduler="sync")
    written = read_parquet_dataset(tmp_path / "out").compute()
    q = written.income.quantile([0.1, 0.5, 0.9]).to_numpy()
    real = df.income.quantile([0.1, 0.5, 0.9]).to_numpy()
    assert len(written) == 20_000 and np.all(np.abs(q / real - 1) < 0.06), (q, real)


def _heaped_hours(n: int, seed: int) -> tuple[Schema, pd.DataFrame]:
    """``hours`` on [0, 99]: 40 % of the rows at 40, the rest uniform on 1..98."""
    rng = np.random.default_rng(seed)
    hours = np.where(rng.random(n) < 0.4, 40, rng.integers(1, 99, n))
    schema = Schema.from_dict(
        {
            "columns": [
                {"name": "hours", "type": "numeric", "lower": 0, "upper": 99, "integer": True},
                {"name": "x", "type": "numeric", "lower": 0, "upper": 1},
            ],
            "label": {"name": "y", "classes": ["a", "b"]},
        }
    )
    df = pd.DataFrame(
        {"hours": hours, "x": rng.beta(2, 5, n), "y": np.where(hours >= 40, "b", "a")}
    )
    return schema, df


@pytest.mark.parametrize("broken", [False, True])
def test_a_heaped_integer_column_keeps_its_heap_with_quantile_cuts(monkeypatch, seed, broken):
    """An integer column cut near its quantiles decodes onto the integers of the fine bins its
    interval's released sub-bin counts weigh, so a heap keeps its share: at 40 the synthetic
    share is 0.401 ± 0.022 (mean ± sd, seeds 0-19, n = 5000, ε = 1; real 0.41), the bounds
    [0.30, 0.50] are 4.5 sd away (a correct fit fails about 1e-5 of seeds). The broken
    variant decodes uniformly over the interval's integers (the old behaviour): 0.03-0.05."""
    if broken:
        monkeypatch.setattr(
            model,
            "_within_weighted_integers",
            lambda col, cuts, w, codes, u, second: model._within_cuts(col, cuts, codes, u),
        )
    schema, df = _heaped_hours(5000, seed)
    synth = TableSynthesizer(
        1.0, schema, binning="private-quantiles", method="tree", random_state=seed
    ).fit(df)
    hours = synth.release_.data["hours"]
    assert np.array_equal(hours, np.round(hours)) and hours.between(0, 99).all()
    assert (0.30 <= float(np.mean(hours == 40)) <= 0.50) != broken


def test_integers_decode_within_their_interval_by_the_fine_weights():
    """Every decoded integer lies in its code's interval (it re-encodes to the same code), the
    bounds decode to themselves, and all the weight on one fine bin puts every value of that
    interval on that fine bin's integers; an interval with no weight decodes uniformly."""
    col = NumericColumn("hours", lower=0, upper=99, integer=True)
    cuts = [float(v) for v in col.from_unit(np.array([64, 104, 180]) / model.FINE_BINS)]
    n_codes = len(cuts) + 3
    rng = np.random.default_rng(0)
    codes = rng.integers(0, n_codes, 20_000)
    u, second = rng.random(20_000), rng.random(20_000)
    weights = rng.random(model.FINE_BINS)
    v = model._within_weighted_integers(col, cuts, weights, codes, u, second)
    assert np.array_equal(v, np.round(v))
    assert np.all(v[codes == 0] == 0) and np.all(v[codes == n_codes - 1] == 99)
    inner = (codes > 0) & (codes < n_codes - 1)
    at = np.searchsorted(col.to_unit(cuts), col.to_unit(v[inner]), side="right") + 1
    assert np.array_equal(at, codes[inner])
    heap = int(np.floor(col.to_unit(40.0) * model.FINE_BINS))  # 40's fine bin, in [0, 64)
    one = np.zeros(model.FINE_BINS)
    one[heap] = 1.0
    v = model._within_weighted_integers(col, cuts, one, codes, u, second)
    assert np.all(v[codes == 2] == 40)  # 40 is the only integer of its fine bin
    first = v[codes == 1]  # interval [0, 64) of fine bins: no weight there, uniform
    assert set(np.unique(first)) == set(range(1, 25))
