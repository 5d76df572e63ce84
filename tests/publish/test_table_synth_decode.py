"""``TableSynthesizer(decode="sub-bins")``: values within a bin drawn by measured sub-bins.

One Gaussian histogram of 16 sub-bins per equal-width bin is measured per binned numeric
column with 2 % of ρ, after the tables; within each bin the sub-bins' noisy counts are shrunk
toward uniform (a χ² gate, then a James–Stein factor) and an integer column decodes onto the
integers of the drawn sub-bin. Tested: every draw sums to the stated ρ with the histograms
(and a variant that reads them without noise is caught), the histogram's release path passes
its audit and half the noise fails, a heaped integer keeps its heap (uniform decoding, the
control, loses it), a column without heaps is not decoded worse, Parquet input gives the
in-memory release, and bad input is one line with nothing spent.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from test_table_synth import _intercept, drawn_rho

from ppdp import noise
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
from ppdp.random import resolve_random_state


def _schema(*, label: bool = True) -> Schema:
    d: dict = {
        "columns": [
            {"name": "hours", "type": "numeric", "lower": 0, "upper": 99, "integer": True},
            {"name": "x", "type": "numeric", "lower": 0, "upper": 1},
            {"name": "visits", "type": "numeric", "lower": 0, "upper": 9, "integer": True},
            {"name": "region", "type": "categorical", "categories": ["n", "s", "e"]},
        ]
    }
    if label:
        d["label"] = {"name": "y", "classes": ["a", "b"]}
    return Schema.from_dict(d)


def _table(n: int = 5000, seed: int = 0) -> pd.DataFrame:
    """``hours``: 40 % of the rows at 40 (a heap), the rest uniform on 1..98."""
    rng = np.random.default_rng(seed)
    hours = np.where(rng.random(n) < 0.4, 40, rng.integers(1, 99, n))
    return pd.DataFrame(
        {
            "hours": hours,
            "x": rng.beta(2.0, 5.0, n),
            "visits": rng.integers(0, 10, n),
            "region": rng.choice(["n", "s", "e"], n),
            "y": np.where(hours >= 40, "b", "a"),
        }
    )


def test_the_plan_measures_one_histogram_per_equal_width_column_only():
    plan = TableSynthesizer(1.0, _schema(), decode="sub-bins").plan()
    # hours and x are binned at equal widths; visits is one code per integer
    assert [plan.bins.names[a] for a in plan.decode_columns] == ["hours", "x"]
    assert plan.details()["decode_histograms"] == 2
    assert math.isclose(plan.spent_rho(), plan.rho, rel_tol=1e-9)
    half_sq = 1.0  # replace-one: Δ² / 2 = 1
    assert math.isclose(2 * half_sq / plan.sigma_decode**2, 0.02 * plan.rho, rel_tol=1e-9)
    assert TableSynthesizer(1.0, _schema()).plan().decode_columns == (0, 1)  # the default
    uniform = TableSynthesizer(1.0, _schema(), decode="uniform").plan()
    assert not uniform.decode_columns and uniform.sigma_decode == 0.0
    assert math.isclose(uniform.spent_rho(), uniform.rho, rel_tol=1e-9)
    # private quantiles cut every such column and decode by their own sub-bins
    both = TableSynthesizer(1.0, _schema(), decode="sub-bins", binning="private-quantiles")
    assert not both.plan().decode_columns and both.plan().sigma_decode == 0.0


def _fit_and_sum(
    monkeypatch, method: str, relation: str, binning: str = "auto"
) -> tuple[TableSynthesizer, dict, float]:
    seen = _intercept(monkeypatch, utility_sensitivity=2.0 if relation == "replace-one" else 1.0)
    eps, delta = 0.8, 1e-6
    kw = {"delta": delta, "method": method, "relation": relation, "random_state": 3}
    kw["binning"] = binning
    synth = TableSynthesizer(eps, _schema(label=method == "tree"), decode="sub-bins", **kw)
    acct = Accountant.in_memory(total=PrivacyBudget(10.0, 1e-3), relation=relation)
    df = _table(800)
    synth.fit(df if method == "tree" else df.drop(columns="y"), accountant=acct, allow_seeded=True)
    assert acct.spent == PrivacyBudget(eps, delta)
    rho = drawn_rho(seen, relation)
    return synth, seen, rho


def _check_draws(synth: TableSynthesizer, seen: dict, rho: float) -> None:
    stated = synth.release_.guarantee.details["rho"]
    assert stated * (1 - 1e-9) <= rho <= stated * (1 + 1e-12)
    assert model.cdp_delta(rho, 0.8) <= 1e-6
    plan = synth.plan()
    # the sub-bin histograms, one per column at their σ: first under binning="auto" (the
    # default: they may re-cut a column before the tables), last with equal widths
    m = len(plan.decode_columns)
    cells = float((plan.bins.sizes[plan.decode_columns[0]] - 2) * model.SUB_BINS)
    ours, rest = (slice(None, m), slice(m, None)) if plan.recut else (slice(-m, None), slice(-m))
    assert seen["sigma"][ours] == [plan.sigma_decode] * m and seen["size"][ours] == [cells] * m
    assert plan.sigma_decode not in seen["sigma"][rest]


@pytest.mark.parametrize(
    ("method", "relation", "binning"),
    [("tree", "replace-one", "auto"), ("pairs", "add/remove", "auto"),
     ("tree", "add/remove", "equal-width")],
)  # fmt: skip
def test_every_draw_sums_to_the_stated_rho_with_the_sub_bins(
    monkeypatch, method, relation, binning
):
    synth, seen, rho = _fit_and_sum(monkeypatch, method, relation, binning)
    _check_draws(synth, seen, rho)
    assert synth._plan.bins.decoders.keys() == set(synth.plan().decode_columns)
    stats = synth.release_.statistics
    assert {"noisy-decode-sub-bins:hours", "noisy-decode-sub-bins:x"} <= stats.keys()
    n_draws = len(seen["sigma"])
    synth.sample(50, random_state=1)  # decoding is post-processing: no further noise
    assert len(seen["sigma"]) == n_draws


def test_a_sub_bin_histogram_read_without_noise_is_caught(monkeypatch):
    """The broken variant: decoders built from the exact sub-bin counts. The release looks
    the same, but the intercepted draws no longer sum to the stated ρ."""

    def exact(self, plan, sub_bins, source):
        decoders = {
            a: model.SubBinDecoder.measured(
                self.schema.column(plan.bins.names[a]),
                plan.bins.sizes[a] - 2,
                sub_bins.histogram(a).astype(float),
                plan.sigma_decode,
            )
            for a in plan.decode_columns
        }
        return dataclasses.replace(plan, bins=plan.bins.with_decoders(decoders)), {}

    monkeypatch.setattr(TableSynthesizer, "_measure_decoding", exact)
    synth, seen, rho = _fit_and_sum(monkeypatch, "tree", "replace-one")
    with pytest.raises(AssertionError):
        _check_draws(synth, seen, rho)


@pytest.mark.statistical
@pytest.mark.parametrize("multiplier", [1.0, 0.5])
def test_the_sub_bin_histogram_passes_its_audit_and_half_noise_fails(multiplier, seed):
    """Neighbours replace one value by one 3 sub-bins away: one sub-bin −1, another +1 (L2
    distance √2, the sensitivity the plan uses). Draws come from the release path
    (``draw_tables``) at the plan's σ (ε = 8 on one column: near the σ where 10⁶ draws tell
    half the noise). Claim: the tight point (ε′ = 0.25, δ(ε′)) of the Gaussian profile of that
    σ; the half-noise control must fail it. Each audit of the correct mechanism fails with
    probability at most 1e-6 (docs/audit.md)."""
    schema = Schema.from_dict({"columns": [{"name": "v", "type": "numeric", "lower": 0,
                                            "upper": 1}]})  # fmt: skip
    synth = TableSynthesizer(8.0, schema, delta=1e-5, allow_large_epsilon=True,
                             decode="sub-bins")  # fmt: skip
    plan = synth.plan()
    col, inner = schema.columns[0], plan.bins.sizes[0] - 2
    base = np.full(19, 0.3)
    step = 3.0 / (inner * model.SUB_BINS)

    def exact(values):
        return model.sub_bin_histogram(model.sub_bin_codes(col, values, inner), inner)

    f_d, f_d2 = exact(np.append(base, 0.5)), exact(np.append(base, 0.5 + step))
    diff = (f_d - f_d2).astype(float)
    assert sorted(diff[diff != 0].tolist()) == [-1.0, 1.0]
    moved = [int(np.argmax(diff)), int(np.argmin(diff))]

    def on(counts):
        def sample(n, source):  # the two moved cells: the statistic's law, 256x faster
            scaled = ScaledNoise(source, multiplier)
            v = model.draw_tables(counts[moved].astype(float), plan.sigma_decode, n, scaled)
            return v[:, 0] - v[:, 1]

        return sample

    eps = 0.25
    delta = min(gaussian_delta(plan.sigma_decode, eps, math.sqrt(2.0)) * (1 + 1e-9), 0.999)
    draws = {"n_select": 100_000, "n_measure": 1_000_000, "random_state": seed}
    result = audit(on(f_d), on(f_d2), claimed_epsilon=eps, delta=delta, **draws)
    assert result.passed == (multiplier == 1.0), str(result)


def test_a_heaped_integer_column_keeps_its_heap(seed):
    """40 % of the rows at 40 (bin [37.1, 43.3) also holds 37..43 of the uniform rest): the
    synthetic share at 40 is 0.379 ± 0.027 (mean ± sd over seeds 0-19, n = 5000, ε = 1;
    real 0.405), so the bounds [0.25, 0.55] are about 5 sd away or more and fail a correct
    fit with probability about 1e-6. Uniform decoding, the control, gives 0.072 ± 0.003 and fails
    them."""
    df = _table(5000, seed)
    kw = {"method": "tree", "random_state": seed}
    out = TableSynthesizer(1.0, _schema(), decode="sub-bins", **kw).fit(df).release_.data
    assert 0.25 <= float(np.mean(out["hours"] == 40)) <= 0.55
    assert np.all(out["hours"] == np.round(out["hours"]))
    control = TableSynthesizer(1.0, _schema(), decode="uniform", **kw).fit(df).release_.data
    assert not 0.25 <= float(np.mean(control["hours"] == 40)) <= 0.55


def _decoded_law(col: NumericColumn, decoder, bins: np.ndarray) -> np.ndarray:
    """The exact law over the column's integers of values decoded from bin counts ``bins``
    (no sampling): each bin's count split by its normalised sub-bin weights, each sub-bin's
    share split equally over its integers."""
    w = decoder.weights / decoder.weights.sum(axis=1, keepdims=True)
    share = (bins[:, None] * w).ravel()
    law = np.zeros(int(col.upper - col.lower) + 1)
    for s, (lo, hi) in enumerate(zip(decoder.first[:-1], decoder.first[1:], strict=True)):
        if hi > lo:
            law[decoder.integers[lo:hi].astype(int) - int(col.lower)] += share[s] / (hi - lo)
    return law / law.sum()


@pytest.mark.parametrize("shape", ["smooth", "heaped"])
def test_a_column_without_heaps_is_not_decoded_worse(shape, seed):
    """The exact law of the decoded values (given the real bin counts, so only the decoding
    differs) against the real integers' distribution, at the σ of a 2 % share at ε = 1 on
    3 columns (σ = 100). A smooth column (rounded normal, 20,000 rows: up to 530 per integer)
    keeps the uniform decoding unless a bin's χ² gate opens on noise (probability 1e-3 per
    bin, 16 bins), so its TVD is within 0.005 of uniform decoding's; a heaped one (30 % at
    40) gets far closer than uniform decoding (the control comparison)."""
    col = NumericColumn("v", 0.0, 99.0, integer=True)
    rng = np.random.default_rng(seed)
    v = np.clip(np.rint(rng.normal(50, 15, 20_000)), 1, 98)
    if shape == "heaped":
        v = np.where(rng.random(v.size) < 0.3, 40.0, v)
    codes = model.sub_bin_codes(col, col.to_unit(v), 16)
    exact = model.sub_bin_histogram(codes, 16).astype(float)
    sigma = 100.0
    noisy = exact + rng.normal(0.0, sigma, exact.size)
    bins = exact.reshape(16, model.SUB_BINS).sum(axis=1)
    real = np.bincount(v.astype(int), minlength=100) / v.size
    measured = model.SubBinDecoder.measured(col, 16, noisy, sigma)
    uniform = model.SubBinDecoder.measured(col, 16, np.zeros_like(noisy), sigma)
    support = model.sub_bin_support(col, 16).reshape(16, -1)
    assert np.allclose(uniform.weights, support / support.sum(axis=1, keepdims=True))
    tvd = 0.5 * np.abs(_decoded_law(col, measured, bins) - real).sum()
    tvd_uniform = 0.5 * np.abs(_decoded_law(col, uniform, bins) - real).sum()
    if shape == "smooth":
        assert tvd <= tvd_uniform + 0.005
    else:
        assert tvd <= 0.5 * tvd_uniform


def test_sub_bins_lie_in_their_bin_and_integers_decode_onto_their_sub_bin():
    col = NumericColumn("v", 0.0, 99.0, integer=True)
    ints = np.arange(1.0, 99.0)
    b = col.to_unit(ints)
    inner = 16
    assert np.array_equal(
        model.sub_bin_codes(col, b, inner) // model.SUB_BINS,
        np.clip(np.floor(b * inner), 0, inner - 1).astype(int),
    )
    dec = model.SubBinDecoder.measured(col, inner, np.zeros(inner * model.SUB_BINS), 1.0)
    src = resolve_random_state(np.random.SeedSequence(4))
    k = np.repeat(np.arange(inner), 200)
    u = np.asarray(noise.uniform(k.size, random_state=src))
    second = np.asarray(noise.uniform(k.size, random_state=src))
    values = dec.values(col, k, u, second)
    back = np.clip(np.floor(col.to_unit(values) * inner), 0, inner - 1)
    assert np.array_equal(back, k) and np.all(values == np.round(values))
    assert set(values) == set(ints)  # every interior integer of a uniform bin is reachable


def test_parquet_input_gives_the_in_memory_release(tmp_path):
    pytest.importorskip("dask.dataframe")
    pytest.importorskip("pyarrow")
    df = _table(1500, 2)
    folder = tmp_path / "in"
    folder.mkdir()
    df.iloc[:700].to_parquet(folder / "part-0.parquet", index=False)
    df.iloc[700:].to_parquet(folder / "part-1.parquet", index=False)
    kw = {"decode": "sub-bins", "random_state": 11}
    mem = TableSynthesizer(1.0, _schema(), **kw).fit(df)
    dist = TableSynthesizer(1.0, _schema(), **kw)
    dist.fit(folder, scheduler="sync")
    sa, sb = mem.release_.statistics, dist.release_.statistics
    assert sa.keys() == sb.keys() and "noisy-decode-sub-bins:hours" in sa
    for key in sa:
        np.testing.assert_allclose(sb[key], sa[key], rtol=1e-9, atol=0, err_msg=key)
    one, two = mem.sample(300, random_state=5), dist.sample(300, random_state=5)
    pd.testing.assert_frame_equal(one, two)


def test_bad_decode_is_one_line_and_costs_nothing(tmp_path, capsys):
    acct = Accountant.in_memory(total=PrivacyBudget(10.0, 1e-3))
    synth = TableSynthesizer(1.0, _schema(), decode="subbins")
    with pytest.raises(ParameterError, match=r"^decode \('subbins'\) must be one of") as err:
        synth.fit(_table(300), accountant=acct)
    assert "\n" not in str(err.value) and "sub-bins" in str(err.value)
    assert acct.spent == PrivacyBudget(0.0, 0.0)
    _table(300).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.json").write_text(_schema().to_json())
    argv = ["publish", "synth", str(tmp_path / "t.csv"), "--schema", str(tmp_path / "s.json")]
    argv += ["--epsilon", "1", "-o", str(tmp_path / "o.csv"), "--decode", "subbins"]
    with pytest.raises(SystemExit) as code:
        main(argv)
    assert code.value.code == 2 and not (tmp_path / "o.csv").exists()
    assert "--decode" in capsys.readouterr().err


def test_cli_flag_and_dry_run(tmp_path, capsys):
    _table(1000).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.json").write_text(_schema().to_json())
    argv = ["publish", "synth", str(tmp_path / "t.csv"), "--schema", str(tmp_path / "s.json")]
    argv += ["--epsilon", "1", "-o", str(tmp_path / "o.csv"), "--decode", "sub-bins"]
    assert main([*argv, "--dry-run"]) == 0
    out = capsys.readouterr().out
    plan = TableSynthesizer(1.0, _schema(), decode="sub-bins").plan()
    assert f"sigma = {plan.sigma_decode:.4g} per cell of the 2 histograms (16 sub-bins" in out
    assert not (tmp_path / "o.csv").exists()
    assert main([*argv, "--seed", "2"]) == 0
    assert "sub-bins per bin" in (tmp_path / "o.csv.guarantee.json").read_text()
