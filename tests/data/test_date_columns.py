"""Date columns (``type: numeric`` with ``date: true``): declared, encoded, released, reported.

A date column is a numeric column in days since 1970-01-01: its schema file writes ISO
dates, its data may be ISO texts, texts in a declared ``date_format``, ``datetime64`` or
Python dates, and its released values are ISO texts within the bounds.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest

from ppdp.data import NumericColumn, Schema, draft_schema
from ppdp.data.dates import day_text, day_texts, parse_dates
from ppdp.data.encoding import encode, encode_collecting
from ppdp.exceptions import DataValidationError, PPDPWarning, SchemaError

ISO = re.compile(r"\d{4}-\d{2}-\d{2}")
LOWER, UPPER = "2015-01-01", "2024-12-31"  # days 16436 and 20088
LO_DAY, HI_DAY = 16436, 20088


def date_schema(**extra) -> Schema:
    col = {"name": "seen", "type": "numeric", "date": True, "lower": LOWER, "upper": UPPER}
    col.update(extra)
    return Schema.from_dict(
        {"columns": [col, {"name": "k", "type": "numeric", "lower": 0, "upper": 1}]}
    )


def encoded_days(schema: Schema, values, **kw) -> np.ndarray:
    """The date column's encoded values, back in days (exact: integer days on this span)."""
    df = pd.DataFrame({"seen": values, "k": 0.5})
    X = schema.encode(df, **kw)[0]
    return np.rint(LO_DAY + X[:, 0] * (HI_DAY - LO_DAY))


# ------------------------------------------------------------------ schema declarations
def test_the_day_numbers_are_days_since_1970():
    days, bad = parse_dates(pd.Series(["1970-01-01", "1969-12-31", "2021-03-14", "2000-02-29"]))
    assert days.tolist() == [0, -1, 18700, 11016] and not bad.any()
    assert day_texts([0, -1, 18700, 11016]).tolist() == [
        "1970-01-01", "1969-12-31", "2021-03-14", "2000-02-29",
    ]  # fmt: skip


def test_a_json_schema_round_trips_exactly(tmp_path):
    schema = date_schema(impute="2020-02-29", cuts=["2018-01-01", "2021-06-30"])
    col = schema.column("seen")
    assert (col.lower, col.upper, col.impute, col.cuts) == (
        LO_DAY, HI_DAY, 18321, (17532, 18808),
    )  # fmt: skip
    assert col.integer  # implied
    d = schema.to_dict()["columns"][0]
    assert d == {
        "name": "seen", "type": "numeric", "date": True, "lower": LOWER, "upper": UPPER,
        "impute": "2020-02-29", "cuts": ["2018-01-01", "2021-06-30"],
    }  # fmt: skip
    path = schema.to_file(tmp_path / "s.json")
    assert Schema.from_file(path) == schema
    assert Schema.from_dict(json.loads(schema.to_json())) == schema


def test_a_yaml_schema_with_unquoted_dates_is_read_and_written_back(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "columns:\n"
        "- {name: seen, type: numeric, date: true, lower: 2015-01-01, upper: 2024-12-31,\n"
        "   impute: 2020-02-29, cuts: [2018-01-01], date_format: '%d/%m/%Y'}\n",
        encoding="utf-8",
    )
    schema = Schema.from_file(path)
    col = schema.column("seen")
    assert (col.lower, col.upper, col.impute, col.cuts) == (LO_DAY, HI_DAY, 18321, (17532,))
    assert col.date_format == "%d/%m/%Y"
    again = tmp_path / "again.yaml"
    schema.to_file(again)
    assert Schema.from_file(again) == schema
    assert "lower: '2015-01-01'" in again.read_text(encoding="utf-8")


def test_the_python_api_takes_texts_dates_or_day_numbers():
    a = NumericColumn("d", LOWER, UPPER, date=True)
    b = NumericColumn("d", dt.date(2015, 1, 1), dt.datetime(2024, 12, 31), date=True)
    c = NumericColumn("d", LO_DAY, HI_DAY, date=True)
    assert a == b == c and a.integer


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"decimals": 1}, "column 'seen': decimals (1) cannot go with date: true"),
        ({"scale": "log"}, "column 'seen': scale ('log') cannot go with date: true"),
        ({"integer": False}, "column 'seen': integer (False) cannot go with date: true"),
        ({"lower": 16436}, "column 'seen': lower (16436) must be a date written YYYY-MM-DD"),
        ({"upper": "31/12/2024"}, "column 'seen': upper ('31/12/2024') must be a date written"),
        ({"impute": "2030-01-01"}, "column 'seen': impute (21915.0) must lie within"),
        ({"cuts": ["2014-01-01"]}, "column 'seen': cuts (16071.0 … 16071.0) must lie strictly"),
        ({"date_format": "%d/%m/%Y %H:%M"}, "holds a time of day; times are out of scope"),
        ({"date_format": "%Y"}, "must name the day, the month and the year"),
        ({"date_format": "%Y-%d-%m"}, "reads the ISO date 2001-02-03 as another day"),
    ],
)
def test_what_cannot_go_with_a_date_is_refused_in_one_line(extra, message):
    with pytest.raises(SchemaError, match=re.escape(message)) as info:
        date_schema(**extra)
    assert "\n" not in str(info.value)


def test_date_format_without_date_and_a_time_in_a_bound_are_refused():
    with pytest.raises(SchemaError, match=r"date_format .* goes with date: true only"):
        NumericColumn("d", 0, 1, date_format="%d/%m/%Y")
    with pytest.raises(SchemaError, match=r"lower \('2015-01-01T10:30:00'\) holds a time of day"):
        NumericColumn("d", dt.datetime(2015, 1, 1, 10, 30), UPPER, date=True)


# ------------------------------------------------------------------ encoding
def test_iso_texts_datetimes_and_python_dates_encode_to_their_days():
    schema = date_schema()
    want = [16436, 18700, 20088, 16437]
    texts = ["2015-01-01", " 2021-03-14", "2024-12-31", "2015-01-02"]
    stamps = pd.to_datetime(
        ["2015-01-01 00:00", "2021-03-14 23:59", "2024-12-31 12:00", "2015-01-02 06:00"]
    )
    dates = [dt.date(2015, 1, 1), dt.date(2021, 3, 14), dt.date(2024, 12, 31), dt.date(2015, 1, 2)]
    for values in (texts, stamps, dates, pd.Series(texts, dtype="string")):
        assert encoded_days(schema, values).tolist() == want
    aware = stamps.tz_localize("Europe/Paris")  # the day of its own time zone
    assert encoded_days(schema, aware).tolist() == want


def test_a_declared_date_format_reads_the_export_and_iso_texts():
    schema = date_schema(date_format="%d/%m/%Y")
    got = encoded_days(schema, ["14/03/2021", "1/1/2015", "2021-03-14"])
    assert got.tolist() == [18700, 16436, 18700]


def test_dates_outside_the_bounds_are_clipped_and_counted():
    schema = date_schema()
    df = pd.DataFrame({"seen": ["1999-05-01", "2021-03-14", "2031-01-01"], "k": 0.5})
    X, _, report = schema.encode(df, return_report=True)
    assert X[:, 0].tolist()[0] == 0.0 and X[:, 0].tolist()[2] == 1.0
    assert report.clipped == {"seen": 2}


@pytest.mark.parametrize(
    ("values", "extra", "count", "form"),
    [
        (
            ["2021-03-14", "14/03/2021", "soon", "2021-02-30"],
            {},
            3,
            "YYYY-MM-DD (ISO, e.g. 2021-03-14)",
        ),
        (["2021-03-14 10:30", "2021-03-14"], {}, 1, "YYYY-MM-DD (ISO, e.g. 2021-03-14)"),
        ([20210314, 20210315], {}, 2, "YYYY-MM-DD (ISO, e.g. 2021-03-14)"),
        (
            ["03/14/2021", "14/03/2021"],
            {"date_format": "%d/%m/%Y"},
            1,
            "'%d/%m/%Y' as declared by date_format (e.g. 14/03/2021) or YYYY-MM-DD",
        ),
    ],
)
def test_values_that_are_not_dates_are_refused_in_one_line(values, extra, count, form):
    schema = date_schema(**extra)
    df = pd.DataFrame({"seen": values, "k": 0.5})
    with pytest.raises(DataValidationError) as info:
        schema.encode(df)
    message = str(info.value)
    assert message == (
        f"column 'seen': {count} value(s) are not dates (declared date: true); write them as {form}"
    )
    assert not any(str(v) in message for v in values if str(v) not in form)
    # the collected problems of a partition raise the same line (the distributed path)
    problems = encode_collecting(schema, df)[3]
    assert str(problems.first_error()) == message


def test_on_invalid_mask_maps_a_non_date_to_the_impute_date_and_counts_it():
    schema = date_schema(impute="2020-01-01")
    df = pd.DataFrame({"seen": ["2021-03-14", "not a date", None], "k": 0.5})
    X, _, report = schema.encode(df, on_invalid="mask", return_report=True)
    assert report.masked == {"seen": 2}
    assert schema.decode(X)["seen"].tolist() == ["2021-03-14", "2020-01-01", "2020-01-01"]
    # without an impute date: the middle of the bounds, a whole day
    X, _, _ = date_schema().encode(df, on_invalid="mask", return_report=True)
    assert date_schema().decode(X)["seen"].tolist()[1] == day_text((LO_DAY + HI_DAY) // 2)


def test_missing_dates_are_imputed_under_nan_policy_impute():
    d = date_schema(impute="2020-01-01").to_dict()
    d["columns"][1]["impute"] = 0.5
    schema = Schema.from_dict({**d, "nan_policy": "impute", "missing_values": ["?"]})
    df = pd.DataFrame({"seen": ["2021-03-14", "?", np.nan, None], "k": 0.5})
    X, _, report = schema.encode(df, return_report=True)
    assert report.imputed == {"seen": 3}  # '?', NaN, None
    assert schema.decode(X)["seen"].tolist() == ["2021-03-14"] + ["2020-01-01"] * 3
    # an empty text is no date (as it is no number in a numeric column): refused
    with pytest.raises(DataValidationError, match="column 'seen': 1 value"):
        encode(schema, pd.DataFrame({"seen": [""], "k": 0.5}), log=False)
    # under nan_policy 'error' a missing date is refused like a missing number
    with pytest.raises(DataValidationError, match="column 'seen': 2 missing"):
        date_schema().encode(pd.DataFrame({"seen": ["2021-03-14", None, np.nan], "k": 0.5}))


def test_decode_gives_iso_dates_within_the_bounds():
    schema = date_schema()
    u = np.random.default_rng(3).uniform(-0.5, 1.5, size=500)
    out = schema.decode(np.column_stack([u, np.full(500, 0.5)]))["seen"]
    assert pd.api.types.is_string_dtype(out.dtype)
    assert out.map(lambda v: ISO.fullmatch(v) is not None).all()
    assert out.min() == LOWER and out.max() == UPPER  # u beyond [0, 1]: clipped to the bounds
    # encode -> decode is exact for in-bound dates
    days = np.random.default_rng(4).integers(LO_DAY, HI_DAY + 1, 300)
    texts = day_texts(days)
    X = schema.encode(pd.DataFrame({"seen": texts, "k": 0.5}))[0]
    assert schema.decode(X)["seen"].tolist() == texts.tolist()


# ------------------------------------------------------------------ draft and check
def test_draft_proposes_date_columns_from_texts_dates_and_datetimes():
    n = 40
    days = np.arange(18000, 18000 + n)
    df = pd.DataFrame(
        {
            "iso": day_texts(days),
            "export": pd.Series(days.astype("datetime64[D]")).dt.strftime("%d.%m.%Y"),
            "pydate": [dt.date(2020, 1, 1) + dt.timedelta(days=int(k)) for k in range(n)],
            "stamp": pd.Series(days.astype("datetime64[D]")).astype("datetime64[s]"),
            "x": np.linspace(0.5, 9.5, n),
        }
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        schema = draft_schema(df)
    assert not [w for w in caught if w.category is PPDPWarning]  # clean shapes: nothing to say
    for name, fmt in (("iso", None), ("export", "%d.%m.%Y"), ("stamp", None)):
        col = schema.column(name)
        assert col.date and col.date_format == fmt
        assert (col.lower, col.upper) == (18000, 18000 + n - 1)  # all distinct: not an ID
    assert schema.column("pydate").date and schema.column("pydate").lower == 18262


def test_schema_check_says_the_date_bounds_as_dates(tmp_path):
    from ppdp.data.schema_files import check_table_lines, describe_schema

    schema = date_schema(date_format="%d/%m/%Y", impute="2020-01-01")
    assert "  date column 'seen': [2015-01-01, 2024-12-31], written '%d/%m/%Y'" in (
        describe_schema(schema)
    )
    path = tmp_path / "t.csv"
    pd.DataFrame({"seen": ["14/03/2021", "01/01/2031", "x"], "k": [0.5] * 3}).to_csv(
        path, index=False
    )
    lines = check_table_lines(schema, path)
    (row,) = [line for line in lines if line.strip().startswith("seen")]
    assert row.split()[1:5] == ["[2015-01-01,", "2024-12-31]", "1", "33.3%"]
    assert any("1 value(s) are not dates" in line for line in lines)


def test_a_date_bound_without_date_true_says_what_to_declare():
    with pytest.raises(SchemaError) as info:
        Schema.from_dict(
            {
                "columns": [
                    {"name": "d", "type": "numeric", "lower": dt.date(2015, 1, 1), "upper": 1}
                ]
            }
        )
    assert str(info.value) == (
        "column 'd': lower (datetime.date(2015, 1, 1)) must be a finite number (a date: "
        "declare date: true for a date column)"
    )


def test_a_drafted_date_column_with_missing_values_gets_the_middle_date(tmp_path):
    from ppdp.data.schema_files import draft_schema_file

    pytest.importorskip("pyarrow")
    days = [dt.date(2020, 1, 1) + dt.timedelta(days=k) for k in range(40)]
    df = pd.DataFrame({"d": days, "x": np.linspace(0.5, 4.4, 40)})
    df.loc[3, "d"] = None
    df.to_parquet(tmp_path / "t.parquet", index=False)  # stored as date32
    result = draft_schema_file(tmp_path / "t.parquet", output=tmp_path / "s.yaml")
    col = result.schema.column("d")
    assert col.to_dict()["lower"] == "2020-01-01" and col.to_dict()["upper"] == "2020-02-09"
    assert result.schema.nan_policy == "impute" and day_text(col.impute) == "2020-01-20"
    assert any("missing values in 'd' (1)" in w for w in result.warnings)


def test_distinct_dates_are_not_called_an_identifier():
    from ppdp.data.schema_files import identifier_warnings

    schema = Schema.from_dict(
        {
            "columns": [
                {"name": "seen", "type": "numeric", "date": True, "lower": LOWER, "upper": UPPER},
                {"name": "visit", "type": "numeric", "lower": 0, "upper": 100, "integer": True},
            ]
        }
    )
    df = pd.DataFrame({"seen": day_texts(np.arange(LO_DAY, LO_DAY + 30)), "visit": range(30)})
    (line,) = identifier_warnings(schema, df)  # the distinct visit numbers are, the dates not
    assert line.startswith("column 'visit': 30 distinct values")


def test_a_schema_prints_as_its_yaml_file(tmp_path):
    """``print(schema)`` and IPython show the YAML a user would write, dates as dates;
    ``repr`` stays the dataclass's (a notebook trial printed one 4,000-character line)."""
    from ppdp.data import Schema

    spec = {
        "columns": [
            {"name": "seen", "type": "numeric", "date": True, "lower": "2020-01-01",
             "upper": "2020-12-31"},
            {"name": "colour", "type": "categorical", "categories": ["red", "blue"]},
        ]
    }  # fmt: skip
    schema = Schema.from_dict(spec)
    text = str(schema)
    (tmp_path / "s.yaml").write_text(text, encoding="utf-8")
    assert Schema.from_file(tmp_path / "s.yaml") == schema  # the printed text is the file
    assert "lower: '2020-01-01'" in text and "name: colour" in text
    assert repr(schema).startswith("Schema(columns=(NumericColumn(")

    class Printer:
        out = ""

        def text(self, t: str) -> None:
            Printer.out += t

    schema._repr_pretty_(Printer(), False)
    assert Printer.out == text
