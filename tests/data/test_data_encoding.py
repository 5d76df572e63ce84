"""Encoding to [0, 1] + one-hot and back: exact values, round trips, clipping, bad input."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

from ppdp.data import CUSTODIAN_LOGGER, Schema, SufficientStats
from ppdp.exceptions import DataValidationError, ParameterError, ParameterTypeError

SECRET = 123456.789  # an out-of-bounds value that must never appear in a message or a log


def _schema(**extra) -> Schema:
    d = {
        "columns": [
            {"name": "age", "type": "numeric", "lower": 10, "upper": 90, "integer": True},
            {"name": "score", "type": "numeric", "lower": -1.5, "upper": 2.5},
            {"name": "colour", "type": "categorical", "categories": ["red", "green", "blue"]},
        ],
        "label": {"name": "y", "classes": ["no", "yes", "maybe"]},
        "missing_values": ["?"],
    }
    d.update(extra)
    return Schema.from_dict(d)


def _frame(n: int, rng: np.random.Generator) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": rng.integers(10, 91, n),
            "score": rng.uniform(-1.5, 2.5, n),
            "colour": rng.choice(["red", "green", "blue"], n),
            "y": rng.choice(["no", "yes", "maybe"], n),
        }
    )


def test_encode_exact_values() -> None:
    df = pd.DataFrame(
        {
            "age": [10, 50, 90],
            "score": [-1.5, 0.5, 2.5],
            "colour": ["blue", "red", "green"],
            "y": ["yes", "no", "maybe"],
        }
    )
    X, y = _schema().encode(df)
    expected = np.array(
        [
            [0.0, 0.0, 0, 0, 1],
            [0.5, 0.5, 1, 0, 0],
            [1.0, 1.0, 0, 1, 0],
        ]
    )
    np.testing.assert_array_equal(X, expected)
    np.testing.assert_array_equal(y, [1, 0, 2])
    assert X.dtype == np.float64 and y.dtype == np.int64
    Xl, _ = _schema().encode(df, include_label=True)
    np.testing.assert_array_equal(Xl[:, 5:], [[0, 1, 0], [1, 0, 0], [0, 0, 1]])


def test_round_trip_is_exact(seed) -> None:
    rng = np.random.default_rng(seed)
    df = _frame(500, rng)
    s = _schema()
    X, y = s.encode(df)
    assert X.min() >= 0.0 and X.max() <= 1.0
    back = s.decode(X, y)
    np.testing.assert_array_equal(back["age"].to_numpy(), df["age"].to_numpy())
    np.testing.assert_allclose(back["score"], df["score"], rtol=1e-12, atol=1e-12)
    assert (back["colour"] == df["colour"]).all()
    assert (back["y"] == df["y"]).all()
    # The label decodes from its one-hot block too.
    Xl, _ = s.encode(df, include_label=True)
    assert (s.decode(Xl)["y"] == df["y"]).all()
    assert "y" not in s.decode(X).columns


def test_decode_takes_arg_max_and_clamps() -> None:
    s = _schema()
    X = np.array([[1.7, -0.2, 0.1, 0.7, 0.2], [0.5004, 0.5, 0.3, 0.3, 0.3]])
    out = s.decode(X)
    assert out["age"].tolist() == [90, 50]  # clamped, then rounded (10 + 0.5004*80 = 50.03)
    assert out["score"].tolist() == [-1.5, 0.5]
    assert out["colour"].tolist() == ["green", "red"]  # arg-max; ties go to the first


def test_decode_rejects_bad_input() -> None:
    s = _schema()
    with pytest.raises(DataValidationError, match="5 or 8"):
        s.decode(np.zeros((2, 4)))
    with pytest.raises(DataValidationError, match="NaN or inf"):
        s.decode(np.full((1, 5), np.nan))
    with pytest.raises(DataValidationError, match=r"0\.\.2"):
        s.decode(np.zeros((2, 5)), y=np.array([0, 3]))
    with pytest.raises(DataValidationError, match="no label"):
        s.without_label().decode(np.zeros((2, 5)), y=np.array([0, 1]))


def test_clipping_is_counted_logged_and_never_shows_the_value(caplog) -> None:
    df = pd.DataFrame(
        {
            "age": [5, 50, 200, 91],
            "score": [SECRET, 0.0, -SECRET, 1.0],
            "colour": ["red"] * 4,
            "y": ["no"] * 4,
        }
    )
    s = _schema()
    with caplog.at_level(logging.INFO, logger=CUSTODIAN_LOGGER):
        X, _, report = s.encode(df, return_report=True)
    np.testing.assert_array_equal(X[:, 0], [0.0, 0.5, 1.0, 1.0])
    np.testing.assert_array_equal(X[:, 1], [1.0, 0.375, 0.0, 0.625])
    assert dict(report.clipped) == {"age": 3, "score": 2}
    assert report.total_clipped == 5 and report.n_rows == 4
    records = [r for r in caplog.records if r.name == CUSTODIAN_LOGGER]
    assert len(records) == 1 and "'age': 3" in records[0].getMessage()
    for text in (records[0].getMessage(), repr(report), report.summary()):
        assert "123456" not in text and "200" not in text


def test_in_bounds_data_logs_nothing_at_info(caplog) -> None:
    with caplog.at_level(logging.INFO, logger=CUSTODIAN_LOGGER):
        _, _, report = _schema().encode(_frame(20, np.random.default_rng(0)), return_report=True)
    assert not report.has_corrections
    assert not [r for r in caplog.records if r.levelno >= logging.INFO]


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_numeric_names_the_column_not_the_value(bad) -> None:
    df = _frame(5, np.random.default_rng(1))
    df.loc[2, "score"] = bad
    df.loc[3, "score"] = SECRET
    with pytest.raises(DataValidationError, match="'score'") as exc:
        _schema().encode(df)
    assert "123456" not in str(exc.value) and "inf" not in str(exc.value).split("(")[0]


def test_missing_tokens_are_missing() -> None:
    df = _frame(6, np.random.default_rng(2))
    df["score"] = df["score"].astype(object)
    df.loc[0, "score"] = "?"
    with pytest.raises(DataValidationError, match=r"column 'score': 1 missing"):
        _schema().encode(df)
    df = _frame(6, np.random.default_rng(2))
    df.loc[[1, 4], "colour"] = "?"
    with pytest.raises(DataValidationError, match=r"column 'colour': 2 missing"):
        _schema().encode(df)
    df = _frame(6, np.random.default_rng(2))
    df.loc[1, "y"] = None
    with pytest.raises(DataValidationError, match=r"label 'y': 1 missing"):
        _schema().encode(df)


def test_non_numbers_in_numeric_column() -> None:
    df = _frame(4, np.random.default_rng(3))
    df["age"] = ["1", "2", "three", "4"]
    with pytest.raises(DataValidationError, match=r"'age': 1 value\(s\) are not numbers") as exc:
        _schema().encode(df)
    assert "three" not in str(exc.value)


@pytest.mark.parametrize(
    ("ages", "said"),
    [
        (["1", "7.654,5", "2.000.000", "4"], "thousands separator"),
        (["1", "7,654.5", "98 765", "4"], "thousands separator"),
        (["1", "n.a.", "n.a.", "4"], "all the same text"),
        (["1", "n.a.", "three", "4"], None),
    ],
)
def test_non_numbers_are_described_by_their_shape_only(ages, said) -> None:
    df = _frame(4, np.random.default_rng(3))
    df["age"] = ages
    with pytest.raises(DataValidationError, match=r"'age': 2 value\(s\) are not numbers") as exc:
        _schema().encode(df)
    message = str(exc.value)
    assert (said is None and message.endswith("(declared numeric)")) or said in message
    assert not any(v in message for v in ages[1:3])  # no value is shown
    from ppdp.data.encoding import encode_collecting

    problems = encode_collecting(_schema(), df)[3]  # the total mode says the same
    assert str(problems.first_error()) == message


def test_partitions_whose_hints_disagree_keep_none() -> None:
    from ppdp.data.encoding import ValidationProblems

    key = (0, 0, "not_numbers", "column", "age")
    a = ValidationProblems({key: 1}, {"age": "; hint a"})
    assert str((a + a).first_error()).endswith("; hint a")
    merged = a + ValidationProblems({key: 1}, {"age": "; hint b"})
    assert str(merged.first_error()).endswith("(declared numeric)")


def test_impute_policy() -> None:
    s = Schema.from_dict(
        {
            "columns": [
                {"name": "x", "type": "numeric", "lower": 0, "upper": 4, "impute": 2},
                {"name": "c", "type": "categorical", "categories": ["a", "b"], "impute": "b"},
            ],
            "missing_values": ["?"],
            "nan_policy": "impute",
        }
    )
    df = pd.DataFrame({"x": [1.0, np.nan, np.inf, 4.0], "c": ["a", "?", None, "a"]})
    X, y, report = s.encode(df, return_report=True)
    assert y is None
    np.testing.assert_array_equal(X[:, 0], [0.25, 0.5, 0.5, 1.0])
    np.testing.assert_array_equal(X[:, 1:], [[1, 0], [0, 1], [0, 1], [1, 0]])
    assert dict(report.imputed) == {"x": 2, "c": 2}


def test_undeclared_category_error_vs_other_bucket() -> None:
    df = _frame(10, np.random.default_rng(4))
    df.loc[[2, 5, 7], "colour"] = "ultraviolet"
    with pytest.raises(DataValidationError, match=r"'colour': 3 value\(s\) are not among") as exc:
        _schema().encode(df)
    assert "ultraviolet" not in str(exc.value)
    s = Schema.from_dict(
        {
            "columns": [
                {"name": "colour", "type": "categorical", "categories": ["red"], "other": "other"}
            ]
        }
    )
    X, _, report = s.encode(df[["colour"]], return_report=True)
    assert s.feature_names == ("colour=red", "colour=other")
    np.testing.assert_array_equal(X.sum(axis=1), np.ones(10))
    assert X[:, 1].sum() == (df["colour"] != "red").sum()
    assert dict(report.other) == {"colour": int((df["colour"] != "red").sum())}


def test_undeclared_class_is_an_error() -> None:
    df = _frame(10, np.random.default_rng(5))
    df.loc[3, "y"] = "perhaps"
    with pytest.raises(DataValidationError, match=r"label 'y': 1 value\(s\) are not among"):
        _schema().encode(df)


def test_empty_declared_class_keeps_its_slot() -> None:
    df = _frame(50, np.random.default_rng(6))
    df["y"] = np.where(df.index % 2 == 0, "no", "yes")  # "maybe" never occurs
    s = _schema()
    Xl, y = s.encode(df, include_label=True)
    assert Xl.shape[1] == 8
    np.testing.assert_array_equal(Xl[:, -1], 0.0)
    stats = SufficientStats.compute(Xl, y, n_classes=s.n_classes)
    np.testing.assert_array_equal(stats.class_counts, [25, 25, 0])
    np.testing.assert_array_equal(stats.class_sum_xx[2], 0.0)


def test_integer_data_for_text_categories() -> None:
    s = Schema.from_dict(
        {"columns": [{"name": "c", "type": "categorical", "categories": ["1", "2"]}]}
    )
    X, _ = s.encode(pd.DataFrame({"c": [2, 1, 2]}))
    np.testing.assert_array_equal(X, [[0, 1], [1, 0], [0, 1]])
    t = Schema.from_dict({"columns": [{"name": "c", "type": "categorical", "categories": [1, 2]}]})
    with pytest.raises(DataValidationError, match="declared values are not strings"):
        t.encode(pd.DataFrame({"c": ["1", "2"]}))


def test_row_norm_bound_clips_rows() -> None:
    s = Schema.from_dict(
        {
            "columns": [
                {"name": f"x{i}", "type": "numeric", "lower": 0, "upper": 1} for i in range(4)
            ],
            "row_norm_bound": 1.0,
        }
    )
    df = pd.DataFrame(np.array([[1.0, 1, 1, 1], [0.5, 0, 0, 0], [0.6, 0.8, 0, 0]]))
    df.columns = [f"x{i}" for i in range(4)]
    X, _, report = s.encode(df, return_report=True)
    norms = np.linalg.norm(X, axis=1)
    assert np.all(norms <= 1.0)
    np.testing.assert_allclose(X[0], [0.5] * 4, rtol=1e-14)
    np.testing.assert_array_equal(X[1], [0.5, 0, 0, 0])
    assert report.rows_norm_clipped == 1


def test_input_shapes_and_types() -> None:
    s = _schema()
    df = _frame(5, np.random.default_rng(7))
    with pytest.raises(DataValidationError, match=r"missing column\(s\) 'score'"):
        s.encode(df.drop(columns=["score"]))
    with pytest.raises(DataValidationError, match="without_label"):
        s.encode(df.drop(columns=["y"]))
    X, y = s.without_label().encode(df.drop(columns=["y"]))
    assert y is None and X.shape == (5, 5)
    with pytest.raises(DataValidationError, match="object"):
        s.encode(df.to_numpy())
    with pytest.raises(DataValidationError, match="equal length"):
        s.encode({"age": [1, 2], "score": [0.0], "colour": ["red"], "y": ["no"]})
    with pytest.raises(ParameterTypeError, match="DataFrame"):
        s.encode([[1, 2, 3]])  # type: ignore[arg-type]
    with pytest.raises(DataValidationError, match="2-D"):
        s.encode(np.zeros(3))
    dup = pd.concat([df, df[["age"]]], axis=1)
    with pytest.raises(DataValidationError, match="'age' appears more than once"):
        s.encode(dup)


def test_numeric_array_and_mapping_inputs() -> None:
    s = Schema.from_dict(
        {
            "columns": [
                {"name": "a", "type": "numeric", "lower": 0, "upper": 2},
                {"name": "b", "type": "numeric", "lower": 0, "upper": 4},
            ],
            "label": {"name": "y", "classes": [0, 1]},
        }
    )
    arr = np.array([[1.0, 1.0, 0], [2.0, 4.0, 1]])
    X, y = s.encode(arr)
    np.testing.assert_array_equal(X, [[0.5, 0.25], [1.0, 1.0]])
    np.testing.assert_array_equal(y, [0, 1])
    X2, _ = s.encode({"a": [1.0, 2.0], "b": [1.0, 4.0], "y": [0, 1]})
    np.testing.assert_array_equal(X2, X)
    with pytest.raises(DataValidationError, match="has 2 columns; the schema declares 3"):
        s.encode(arr[:, :2])
    back = s.decode(X, y)
    assert back["y"].tolist() == [0, 1]


def test_bool_numeric_column() -> None:
    s = Schema.from_dict(
        {"columns": [{"name": "b", "type": "numeric", "lower": 0, "upper": 1, "integer": True}]}
    )
    X, _ = s.encode(pd.DataFrame({"b": [True, False]}))
    np.testing.assert_array_equal(X, [[1.0], [0.0]])


def test_encoded_values_stay_in_unit_interval_for_awkward_bounds(seed) -> None:
    """No final clip is applied: monotone rounding must keep every value in [0, 1]."""
    rng = np.random.default_rng(seed)
    for _ in range(20):
        lo = float(rng.uniform(-1e6, 1e6))
        hi = lo + float(10 ** rng.uniform(-6, 6))
        s = Schema.from_dict(
            {"columns": [{"name": "x", "type": "numeric", "lower": lo, "upper": hi}]}
        )
        v = np.concatenate(
            [
                [lo, hi, np.nextafter(hi, lo), np.nextafter(lo, hi)],
                rng.uniform(lo, hi, 200),
                rng.uniform(lo - 1, hi + 1, 50),
            ]
        )
        X, _ = s.encode(pd.DataFrame({"x": v}))
        assert X.min() >= 0.0 and X.max() <= 1.0
        assert X[0, 0] == 0.0 and X[1, 0] == 1.0


# --------------------------------------------------------------------------- total mode


def _dirty() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": [20, np.nan, 30, 40],
            "score": ["0.5", "oops", "?", "1.0"],
            "colour": ["red", "purple", None, "blue"],
            "y": ["no", "yes", "unknown", None],
        }
    )


def test_total_mode_never_raises_on_values_and_maps_each_record_to_a_declared_value() -> None:
    schema = _schema()
    with pytest.raises(DataValidationError):
        schema.encode(_dirty())  # the custodian's default: one error naming the column
    X, y, report = schema.encode(_dirty(), return_report=True, on_invalid="mask")
    # age: missing → midpoint of [10, 90] = 50 → (50 - 10)/80
    assert X[1, 0] == pytest.approx(0.5)
    # score: "oops" and "?" → midpoint 0.5 → (0.5 + 1.5)/4
    assert X[1, 1] == X[2, 1] == pytest.approx(0.5)
    # colour: purple and missing → the first declared category (no other, no impute)
    np.testing.assert_array_equal(X[:, 2:5], [[1, 0, 0], [1, 0, 0], [1, 0, 0], [0, 0, 1]])
    # label: unknown and missing → the first declared class
    assert y.tolist() == [0, 1, 0, 0]
    assert dict(report.masked) == {"age": 1, "score": 2, "colour": 2, "y": 2}


def test_total_mode_prefers_the_declared_other_and_impute_values() -> None:
    d = {
        "columns": [
            {"name": "age", "type": "numeric", "lower": 10, "upper": 90, "impute": 10},
            {
                "name": "colour",
                "type": "categorical",
                "categories": ["red", "rest", "unknown"],
                "other": "rest",
                "impute": "unknown",
            },
        ],
    }
    schema = Schema.from_dict(d)
    df = pd.DataFrame({"age": [np.inf, 20], "colour": ["purple", None]})
    X, _, report = schema.encode(df, return_report=True, on_invalid="mask")
    assert X[0, 0] == 0.0  # the declared impute constant 10
    np.testing.assert_array_equal(X[:, 1:], [[0, 1, 0], [0, 1, 0]])  # other first, for both
    assert dict(report.other) == {"colour": 1} and dict(report.masked) == {"age": 1, "colour": 1}


def test_total_mode_changes_one_encoded_record_per_replaced_record() -> None:
    """The map is per record, so a replace-one neighbour stays a replace-one neighbour."""
    schema = _schema()
    a = _dirty()
    b = a.copy()
    b.loc[3, "colour"] = "teal"  # replace one record's value by an undeclared one
    Xa, ya = schema.encode(a, on_invalid="mask")
    Xb, yb = schema.encode(b, on_invalid="mask")
    differ = np.flatnonzero(np.any(Xa != Xb, axis=1) | (ya != yb))
    assert differ.tolist() == [3]


def test_total_mode_still_refuses_structural_problems_and_bad_options() -> None:
    schema = _schema()
    with pytest.raises(DataValidationError, match="missing column"):
        schema.encode(_dirty().drop(columns="score"), on_invalid="mask")
    with pytest.raises(ParameterError, match="on_invalid"):
        schema.encode(_dirty(), on_invalid="ignore")


def test_a_missing_label_is_never_imputed_and_the_error_says_drop_the_rows() -> None:
    # the trial: nan_policy 'impute' declared, yet the error said "nan_policy is 'error'"
    # and suggested an 'impute' constant the label does not accept
    schema = Schema.from_dict(
        {
            "columns": [{"name": "x", "type": "numeric", "lower": 0, "upper": 4, "impute": 2}],
            "label": {"name": "y", "classes": [0, 1]},
            "nan_policy": "impute",
        }
    )
    df = pd.DataFrame({"x": [1.0, 2.0, 3.0], "y": [0, np.nan, 1]})
    with pytest.raises(DataValidationError) as exc:
        schema.encode(df)
    message = str(exc.value)
    assert message.startswith("label 'y': 1 missing value(s)")
    assert "cannot be imputed: drop those rows" in message
    assert "nan_policy is 'error'" not in message and "'impute' constant" not in message


def test_validation_problems_list_every_error_in_check_order() -> None:
    from ppdp.data.encoding import encode_collecting

    df = _frame(8, np.random.default_rng(5))
    df.loc[0, "age"] = np.nan
    df.loc[[1, 2], "colour"] = "mauve"
    df.loc[3, "y"] = None
    problems = encode_collecting(_schema(), df)[3]
    messages = [str(e) for e in problems.errors()]
    assert len(messages) == 3
    assert messages[0] == str(problems.first_error())
    assert messages[0].startswith("column 'age': 1 missing")
    assert messages[1].startswith("column 'colour': 2 value(s) are not among")
    assert messages[2].startswith("label 'y': 1 missing")
