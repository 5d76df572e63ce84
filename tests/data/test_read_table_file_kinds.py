"""A file that is not a UTF-8 text table is named for what it is, with the fix."""

from __future__ import annotations

import pytest

from ppdp.cli import main
from ppdp.data.draft import read_table
from ppdp.exceptions import DataValidationError

TEXT = "age,sex\n30,M\n41,F\n"


def _refusal(path) -> str:
    with pytest.raises(DataValidationError) as info:
        read_table(path)
    return str(info.value)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_is_named_with_its_encoding_flag(tmp_path, encoding):
    path = tmp_path / "t.csv"
    path.write_bytes(TEXT.encode(encoding))
    text = _refusal(path)
    assert "utf-16" in text and "latin-1" not in text
    # and the flag it names reads the file
    named = "utf-16" if encoding == "utf-16" else encoding
    assert list(read_table(path, encoding=named).columns) == ["age", "sex"]


@pytest.mark.parametrize(
    ("head", "what"),
    [
        (b"PK\x03\x04\x14\x00\x06\x00\xff\xfe\x00\x01", "a ZIP archive"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1\xff\x00", "an old Excel (.xls) workbook"),
    ],
)
def test_a_workbook_saved_as_csv_is_named(tmp_path, head, what):
    path = tmp_path / "t.csv"
    path.write_bytes(head + b"\x00" * 100)
    text = _refusal(path)
    assert what in text and "save the sheet as CSV" in text


def test_a_workbook_suffix_gets_the_advice_in_one_line(tmp_path, capsys):
    path = tmp_path / "survey.xlsx"
    path.write_bytes(b"PK\x03\x04")
    assert main(["schema", "draft", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "save the sheet as CSV (UTF-8)" in err


def test_latin1_text_keeps_the_latin1_hint(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes("name,x\nJosé,1\n".encode("latin-1"))
    text = _refusal(path)
    assert text.endswith("pass --encoding (e.g. latin-1)")


def test_a_ragged_line_is_named_with_its_field_counts(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a;b\n1;2\n3;4\n5;6;7\n", encoding="utf-8")
    text = _refusal(path)
    assert text.endswith(
        "could not be read as CSV: line 4 has 3 fields where the header has 2 (separator "
        "';'): a value holding the separator must be in double quotes, or the file needs "
        "another --sep"
    )
