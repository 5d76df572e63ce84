"""draft_schema: proposes bounds and domains from data, and always warns that they leak."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

from ppdp.data import Schema, draft_schema, draft_schema_from_file, read_table
from ppdp.data.draft import detect_separator
from ppdp.exceptions import DataValidationError, ParameterError, PPDPWarning, PrivacyLeakWarning


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
    assert s.column("city").categories == ("Bergen", "Oslo")  # type: ignore[union-attr]  # sorted
    assert s.label is not None and s.label.classes == ("no", "yes")
    assert s.missing_values == ("?",)
    # The draft encodes the data it came from without clipping anything.
    _, _, report = s.encode(_df().drop(index=2), return_report=True)
    assert not report.has_corrections


def test_draft_warns_even_without_numeric_columns() -> None:
    with pytest.warns(PrivacyLeakWarning):
        draft_schema(pd.DataFrame({"c": ["a", "b"]}))


def test_too_many_categories_are_drafted_open_with_a_warning() -> None:
    """A 15-code column over max_categories=10 is kept as an open column (issue 33: a
    diagnosis column was dropped), the warning naming --max-categories; it round-trips
    through the file and every publisher but the private-key group-by refuses it."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {"name": [f"p{i % 15}" for i in range(30)], "x": rng.integers(0, 100, 30) + 0.5}
    )
    with (
        pytest.warns(PrivacyLeakWarning),
        pytest.warns(PPDPWarning, match=r"'name'.*--max-categories.*open"),
    ):
        s = draft_schema(df, max_categories=10)
    assert s.column_names == ("x",)
    assert s.open_column_names == ("name",)
    assert {"name": "name", "type": "categorical", "open": True} in s.to_dict()["columns"]
    assert Schema.from_dict(s.to_dict()) == s


def test_identifiers_codes_exclusions_and_natural_order() -> None:
    """A new user's table: an ID column, integer-coded categories, months."""
    n = 60
    months = ["mar", "jan", "feb", "dec"] * (n // 4)
    df = pd.DataFrame(
        {
            "ID": np.arange(1000, 1000 + n),
            "SEX": [1, 2, 2] * (n // 3),
            "EDUCATION": [1, 2, 3, 4, 5, 6] * (n // 6),
            "LIMIT": np.linspace(1e4, 5e5, n),
            "month": months,
            "note": ["x"] * n,
        }
    )
    with pytest.warns(PPDPWarning) as caught:
        s = draft_schema(df, exclude=["note"])
    texts = " ".join(str(w.message) for w in caught)
    assert any(isinstance(w.message, PrivacyLeakWarning) for w in caught)
    assert "'ID'" in texts and "identifier" in texts
    assert "'SEX', 'EDUCATION'" in texts and "categorical" in texts
    assert s.column_names == ("SEX", "EDUCATION", "LIMIT", "month")
    assert s.column("SEX").categories == (1, 2)  # type: ignore[union-attr]
    assert s.column("EDUCATION").categories == (1, 2, 3, 4, 5, 6)  # type: ignore[union-attr]
    assert s.column("month").categories == ("jan", "feb", "mar", "dec")  # type: ignore[union-attr]
    with pytest.raises(DataValidationError, match=r"exclude \('nope'\)"):
        draft_schema(df, exclude=["nope"])


def test_separator_is_detected_from_the_header_and_can_be_given(tmp_path, caplog) -> None:
    path = tmp_path / "bank.csv"
    path.write_text('"id";"age";"job"\n1;30;"admin.; clerk"\n2;41;"blue-collar"\n')
    with caplog.at_level("INFO", logger="ppdp.data"):
        df = read_table(path)
    assert list(df.columns) == ["id", "age", "job"] and df["job"][0] == "admin.; clerk"
    assert "';'-separated" in caplog.text
    assert detect_separator(path) == ";"
    assert list(read_table(path, sep=";", columns=["age"]).columns) == ["age"]
    latin = tmp_path / "latin.csv"
    latin.write_bytes("city|n\nTromsø|1\n".encode("latin-1"))
    assert read_table(latin, encoding="latin-1")["city"][0] == "Tromsø"
    with pytest.raises(ParameterError, match="encoding"):
        read_table(latin, encoding="no-such-codec")
    with pytest.raises(ParameterError, match="sep"):
        read_table(latin, sep=";;")


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


def test_drafted_codes_are_sorted_with_their_numbers_read_as_numbers():
    import pandas as pd

    from ppdp.data import draft_schema

    df = pd.DataFrame({"code": ["c10", "b", "c2", "A", "c1"] * 4, "x": range(20)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = draft_schema(df)
    assert s.column("code").categories == ("A", "b", "c1", "c2", "c10")


def test_a_column_over_max_categories_names_the_flag():
    import pandas as pd

    from ppdp.data import draft_schema

    codes = [f"k{i % 55}" for i in range(110)]
    df = pd.DataFrame({"code": codes, "x": [i % 13 + 0.5 for i in range(110)]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        draft_schema(df)
    said = [str(w.message) for w in caught]
    wanted = r"'code' \(55\) have more distinct values.*--max-categories"
    assert any(re.search(wanted, m) for m in said), said
