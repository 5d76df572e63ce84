"""The schema form loses nothing: a schema shown as the form and posted back unchanged is
the same schema (draft flag aside), for every kind of column the form shows."""

from __future__ import annotations

import pandas as pd
import pytest

from ppdp.data import Schema
from ppdp.data.schema_files import draft_schema_file
from ppdp.ui._schema_form import (
    column_rows,
    error_column,
    schema_from_form,
    split_values,
    unit_fields,
)

SCHEMA = {
    "columns": [
        {"name": "age", "type": "numeric", "lower": 17, "upper": 90, "integer": True,
         "impute": 40},
        {"name": "income", "type": "numeric", "lower": 0, "upper": 1000000.5, "scale": "log",
         "cuts": [5000, 20000], "impute": 20000},
        {"name": "visited", "type": "numeric", "date": True, "lower": "2021-01-01",
         "upper": "2023-12-31", "impute": "2022-01-01"},
        {"name": "rate", "type": "numeric", "lower": -0.5, "upper": 1e-3, "decimals": 4,
         "impute": 0},
        {"name": "region", "type": "categorical", "categories": ["north", "south", "01"],
         "other": "elsewhere", "impute": "north",
         "groups": {"n": ["north"], "s": ["south", "01", "elsewhere"]}},
        {"name": "code", "type": "categorical", "categories": [1, 2, 30], "impute": 1},
    ],
    "label": {"name": "y", "classes": ["no", "yes"]},
    "missing_values": ["?", "NA"],
    "nan_policy": "impute",
    "keep": [["age", "income"]],
    "privacy_unit": {"column": "patient", "max_rows": 4},
}  # fmt: skip


def _form(schema: dict, public: set[str]) -> dict[str, str]:
    """What a browser posts for the form of ``schema``, untouched."""
    form: dict[str, str] = {}
    for row in column_rows(schema, public):
        p = f"c{row['i']}"
        form |= {f"{p}-type": row["type"], f"{p}-lower": row["lower"], f"{p}-upper": row["upper"],
                 f"{p}-scale": row["scale"], f"{p}-categories": row["categories"],
                 f"{p}-other": row["other"], f"{p}-impute": row["impute"]}  # fmt: skip
        form |= {f"{p}-integer": "on"} if row["integer"] else {}
        form |= {f"{p}-date": "on"} if row["date"] else {}
        form |= {f"{p}-public": "on"} if row["public"] else {}
    label = schema.get("label")
    form["missing"] = ", ".join(schema.get("missing_values", []))
    form["nan_policy"] = schema.get("nan_policy", "error")
    form |= {f"unit-{k}": v for k, v in unit_fields(schema).items()}
    if label:
        form["label-classes"] = ", ".join(map(str, label["classes"]))
        form |= {"label-public": "on"} if label["name"] in public else {}
    return form


def test_an_unchanged_form_is_the_same_schema():
    schema = Schema.from_dict(SCHEMA).to_dict()
    names = {c["name"] for c in schema["columns"]} | {"y"}
    back, public = schema_from_form(schema, _form(schema, names))
    assert public == names
    assert Schema.from_dict(back) == Schema.from_dict(schema)
    assert "draft" not in back


def test_a_drafted_schema_round_trips_and_stays_a_draft_until_all_are_public(tmp_path):
    df = pd.DataFrame({"age": [20, 35, 61, 44] * 5, "city": ["a", "b", "?", "a"] * 5,
                       "amount": [1.5, 20.25, 300.0, 7.0] * 5})  # fmt: skip
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    schema = draft_schema_file(path, missing_values=["?"]).schema.to_dict()
    assert schema["draft"] is True
    back, _ = schema_from_form(schema, _form(schema, {"age", "city"}))
    assert back["draft"] is True  # 'amount' is not confirmed
    back, _ = schema_from_form(schema, _form(schema, {"age", "city", "amount"}))
    assert Schema.from_dict(back) == Schema.from_dict(schema).reviewed()


def test_a_column_left_out_or_retyped():
    schema = Schema.from_dict(SCHEMA).to_dict()
    form = _form(schema, set())
    form |= {"c0-drop": "on", "c5-type": "numeric", "c5-lower": "1", "c5-upper": "30",
             "c5-impute": ""}  # fmt: skip
    back, _ = schema_from_form(schema, form)
    names = [c["name"] for c in back["columns"]]
    assert "age" not in names
    assert back["columns"][-1] == {"name": "code", "type": "numeric", "lower": 1, "upper": 30}


def test_the_privacy_unit_is_set_changed_and_removed_by_the_form():
    schema = Schema.from_dict(SCHEMA).to_dict()
    assert unit_fields(schema) == {"column": "patient", "max_rows": "4"}
    form = _form(schema, set()) | {"unit-column": "visit", "unit-max_rows": " 2 "}
    back, _ = schema_from_form(schema, form)
    assert back["privacy_unit"] == {"column": "visit", "max_rows": 2}
    back, _ = schema_from_form(schema, form | {"unit-column": ""})  # each row a person
    assert "privacy_unit" not in back
    # a form without the unit's fields keeps the unit as it was
    kept = {k: v for k, v in _form(schema, set()).items() if not k.startswith("unit-")}
    assert schema_from_form(schema, kept)[0]["privacy_unit"] == SCHEMA["privacy_unit"]
    # a refused form's text is shown again as typed
    assert unit_fields(schema, {"unit-column": "x", "unit-max_rows": "0"})["max_rows"] == "0"


@pytest.mark.parametrize(
    ("text", "values"),
    [("a, b ,c", ["a", "b", "c"]), ("1, 02, -3, x", [1, "02", -3, "x"]), (" , ", [])],
)
def test_split_values_keeps_text_that_is_not_a_plain_integer(text, values):
    assert split_values(text) == values


def test_error_column_names_the_column_of_a_schema_error():
    names = ["age", "it's"]
    assert error_column("column 'age': lower (90.0) must be < upper (17.0)", names) == "age"
    assert error_column("keep pair ('age', 'x'): 'x' is not declared", names) == "age"
    assert error_column("nan_policy ('x') must be one of", names) is None
