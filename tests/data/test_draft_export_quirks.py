"""``schema draft`` on a spreadsheet export: dates, constant columns, an empty last column."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

from ppdp.cli import main
from ppdp.data import Schema, draft_schema
from ppdp.exceptions import PPDPWarning


def _messages(df: pd.DataFrame, **kw) -> tuple[Schema, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        schema = draft_schema(df, **kw)
    return schema, [str(w.message) for w in caught if issubclass(w.category, PPDPWarning)]


@pytest.mark.parametrize(
    ("written", "fmt", "lower", "upper"),
    [
        (["04/05/2025", "27/02/2025", "21/03/2025"], "%d/%m/%Y", "2025-02-27", "2025-05-04"),
        (["2025-03-14", "2025-12-01", "2024-01-31"], None, "2024-01-31", "2025-12-01"),
    ],
)
def test_a_date_column_is_drafted_as_a_date_column(written, fmt, lower, upper):
    df = pd.DataFrame({"when": written * 30, "x": [0.5, 1.5, 2.5] * 30})
    schema, messages = _messages(df)
    col = schema.column("when")
    assert col.date and col.date_format == fmt
    assert col.to_dict()["lower"] == lower and col.to_dict()["upper"] == upper
    assert not any("'when'" in m for m in messages)  # a clean date shape: nothing to say


@pytest.mark.parametrize(
    ("written", "shape", "why"),
    [
        (["2025-03-14 09:30", "2025-12-01 17:05"], "dddd-dd-dd dd:dd", "time of day"),
        (["04/05/2025", "02/03/2025"], "dd/dd/dddd", "cannot be told apart"),
        (["04/05/25", "27/02/25"], "dd/dd/dd", "two-digit years"),
    ],
)
def test_a_date_column_of_an_unclear_shape_is_named_and_left_out(written, shape, why):
    df = pd.DataFrame({"when": written * 30, "x": [0.5, 1.5] * 30})
    schema, messages = _messages(df)
    assert "when" not in schema.column_names
    (line,) = [m for m in messages if "'when'" in m]
    assert f"written like {shape!r}" in line and why in line
    assert not any(v in line for v in written)  # no value of the data is shown


def test_text_that_only_starts_like_a_date_is_a_category():
    df = pd.DataFrame({"code": ["12/05/2025 A", "01/01/2024"] * 30, "x": list(range(60))})
    schema, messages = _messages(df)
    assert "code" in schema.column_names
    assert not any("dates" in m for m in messages)


def test_constant_columns_are_named_in_one_warning_and_kept():
    df = pd.DataFrame({"wave": [3] * 40, "site": ["A"] * 40, "x": range(40)})
    schema, messages = _messages(df)
    assert {"wave", "site"} <= set(schema.column_names)
    (line,) = [m for m in messages if "one value in every row" in m]
    assert line.startswith("column(s) 'wave', 'site' hold one value")


def test_a_varying_column_is_not_called_constant():
    _, messages = _messages(pd.DataFrame({"x": [1.5, 2.5] * 20, "c": ["a", "b"] * 20}))
    assert not any("one value in every row" in m for m in messages)


def test_the_empty_column_of_a_trailing_separator_is_named_by_position(tmp_path, capsys):
    path = tmp_path / "export.csv"
    lines = ["age;sex;"] + [f"{20 + i % 50};{'MF'[i % 2]};" for i in range(60)]
    path.write_text("\r\n".join(lines) + "\r\n", encoding="utf-8-sig")
    assert main(["schema", "draft", str(path), "-o", str(tmp_path / "s.json")]) == 0
    err = capsys.readouterr().err
    assert "column 3 of the header has no name and no values" in err
    assert "Unnamed" not in err
    assert Schema.from_file(tmp_path / "s.json").column_names == ("age", "sex")
