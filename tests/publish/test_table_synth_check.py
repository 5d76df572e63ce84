"""TableSynthesizer's pair check (issue 30): the off-tree pairs the model loses, named before
the release is written.

Utility tests are seeded and deterministic. The named pair: the star table of
``test_table_synth_keep`` (u, v strongly associated, the tree stars around a binary column
and never joins them), where the check must name u:v with a TVD clearly above its threshold.
The broken variant there is the same fit with ``keep=u:v``: the pair is then an edge and
must not be named. The independent table must draw no warning: a checked pair warns when its
noisy TVD less 3σ exceeds 0.1 plus its table's sampling floor, so on independent columns
(true excess about 0) each checked pair warns with probability below Φ(−3) ≈ 0.0013, under
0.4 % per fit of 3 rounds (5 seeds checked). The budget test intercepts every draw; its broken
variant (the residual's sensitivity declared as a table's √2 instead of 2) must overspend.
The audit of the residual's release has a half-noise control, false-positive rate ≤ 1e-6.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from test_table_synth import _intercept, drawn_rho, make_df, make_schema
from test_table_synth_keep import _star_table

from ppdp.accounting import Accountant
from ppdp.audit import ScaledNoise, audit
from ppdp.budget import PrivacyBudget
from ppdp.cli import main
from ppdp.data import Schema
from ppdp.exceptions import LowUtilityWarning, ParameterError, ParameterTypeError
from ppdp.mechanisms.calibration import gaussian_delta
from ppdp.publish import TableSynthesizer
from ppdp.publish import table_synth as ts
from ppdp.publish import table_synth_check as check
from ppdp.publish import table_synth_model as model
from ppdp.random import resolve_random_state


def _fit(df: pd.DataFrame, schema: Schema, **kw) -> tuple[TableSynthesizer, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        synth = TableSynthesizer(1.0, schema, method="tree", **kw).fit(df)
    lines = [str(w.message) for w in caught if issubclass(w.category, LowUtilityWarning)]
    return synth, [line for line in lines if line.startswith("pair ")]


# -- what it names ------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_check_names_the_strong_pair_the_tree_leaves_off_and_keep_silences_it(seed):
    df, schema = _star_table(30_000)
    # 3 rounds: with six ("auto" without a label) the kept fit may also name a weaker real
    # pair (v:s)
    lost, said = _fit(df, schema, random_state=seed, check_pairs=3)
    first = lost.release_.guarantee.details["checked_pairs"][0]
    assert first["pair"] == ["u", "v"] and first["warned"], first
    assert first["tvd"] - first["plus_minus"] > first["threshold"]
    assert len(said) == 1 and said[0].startswith("pair 'u':'v': ") and "--keep u:v" in said[0]
    # the broken variant: with the pair kept it is an edge, measured, and not named
    kept, said = _fit(df, schema, random_state=seed, keep="u:v", check_pairs=3)
    assert said == []
    assert all(c["pair"] != ["u", "v"] for c in kept.release_.guarantee.details["checked_pairs"])


@pytest.mark.parametrize("seed", range(5))
def test_independent_columns_draw_no_warning(seed):
    rng = np.random.default_rng(100 + seed)
    n = 30_000
    df = pd.DataFrame(
        {
            "a": rng.uniform(0, 1, n),
            "b": rng.uniform(0, 1, n),
            "c": rng.choice(["x", "y", "z"], n),
            "d": rng.choice(["p", "q"], n),
            "e": rng.integers(0, 5, n),
            "y": rng.integers(0, 2, n),
        }
    )
    cols = [{"name": c, "type": "numeric", "lower": 0, "upper": 1} for c in ("a", "b")]
    cols.append({"name": "c", "type": "categorical", "categories": ["x", "y", "z"]})
    cols.append({"name": "d", "type": "categorical", "categories": ["p", "q"]})
    cols.append({"name": "e", "type": "numeric", "lower": 0, "upper": 4, "integer": True})
    schema = Schema.from_dict({"columns": cols, "label": {"name": "y", "classes": [0, 1]}})
    synth, said = _fit(df, schema, random_state=seed)
    assert said == []
    checked = synth.release_.guarantee.details["checked_pairs"]
    assert len(checked) == 3 and not any(c["warned"] for c in checked)


def test_the_model_pair_tables_are_the_samplers_law() -> None:
    """Exact propagation along the tree against 400,000 sampled rows: every pair's table
    agrees to a TVD of 0.005 (sampling error about 0.001-0.002)."""
    for method in ("tree", "chow-liu"):
        synth = TableSynthesizer(
            1.0, make_schema(), method=method, n_bins=6, extra_parents=0, random_state=1
        )  # the tree's law (a second parent changes it after the check)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LowUtilityWarning)
            synth.fit(make_df(3000))
        m = synth._model
        codes = model.sample_codes(m, 400_000, resolve_random_state(5))
        d = len(m.sizes)
        for i in range(d):
            for j in range(i + 1, d):
                want = check.model_pair_table(m, i, j)
                got = model.table(codes, m.sizes, (i, j)) * m.n / codes.shape[0]
                assert want.sum() == pytest.approx(m.n, rel=1e-9)
                assert np.abs(want - got).sum() / (2 * m.n) < 0.005, (method, i, j)


# -- the budget -----------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::ppdp.exceptions.LowUtilityWarning")
@pytest.mark.parametrize("relation", ["replace-one", "add/remove"])
@pytest.mark.parametrize("method", ["tree", "chow-liu"])
def test_every_check_draw_is_in_the_plan_and_the_charge(monkeypatch, method, relation):
    eps, delta = 0.7, 1e-6
    synth = TableSynthesizer(
        eps, make_schema(), delta=delta, method=method, relation=relation, extra_parents=0,
        random_state=3,
    )  # fmt: skip
    plan = synth.plan()  # before the data are read: the check is planned and shown
    # check_pairs="auto": 3 rounds (a schema with a label)
    k = check.DEFAULT_CHECK_PAIRS
    assert plan.check_pairs == k == 3 and plan.details()["pair_check"]["pairs"] == k
    seen = _intercept(monkeypatch, utility_sensitivity=plan.utility_sensitivity)
    a = Accountant.in_memory(total=PrivacyBudget(10.0, 1e-3), relation=relation)
    synth.fit(make_df(500), accountant=a, allow_seeded=True)
    stated = synth.release_.guarantee.details["rho"]
    rho = drawn_rho(seen, relation)
    assert stated * (1 - 1e-9) <= rho <= stated * (1 + 1e-12)
    assert plan.spent_rho() == pytest.approx(stated, rel=1e-12)
    assert model.cdp_delta(rho, eps) <= delta and a.spent == PrivacyBudget(eps, delta)
    assert len(seen["check"]) == k and seen["eps"][-k:] == [plan.check.epsilon] * k
    spent_check = k * plan.check.rho_per_round
    assert spent_check == pytest.approx(check.CHECK_SHARE * plan.rho, rel=1e-9)
    assert len(synth.release_.guarantee.details["checked_pairs"]) == k


@pytest.mark.filterwarnings("ignore::ppdp.exceptions.LowUtilityWarning")
def test_a_mis_declared_residual_sensitivity_overspends(monkeypatch):
    """The broken variant: the residual calibrated as if it moved like a table (L2 √2)
    instead of by its L1 bound 2. The plan still states ρ, but the draws would spend more:
    the zCDP event that every fit charges (or states, without a ledger) lists every draw and
    refuses, before anything is spent or drawn."""
    real = ts.check_noise

    def broken(rho: float, k: int, sens: float) -> check.CheckNoise:
        return dataclasses.replace(real(rho, k, math.sqrt(2.0)), sensitivity=sens)

    monkeypatch.setattr(ts, "check_noise", broken)
    synth = TableSynthesizer(0.7, make_schema(), delta=1e-6, method="tree", random_state=3)
    seen = _intercept(monkeypatch)
    a = Accountant.in_memory(total=PrivacyBudget(10.0, 1e-3))
    for ledger in (a, None):
        with pytest.raises(ParameterError, match=r"below the ρ .* of its events"):
            synth.fit(make_df(500), accountant=ledger, allow_seeded=True)
    assert not a.history() and not seen["sigma"] and not seen["check"]
    # What it would have drawn: more than the stated ρ.
    plan = synth.plan()
    assert plan.spent_rho() > plan.rho * (1 + 1e-3)


def test_no_check_gives_its_share_back_to_the_tables() -> None:
    schema = make_schema()
    on = TableSynthesizer(1.0, schema, method="tree", extra_parents=0).plan()
    off = TableSynthesizer(1.0, schema, method="tree", check_pairs=0).plan()
    assert off.check is None and off.details()["pair_check"] == "none"
    assert on.spent_rho() == pytest.approx(off.spent_rho(), rel=1e-12) == pytest.approx(on.rho)
    ratio = (off.sigma_first / on.sigma_first) ** 2  # σ² ∝ 1/ρ of the tables
    assert ratio == pytest.approx(1 - check.CHECK_SHARE, rel=1e-9)
    # "pairs" measures every pair: no check, whatever check_pairs says
    pairs = TableSynthesizer(1.0, schema, method="pairs", check_pairs=5).plan()
    assert pairs.check is None
    # more rounds than pairs off the tree: as many as there are
    few = TableSynthesizer(1.0, schema, method="tree", check_pairs=100).plan()
    f = len(schema.columns)
    assert few.check_pairs == f * (f - 1) // 2 - (f - 1)


# -- bad input ------------------------------------------------------------------------------


def test_auto_rounds_are_six_for_few_columns_without_a_label() -> None:
    """``check_pairs="auto"``: 6 rounds without a label and at most 50 pairs off the tree,
    else 3 (public: the schema and the method)."""

    def rounds(label: bool, n: int) -> int:
        cols = [
            {"name": f"c{i}", "type": "categorical", "categories": ["a", "b"]} for i in range(n)
        ]
        d: dict = {"columns": cols}
        if label:
            d["label"] = {"name": "y", "classes": [0, 1]}
        return TableSynthesizer(1.0, Schema.from_dict(d), method="tree").plan().check_pairs

    assert rounds(False, 5) == 6 == check.SMALL_CHECK_PAIRS  # 6 pairs off the tree
    assert rounds(False, 4) == 3  # only 3 off the tree
    assert rounds(False, 11) == 6 and rounds(False, 12) == 3  # 45 and 55 off the tree
    assert rounds(True, 5) == 3 == check.DEFAULT_CHECK_PAIRS


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        (-1, ParameterError, r"^check_pairs \(-1\) must be an integer in 0\.\.100: "),
        (101, ParameterError, r"^check_pairs \(101\) must be an integer in 0\.\.100: "),
        (True, ParameterTypeError, r"^check_pairs \(True\) must be an integer, not bool$"),
        (2.5, ParameterTypeError, r"^check_pairs \(2\.5\) must be an integer, not float$"),
        ("3", ParameterError, r"^check_pairs \('3'\) must be 'auto' or an integer in 0\.\.100$"),
        (None, ParameterTypeError, r"^check_pairs \(None\) must be an integer"),
    ],
)
def test_bad_check_pairs_is_one_line_and_costs_nothing(value, error, match) -> None:
    a = Accountant.in_memory(total=PrivacyBudget(10.0, 1e-3))
    synth = TableSynthesizer(1.0, make_schema(), check_pairs=value)
    with pytest.raises(error, match=match):
        synth.fit(make_df(200), accountant=a)
    assert a.spent == PrivacyBudget(0.0, 0.0) and not a.history()


def test_cli_prints_the_named_pair_and_writes_the_checked_pairs(tmp_path, capsys) -> None:
    df, schema = _star_table(30_000)
    df.to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.json").write_text(schema.to_json())
    base = ["publish", "synth", str(tmp_path / "t.csv"), "--schema", str(tmp_path / "s.json")]
    base += ["--epsilon", "1", "--method", "tree", "--seed", "0", "--allow-seeded"]
    out = tmp_path / "o.csv"
    assert main([*base, "-o", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    named = [line for line in err if "LowUtilityWarning: pair 'u':'v'" in line]
    assert len(named) == 1 and named[0].startswith("ppdp publish: warning: "), err
    details = json.loads(out.with_name("o.csv.guarantee.json").read_text())
    assert details["guarantee"]["details"]["checked_pairs"][0]["pair"] == ["u", "v"]
    bad = tmp_path / "bad.csv"
    assert main([*base, "-o", str(bad), "--check-pairs", "-1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--check-pairs (-1) must be an integer in 0..100" in err[0]
    assert not bad.exists()


# -- audit of the residual's release --------------------------------------------------------


def _neighbours(relation: str):
    """A fitted model (public, fixed) and the residual of an off-tree pair on D and on D′,
    with D′ as far from D as the relation allows: replace-one moves one row from a cell where
    the data exceed the model to one where they fall short (the residual drops by 2),
    add/remove drops that row (by 1)."""
    schema = Schema.from_dict(
        {
            "columns": [
                {"name": c, "type": "categorical", "categories": ["0", "1", "2"]} for c in "abc"
            ]
        }
    )
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, 300)
    df = pd.DataFrame(
        {"a": a, "b": (a + rng.integers(0, 2, 300)) % 3, "c": rng.integers(0, 3, 300)}
    ).astype(str)
    synth = TableSynthesizer(2.0, schema, method="tree", check_pairs=0, random_state=0).fit(df)
    m, plan = synth._model, synth.plan()
    names = plan.bins.names
    edges = {
        tuple(sorted(names.index(x) for x in e)) for e in synth.release_.guarantee.details["edges"]
    }
    (pair,) = [p for p in [(0, 1), (0, 2), (1, 2)] if p not in edges]
    X, y = schema.encode(df)
    codes = plan.bins.codes(schema, X, y)
    i, j = pair
    diff = model.table(codes, m.sizes, pair) - check.model_pair_table(m, i, j)
    surplus = np.argwhere(diff >= 1.0)[0]
    short = np.argwhere(diff <= -1.0)[0]
    row = int(np.nonzero((codes[:, i] == surplus[0]) & (codes[:, j] == surplus[1]))[0][0])
    other = codes.copy()
    if relation == "replace-one":
        other[row, i], other[row, j] = short
    else:
        other = np.delete(other, row, axis=0)

    def resid(c: np.ndarray) -> float:
        counts = model.MarginalCounts.of(c, m.sizes, [pair])
        return float(check.pair_residuals(m, counts, None, [pair])[0][0])

    return resid(codes), resid(other)


@pytest.mark.statistical
@pytest.mark.parametrize("relation", ["replace-one", "add/remove"])
def test_the_residual_passes_its_audit_and_half_noise_fails(relation, seed) -> None:
    sens = 2.0 if relation == "replace-one" else 1.0
    r_d, r_d2 = _neighbours(relation)
    assert r_d - r_d2 == pytest.approx(sens, abs=1e-9)  # the bound, attained
    noise_ = check.check_noise(0.3, 1, sens)  # the calibration fit uses; σ/Δ about 2.6

    def on(value: float, multiplier: float):
        def sample(n: int, source) -> np.ndarray:
            return check.draw_residuals(value, noise_, n, ScaledNoise(source, multiplier))

        return sample

    eps = 0.25
    delta = min(gaussian_delta(noise_.sigma, eps, sens) * (1 + 1e-9), 0.999)
    draws = {"n_select": 100_000, "n_measure": 1_000_000, "random_state": seed}
    ok = audit(on(r_d, 1.0), on(r_d2, 1.0), claimed_epsilon=eps, delta=delta, **draws)
    assert ok.passed, str(ok)
    broken = audit(on(r_d, 0.5), on(r_d2, 0.5), claimed_epsilon=eps, delta=delta, **draws)
    assert not broken.passed, f"the audit is broken: the half-noise residual passed: {broken}"


def test_the_dry_run_shows_the_check_before_anything_is_spent(tmp_path, capsys) -> None:
    make_df(300).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "s.json").write_text(make_schema().to_json())
    argv = ["publish", "synth", str(tmp_path / "t.csv"), "--schema", str(tmp_path / "s.json")]
    argv += ["--epsilon", "1", "--method", "tree", "--dry-run", "-o", str(tmp_path / "o.csv")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "and 3 pair-check round(s) (3% of rho)" in out, out
    assert main([*argv, "--check-pairs", "0"]) == 0
    assert "pair-check" not in capsys.readouterr().out
