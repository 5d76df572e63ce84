"""A missing column's error names the column of the data the user probably meant."""

from __future__ import annotations

import pandas as pd
import pytest

from ppdp.data import Schema
from ppdp.data.names import near_names
from ppdp.exceptions import DataValidationError, MissingColumnsError


@pytest.mark.parametrize(
    ("wanted", "why", "found"),
    [
        ("Age", "spaces around the name", "' Age '"),
        ("age", "other capitals and spaces around the name", "' Age '"),
        ("household income", "other capitals", "'Household income'"),
        ("Houshold income", "a close spelling", "'Household income'"),
    ],
)
def test_each_kind_of_near_name_is_named_with_its_reason(wanted, why, found):
    text = near_names([wanted], [" Age ", "Household income", "Region"])
    assert text == (
        f"; the data has {found} for {wanted!r} ({why}): use the name exactly as the data writes it"
    )


def test_no_clause_when_nothing_is_close():
    assert near_names(["Zip code"], [" Age ", "Household income", 3]) == ""
    assert near_names([], ["Age"]) == ""


def test_where_names_the_holder():
    assert near_names(["age"], ["Age"], where="the schema").startswith("; the schema has 'Age'")


def _schema() -> Schema:
    return Schema.from_dict(
        {
            "columns": [
                {"name": "Age", "type": "numeric", "lower": 0, "upper": 100},
                {"name": "Sex", "type": "categorical", "categories": ["M", "F"]},
            ]
        }
    )


def test_a_csv_header_with_spaces_is_named_before_any_row_is_read(tmp_path):
    from ppdp.data.draft import read_table

    path = tmp_path / "t.csv"
    path.write_text(" Age ;Sex\n30;M\n", encoding="utf-8")
    with pytest.raises(MissingColumnsError) as info:
        read_table(path, columns=["Age", "Sex"])
    assert str(info.value).endswith(
        "; the data has ' Age ' for 'Age' (spaces around the name): use the name exactly as "
        "the data writes it"
    )
    assert info.value.missing == ("Age",)


def test_encoding_a_frame_names_the_near_column():
    df = pd.DataFrame({"age": [30], "Sex": ["M"]})
    with pytest.raises(
        DataValidationError, match=r"the data has 'age' for 'Age' \(other capitals\)"
    ):
        _schema().encode(df)
