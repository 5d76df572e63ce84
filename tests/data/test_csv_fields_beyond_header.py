"""Rows with values past the header's columns are refused, naming the line (issue 29).

Before, pandas dropped such values without a word when it read the schema's columns, and
took the first column for row labels when the first data row was the long one, so every
value of the file sat under the next column's name. Each case here was accepted then.
"""

from __future__ import annotations

import gzip

import pytest

from ppdp.data import draft, read_table
from ppdp.exceptions import DataValidationError


@pytest.mark.parametrize(
    ("text", "line", "fields"),
    [
        ("age,sex\n30,m\n40,f,extra\n", 3, 3),
        ("age,sex\n30,m,extra\n40,f\n", 2, 3),  # the first row: pandas shifted the columns
        ("age,sex\n30,m\n\n40,f,x,y\n", 4, 4),  # blank lines count as lines
        ('age,sex\n30,"m"\n40,f,extra\n', 3, 3),  # quotes: parsed with the csv module
        ("age,sex\r\n30,m\r\n40,f,extra\r\n", 3, 3),
        ("age,sex\n30,m\n40,f,extra", 3, 3),  # no final newline
    ],
    ids=["later-row", "first-row", "blank-line", "quoted", "crlf", "no-final-newline"],
)
@pytest.mark.parametrize("columns", [None, ["age", "sex"], ["sex"]], ids=["all", "both", "one"])
def test_a_row_with_a_value_past_the_header_is_refused_naming_its_line(
    tmp_path, text, line, fields, columns
):
    path = tmp_path / "t.csv"
    path.write_text(text, encoding="utf-8", newline="")
    with pytest.raises(DataValidationError) as info:
        read_table(path, columns=columns)
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    assert f"line {line} has {fields} fields where the header has 2" in message


def test_empty_fields_past_the_header_are_fine_and_shift_nothing(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("age,sex\n30,m,\n40,f,\n", encoding="utf-8")  # a separator ends each row
    for columns in (None, ["age", "sex"]):
        df = read_table(path, columns=columns)
        assert df["age"].tolist() == [30, 40] and df["sex"].tolist() == ["m", "f"]
        assert list(df.columns) == ["age", "sex"]


def test_the_scan_is_exact_across_chunk_boundaries_and_in_gzip(tmp_path, monkeypatch):
    monkeypatch.setattr(draft, "_SCAN_BYTES", 7)  # lines cut across chunks
    rows = [f"{i},{'m' if i % 2 else 'f'}" for i in range(50)]
    good = "age,sex\n" + "\n".join(rows) + "\n"
    path = tmp_path / "t.csv"
    path.write_text(good, encoding="utf-8")
    assert len(read_table(path, columns=["age", "sex"])) == 50
    rows[37] += ",x"
    bad = "age,sex\n" + "\n".join(rows) + "\n"
    path.write_text(bad, encoding="utf-8")
    zipped = tmp_path / "t.csv.gz"
    zipped.write_bytes(gzip.compress(bad.encode()))
    for p in (path, zipped):
        with pytest.raises(DataValidationError, match="line 39 has 3 fields"):
            read_table(p, columns=["age"])
