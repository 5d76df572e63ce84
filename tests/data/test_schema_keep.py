"""The schema's ``keep`` (issue 30): pairs a synthetic release must keep, round-tripped."""

from __future__ import annotations

import pytest

from ppdp.data import Schema
from ppdp.exceptions import SchemaError

COLUMNS = [
    {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
    {"name": "los", "type": "numeric", "lower": 0, "upper": 365, "integer": True},
    {"name": "cost", "type": "numeric", "lower": 0, "upper": 1e6},
]


def schema(keep) -> Schema:
    return Schema.from_dict(
        {"columns": COLUMNS, "label": {"name": "y", "classes": [0, 1]}, "keep": keep}
    )


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_keep_round_trips_through_the_file(tmp_path, suffix) -> None:
    s = schema([["los", "cost"], ["age", "los"], ["y", "age"]])
    assert s.keep == (("los", "cost"), ("age", "los"), ("y", "age"))
    path = s.to_file(tmp_path / f"s{suffix}")
    back = Schema.from_file(path)
    assert back == s and back.keep == s.keep
    assert "keep" in path.read_text()


def test_no_keep_leaves_the_file_and_the_fingerprint_as_before() -> None:
    s = schema(None)
    assert s.keep == () and "keep" not in s.to_dict()
    assert s == Schema.from_dict({"columns": COLUMNS, "label": {"name": "y", "classes": [0, 1]}})


def test_without_label_drops_the_pairs_naming_it() -> None:
    s = schema([["los", "cost"], ["y", "age"]]).without_label()
    assert s.keep == (("los", "cost"),)


@pytest.mark.parametrize(
    ("keep", "message"),
    [
        ([["los", "price"]], "keep: pair [los, price] names 'price', which is not a declared"),
        ([["los", "los"]], "keep: pair [los, los] names the same column twice"),
        ([["los", "cost"], ["cost", "los"]], "keep: pair [cost, los] is declared twice"),
        ([["los", "cost", "age"]], "keep: each entry (['los', 'cost', 'age']) must be a pair"),
        ([["los", 3]], "keep: each entry (['los', 3]) must be a pair"),
        ("los:cost", "keep ('los:cost') must be a list of column pairs"),
    ],
)
def test_bad_keep_is_one_line(keep, message) -> None:
    with pytest.raises(SchemaError) as info:
        schema(keep)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)
