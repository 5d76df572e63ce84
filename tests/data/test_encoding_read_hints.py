"""A frame read with the wrong pandas options gets the option that reads it right."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from ppdp.data import Schema
from ppdp.exceptions import DataValidationError

CSV = "id;income;sex\nA1;1234,5;M\nA2;-0,25;F\nA3;77,0;F\n"
SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "income", "type": "numeric", "lower": -10, "upper": 1e6},
            {"name": "sex", "type": "categorical", "categories": ["M", "F"]},
        ]
    }
)


def _refusal(df: pd.DataFrame) -> str:
    with pytest.raises(DataValidationError) as info:
        SCHEMA.encode(df)
    return str(info.value)


def test_decimal_commas_name_the_decimal_option():
    text = _refusal(pd.read_csv(io.StringIO(CSV), sep=";"))
    assert text.endswith(
        "are not numbers (declared numeric); they are written with a decimal comma (like "
        "12,5): read the table with decimal=',' (pandas.read_csv(..., decimal=','); --decimal "
        ", on the command line)"
    )
    SCHEMA.encode(pd.read_csv(io.StringIO(CSV), sep=";", decimal=","))  # the fix works


def test_mixed_text_gets_no_decimal_hint():
    df = pd.DataFrame({"income": ["12,5", "n/a", "3,25"], "sex": ["M", "F", "M"]})
    assert "decimal comma" not in _refusal(df)


@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_one_column_named_with_a_separator_names_the_separator(sep):
    df = pd.read_csv(io.StringIO(CSV.replace(";", sep)))  # read with pandas' default ','
    text = _refusal(df)
    shown = "'\\t'" if sep == "\t" else repr(sep)
    assert text.endswith(
        f"the data has one column whose name holds {shown}: the file was read with the wrong "
        f"separator (pandas.read_csv(..., sep={shown}))"
    )


def test_a_real_missing_column_gets_no_separator_hint():
    df = pd.DataFrame({"income;x": [1.0]})
    df2 = pd.DataFrame({"income": [1.0], "other": ["M"]})
    assert "one column whose name" in _refusal(df)
    assert "separator" not in _refusal(df2)
