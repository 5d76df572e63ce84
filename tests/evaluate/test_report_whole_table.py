"""The verdict of a table covers the whole table: marginals, pairs, associations, target.

Seeded releases of a 3,000-row sample of Adult that are good or broken by construction. The
verdicts are deterministic (every sample and shuffle is seeded); the margins they hold with
are in the comments. ``benchmarks/report/bench_verdict.py`` runs the same kinds of release on
15,000 Adult rows and on a 150-column table (``benchmarks/report/verdict.md``).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from ppdp.datasets import load_adult
from ppdp.evaluate import THRESHOLDS, VERDICTS, quality_report
from ppdp.evaluate.pairs import corrected_v

USEFUL, WEAK, TRIVIAL = VERDICTS


@pytest.fixture(scope="module")
def adult():
    df, schema = load_adult()
    rows = np.random.default_rng(0).permutation(len(df))
    a = df.iloc[np.sort(rows[:3000])].reset_index(drop=True)
    b = df.iloc[np.sort(rows[3000:6000])].reset_index(drop=True)
    return a, b, schema


def shuffled(df, columns=None, seed=1):
    rng = np.random.default_rng(seed)
    out = df.copy()
    for c in columns or list(df.columns):
        out[c] = rng.permutation(out[c].to_numpy())
    return out


def parts(report):
    return {p["part"]: p["verdict"] for p in report.verdict_parts}


def test_an_independent_sample_of_the_same_population_is_useful(adult):
    a, b, schema = adult
    report = quality_report(a, b, schema)
    assert report.verdict == USEFUL, report.verdict_basis
    ps = report.pairs
    # sampling noise only: the pairs sit well below the shuffled baseline (0.025 against 0.08)
    assert ps["mean_tv"] < 0.5 * ps["mean_tv_shuffled"]
    assert ps["strong"] and not any(d["lost"] for d in ps["strong"])


def test_a_release_that_drops_the_strongest_pair_is_not_useful(adult):
    # relationship shuffled on its own: every marginal exact, the target still predictable
    # from the other columns, but relationship × marital-status (V 0.49) and relationship ×
    # sex (V 0.65) are gone.
    a, _, schema = adult
    broken = shuffled(a, ["relationship"])
    report = quality_report(a, broken, schema, target="income")
    p = parts(report)
    assert p["marginals"] == USEFUL and p["target 'income'"] == USEFUL
    assert p["associations"] == WEAK and report.verdict == WEAK
    assert "relationship" in report.verdict_basis and "loses" in report.verdict_basis
    lost = {tuple(d["columns"]) for d in report.pairs["strong"] if d["lost"]}
    assert ("relationship", "sex") in lost


def test_the_strong_pair_rule_is_what_catches_it(adult, monkeypatch):
    # The broken variant: with no pair counted as strong (and the pairs' dependence rule
    # off: it catches this release too, below), the same release passes as useful.
    a, _, schema = adult
    monkeypatch.setitem(THRESHOLDS, "strong_association", 1.01)
    monkeypatch.setitem(THRESHOLDS, "kept_dependence", -1e9)
    assert quality_report(a, shuffled(a, ["relationship"]), schema).verdict == USEFUL


def test_every_column_shuffled_is_no_better_than_the_trivial_baseline(adult):
    a, _, schema = adult
    report = quality_report(a, shuffled(a), schema)
    p = parts(report)
    assert p["marginals"] == USEFUL  # exact marginals: the old verdict said "useful"
    assert p["associations"] == TRIVIAL and report.verdict == TRIVIAL
    # it is the shuffled baseline, less the baseline's resampling noise in the marginals
    ps = report.pairs
    assert ps["mean_tv"] == pytest.approx(ps["mean_tv_shuffled"], rel=0.2)
    # The pairs' part sees it too: on the dependent pairs it keeps about none of the real
    # dependence (the resampled real rows keep all of it), far below kept_dependence (0.5).
    assert p["pairs"] == WEAK, report.verdict_basis
    gap = ps["dependent_tv_shuffled"] - ps["dependent_tv_resampled"]
    assert ps["n_dependent"] > 5 and gap > 0.1
    assert abs(ps["dependent_tv_shuffled"] - ps["dependent_tv"]) < 0.1 * gap
    assert "of their dependence: too little" in report.verdict_basis


def test_the_kept_dependence_rule_is_what_catches_a_shuffled_table_in_the_pairs(adult, monkeypatch):
    # The broken variant (the rule before): the shuffled table is the shuffled baseline in
    # distribution, so "no closer than the shuffled baseline" is a coin flip; here it passes.
    a, b, schema = adult
    monkeypatch.setitem(THRESHOLDS, "kept_dependence", -1e9)
    assert parts(quality_report(a, shuffled(a), schema))["pairs"] == USEFUL
    monkeypatch.undo()
    # Releases good by construction keep nearly all of it (the original itself, over 100 %;
    # an independent sample of the population, about 90 %).
    for good in (a, b):
        report = quality_report(a, good, schema)
        assert parts(report)["pairs"] == USEFUL, report.verdict_basis


def test_pairs_worse_than_shuffling_are_not_useful(adult):
    # The pairs' own rule, apart from the associations: measured numbers put through it.
    from ppdp.evaluate.report import _verdict_pairs

    ps = {"n_pairs": 55, "mean_tv_shuffled": 0.08, "mean_tv_uniform": 0.7}
    judge = lambda tv, dep=0.5: _verdict_pairs({**ps, "mean_tv": tv, "max_association": dep})[0]  # noqa: E731
    assert judge(0.02) == USEFUL
    assert judge(0.079) == USEFUL and judge(0.08) == WEAK and judge(0.3) == WEAK
    assert judge(0.56) == TRIVIAL  # 0.8 x the trivial release's
    assert judge(0.09, dep=0.15) == USEFUL  # weak real associations: within the noise
    # the dependent pairs: shuffled 0.20, resampled 0.04, so a gap of 0.16 to keep
    dep = {"n_dependent": 13, "dependent_tv_shuffled": 0.20, "dependent_tv_resampled": 0.04}
    kept = lambda tv: _verdict_pairs(  # noqa: E731
        {**ps, **dep, "dependent_tv": tv, "mean_tv": 0.03, "max_association": 0.5}
    )[0]
    assert kept(0.04) == USEFUL and kept(0.119) == USEFUL  # keeps 100 %, 50.6 %
    assert kept(0.121) == WEAK and kept(0.2) == WEAK and kept(0.3) == WEAK  # 49.4 %, 0, < 0


def test_the_pairs_that_moved_most_are_named_with_their_joint_shares(adult):
    a, _, schema = adult
    report = quality_report(a, shuffled(a, ["relationship"]), schema)
    data = json.loads(report.to_json())
    worst = data["pairs"]["worst"]
    assert len(worst) == 10
    tvs = [d["tv"] for d in worst]
    assert tvs == sorted(tvs, reverse=True)
    assert "relationship" in worst[0]["columns"]
    first = worst[0]
    p, q = np.asarray(first["original"]), np.asarray(first["release"])
    assert p.shape == (len(first["cells"][0]), len(first["cells"][1])) == q.shape
    assert p.sum() == pytest.approx(1.0, abs=1e-3) and q.sum() == pytest.approx(1.0, abs=1e-3)
    assert first["tv"] == pytest.approx(0.5 * np.abs(p - q).sum(), abs=2e-3)
    html = report.to_html()
    assert "pairs that moved most" in html and html.count("real and released joint shares") == 10


def test_the_largest_correlation_change_leaves_out_an_empty_category(adult):
    # A category that no released row holds: its indicator is constant, its correlations are
    # undefined. Before, its diagonal (1 real, 0 released) made the headline "largest 1.000".
    a, _, schema = adult
    rel = a.copy()
    rel["workclass"] = rel["workclass"].replace({"Without-pay": "Private"})
    report = quality_report(a, rel, schema)
    assert report.corr_max_abs_diff < 0.05
    assert "workclass=Without-pay" in report.corr_empty
    assert report.to_dict()["correlation"]["constant_features"] == report.corr_empty


def test_the_corrected_cramers_v_is_near_zero_for_independent_columns():
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 10, 500), rng.integers(0, 10, 500)
    t = np.zeros((10, 10), dtype=np.int64)
    np.add.at(t, (a, b), 1)
    from scipy.stats.contingency import association

    # the plain V of two independent 10-code columns over 500 rows is about 0.13
    assert association(t, method="cramer") > 0.1
    assert corrected_v(t) < 0.05
    assert corrected_v(np.diag(np.full(10, 50.0))) == pytest.approx(1.0, abs=0.02)
    assert corrected_v(np.ones((1, 5))) == 0.0


def test_a_wide_categorical_column_is_drawn_as_its_top_codes_and_other():
    from ppdp.evaluate._report_html import MAX_BARS, _marginal_svg, _top_cells

    n = 200
    p = np.full(n, 1.0 / n)
    q = np.r_[np.full(n - 1, 0.5 / (n - 1)), 0.5]
    col = {"name": "c", "type": "categorical", "cells": [f"c{k}" for k in range(n)],
           "p_original": p, "p_release": q}  # fmt: skip
    top = _top_cells(col)
    assert len(top["cells"]) == MAX_BARS and top["cells"][-1] == f"other ({n - MAX_BARS + 1})"
    assert "c199" in top["cells"]  # the released spike is kept by name
    assert top["p_original"].sum() == pytest.approx(1.0) and top[
        "p_release"
    ].sum() == pytest.approx(1.0)
    assert _marginal_svg(col).count("<rect") <= 2 * MAX_BARS + 2


def test_a_table_without_strong_pairs_is_judged_on_the_rest(adult):
    a, b, schema = adult
    # weakly associated numeric columns only (corrected V 0.11): an independent sample's
    # pairs are within the sampling noise of the shuffled baseline's (0.030 against 0.027),
    # so the pairs are not compared (dependence_floor)
    from ppdp.data import Schema

    cols = ["age", "capital-gain"]
    small = Schema.from_dict({"columns": [c.to_dict() for c in schema.columns if c.name in cols]})
    report = quality_report(a[cols], b[cols], small)
    assert report.pairs["strong"] == [] and report.verdict == USEFUL
    assert "no pair of columns" in report.verdict_basis
    assert report.pairs["max_association"] < THRESHOLDS["dependence_floor"]
