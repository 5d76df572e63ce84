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
    assert text.count("<svg") == len(same_report.columns) + 3
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
