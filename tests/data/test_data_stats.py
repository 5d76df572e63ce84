"""Sufficient statistics in memory: exact values, class structure, input checks, float bound."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from ppdp.data import SufficientStats, float_sum_error_bound
from ppdp.exceptions import DataValidationError, ParameterError


def _naive(X, y=None, k=None):
    X = np.asarray(X, dtype=np.float64)
    out = {"n": len(X), "sum_x": X.sum(axis=0), "sum_xx": X.T @ X}
    if y is not None:
        out["counts"] = np.array([(y == c).sum() for c in range(k)])
        out["class_x"] = np.stack([X[y == c].sum(axis=0) for c in range(k)])
        out["class_xx"] = np.stack([X[y == c].T @ X[y == c] for c in range(k)])
    return out


def test_exact_values_on_a_small_integer_matrix() -> None:
    X = np.array([[1, 2], [3, 4], [5, 6], [7, 8]])
    y = np.array([0, 1, 0, 0])
    st = SufficientStats.compute(X, y, n_classes=3)
    assert st.n == 4 and st.n_features == 2 and st.n_classes == 3
    np.testing.assert_array_equal(st.sum_x, [16, 20])
    np.testing.assert_array_equal(st.sum_xx, [[84, 100], [100, 120]])
    np.testing.assert_array_equal(st.class_counts, [3, 1, 0])
    np.testing.assert_array_equal(st.class_sum_x, [[13, 16], [3, 4], [0, 0]])
    np.testing.assert_array_equal(st.class_sum_xx[0], [[75, 88], [88, 104]])
    np.testing.assert_array_equal(st.class_sum_xx[1], [[9, 12], [12, 16]])
    np.testing.assert_array_equal(st.class_sum_xx[2], np.zeros((2, 2)))
    assert st.classes == (0, 1, 2)
    plain = SufficientStats.compute(X)
    np.testing.assert_array_equal(plain.sum_xx, [[84, 100], [100, 120]])
    assert plain.classes is None and plain.class_counts is None


@pytest.mark.parametrize("block_rows", [None, 1, 7, 64])
@pytest.mark.parametrize("k", [None, 1, 2, 5, 20])
def test_matches_naive_numpy(seed, block_rows, k) -> None:
    rng = np.random.default_rng(seed)
    n, p = 301, 6
    X = rng.random((n, p))
    y = None if k is None else rng.integers(0, k, n)
    st = SufficientStats.compute(X, y, n_classes=k, block_rows=block_rows)
    ref = _naive(X, y, k)
    np.testing.assert_allclose(st.sum_x, ref["sum_x"], rtol=1e-12)
    np.testing.assert_allclose(st.sum_xx, ref["sum_xx"], rtol=1e-12)
    np.testing.assert_array_equal(st.sum_xx, st.sum_xx.T)
    if k is not None:
        np.testing.assert_array_equal(st.class_counts, ref["counts"])
        np.testing.assert_allclose(st.class_sum_x, ref["class_x"], rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(st.class_sum_xx, ref["class_xx"], rtol=1e-12, atol=1e-13)
        # Per-class statistics add up to the pooled ones.
        assert st.class_counts.sum() == n
        np.testing.assert_allclose(st.class_sum_x.sum(axis=0), st.sum_x, rtol=1e-13)
        np.testing.assert_allclose(st.class_sum_xx.sum(axis=0), st.sum_xx, rtol=1e-13)


@pytest.mark.parametrize("layout", ["int", "float32", "fortran", "strided"])
def test_any_numeric_layout(layout) -> None:
    rng = np.random.default_rng(3)
    base = rng.integers(0, 5, (200, 4))
    X = {
        "int": base,
        "float32": base.astype(np.float32),
        "fortran": np.asfortranarray(base.astype(float)),
        "strided": np.repeat(base.astype(float), 2, axis=1)[:, ::2],
    }[layout]
    y = rng.integers(0, 2, 200)
    for labels in (None, y):
        st = SufficientStats.compute(X, labels, n_classes=None if labels is None else 2)
        np.testing.assert_array_equal(st.sum_xx, base.T @ base)  # small integers: exact
        np.testing.assert_array_equal(st.sum_x, base.sum(axis=0))


def test_label_values_with_declared_classes() -> None:
    X = np.eye(3)
    st = SufficientStats.compute(X, ["b", "a", "b"], classes=["a", "b", "c"])
    assert st.classes == ("a", "b", "c")
    np.testing.assert_array_equal(st.class_counts, [1, 2, 0])
    np.testing.assert_array_equal(st.class_sum_x, [[0, 1, 0], [1, 0, 1], [0, 0, 0]])
    with pytest.raises(DataValidationError, match=r"1 label\(s\) outside"):
        SufficientStats.compute(X, ["b", "z", "b"], classes=["a", "b"])
    with pytest.raises(ParameterError, match="n_classes"):
        SufficientStats.compute(X, ["a", "b", "a"], classes=["a", "b"], n_classes=3)


def test_label_checks() -> None:
    X = np.ones((4, 2))
    with pytest.raises(ParameterError, match="declared label set"):
        SufficientStats.compute(X, [0, 1, 0, 1])
    with pytest.raises(ParameterError, match="without y"):
        SufficientStats.compute(X, n_classes=2)
    with pytest.raises(
        DataValidationError, match=r"2 label\(s\) outside the declared classes 0\.\.1"
    ):
        SufficientStats.compute(X, [0, 2, -1, 1], n_classes=2)
    with pytest.raises(DataValidationError, match="3 labels but X has 4 rows"):
        SufficientStats.compute(X, [0, 1, 0], n_classes=2)
    with pytest.raises(DataValidationError, match="integer class codes"):
        SufficientStats.compute(X, [0.0, 1.0, 0.0, 1.0], n_classes=2)
    with pytest.raises(DataValidationError, match="1-D"):
        SufficientStats.compute(X, np.zeros((4, 1), dtype=int), n_classes=2)
    st = SufficientStats.compute(X, np.array([True, False, True, True]), n_classes=2)
    np.testing.assert_array_equal(st.class_counts, [1, 3])


def test_bad_X() -> None:
    with pytest.raises(DataValidationError, match="ragged"):
        SufficientStats.compute([[1.0, 2.0], [3.0]])
    with pytest.raises(DataValidationError, match="object"):
        SufficientStats.compute(np.array([[1, "a"]], dtype=object))
    with pytest.raises(DataValidationError, match="2-D"):
        SufficientStats.compute(np.ones(3))
    with pytest.raises(ParameterError, match="Dask collections only"):
        SufficientStats.compute(np.ones((2, 2)), scheduler="threads")


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("labelled", [False, True])
def test_non_finite_X_names_the_column(bad, labelled) -> None:
    X = np.ones((50, 4))
    X[17, 2] = bad
    y = np.arange(50) % 2 if labelled else None
    with pytest.raises(DataValidationError, match="X column 2 contains NaN or inf"):
        SufficientStats.compute(X, y, n_classes=2 if labelled else None)
    df = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    with pytest.raises(DataValidationError, match=r"X column 2 \('c'\)"):
        SufficientStats.compute(df)


def test_pandas_input_and_label_column() -> None:
    rng = np.random.default_rng(4)
    df = pd.DataFrame(rng.random((100, 3)), columns=["a", "b", "c"])
    df["label"] = rng.integers(0, 2, 100)
    st = SufficientStats.compute(df, "label", n_classes=2)
    assert st.feature_names == ("a", "b", "c")
    ref = SufficientStats.compute(df[["a", "b", "c"]].to_numpy(), df["label"], n_classes=2)
    np.testing.assert_array_equal(st.class_sum_xx, ref.class_sum_xx)
    with pytest.raises(DataValidationError, match="'z' is not numeric"):
        SufficientStats.compute(df.assign(z="text"))
    with pytest.raises(DataValidationError, match="not a column"):
        SufficientStats.compute(df, "nope", n_classes=2)


def test_empty_table() -> None:
    st = SufficientStats.compute(np.zeros((0, 3)), np.zeros(0, dtype=int), n_classes=2)
    assert st.n == 0
    np.testing.assert_array_equal(st.class_counts, [0, 0])
    assert st.class_sum_xx.shape == (2, 3, 3)


def test_addition_merges_disjoint_tables(seed) -> None:
    rng = np.random.default_rng(seed)
    X = rng.random((90, 3))
    y = rng.integers(0, 3, 90)
    whole = SufficientStats.compute(X, y, n_classes=3)
    parts = SufficientStats.zeros(3, classes=(0, 1, 2))
    for lo in range(0, 90, 40):
        parts = parts + SufficientStats.compute(X[lo : lo + 40], y[lo : lo + 40], n_classes=3)
    assert parts.n == 90
    np.testing.assert_array_equal(parts.class_counts, whole.class_counts)
    np.testing.assert_allclose(parts.class_sum_xx, whole.class_sum_xx, rtol=1e-13)
    with pytest.raises(DataValidationError, match="same features"):
        _ = whole + SufficientStats.compute(X)


def test_result_is_frozen() -> None:
    st = SufficientStats.compute(np.ones((3, 2)), [0, 1, 1], n_classes=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        st.n = 5  # type: ignore[misc]
    with pytest.raises(ValueError, match="read-only"):
        st.sum_xx[0, 0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        st.class_counts[0] = 1  # type: ignore[index]


def test_float_sum_error_bound_values_and_validity(seed) -> None:
    assert float_sum_error_bound(0) == 0.0
    n = 45_222
    assert float_sum_error_bound(n) == pytest.approx(n * n * 2.0**-53, rel=1e-6)
    assert float_sum_error_bound(10, max_term=2.0) == pytest.approx(2 * 100 * 2.0**-53, rel=1e-9)
    with pytest.raises(ParameterError):
        float_sum_error_bound(10, max_term=-1.0)
    with pytest.raises(ParameterError):
        float_sum_error_bound(2**60)
    # The bound holds for the engine's actual sums (exact reference from math.fsum).
    rng = np.random.default_rng(seed)
    X = rng.random((5_000, 3)) * np.array([1.0, 1e-8, 1.0])
    st = SufficientStats.compute(X, block_rows=333)
    err_x, err_xx = st.rounding_error_bound()
    for j in range(3):
        assert abs(st.sum_x[j] - math.fsum(X[:, j])) <= err_x
        assert abs(st.sum_xx[j, 0] - math.fsum(X[:, j] * X[:, 0])) <= err_xx


def test_mean_and_covariance() -> None:
    X = np.array([[0.0, 1.0], [1.0, 1.0], [2.0, 4.0]])
    st = SufficientStats.compute(X)
    np.testing.assert_allclose(st.mean(), [1.0, 2.0])
    np.testing.assert_allclose(st.covariance(), np.cov(X.T, bias=True))


@pytest.mark.parametrize("labelled", [False, True])
def test_result_does_not_depend_on_threads(seed, labelled) -> None:
    rng = np.random.default_rng(seed)
    X = rng.random((5_000, 4))
    y = rng.integers(0, 3, 5_000) if labelled else None
    k = 3 if labelled else None
    one = SufficientStats.compute(X, y, n_classes=k, block_rows=16, n_threads=1)
    for threads in (2, 3):
        many = SufficientStats.compute(X, y, n_classes=k, block_rows=16, n_threads=threads)
        np.testing.assert_array_equal(many.sum_xx, one.sum_xx)  # bit-for-bit
        np.testing.assert_array_equal(many.sum_x, one.sum_x)
        if labelled:
            np.testing.assert_array_equal(many.class_sum_xx, one.class_sum_xx)
    with pytest.raises(ValueError, match="n_threads"):
        SufficientStats.compute(X, n_threads=0)


def test_classes_and_names_from_a_schema() -> None:
    from ppdp.data import Schema

    schema = Schema.from_dict(
        {
            "columns": [
                {"name": "a", "type": "numeric", "lower": 0, "upper": 1},
                {"name": "c", "type": "categorical", "categories": ["u", "v"]},
            ],
            "label": {"name": "y", "classes": ["lo", "mid", "hi"]},
        }
    )
    df = pd.DataFrame({"a": [0.5, 1.0, 0.0], "c": ["u", "v", "v"], "y": ["hi", "lo", "hi"]})
    X, y = schema.encode(df)
    st = SufficientStats.compute(X, y, schema=schema)
    assert st.classes == ("lo", "mid", "hi")
    np.testing.assert_array_equal(st.class_counts, [1, 0, 2])
    assert st.feature_names == ("a", "c=u", "c=v")
    Xl, _ = schema.encode(df, include_label=True)
    assert SufficientStats.compute(Xl, y, schema=schema).feature_names[-1] == "y=hi"
    assert SufficientStats.compute(X, schema=schema).classes is None
    with pytest.raises(ParameterError, match="not both"):
        SufficientStats.compute(X, y, schema=schema, n_classes=3)
    with pytest.raises(ParameterError, match="no label"):
        SufficientStats.compute(X, y, schema=schema.without_label())
