"""ppdp.evaluate: exact values on tiny hand-computed tables."""

from __future__ import annotations

import math
import sys

import numpy as np
import pandas as pd
import pytest

from ppdp.data import Schema
from ppdp.evaluate import (
    attribute_distributions,
    baseline_accuracy,
    classification_utility,
    entropy,
    frobenius_error,
    kl_divergence,
    lowest_achievable,
    mse,
    roc_auc,
)
from ppdp.exceptions import (
    DataValidationError,
    OptionalDependencyError,
    ParameterError,
    SchemaError,
)


@pytest.fixture
def schema() -> Schema:
    return Schema.from_dict(
        {
            "columns": [
                {"name": "x", "type": "numeric", "lower": 0, "upper": 100},
                {"name": "c", "type": "categorical", "categories": ["a", "b", "c"]},
            ],
            "label": {"name": "y", "classes": ["neg", "pos"]},
        }
    )


# ---------------------------------------------------------------- F-norm and MSE
def test_frobenius_and_mse_exact():
    X = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 1.0]])
    Xb = np.array([[0.5, 1.0, 0.0], [1.0, 2.0, 1.0]])
    # 0.5^2 + 2^2 = 4.25 over n*p = 6 cells
    assert frobenius_error(X, Xb) == 4.25
    assert mse(X, Xb) == pytest.approx(4.25 / 6, rel=0, abs=1e-15)
    assert frobenius_error(X, X) == 0.0


def test_frobenius_rejects_misaligned_and_nonfinite():
    with pytest.raises(DataValidationError, match="shape"):
        frobenius_error(np.zeros((3, 2)), np.zeros((2, 2)))
    with pytest.raises(DataValidationError, match="2-D"):
        frobenius_error(np.zeros(3), np.zeros(3))
    with pytest.raises(DataValidationError, match="finite"):
        mse(np.zeros((1, 2)), np.array([[0.0, np.nan]]))


# ---------------------------------------------------------------- AUC
def test_roc_auc_exact_and_against_sklearn(seed):
    # Positives {0.35, 0.8}, negatives {0.1, 0.4}: 3 of 4 pairs ordered -> 0.75.
    assert roc_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) == 0.75
    # A tie between a positive and a negative counts one half: (1 + 0.5) / 2.
    assert roc_auc([0, 1, 0, 1], [0.2, 0.5, 0.5, 0.9]) == 0.875
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 200)
    y[:2] = [0, 1]
    s = np.round(rng.normal(size=200) + y, 1)  # rounding makes ties
    assert roc_auc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_roc_auc_needs_both_classes():
    with pytest.raises(DataValidationError, match="both classes"):
        roc_auc([1, 1], [0.1, 0.2])


# ---------------------------------------------------------------- classification
def _separable(n: int = 40) -> pd.DataFrame:
    x = np.r_[np.linspace(5, 40, n // 2), np.linspace(60, 95, n // 2)]
    y = ["neg"] * (n // 2) + ["pos"] * (n // 2)
    c = (["a", "b"] * n)[:n]
    return pd.DataFrame({"x": x, "c": c, "y": y})


@pytest.mark.parametrize("classifier", ["lda", "tree"])
def test_separable_release_classifies_perfectly(schema, classifier):
    train, test = _separable(40), _separable(20)
    out = classification_utility(train, test, schema, classifier=classifier, min_samples_leaf=2)
    assert out == {"accuracy": 1.0, "auc": 1.0}
    assert baseline_accuracy(train, test, schema, classifier=classifier) == out


def test_single_class_release_predicts_that_class(schema):
    release = _separable(40)
    release["y"] = "pos"
    test = _separable(20)
    test.loc[:4, "y"] = "pos"  # 10 + 5 of 20 test rows are "pos"
    for classifier in ("lda", "tree"):
        out = classification_utility(release, test, schema, classifier=classifier)
        assert out == {"accuracy": 0.75, "auc": 0.5}


def test_inverted_release_gives_auc_zero(schema):
    release = _separable(40)
    release["y"] = release["y"].map({"neg": "pos", "pos": "neg"})
    out = classification_utility(release, _separable(20), schema, classifier="lda")
    assert out == {"accuracy": 0.0, "auc": 0.0}


def test_three_classes_macro_one_vs_rest():
    s3 = Schema.from_dict(
        {
            "columns": [{"name": "x", "type": "numeric", "lower": 0, "upper": 90}],
            "label": {"name": "y", "classes": ["lo", "mid", "hi"]},
        }
    )
    x = np.r_[np.linspace(1, 25, 10), np.linspace(35, 55, 10), np.linspace(65, 89, 10)]
    df = pd.DataFrame({"x": x, "y": ["lo"] * 10 + ["mid"] * 10 + ["hi"] * 10})
    for classifier in ("lda", "tree"):
        out = classification_utility(df, df, s3, classifier=classifier, min_samples_leaf=1)
        assert out == {"accuracy": 1.0, "auc": 1.0}
    # Class "hi" absent from the release: the tree sends the "hi" rows to "mid" with
    # probability 1. One-vs-rest areas: lo 1; mid 0.75 (mid beats lo in 100 pairs, ties
    # hi in 100: (100 + 50) / 200); hi 0.5 (constant zero score).
    out = classification_utility(df.iloc[:20], df, s3, classifier="tree", min_samples_leaf=1)
    assert out["accuracy"] == pytest.approx(20 / 30)
    assert out["auc"] == pytest.approx((1.0 + 0.75 + 0.5) / 3, abs=1e-12)


def test_lowest_achievable_is_train_majority(schema):
    train = _separable(40)
    train.loc[:25, "y"] = "neg"  # 26 neg, 14 pos
    test = _separable(20)
    test.loc[:14, "y"] = "neg"  # 15 of 20
    assert lowest_achievable(train, test, schema) == {"accuracy": 0.75, "auc": 0.5}


def test_classification_bad_input(schema):
    df = _separable(10)
    with pytest.raises(ParameterError, match="classifier"):
        classification_utility(df, df, schema, classifier="svm")  # type: ignore[arg-type]
    with pytest.raises(SchemaError, match="label"):
        classification_utility(df, df, schema.without_label())
    with pytest.raises(DataValidationError, match="no rows"):
        classification_utility(df.iloc[:0], df, schema)


def test_missing_sklearn_gives_install_hint(schema, monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)
    df = _separable(10)
    with pytest.raises(OptionalDependencyError, match=r"ppdp\[learn\]"):
        classification_utility(df, df, schema)


# ---------------------------------------------------------------- entropy and KL
def test_bins_come_from_declared_bounds_not_data(schema):
    # All values in [0, 10): one bin of the public [0, 100] grid, whatever their spread.
    df = pd.DataFrame({"x": [0.0, 3.0, 6.0, 9.9], "c": ["a"] * 4, "y": ["neg"] * 4})
    dists = attribute_distributions(df, schema, bins=10)
    assert dists["x"].tolist() == [1.0] + [0.0] * 9
    assert entropy(df, schema) == 0.0
    # Out-of-bound values land in the end bins (the encoding clips to the bounds).
    df2 = pd.DataFrame({"x": [100.0, 55.0], "c": ["a", "b"], "y": ["neg", "pos"]})
    assert attribute_distributions(df2, schema, bins=2)["x"].tolist() == [0.0, 1.0]


def test_entropy_exact(schema):
    df = pd.DataFrame(
        {"x": [10.0, 30.0, 60.0, 90.0], "c": ["a", "a", "b", "c"], "y": ["neg"] * 2 + ["pos"] * 2}
    )
    # x uniform over 4 of the 4 bins; c = (1/2, 1/4, 1/4); y = (1/2, 1/2)
    h_x = math.log(4)
    h_c = -(0.5 * math.log(0.5) + 2 * 0.25 * math.log(0.25))
    h_y = math.log(2)
    assert entropy(df, schema, bins=4) == pytest.approx((h_x + h_c + h_y) / 3, abs=1e-12)
    no_label = entropy(df, schema, bins=4, include_label=False)
    assert no_label == pytest.approx((h_x + h_c) / 2, abs=1e-12)


def test_kl_exact_with_smoothing(schema):
    p_df = pd.DataFrame({"x": [10.0] * 4, "c": ["a", "a", "a", "b"], "y": ["neg"] * 4})
    q_df = pd.DataFrame({"x": [10.0, 90.0], "c": ["a", "b"], "y": ["neg", "pos"]})
    s = 1e-3

    def kl(p, q):
        p = (np.array(p) + s) / (1 + len(p) * s)
        q = (np.array(q) + s) / (1 + len(q) * s)
        return float(np.sum(p * np.log(p / q)))

    expected = (
        kl([1, 0], [0.5, 0.5]) + kl([0.75, 0.25, 0], [0.5, 0.5, 0]) + kl([1, 0], [0.5, 0.5])
    ) / 3
    got = kl_divergence(p_df, q_df, schema, bins=2, smoothing=s)
    assert got == pytest.approx(expected, abs=1e-12)
    assert kl_divergence(q_df, q_df, schema) == 0.0
    # Without smoothing, mass where the original has none is infinitely surprising.
    assert kl_divergence(q_df, p_df, schema, bins=2, smoothing=0.0) == math.inf


def test_information_bad_input(schema):
    df = pd.DataFrame({"x": [1.0], "c": ["a"], "y": ["neg"]})
    with pytest.raises(ParameterError, match="bins"):
        entropy(df, schema, bins=0)
    with pytest.raises(ParameterError, match="smoothing"):
        kl_divergence(df, df, schema, smoothing=-1.0)
    with pytest.raises(DataValidationError):
        entropy(pd.DataFrame({"x": [1.0], "c": ["zzz"], "y": ["neg"]}), schema)
    with pytest.raises(DataValidationError, match="no rows"):
        entropy(df.iloc[:0], schema)
