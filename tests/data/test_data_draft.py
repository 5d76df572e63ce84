"""draft_schema: proposes bounds and domains from data, and always warns that they leak."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ppdp.data import Schema, draft_schema, draft_schema_from_file, read_table
from ppdp.exceptions import DataValidationError, PPDPWarning, PrivacyLeakWarning


def _df() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": [23, 45, 67, 31],
            "score": [0.5, -1.25, 3.0, 2.0],
            "flag": [True, False, True, True],
            "const": [7, 7, 7, 7],
            "city": ["Oslo", "Bergen", "?", "Oslo"],
            "label": ["yes", "no", "no", "yes"],
        }
    )


def test_draft_always_warns_and_proposes_observed_domains() -> None:
    with pytest.warns(PrivacyLeakWarning, match="leak"):
        s = draft_schema(_df(), label="label", missing_values=["?"])
    assert isinstance(s, Schema)
    age = s.column("age")
    assert (age.lower, age.upper, age.integer) == (23, 67, True)  # type: ignore[union-attr]
    score = s.column("score")
    assert (score.lower, score.upper, score.integer) == (-1.25, 3.0, False)  # type: ignore[union-attr]
    flag = s.column("flag")
    assert (flag.lower, flag.upper, flag.integer) == (0, 1, True)  # type: ignore[union-attr]
    const = s.column("const")
    assert (const.lower, const.upper) == (7, 8)  # type: ignore[union-attr]
    assert s.column("city").categories == ("Bergen", "Oslo")  # type: ignore[union-attr]
    assert s.label is not None and s.label.classes == ("no", "yes")
    assert s.missing_values == ("?",)
    # The draft encodes the data it came from without clipping anything.
    _, _, report = s.encode(_df().drop(index=2), return_report=True)
    assert not report.has_corrections


def test_draft_warns_even_without_numeric_columns() -> None:
    with pytest.warns(PrivacyLeakWarning):
        draft_schema(pd.DataFrame({"c": ["a", "b"]}))


def test_too_many_categories_are_left_out_with_a_warning() -> None:
    df = pd.DataFrame({"id": [f"p{i}" for i in range(30)], "x": np.arange(30)})
    with pytest.warns(PrivacyLeakWarning), pytest.warns(PPDPWarning, match="'id'"):
        s = draft_schema(df, max_categories=10)
    assert s.column_names == ("x",)


def test_numeric_text_and_integral_floats() -> None:
    df = pd.DataFrame({"n": ["1", "5", "3"], "f": [1.0, 2.0, np.nan]})
    with pytest.warns(PrivacyLeakWarning):
        s = draft_schema(df)
    assert s.column("n").upper == 5  # type: ignore[union-attr]
    assert s.column("f").integer  # type: ignore[union-attr]


def test_draft_errors() -> None:
    with pytest.raises(DataValidationError, match=r"label .'nope'. is not a column"):
        draft_schema(_df(), label="nope")
    with (
        pytest.raises(DataValidationError, match=r"label .'const'. has 1 distinct"),
        pytest.warns(PrivacyLeakWarning),
    ):
        draft_schema(_df(), label="const")
    with pytest.raises(DataValidationError, match="DataFrame"):
        draft_schema([[1, 2]])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_categories"):
        draft_schema(_df(), max_categories=0)


@pytest.mark.parametrize("name", ["t.csv", "t.csv.gz", "t.tsv", "t.parquet"])
def test_read_table_formats(tmp_path, name) -> None:
    pytest.importorskip("pyarrow")
    df = _df()
    path = tmp_path / name
    if name.endswith(".parquet"):
        df.to_parquet(path)
    else:
        df.to_csv(path, index=False, sep="\t" if ".tsv" in name else ",")
    back = read_table(path)
    assert back.shape == df.shape and list(back.columns) == list(df.columns)
    with pytest.warns(PrivacyLeakWarning):
        s = draft_schema_from_file(path, label="label")
    assert s.label is not None


def test_read_table_errors(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_table(tmp_path / "missing.csv")
    with pytest.raises(DataValidationError, match=r"must be a \.csv"):
        read_table(tmp_path / "data.xlsx")
    bad = tmp_path / "bad.csv"
    bad.write_text('a,b\n1,2\n"unterminated\n')
    with pytest.raises(DataValidationError, match="could not be read as CSV") as exc:
        read_table(bad)
    assert "\n" not in str(exc.value)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(DataValidationError, match="could not be read"):
        read_table(empty)
