"""``ppdp.data.schema_files``: the library side of ``ppdp schema draft`` and ``check``."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from ppdp.data import Schema
from ppdp.data.schema_files import (
    check_table_lines,
    clipping_lines,
    describe_schema,
    draft_schema_file,
)
from ppdp.exceptions import ParameterError

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "age", "type": "numeric", "lower": 0, "upper": 50},
            {"name": "city", "type": "categorical", "categories": ["Oslo", "Bergen"]},
        ],
        "label": {"name": "y", "classes": ["no", "yes"]},
    }
)


@pytest.fixture
def table(tmp_path):
    path = tmp_path / "t.csv"
    pd.DataFrame(
        {
            "age": [10, 60, 70, 20],
            "city": ["Oslo", "Rome", "Rome", "Paris"],
            "y": ["no", "yes", "maybe", "no"],
        }
    ).to_csv(path, index=False)
    return path


def test_draft_writes_the_schema_and_returns_the_leak_warning(tmp_path, table) -> None:
    out = tmp_path / "sub" / "s.json"
    result = draft_schema_file(table, output=out, label="y")
    assert result.path == out and Schema.from_file(out).column_names == ("age", "city", "y")
    assert any(line.startswith("PrivacyLeakWarning: ") for line in result.warnings)
    assert all("\n" not in line for line in result.warnings)
    assert result.written_line() == f"wrote {out} (2 columns, label 'y')"


def test_draft_without_output_writes_nothing(tmp_path, table) -> None:
    result = draft_schema_file(table)
    assert result.path is None and len(result.schema.columns) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]


def test_draft_refuses_a_bad_suffix_and_an_existing_output(tmp_path, table) -> None:
    with pytest.raises(ParameterError, match=r"--output .* must end in \.json, \.yaml or \.yml"):
        draft_schema_file(table, output=tmp_path / "s.txt")
    existing = tmp_path / "s.json"
    existing.write_text("{}")
    with pytest.raises(ParameterError):
        draft_schema_file(table, output=existing)
    assert existing.read_text() == "{}"
    assert draft_schema_file(table, output=existing, force=True).path == existing


def test_describe_schema() -> None:
    assert describe_schema(SCHEMA) == [
        "  columns: 2 (1 numeric, 1 categorical); label 'y' with 2 classes",
        f"  encoded features: {SCHEMA.n_features} "
        f"({SCHEMA.layout(include_label=True).n_features} with the label block)",
        f"  max row L2 norm: {SCHEMA.max_row_l2_norm:.6g}",
    ]


def test_check_table_lines_lists_undeclared_values_and_clipping(table) -> None:
    lines = check_table_lines(SCHEMA, table, max_values=1)
    assert lines[0].startswith(f"{table}: 4 rows")
    assert "  city: 3 values, 2 distinct: 'Rome' (2), and 1 more" in lines
    assert "  y: 1 values, 1 distinct: 'maybe' (1)" in lines
    at = lines.index("values clipped to the declared bounds:")
    age = lines[at + 2].split()
    assert age[0] == "age" and age[-2:] == ["2", "50.0%"]


def test_check_table_lines_refuses_max_values_below_one(table) -> None:
    with pytest.raises(ParameterError, match=r"--max-values \(0\)"):
        check_table_lines(SCHEMA, table, max_values=0)


def test_clipping_lines_give_count_and_share_per_numeric_column() -> None:
    report = SimpleNamespace(n_rows=8, clipped={"age": 2})
    lines = clipping_lines(SCHEMA, report)
    assert lines[0].split() == ["column", "declared", "bounds", "clipped", "share"]
    assert lines[1].split() == ["age", "[0,", "50]", "2", "25.0%"]
