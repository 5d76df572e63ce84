"""Open categorical columns (``open: true``): declared, written back, refused elsewhere."""

from __future__ import annotations

import pytest

from ppdp.data import OpenCategoricalColumn, Schema
from ppdp.exceptions import SchemaError

_RAW = {
    "columns": [
        {"name": "dx", "type": "categorical", "open": True, "categories": ["I10"]},
        {"name": "los", "type": "numeric", "lower": 1, "upper": 365},
    ]
}


def test_an_open_column_is_kept_apart_from_the_encoded_columns_and_round_trips() -> None:
    s = Schema.from_dict(_RAW)
    assert s.column_names == ("los",)  # not encoded: no one-hot block
    assert s.open_column_names == ("dx",)
    assert s.open_column("dx") == OpenCategoricalColumn("dx", ("I10",))
    assert s.feature_names == ("los",)
    assert Schema.from_dict(s.to_dict()) == s


def test_a_closed_column_without_categories_names_open_as_the_way_out() -> None:
    with pytest.raises(SchemaError, match=r"'categories' is missing.*open: true"):
        Schema.from_dict({"columns": [{"name": "dx", "type": "categorical"}]})


@pytest.mark.parametrize(
    ("column", "match"),
    [
        ({"name": "dx", "type": "categorical", "open": "yes"}, r"open \('yes'\) must be"),
        ({"name": "dx", "type": "categorical", "open": True, "other": "x"}, "unknown key 'other'"),
    ],
)
def test_bad_open_declarations_are_refused_in_one_line(column: dict, match: str) -> None:
    with pytest.raises(SchemaError, match=match):
        Schema.from_dict({"columns": [column]})


def test_every_other_publisher_and_learner_refuses_an_open_column_in_one_line() -> None:
    from ppdp.learn import PrivateLogisticRegression
    from ppdp.publish import DPPCAPublisher, TableSynthesizer

    s = Schema.from_dict(_RAW)
    for est in (
        TableSynthesizer(1.0, s),
        DPPCAPublisher(1.0, 1, s),
        PrivateLogisticRegression(epsilon=1.0, schema=s),
    ):
        with pytest.raises(SchemaError, match=r"^column 'dx' is declared open") as err:
            est._params()  # what fit validates first, before reading anything
        assert "\n" not in str(err.value)
        assert type(est).__name__ in str(err.value)
