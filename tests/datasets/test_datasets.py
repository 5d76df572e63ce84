"""Shipped datasets: Adult (Jiang et al.'s preprocessing, 35 encoded columns) and NLTCS."""

from __future__ import annotations

from importlib import resources

import numpy as np
import pytest

from ppdp.data import SufficientStats
from ppdp.datasets import _files, adult_schema, dataset_info, load_adult, load_nltcs
from ppdp.exceptions import DataValidationError, ParameterError


@pytest.fixture(scope="module")
def adult():
    return load_adult()


def test_adult_rows_columns_and_schema(adult) -> None:
    df, schema = adult
    assert df.shape == (45_222, 11)
    assert "fnlwgt" not in df.columns and "native-country" not in df.columns
    assert not (df == "?").any().any()
    assert schema == adult_schema()
    assert schema.label is not None and schema.label.classes == ("<=50K", ">50K")
    assert (schema.p1, schema.p2) == (5, 5)
    assert schema.n_features == 33
    assert schema.layout(include_label=True).n_features == 35
    sizes = {c.name: len(c.categories) for c in schema.categorical_columns}
    assert sizes == {
        "workclass": 8,
        "marital-status": 7,
        "relationship": 6,
        "race": 5,
        "sex": 2,
    }
    assert df["income"].value_counts().to_dict() == {"<=50K": 34_014, ">50K": 11_208}


def test_adult_respects_its_declared_bounds(adult) -> None:
    df, schema = adult
    bounds = {c.name: (c.lower, c.upper) for c in schema.numeric_columns}
    assert bounds == {
        "age": (17, 90),
        "education-num": (1, 16),
        "capital-gain": (0, 99_999),
        "capital-loss": (0, 4_356),
        "hours-per-week": (1, 99),
    }
    for name, (lo, hi) in bounds.items():
        assert df[name].between(lo, hi).all(), name
    for col in schema.categorical_columns:
        assert set(df[col.name]) <= set(col.categories), col.name
    assert "Never-worked" not in set(df["workclass"])  # declared, but no row survives


def test_adult_encodes_to_35_columns(adult) -> None:
    df, schema = adult
    X, y, report = schema.encode(df, include_label=True, return_report=True)
    assert X.shape == (45_222, 35)
    assert not report.has_corrections
    assert X.min() == 0.0 and X.max() == 1.0
    never = schema.layout(include_label=True).feature_names.index("workclass=Never-worked")
    assert X[:, never].sum() == 0.0  # the empty category keeps its column
    st = SufficientStats.compute(X, y, n_classes=2)
    np.testing.assert_array_equal(st.class_counts, [34_014, 11_208])
    np.testing.assert_array_equal(st.sum_x[-2:], [34_014, 11_208])


def test_adult_splits() -> None:
    assert load_adult("train")[0].shape == (30_162, 11)
    assert load_adult("test")[0].shape == (15_060, 11)
    with pytest.raises(ParameterError, match="split"):
        load_adult("validation")  # type: ignore[arg-type]


def test_nltcs() -> None:
    df, schema = load_nltcs()
    assert df.shape == (21_574, 16)
    assert set(np.unique(df.to_numpy())) == {0, 1}
    assert schema.label is None and schema.n_features == 16
    assert df["getting about outside"].sum() == 11_965
    assert df["heavy house work"].sum() == 14_577
    X, _ = schema.encode(df)
    np.testing.assert_array_equal(X, df.to_numpy())
    df2, s2 = load_nltcs(label="getting about outside")
    assert s2.n_features == 15 and s2.classes == (0, 1)
    _, y = s2.encode(df2)
    assert y is not None and y.sum() == 11_965
    with pytest.raises(ParameterError, match="label"):
        load_nltcs(label="flying")


def test_dataset_info_and_files_ship_inside_the_package() -> None:
    adult_readme = dataset_info("adult")
    assert "Kohavi" in adult_readme and "45,222" in adult_readme
    assert "observed minimum and maximum" in adult_readme
    nltcs_readme = dataset_info("nltcs")
    assert "U01-AG007198" in nltcs_readme
    with pytest.raises(ParameterError):
        dataset_info("iris")
    root = resources.files("ppdp.datasets").joinpath("data")
    for rel in _files.CHECKSUMS:
        assert root.joinpath(*rel.split("/")).is_file()


def test_corrupted_file_is_detected(monkeypatch) -> None:
    monkeypatch.setitem(_files.CHECKSUMS, "nltcs/nltcs.csv.gz", "0" * 64)
    with pytest.raises(DataValidationError, match="checksum"):
        load_nltcs()
