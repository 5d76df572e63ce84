"""The schema as a form and back: a schema file's dictionary, row by row.

No rule of its own: the form's text is turned into the values a schema file holds (numbers
where the text is a number, lists where it is comma-separated, a value with a comma in
double quotes) and
:meth:`ppdp.data.Schema.from_dict` validates them, in its own words.
"""

from __future__ import annotations

import csv
import re
from typing import Any

from ppdp.ui._words import outward_bounds

__all__ = [
    "column_rows",
    "error_column",
    "schema_from_form",
    "split_values",
    "unit_fields",
    "values_text",
]

_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _number(text: str) -> Any:
    """``"17"`` -> 17, ``"2.5"`` -> 2.5; other text stays text (the schema refuses it)."""
    text = text.strip()
    if _INT.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    return text


def split_values(text: str) -> list[Any]:
    """Comma-separated values, a value that holds a comma in double quotes (``"Craftsmen,
    Foremen"``, a quote inside doubled), as :func:`values_text` writes them; a whole integer
    (written as Python writes it) is a number."""
    out: list[Any] = []
    for part in next(csv.reader([text], skipinitialspace=True), []):
        part = part.strip()
        if not part:
            continue
        out.append(int(part) if _INT.fullmatch(part) and str(int(part)) == part else part)
    return out


def values_text(values: Any) -> str:
    """A list of values as a comma-separated field shows it: ``a, b``, a value that holds a
    comma or starts with a double quote in double quotes (read back by :func:`split_values`,
    so a category ``Craftsmen, Foremen`` stays one category)."""

    def one(value: Any) -> str:
        text = _text(value)
        if "," in text or text.startswith('"'):
            return '"' + text.replace('"', '""') + '"'
        return text

    if values is None:
        return ""
    return ", ".join(one(v) for v in (values if isinstance(values, list | tuple) else [values]))


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return values_text(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def column_rows(
    schema: dict[str, Any],
    public: set[str],
    form: dict[str, Any] | None = None,
    drafted: dict[str, tuple[Any, Any]] | None = None,
) -> list[dict[str, Any]]:
    """One row per column of the schema file ``schema``: its form fields as text.

    ``form``: a posted form that was refused; its values are shown instead of the schema's,
    so that an error costs the user none of their edits. ``drafted``: each column's
    ``(lower, upper)`` as drafted; a bound still equal to it is shown without the file's
    float residue, rounded outward (:func:`ppdp.ui._words.outward_bounds`)."""
    rows = []
    for i, col in enumerate(schema.get("columns", [])):
        lower, upper = _shown_bounds(col, (drafted or {}).get(col["name"]))
        rows.append(
            {
                "i": i,
                "name": col["name"],
                "type": col.get("type", "numeric"),
                "lower": _text(lower),
                "upper": _text(upper),
                "integer": bool(col.get("integer", False)),
                "scale": col.get("scale", "linear"),
                "date": bool(col.get("date", False)),
                "open": bool(col.get("open", False)),
                "impute": _text(col.get("impute")),
                "categories": _text(col.get("categories")),
                "other": values_text(col.get("other")),
                "public": col["name"] in public,
                "drop": False,
            }
        )
        if form is not None:
            _overlay(rows[-1], form, f"c{i}")
    return rows


def _shown_bounds(col: dict[str, Any], drafted: tuple[Any, Any] | None) -> tuple[Any, Any]:
    """The column's bounds as shown: rounded outward where still the drafted ones."""
    bounds = (col.get("lower"), col.get("upper"))
    if drafted is None:
        return bounds
    lower, upper = outward_bounds(*bounds)
    return (lower if bounds[0] == drafted[0] else bounds[0],
            upper if bounds[1] == drafted[1] else bounds[1])  # fmt: skip


def unit_fields(schema: dict[str, Any], form: dict[str, Any] | None = None) -> dict[str, str]:
    """The privacy unit's form fields as text: ``column`` ("" for none: each row is a
    different person) and ``max_rows``; a refused ``form``'s values where it has them."""
    unit = schema.get("privacy_unit") or {}
    out = {"column": _text(unit.get("column")), "max_rows": _text(unit.get("max_rows"))}
    if form is not None:
        for key in out:
            if isinstance(form.get(f"unit-{key}"), str):
                out[key] = form[f"unit-{key}"]
    return out


def _unit(form: dict[str, Any], old: Any) -> Any:
    """The ``privacy_unit`` the form says (None: none), or ``old`` when the form has no unit
    field. ``max_rows`` goes to the schema as typed (a number where it is one), so that the
    schema's own rule refuses a bad one in its words."""
    if not isinstance(form.get("unit-column"), str):
        return old
    column = form["unit-column"].strip()
    if not column:
        return None
    unit = {"column": column, "max_rows": _number(str(form.get("unit-max_rows", "")))}
    settings = old.get("auto") if isinstance(old, dict) else None
    if str(unit["max_rows"]).strip().lower() == "auto" and settings is not None:
        unit["auto"] = settings  # max_rows: auto keeps its declared upper, quantile, epsilon
    return unit


def _overlay(row: dict[str, Any], form: dict[str, Any], p: str) -> None:
    for key in ("type", "lower", "upper", "scale", "impute", "categories", "other"):
        if isinstance(form.get(f"{p}-{key}"), str):
            row[key] = form[f"{p}-{key}"]
    for key in ("integer", "public", "drop", "open"):
        row[key] = form.get(f"{p}-{key}") == "on"


def _numeric(old: dict[str, Any], form: dict[str, Any], p: str) -> dict[str, Any]:
    date = form.get(f"{p}-date") == "on"
    value = (lambda t: t.strip()) if date else _number
    col = {k: v for k, v in old.items() if k not in ("categories", "other", "groups")}
    col.update(type="numeric", lower=value(form.get(f"{p}-lower", "")),
               upper=value(form.get(f"{p}-upper", "")))  # fmt: skip
    for key, on in (("integer", form.get(f"{p}-integer") == "on"), ("date", date)):
        if on and not (key == "integer" and date):  # a date is an integer column already
            col[key] = True
        else:
            col.pop(key, None)
    if date:
        col.pop("scale", None)
    elif form.get(f"{p}-scale") == "log":
        col["scale"] = "log"
    else:
        col.pop("scale", None)
    impute = str(form.get(f"{p}-impute", "")).strip()
    if impute:
        col["impute"] = value(impute)
    else:
        col.pop("impute", None)
    return col


def _categorical(old: dict[str, Any], form: dict[str, Any], p: str) -> dict[str, Any]:
    kept = ("name", "groups", "per_person")
    keep = kept if old.get("type") == "categorical" else ("name", "per_person")
    col = {k: v for k, v in old.items() if k in keep}
    col.update(type="categorical", categories=split_values(form.get(f"{p}-categories", "")))
    if form.get(f"{p}-open") == "on":  # the list is incomplete: keys selected privately
        col["open"] = True
    for key in ("other", "impute"):
        values = split_values(str(form.get(f"{p}-{key}", "")))
        if values:
            col[key] = values[0]
    return col


def schema_from_form(
    schema: dict[str, Any], form: dict[str, Any]
) -> tuple[dict[str, Any], set[str]]:
    """The schema file's dictionary the form says, and the columns confirmed public.

    Columns marked "leave out" are dropped; everything the form does not show (cuts,
    groups, decimals, a date format, keep) is kept as it was. The privacy unit is the
    form's ``unit-column`` and ``unit-max_rows`` (kept as it was when the form has none)."""
    columns, public = [], set()
    for i, old in enumerate(schema.get("columns", [])):
        p = f"c{i}"
        if form.get(f"{p}-drop") == "on":
            continue
        kind = form.get(f"{p}-type", old.get("type"))
        col = _categorical(old, form, p) if kind == "categorical" else _numeric(old, form, p)
        columns.append(col)
        if form.get(f"{p}-public") == "on":
            public.add(old["name"])
    out = {k: v for k, v in schema.items() if k not in ("columns", "draft")}
    out["columns"] = columns
    unit = _unit(form, schema.get("privacy_unit"))
    if unit is None:
        out.pop("privacy_unit", None)
        for col in columns:  # per_person needs a unit: it goes with it
            col.pop("per_person", None)
    else:
        out["privacy_unit"] = unit
    missing = split_values(str(form.get("missing", "")))
    if missing:
        out["missing_values"] = [str(m) for m in missing]
    else:
        out.pop("missing_values", None)
    if form.get("nan_policy") in ("error", "impute"):
        out["nan_policy"] = form["nan_policy"]
    label = out.get("label")
    if label is not None and "label-classes" in form:
        out["label"] = {**label, "classes": split_values(str(form["label-classes"]))}
        if form.get("label-public") == "on":
            public.add(label["name"])
    kept = {c["name"] for c in columns} | ({label["name"]} if label else set())
    if not kept <= public:
        out["draft"] = True
    return out, public & kept


def error_column(message: str, names: list[str]) -> str | None:
    """The column a schema error names (``column 'age': ...``), if any."""
    match = re.search(r"column '((?:[^'\\]|\\.)*)'", message)
    if match and match.group(1) in names:
        return match.group(1)
    for name in names:
        if f"'{name}'" in message:
            return name
    return None
