"""``ppdp.evaluate.lda_projection_report``: the released direction's and rows' utility.

The releases are seeded (fixed noise), so the verdicts are deterministic; they hold with a wide
margin: noisy projections at ε = 0.5 score AUC ≈ 0.49 where "no better than the trivial
baseline" starts below ≈ 0.60, and the direction at ε = 2 keeps ≈ 87 % of the AUC gain where
"useful" needs 75 %.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from ppdp.datasets import load_adult
from ppdp.evaluate import VERDICTS, lda_projection_report
from ppdp.exceptions import (
    DataValidationError,
    InsecureRandomnessWarning,
    LowUtilityWarning,
    NotDifferentiallyPrivateWarning,
    ParameterError,
)
from ppdp.publish import LDAProjectionPublisher

pytest.importorskip("sklearn")

USEFUL, WEAK, TRIVIAL = VERDICTS


@pytest.fixture(scope="module")
def adult():
    df, schema = load_adult()
    rows = np.sort(np.random.default_rng(0).choice(len(df), 8000, replace=False))
    df = df.iloc[rows].reset_index(drop=True)
    return df.iloc[:6000].reset_index(drop=True), df.iloc[6000:], schema


def publish(train, schema, epsilon, release):
    """The release table and the sidecar ``ppdp publish lda-projection`` would write."""
    counts = train["income"].value_counts().reindex(list(schema.label.classes)).tolist()
    pub = LDAProjectionPublisher(
        epsilon, 1e-6, schema, class_counts=counts, release=release, random_state=1
    )
    with warnings.catch_warnings():  # seeded on purpose; low utility is the point here
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        warnings.simplefilter("ignore", LowUtilityWarning)
        warnings.simplefilter("ignore", NotDifferentiallyPrivateWarning)
        pub.fit(train)
    rel = pub.release_
    W = rel.statistics["directions"]
    side = {
        "method": "lda-projection",
        "guarantee": rel.guarantee.to_dict(),
        "directions": W.tolist(),
        "features": list(schema.feature_names),
        "row_scale": float(rel.statistics["scale"][0]),
    }
    if rel.data is not None:
        return rel.data, side
    table = pd.DataFrame(W, columns=[f"lda_{j + 1}" for j in range(W.shape[1])])
    table.insert(0, "feature", list(schema.feature_names))
    return table, side


@pytest.fixture(scope="module")
def noisy(adult):
    train, _, schema = adult
    return publish(train, schema, 0.5, "noisy-projections")


def test_noisy_projections_at_half_an_epsilon_are_trivial(adult, noisy):
    train, test, schema = adult
    report = lda_projection_report(train, noisy[0], schema, noisy[1], holdout=test)
    assert report.kind == "lda-projection"
    assert report.verdict == TRIVIAL
    ml = report.ml
    assert ml["release"] is ml["released_rows"]
    assert abs(ml["released_rows"]["auc"] - 0.5) < 0.05  # Laplace scale 8 on a range of 2
    assert ml["direction"]["auc"] > 0.75  # the direction itself carries the signal
    assert ml["real"]["auc"] > 0.85
    assert report.summary().startswith("verdict: no better than the trivial baseline")
    data = json.loads(report.to_json())
    assert data["lda"]["n_components"] == 1
    assert len(data["lda"]["histogram"]["released"]) == 2


def test_a_direction_release_is_judged_by_the_direction(adult):
    train, test, schema = adult
    table, side = publish(train, schema, 2.0, "direction")
    report = lda_projection_report(train, table, schema, side, holdout=test)
    assert report.ml["released_rows"] is None
    assert report.ml["release"] is report.ml["direction"]
    assert report.verdict == USEFUL
    assert report.ml["lift"] > 0.75


def test_raw_projections_keep_the_direction_quality(adult):
    train, test, schema = adult
    table, side = publish(train, schema, 2.0, "raw-projections")
    report = lda_projection_report(train, table, schema, side, holdout=test)
    assert report.verdict == USEFUL
    assert report.ml["released_rows"]["auc"] == pytest.approx(
        report.ml["direction"]["auc"], abs=0.03
    )
    assert not report.guarantee.is_private


def test_the_html_shows_the_direction_rows_and_projections(adult, noisy, tmp_path):
    pytest.importorskip("matplotlib")
    train, test, schema = adult
    report = lda_projection_report(train, noisy[0], schema, noisy[1], holdout=test)
    text = report.to_html(tmp_path / "r.html")
    assert "Quality report of an LDA projection release" in text
    assert "Verdict: no better than the trivial baseline" in text
    assert "the released direction" in text and "the released rows" in text
    assert text.count("<svg") == 2  # the ROC curves and the projections
    assert "For the custodian only" in text and "<script" not in text


def test_without_a_holdout_the_scores_are_flagged_optimistic(adult, noisy):
    train, _, schema = adult
    report = lda_projection_report(train, noisy[0], schema, noisy[1])
    assert any("optimistic" in n for n in report.notes)
    assert report.ml["n_test"] == round(0.3 * len(train))


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        (lambda t, s: (t, {**s, "directions": "x"}), ParameterError, "directions"),
        (lambda t, s: (t, {k: v for k, v in s.items() if k != "row_scale"}), ParameterError,
         "row_scale"),
        (lambda t, s: (t, {**s, "features": s["features"][::-1]}), DataValidationError,
         "other encoded features"),
        (lambda t, s: (t.iloc[:10], s), DataValidationError, "rows in the same order"),
        (lambda t, s: (t.rename(columns={"lda_1": "z"}), s), DataValidationError,
         "not an LDA projection release"),
    ],
)  # fmt: skip
def test_bad_input(adult, noisy, change, error, match):
    train, test, schema = adult
    table, side = change(*noisy)
    with pytest.raises(error, match=match):
        lda_projection_report(train, table, schema, side, holdout=test)


def test_the_target_must_be_the_label(adult, noisy):
    train, test, schema = adult
    with pytest.raises(ParameterError, match="not the schema's label"):
        lda_projection_report(train, noisy[0], schema, noisy[1], holdout=test, target="sex")
    with pytest.raises(DataValidationError, match="no column 'income'"):
        lda_projection_report(
            train, noisy[0], schema, noisy[1], holdout=test.drop(columns="income")
        )


def test_three_classes_two_directions(tmp_path):
    pytest.importorskip("matplotlib")
    from ppdp.data import Schema

    rng = np.random.default_rng(5)
    n = 3000
    k = rng.integers(0, 3, n)
    df = pd.DataFrame(
        {
            "a": np.clip(3.0 + 2.0 * k + rng.normal(size=n), 0, 10),
            "c": np.where(rng.uniform(size=n) < 0.2 + 0.3 * (k == 0), "x", "y"),
            "t": np.array(["p", "q", "r"])[k],
        }
    )
    schema = Schema.from_dict(
        {
            "columns": [
                {"name": "a", "type": "numeric", "lower": 0, "upper": 10},
                {"name": "c", "type": "categorical", "categories": ["x", "y"]},
            ],
            "label": {"name": "t", "classes": ["p", "q", "r"]},
        }
    )
    train, test = df.iloc[:2400].reset_index(drop=True), df.iloc[2400:]
    counts = [int((train["t"] == c).sum()) for c in "pqr"]
    pub = LDAProjectionPublisher(8.0, 1e-6, schema, class_counts=counts, random_state=2)
    pub.fit(train)
    rel = pub.release_
    side = {
        "method": "lda-projection",
        "guarantee": rel.guarantee.to_dict(),
        "directions": rel.statistics["directions"].tolist(),
        "features": list(schema.feature_names),
        "row_scale": float(rel.statistics["scale"][0]),
    }
    report = lda_projection_report(train, rel.data, schema, side, holdout=test)
    assert report.lda["n_components"] == 2
    assert "roc" not in report.ml["direction"]  # ROC curves for two classes only
    assert report.ml["direction"]["auc"] > 0.7  # one-vs-rest, averaged over the classes
    text = report.to_html(tmp_path / "r.html")
    assert text.count("<svg") == 1  # the projections only
    assert report.verdict in VERDICTS
