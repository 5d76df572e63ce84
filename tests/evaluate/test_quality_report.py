"""``ppdp.evaluate.quality_report``: verdicts, self-contained HTML, JSON numbers, bad input."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from ppdp.budget import Guarantee
from ppdp.data.columns import NumericColumn
from ppdp.datasets import load_adult
from ppdp.evaluate import THRESHOLDS, VERDICTS, QualityReport, quality_report
from ppdp.exceptions import DataValidationError, ParameterError

pytest.importorskip("sklearn")

USEFUL, WEAK, TRIVIAL = VERDICTS


@pytest.fixture(scope="module")
def adult():
    df, schema = load_adult()
    rows = np.random.default_rng(0).choice(len(df), 3000, replace=False)
    return df.iloc[np.sort(rows)].reset_index(drop=True), schema


def uniform_noise(schema, n, seed=0):
    """Rows drawn uniformly within the declared bounds and categories (the trivial release)."""
    rng = np.random.default_rng(seed)
    out = {}
    for col in schema.columns:
        if isinstance(col, NumericColumn):
            out[col.name] = rng.uniform(col.lower, col.upper, n)
        else:
            out[col.name] = rng.choice(np.asarray(col.categories, dtype=object), n)
    out[schema.label.name] = rng.choice(np.asarray(schema.label.classes, dtype=object), n)
    return pd.DataFrame(out)[list(schema.column_names)]


@pytest.fixture(scope="module")
def same_report(adult):
    df, schema = adult
    g = Guarantee.pure(1.0, relation="add/remove", mechanism="Laplace baseline")
    return quality_report(df, df.copy(), schema, target="income", guarantee=g)


def test_a_release_equal_to_the_original_is_useful(same_report):
    assert isinstance(same_report, QualityReport)
    assert same_report.verdict == USEFUL
    ml = same_report.ml
    assert ml["lift"] == pytest.approx(1.0, abs=0.05)
    assert ml["release"]["accuracy"] > ml["majority"]["accuracy"]
    assert all(c["tv"] == 0 for c in same_report.columns)
    assert same_report.corr_max_abs_diff == pytest.approx(0.0, abs=1e-12)
    assert same_report.summary().startswith("verdict: useful")
    assert "\n" not in same_report.summary()


def test_pure_noise_is_no_better_than_the_trivial_baseline(adult):
    df, schema = adult
    noise = uniform_noise(schema, len(df))
    assert quality_report(df, noise, schema, target="income").verdict == TRIVIAL
    assert quality_report(df, noise, schema).verdict == TRIVIAL  # from the marginals


def test_without_a_target_an_equal_release_is_useful(adult):
    df, schema = adult
    report = quality_report(df, df, schema)
    assert report.verdict == USEFUL
    assert report.ml is None
    assert any("no target" in n for n in report.notes)


def test_a_release_piled_at_its_bounds_is_measured(adult):
    df, schema = adult
    clipped = df.copy()
    clipped["age"] = np.where(np.arange(len(df)) % 2 == 0, 17, 90)
    report = quality_report(df, clipped, schema)
    age = next(c for c in report.columns if c["name"] == "age")
    assert age["release_at_lower"] == pytest.approx(0.5, abs=1e-3)
    assert age["release_at_upper"] == pytest.approx(0.5, abs=1e-3)
    assert age["tv"] > 0.5


def test_the_html_is_self_contained_with_banner_and_verdict(same_report, tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "report.html"
    text = same_report.to_html(path)
    assert path.read_text(encoding="utf-8") == text
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", text)
    for img in re.findall(r"<img\b[^>]*>", text):
        assert re.search(r"""src\s*=\s*["']data:""", img), img
    for ref in re.findall(r"""(?:xlink:)?href\s*=\s*["']([^"']*)""", text):
        assert ref.startswith(("data:", "#")), ref
    assert "<script" not in text
    # a marginal per column, the joint shares of the pairs that moved most, 3 correlation
    # maps, 3 Cramér's V maps, the ROC curves
    joints = len(same_report.pairs["worst"])
    assert joints == 10
    assert text.count("<svg") == len(same_report.columns) + joints + 3 + 3 + 1
    assert "Cramér's V" in text and "ROC curves" in text and "gradient-boosted trees" in text
    assert "For the custodian only" in text
    assert "not itself differentially private" in text
    assert "costs no privacy budget" in text
    assert "Verdict: useful" in text
    assert "name='viewport'" in text and "max-width" in text and "@media print" in text
    assert "ε-DP, ε = 1, add/remove" in text  # the guarantee's summary
    assert str(THRESHOLDS["useful_lift"]) in text  # the thresholds are stated


def test_the_html_says_when_there_is_no_guarantee(adult):
    pytest.importorskip("matplotlib")
    df, schema = adult
    text = quality_report(df.iloc[:500], df.iloc[:500], schema).to_html()
    assert "No guarantee file was found" in text


def test_the_json_has_the_numbers(same_report, adult):
    data = json.loads(same_report.to_json())
    assert data["verdict"] == USEFUL
    assert data["thresholds"] == THRESHOLDS
    assert data["guarantee"]["epsilon"] == 1.0
    assert [c["name"] for c in data["columns"]] == list(adult[1].column_names)
    age = next(c for c in data["columns"] if c["name"] == "age")
    assert {"tv", "tv_uniform", "release_at_lower", "release_at_upper", "original"} <= set(age)
    ml = data["ml_utility"]
    assert 0.5 < ml["release"]["auc"] <= 1 and 0 < ml["majority"]["accuracy"] < 1
    k = len(data["correlation"]["features"])
    assert np.asarray(data["correlation"]["original"]).shape == (k, k)


def test_a_sidecar_dict_is_read(adult):
    df, schema = adult
    g = Guarantee.pure(2.0, relation="add/remove", mechanism="DP-PCA")
    side = {"method": "pca", "guarantee": g.to_dict(), "ledger": "b.db", "ledger_indices": [3]}
    report = quality_report(df, df, schema, guarantee=side)
    assert report.guarantee == g
    assert report.release_info["ledger_indices"] == [3]
    with pytest.raises(ParameterError, match="guarantee"):
        quality_report(df, df, schema, guarantee={"guarantee": {"kind": "nonsense"}})


@pytest.mark.parametrize(
    ("change", "kwargs", "error", "match"),
    [
        (lambda d: d.drop(columns="age"), {}, DataValidationError, "lacks 'age'"),
        (lambda d: d.assign(extra=1), {}, DataValidationError, "undeclared 'extra'"),
        (lambda d: d, {"target": "nope"}, ParameterError, "not a column"),
        (lambda d: d, {"target": "age"}, ParameterError, "numeric"),
        (lambda d: d, {"holdout": "original"}, ParameterError, "only used with a target"),
        (
            lambda d: d,
            {"holdout": "no-target", "target": "income"},
            DataValidationError,
            "no column 'income'",
        ),
    ],
)
def test_bad_input(adult, change, kwargs, error, match):
    df, schema = adult
    if kwargs.get("holdout") == "original":
        kwargs = {**kwargs, "holdout": df}
    elif kwargs.get("holdout") == "no-target":
        kwargs = {**kwargs, "holdout": df.drop(columns="income")}
    with pytest.raises(error, match=match):
        quality_report(df, change(df), schema, **kwargs)


@pytest.mark.parametrize(
    ("auc", "accuracy", "verdict"),
    [
        (0.89, 0.83, USEFUL),  # lift 0.975, above the majority class
        (0.80, 0.63, WEAK),  # good ranking, accuracy below the majority class
        (0.80, 0.78, WEAK),  # lift 0.75 - epsilon
        (0.65, 0.58, TRIVIAL),  # lift 0.375 and accuracy far below the majority class
        (0.55, 0.80, TRIVIAL),  # lift 0.125
    ],
)
def test_the_verdict_thresholds(auc, accuracy, verdict):
    from ppdp.evaluate.report import _verdict_ml

    real = {"accuracy": 0.84, "auc": 0.9}
    ml = {
        "target": "y",
        "release": {"accuracy": accuracy, "auc": auc},
        "real": real,
        "majority": {"accuracy": 0.75, "auc": 0.5, "class": "no"},
        "lift": (auc - 0.5) / (real["auc"] - 0.5) - (1e-9 if auc == 0.80 else 0),
    }
    assert _verdict_ml(ml)[0] == verdict


def test_a_model_as_good_as_the_real_one_is_useful(adult):
    from sklearn.linear_model import LogisticRegression

    from ppdp.evaluate import model_report
    from ppdp.learn._model_io import ModelFile

    df, schema = adult
    train, test = df.iloc[:2000], df.iloc[2000:]
    X, y = schema.encode(train)
    real = LogisticRegression(max_iter=500).fit(X, y)  # no privacy: the best a model can do
    mf = ModelFile(
        estimator=real,
        estimator_name="LogisticRegression",
        guarantee=Guarantee.pure(1.0, relation="add/remove", mechanism="test"),
        schema=schema,
        schema_fingerprint=None,
        feature_names=schema.feature_names,
        classes=schema.classes,
        ppdp_version="test",
    )
    report = model_report(mf, test, original=train)
    assert report.kind == "model"
    assert report.verdict == USEFUL
    assert json.loads(report.to_json())["ml_utility"]["lift"] > 0.9
    with pytest.raises(DataValidationError, match="no column 'income'"):
        model_report(mf, test.drop(columns="income"))


def test_cramers_v_matches_scipy(adult):
    from scipy.stats.contingency import association

    from ppdp.data.columns import CategoricalColumn
    from ppdp.evaluate.report import _cramers_v

    df, schema = adult
    cats = [c for c in schema.columns if isinstance(c, CategoricalColumn)][:4]
    V = _cramers_v(df, cats)
    assert np.allclose(np.diag(V), 1.0) and np.allclose(V, V.T)
    for i in range(len(cats)):
        for j in range(i + 1, len(cats)):
            table = pd.crosstab(df[cats[i].name], df[cats[j].name]).to_numpy()
            want = association(table, method="cramer", correction=False)
            assert V[i, j] == pytest.approx(want, rel=1e-9), (cats[i].name, cats[j].name)


def test_cramers_v_of_a_copy_and_of_independent_columns():
    from ppdp.data.columns import CategoricalColumn
    from ppdp.evaluate.report import _cramers_v

    rng = np.random.default_rng(0)
    a = rng.choice(["x", "y", "z"], 20_000)
    df = pd.DataFrame({"a": a, "b": a, "c": rng.choice(["u", "v"], 20_000)})
    cats = [CategoricalColumn("a", ("x", "y", "z")), CategoricalColumn("b", ("x", "y", "z")),
            CategoricalColumn("c", ("u", "v"))]  # fmt: skip
    V = _cramers_v(df, cats)
    assert V[0, 1] == pytest.approx(1.0)
    # independent: n·V²·(min − 1) is chi-square with 2 d.o.f.; V < 0.025 fails with p ≈ 4e-6
    assert V[0, 2] < 0.025 and V[1, 2] < 0.025


def test_the_report_has_cramers_v_maps_and_both_classifiers(same_report, adult):
    names = same_report.categorical_names
    assert names[-1] == "income" and "sex" in names
    assert np.allclose(same_report.cramers_original, same_report.cramers_release)
    assert set(same_report.ml["models"]) == {"logistic regression", "gradient-boosted trees"}
    df, schema = adult
    train, test = df.iloc[:2000], df.iloc[2000:]
    ml = quality_report(train, train, schema, holdout=test, target="income").ml
    hgb = ml["models"]["gradient-boosted trees"]
    assert hgb["release"] == hgb["real"]  # an equal release, a fixed seed: the same trees
    assert hgb["release"]["auc"] > 0.8 and hgb["lift"] == pytest.approx(1.0)
    data = json.loads(same_report.to_json())
    assert len(data["cramers_v"]["columns"]) == len(names)
    assert data["cramers_v"]["max_abs_difference"] == 0.0


def test_the_roc_points_integrate_to_the_auc(same_report):
    for model in same_report.ml["models"].values():
        roc = model["release"]["roc"]
        fpr, tpr = np.asarray(roc["fpr"]), np.asarray(roc["tpr"])
        assert fpr[0] == 0 and fpr[-1] == 1 and tpr[-1] == pytest.approx(1.0)
        assert np.all(np.diff(tpr) >= 0)
        area = float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2))
        assert area == pytest.approx(model["release"]["auc"], abs=0.02)


def test_roc_points_of_a_perfect_and_a_reversed_score():
    from ppdp.evaluate.report import roc_curve_points

    y = np.array([0, 0, 1, 1], dtype=bool)
    good = roc_curve_points(y, np.array([0.1, 0.2, 0.8, 0.9]), n=5)
    assert good["fpr"] == [0.0, 0.0, 0.25, 0.5, 0.75, 1.0]
    assert good["tpr"] == [0.0, 1.0, 1.0, 1.0, 1.0, 1.0]  # all positives before any negative
    bad = roc_curve_points(y, np.array([0.9, 0.8, 0.2, 0.1]), n=5)
    assert bad["tpr"] == [0.0, 0.0, 0.0, 0.0, 0.0, 1.0]


def test_a_large_table_is_sampled_for_association_and_classifiers(adult, monkeypatch):
    import ppdp.evaluate.report as rep

    df, schema = adult
    monkeypatch.setattr(rep, "MAX_ROWS", 1000)
    report = quality_report(df, df, schema, target="income")
    assert report.ml["n_train_release"] == 1000
    assert report.ml["n_test"] == 900  # 30 % of 3,000 rows
    assert any("sample of at most 1,000 rows" in n for n in report.notes)
    assert report.n_release == len(df)  # the marginals use every row
    assert all(c["tv"] == 0 for c in report.columns)


def test_a_marginal_chart_draws_the_shares():
    from ppdp.evaluate._report_html import _REAL, _REL, _marginal_svg, _nice_ticks

    col = {
        "name": "c",
        "type": "categorical",
        "cells": ["a", "b<"],
        "p_original": np.array([0.25, 0.75]),
        "p_release": np.array([0.5, 0.5]),
    }
    svg = _marginal_svg(col)
    bars = re.findall(
        r'<rect x="[^"]+" y="[^"]+" width="[^"]+" height="([^"]+)" fill="(#\w+)"/>', svg
    )
    real = [float(h) for h, c in bars if c == _REAL]
    rel = [float(h) for h, c in bars if c == _REL]
    assert real[1] / real[0] == pytest.approx(3.0, rel=0.01)
    assert rel[0] == pytest.approx(rel[1]) and rel[0] / real[0] == pytest.approx(2.0, rel=0.01)
    assert "b&lt;" in svg and 'viewBox="0 0 500 250"' in svg  # labels escaped; scales by CSS
    assert _nice_ticks(17, 90) == [20, 40, 60, 80] and _nice_ticks(0, 0.45, 4) == [0, 0.2, 0.4]


def test_an_unpredictable_target_leaves_the_verdict_to_the_marginals(adult):
    # A label drawn independently of every column: the real data cannot beat chance, so no
    # classifier can judge the release; the verdict must come from the marginals (the
    # original itself is "useful", uniform noise "no better than the trivial baseline").
    # Seeded; under chance the real AUC clears the 2-SE floor with probability ~2.3 %
    # (seed 3 is such a draw, AUC 0.553 on 900 test rows: the floor then rightly says "judge").
    df, schema = adult
    coin = np.random.default_rng(5).choice(np.asarray(schema.label.classes, dtype=object), len(df))
    df = df.assign(**{schema.label.name: coin})
    same = quality_report(df, df.copy(), schema, target="income")
    assert same.ml["lift"] is None
    assert same.verdict == USEFUL
    assert "total-variation" in same.verdict_basis and "better than chance" in same.verdict_basis
    noise = quality_report(df, uniform_noise(schema, len(df)), schema, target="income")
    assert noise.verdict == TRIVIAL


def test_the_headline_is_short_and_the_details_hold_every_part_and_its_numbers(adult, same_report):
    df, schema = adult
    noise = quality_report(df, uniform_noise(schema, len(df)), schema, target="income")
    for report in (same_report, noise):
        head, details = report.headline(), report.details()
        assert head.startswith(f"verdict: {report.verdict} (set by ")
        assert len(head) <= 110 and "\n" not in head  # no numbers: they are below
        for part in report.verdict_parts:
            assert f"{part['part']}: {part['verdict']} ({part['basis']})" in details
            assert part["part"] in head
        # the one-line summary (logs) says the same, in one line
        assert report.summary().startswith(f"verdict: {report.verdict} (")
    # the worst parts first, in the headline as below
    verdicts = [VERDICTS.index(line.split(": ")[1].split(" (")[0]) for line in noise.details()
                if not line.startswith("target")]  # fmt: skip
    assert verdicts == sorted(verdicts, reverse=True)
    # an add/remove release's replace-one equivalent is a line of its own
    assert (
        "the release is add/remove, ≈ 2ε = 2 under replace-one: compare"
        in same_report.details()[-1]
    )
