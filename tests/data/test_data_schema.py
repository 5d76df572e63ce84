"""Declared schemas: validation on construction, (de)serialisation, introspection."""

from __future__ import annotations

import dataclasses
import json
import math
import pickle

import pytest

from ppdp.data import CategoricalColumn, LabelSpec, NumericColumn, Schema
from ppdp.exceptions import SchemaError


def _schema_dict() -> dict:
    return {
        "columns": [
            {"name": "age", "type": "numeric", "lower": 17, "upper": 90, "integer": True},
            {"name": "score", "type": "numeric", "lower": -1.5, "upper": 2.5},
            {"name": "sex", "type": "categorical", "categories": ["F", "M"]},
            {"name": "colour", "type": "categorical", "categories": ["red", "green", "blue"]},
        ],
        "label": {"name": "y", "classes": ["no", "yes"]},
        "missing_values": ["?"],
    }


def test_valid_schema_introspection() -> None:
    s = Schema.from_dict(_schema_dict())
    assert s.column_names == ("age", "score", "sex", "colour", "y")
    assert [c.name for c in s.numeric_columns] == ["age", "score"]
    assert [c.name for c in s.categorical_columns] == ["sex", "colour"]
    assert s.feature_names == (
        "age",
        "score",
        "sex=F",
        "sex=M",
        "colour=red",
        "colour=green",
        "colour=blue",
    )
    assert s.n_features == 7
    assert s.blocks["sex"] == slice(2, 4)
    assert s.blocks["colour"] == slice(4, 7)
    assert (s.p1, s.p2) == (2, 2)
    assert s.max_row_l2_norm == math.sqrt(4)
    full = s.layout(include_label=True)
    assert full.n_features == 9
    assert full.blocks["y"] == slice(7, 9)
    assert full.feature_names[-2:] == ("y=no", "y=yes")
    assert (full.p1, full.p2) == (2, 3)
    assert full.max_row_l2_norm == pytest.approx(math.sqrt(5))
    assert s.classes == ("no", "yes") and s.n_classes == 2


def test_row_norm_bound_caps_the_norm() -> None:
    d = _schema_dict() | {"row_norm_bound": 1.0}
    s = Schema.from_dict(d)
    assert s.max_row_l2_norm == 1.0
    assert s.layout(include_label=True).max_row_l2_norm == pytest.approx(math.sqrt(2))
    loose = Schema.from_dict(_schema_dict() | {"row_norm_bound": 100.0})
    assert loose.max_row_l2_norm == 2.0


def test_other_bucket_is_appended_once() -> None:
    c = CategoricalColumn("c", ("a", "b"), other="other")
    assert c.categories == ("a", "b", "other")
    c2 = CategoricalColumn("c", ("a", "other", "b"), other="other")
    assert c2.categories == ("a", "other", "b")
    # to_dict -> from_dict is stable (the bucket is not appended twice).
    s = Schema(columns=(c,))
    assert Schema.from_dict(s.to_dict()) == s


def test_schema_is_frozen_and_hashable() -> None:
    s = Schema.from_dict(_schema_dict())
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.nan_policy = "impute"  # type: ignore[misc]
    assert hash(s) == hash(Schema.from_dict(_schema_dict()))
    s.layout()  # cached layout must not break pickling (Dask ships schemas to workers)
    assert pickle.loads(pickle.dumps(s)) == s


@pytest.mark.parametrize("suffix", [".json", ".yaml", ".yml"])
def test_file_round_trip(tmp_path, suffix) -> None:
    s = Schema.from_dict(_schema_dict() | {"row_norm_bound": 1.5})
    path = s.to_file(tmp_path / f"schema{suffix}")
    assert Schema.from_file(path) == s
    assert not list(tmp_path.glob("*.part"))


def test_json_written_is_plain_json(tmp_path) -> None:
    s = Schema.from_dict(_schema_dict())
    data = json.loads(s.to_json())
    assert data["schema_version"] == 1
    assert data["columns"][0] == {
        "name": "age",
        "type": "numeric",
        "lower": 17,
        "upper": 90,
        "integer": True,
    }


def test_yaml_file_written_by_hand(tmp_path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "columns:\n"
        "  - {name: x, type: numeric, lower: 0, upper: 10}\n"
        "  - {name: c, type: categorical, categories: [a, b], other: rest}\n"
        "label: {name: y, classes: [0, 1], public_counts: [5, 7]}\n"
        "nan_policy: error\n"
    )
    s = Schema.from_file(path)
    assert s.column("c").categories == ("a", "b", "rest")  # type: ignore[union-attr]
    assert s.label == LabelSpec("y", (0, 1), public_counts=(5, 7))


def test_bad_file_suffix_and_bad_content(tmp_path) -> None:
    with pytest.raises(SchemaError, match=r"\.json, \.yaml or \.yml"):
        Schema.from_file(tmp_path / "s.txt")
    bad = tmp_path / "s.json"
    bad.write_text("{not json")
    with pytest.raises(SchemaError, match="not valid json") as exc:
        Schema.from_file(bad)
    assert "\n" not in str(exc.value)
    s = Schema.from_dict(_schema_dict())
    with pytest.raises(SchemaError):
        s.to_file(tmp_path / "out.txt")
    assert not (tmp_path / "out.txt").exists()


def _with_column(col: dict) -> dict:
    return {"columns": [col]}


@pytest.mark.parametrize(
    ("col", "pattern"),
    [
        ({"name": "a", "type": "numeric", "lower": 5, "upper": 5}, r"'a'.*lower \(5.0\) must be <"),
        ({"name": "a", "type": "numeric", "lower": 9, "upper": 1}, r"'a'.*lower \(9.0\) must be <"),
        ({"name": "a", "type": "numeric", "lower": 0, "upper": math.inf}, r"'a'.*upper .*finite"),
        ({"name": "a", "type": "numeric", "lower": math.nan, "upper": 1}, r"'a'.*lower .*finite"),
        ({"name": "a", "type": "numeric", "lower": True, "upper": 2}, r"'a'.*lower .*finite"),
        ({"name": "a", "type": "numeric", "lower": "0", "upper": 2}, r"'a'.*lower .*finite"),
        ({"name": "a", "type": "numeric", "upper": 2}, r"'a'.*'lower' is missing"),
        ({"name": "a", "type": "numeric", "lower": -1e308, "upper": 1e308}, r"'a'.*overflows"),
        (
            {"name": "a", "type": "numeric", "lower": 0.5, "upper": 2, "integer": True},
            r"'a'.*integer bounds",
        ),
        ({"name": "a", "type": "numeric", "lower": 0, "upper": 1, "lowr": 0}, r"'a'.*'lowr'"),
        ({"name": "c", "type": "categorical", "categories": []}, r"'c'.*non-empty"),
        ({"name": "c", "type": "categorical", "categories": ["x", "x"]}, r"'c'.*duplicate 'x'"),
        ({"name": "c", "type": "categorical", "categories": [1.5]}, r"'c'.*string or an integer"),
        ({"name": "c", "type": "categorical", "categories": "ab"}, r"'c'.*must be a list"),
        ({"name": "c", "type": "categorical"}, r"'c'.*'categories' is missing"),
        ({"name": "c", "type": "text"}, r"'c'.*'numeric' or 'categorical'"),
        ({"name": "", "type": "numeric", "lower": 0, "upper": 1}, r"name"),
    ],
)
def test_invalid_columns(col, pattern) -> None:
    with pytest.raises(SchemaError, match=pattern):
        Schema.from_dict(_with_column(col))


def test_invalid_schemas() -> None:
    num = {"name": "a", "type": "numeric", "lower": 0, "upper": 1}
    with pytest.raises(SchemaError, match=r"'a' is declared twice"):
        Schema.from_dict({"columns": [num, num]})
    with pytest.raises(SchemaError, match="at least one"):
        Schema.from_dict({"columns": []})
    with pytest.raises(SchemaError, match=r"label 'a' has the same name"):
        Schema.from_dict({"columns": [num], "label": {"name": "a", "classes": [0, 1]}})
    with pytest.raises(SchemaError, match="at least 2 classes"):
        Schema.from_dict({"columns": [num], "label": {"name": "y", "classes": [0]}})
    with pytest.raises(SchemaError, match="public_counts"):
        Schema.from_dict(
            {"columns": [num], "label": {"name": "y", "classes": [0, 1], "public_counts": [3]}}
        )
    with pytest.raises(SchemaError, match="nan_policy"):
        Schema.from_dict({"columns": [num], "nan_policy": "drop"})
    with pytest.raises(SchemaError, match=r"no 'impute' constant: 'a'"):
        Schema.from_dict({"columns": [num], "nan_policy": "impute"})
    with pytest.raises(SchemaError, match=r"'a'.*impute \(5.0\) must lie within"):
        Schema.from_dict({"columns": [num | {"impute": 5}], "nan_policy": "impute"})
    with pytest.raises(SchemaError, match="row_norm_bound"):
        Schema.from_dict({"columns": [num], "row_norm_bound": 0})
    with pytest.raises(SchemaError, match="unknown key 'colums'"):
        Schema.from_dict({"columns": [num], "colums": []})
    with pytest.raises(SchemaError, match="schema_version"):
        Schema.from_dict({"columns": [num], "schema_version": 2})
    cat = {"name": "c", "type": "categorical", "categories": ["?", "b"]}
    with pytest.raises(SchemaError, match=r"'c'.*missing-value token"):
        Schema.from_dict({"columns": [cat], "missing_values": ["?"]})
    with pytest.raises(SchemaError, match=r"'c'.*impute"):
        CategoricalColumn("c", ("a",), impute="z")


def test_constructors_validate_directly() -> None:
    with pytest.raises(SchemaError, match="lower"):
        NumericColumn("x", 1.0, 0.0)
    with pytest.raises(SchemaError, match="duplicate True"):
        CategoricalColumn("c", (1, True))  # True == 1: pandas would not tell them apart
    with pytest.raises(SchemaError):
        Schema(columns=("x",))  # type: ignore[arg-type]


def test_without_label() -> None:
    s = Schema.from_dict(_schema_dict())
    t = s.without_label()
    assert t.label is None and t.columns == s.columns
    with pytest.raises(SchemaError, match="include_label"):
        t.layout(include_label=True)


def test_impute_policy_names_every_column_without_a_constant() -> None:
    # the trial fixed 'sex', then 'region', ... one run each
    cols = [
        {"name": "a", "type": "numeric", "lower": 0, "upper": 1, "impute": 0},
        {"name": "b", "type": "numeric", "lower": 0, "upper": 1},
        {"name": "c", "type": "categorical", "categories": ["x", "y"]},
    ]
    with pytest.raises(SchemaError) as exc:
        Schema.from_dict({"columns": cols, "nan_policy": "impute"})
    assert "2 column(s) declare no 'impute' constant: 'b', 'c';" in str(exc.value)
    assert "\n" not in str(exc.value)


def test_yaml_no_yes_categories_are_refused_with_the_quotes_to_write(tmp_path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "columns:\n"
        "  - {name: age, type: numeric, lower: 0, upper: 110, integer: yes}\n"
        "  - {name: smoker, type: categorical, categories: [no, yes]}\n"
        "label: {name: y, classes: [0, 1]}\n"
    )
    with pytest.raises(SchemaError) as exc:
        Schema.from_file(path)
    assert str(exc.value) == (
        "categories of 'smoker' contain booleans (false, true): YAML reads no/yes as "
        "booleans; quote them: ['no', 'yes']"
    )
    # quoted, the same file is read, and a boolean elsewhere (integer: yes) still is one
    path.write_text(path.read_text().replace("[no, yes]", "['no', 'yes']"))
    schema = Schema.from_file(path)
    assert schema.column("smoker").categories == ("no", "yes")  # type: ignore[union-attr]
    assert schema.column("age").integer is True  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        (
            "label: {name: y, classes: [off, on]}",
            r"^classes of label 'y' contain booleans \(false, true\): YAML reads off/on as",
        ),
        (
            "  - {name: c, type: categorical, categories: ['a', 'on'], impute: on}",
            r"^impute of 'c' contain booleans \(true\): YAML reads on as booleans; quote",
        ),
        ("missing_values: [NO]", r"^missing_values contain booleans \(false\): YAML reads NO"),
    ],
)
def test_yaml_booleans_are_refused_wherever_values_are_declared(tmp_path, text, pattern) -> None:
    path = tmp_path / "s.yml"
    path.write_text(f"columns:\n  - {{name: n, type: numeric, lower: 0, upper: 1}}\n{text}\n")
    with pytest.raises(SchemaError, match=pattern):
        Schema.from_file(path)


def test_json_booleans_in_categories_are_refused() -> None:
    raw = {"columns": [{"name": "flag", "type": "categorical", "categories": [True, False]}]}
    with pytest.raises(
        SchemaError, match=r"^categories of 'flag' contain booleans \(true, false\);"
    ):
        Schema.from_dict(raw)
    # declared in Python, a boolean category stays allowed (it matches a bool column)
    assert CategoricalColumn("flag", (True, False)).categories == (True, False)


def test_a_yaml_date_among_categories_is_refused_with_the_quotes_to_write(tmp_path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("columns:\n  - {name: d, type: categorical, categories: [2023-01-10, x]}\n")
    with pytest.raises(SchemaError) as exc:
        Schema.from_file(path)
    assert str(exc.value) == (
        "column 'd': category datetime.date(2023, 1, 10) must be a string or an integer "
        "(not date); in a schema file, quote it: '2023-01-10'"
    )
