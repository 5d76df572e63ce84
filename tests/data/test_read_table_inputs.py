"""A new user's text tables (trial items 2-5): wrong encoding, decimal commas, a wrong
--sep, and when the detected separator is said."""

from __future__ import annotations

import logging

import pandas as pd
import pytest

from ppdp.data.draft import decimal_mark, read_table
from ppdp.exceptions import DataValidationError, ParameterError

ROWS = "id;age;income;city\n1;44;29469,27;Oslo\n2;47;21056,5;Tromsø\n3;50;100;Bergen\n"


def test_latin1_file_read_as_utf8_names_the_byte_the_line_and_the_flag(tmp_path) -> None:
    path = tmp_path / "latin.csv"
    path.write_bytes(ROWS.replace(",", ".").encode("latin-1"))
    with pytest.raises(DataValidationError) as exc:
        read_table(path)
    msg = str(exc.value)
    assert "is not valid UTF-8 (byte 0xf8 at line 3); pass --encoding (e.g. latin-1)" in msg
    with pytest.raises(DataValidationError, match="byte 0xf8 at line 3"):
        read_table(path, columns=["age", "city"])
    assert read_table(path, encoding="latin-1")["city"][1] == "Tromsø"


def test_bad_byte_in_the_header_is_line_one(tmp_path) -> None:
    path = tmp_path / "h.csv"
    path.write_bytes("año;n\n1;2\n".encode("latin-1"))
    with pytest.raises(DataValidationError, match=r"byte 0xf1 at line 1\)"):
        read_table(path, sep=";")


def test_decimal_commas_are_detected_and_said(tmp_path, caplog) -> None:
    path = tmp_path / "excel.csv"
    path.write_text(ROWS, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="ppdp.data"):
        df = read_table(path)
    assert df["income"].tolist() == [29469.27, 21056.5, 100.0]
    assert "'income'" in caplog.text and "29469" not in caplog.text  # names, not values
    assert "--decimal" in caplog.text
    assert df["city"].tolist() == ["Oslo", "Tromsø", "Bergen"]  # text stays text
    # given: no detection, no warning
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="ppdp.data"):
        assert read_table(path, decimal=".")["income"][0] == "29469,27"
        assert read_table(path, decimal=",")["income"][0] == pytest.approx(29469.27)
        with decimal_mark("."):
            assert read_table(path, columns=["income"])["income"][0] == "29469,27"
    assert "decimal" not in caplog.text
    with pytest.raises(ParameterError, match=r"--decimal \(';'\) must be ',' or '.'"):
        read_table(path, decimal=";")


def test_a_comma_separated_file_is_never_read_with_decimal_commas(tmp_path) -> None:
    path = tmp_path / "c.csv"
    pd.DataFrame({"a": ["1,5", "2,5"], "b": [1, 2]}).to_csv(path, index=False)
    assert read_table(path)["a"].tolist() == ["1,5", "2,5"]
    with pytest.raises(ParameterError, match="cannot also be the separator"):
        read_table(path, decimal=",")


@pytest.mark.parametrize("columns", [None, ["age", "city"]])
def test_a_wrong_sep_names_the_one_column_header_and_the_separator_that_works(
    tmp_path, columns
) -> None:
    path = tmp_path / "clinic.csv"
    path.write_text(ROWS, encoding="utf-8")
    with pytest.raises(DataValidationError) as exc:
        read_table(path, sep=",", columns=columns)
    msg = str(exc.value)
    assert "header is one column ('id;age;income;city')" in msg
    assert "4 columns with --sep ';'" in msg
    assert "missing column" not in msg


def test_a_clear_detection_is_info_an_ambiguous_one_a_warning(tmp_path, caplog) -> None:
    clear = tmp_path / "clear.csv"
    clear.write_text("a;b\n1;2\n")
    with caplog.at_level(logging.INFO, logger="ppdp.data"):
        read_table(clear)
    (record,) = [r for r in caplog.records if "separated" in r.getMessage()]
    assert record.levelno == logging.INFO
    caplog.clear()
    mixed = tmp_path / "mixed.csv"
    mixed.write_text("a;b;c,d\n1;2;3\n")
    with caplog.at_level(logging.INFO, logger="ppdp.data"):
        assert list(read_table(mixed).columns) == ["a", "b", "c,d"]
    (record,) = [r for r in caplog.records if "separated" in r.getMessage()]
    assert record.levelno == logging.WARNING and "1 ','" in record.getMessage()


def test_a_txt_export_is_read_like_a_csv(tmp_path):
    """New-user trial: a .txt export was refused for its extension."""
    from ppdp.data.draft import read_table

    path = tmp_path / "export.txt"
    path.write_text("id;age;sex\n1;30;a\n2;40;b\n", encoding="utf-8")
    df = read_table(path)
    assert list(df.columns) == ["id", "age", "sex"] and df.age.tolist() == [30, 40]
