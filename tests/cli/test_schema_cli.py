"""``ppdp schema draft`` and ``check``: thin wrappers, one-line errors, no partial output."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from ppdp.cli import main
from ppdp.data import Schema


@pytest.fixture
def csv_path(tmp_path):
    df = pd.DataFrame(
        {
            "age": [23, 45, 67, 31],
            "city": ["Oslo", "Bergen", "?", "Oslo"],
            "label": ["yes", "no", "no", "yes"],
        }
    )
    path = tmp_path / "data.csv"
    df.to_csv(path, index=False)
    return path


def _one_warning_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    assert "PrivacyLeakWarning" in lines[0] and "leak" in lines[0]
    return lines[0]


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_draft_writes_a_valid_schema_and_warns(tmp_path, csv_path, capsys, suffix) -> None:
    out = tmp_path / f"schema{suffix}"
    rc = main(
        [
            "schema",
            "draft",
            str(csv_path),
            "-o",
            str(out),
            "--label",
            "label",
            "--missing-value",
            "?",
        ]
    )
    assert rc == 0
    captured = capsys.readouterr()
    leak, missing = captured.err.strip().splitlines()
    _one_warning_line(leak)
    assert missing.startswith("ppdp: warning: PPDPWarning: missing values in 'city' (1):")
    assert str(out) in captured.out
    s = Schema.from_file(out)
    assert s.column_names == ("age", "city", "label")
    assert s.column("city").categories == ("Bergen", "Oslo")  # type: ignore[union-attr]  # sorted
    # the '?' is missing: the draft imputes declared values (mid-bounds, first category)
    assert s.nan_policy == "impute"
    assert (s.column("age").impute, s.column("city").impute) == (45, "Bergen")  # type: ignore[union-attr]
    assert not list(tmp_path.glob("*.part"))


def test_draft_to_stdout_is_json(csv_path, capsys) -> None:
    assert main(["schema", "draft", str(csv_path)]) == 0
    captured = capsys.readouterr()
    _one_warning_line(captured.err)
    schema = Schema.from_dict(json.loads(captured.out))
    assert schema.label is None and "label" in schema.column_names


def test_draft_from_parquet(tmp_path, capsys) -> None:
    pytest.importorskip("pyarrow")
    path = tmp_path / "d.parquet"
    pd.DataFrame({"x": [1.5, 2.5], "y": [0, 1]}).to_parquet(path)
    out = tmp_path / "s.yml"
    assert main(["schema", "draft", str(path), "-o", str(out), "--label", "y"]) == 0
    assert Schema.from_file(out).classes == (0, 1)
    _one_warning_line(capsys.readouterr().err)


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        (["{missing}"], "does not exist"),
        (["{bad}"], "could not be read as CSV"),
        (["{csv}", "--label", "nope"], "label ('nope') is not a column"),
        (["{csv}", "-o", "{tmp}/schema.txt"], "--output"),
        (["{csv}", "--max-categories", "0"], "--max-categories (0)"),
        (["{tmp}/data.xlsx"], "must be a .csv"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(
    tmp_path, csv_path, capsys, args, pattern
) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text('a,b\n1,2\n"unterminated\n')
    out = tmp_path / "out" / "schema.json"
    fill = {"missing": tmp_path / "missing.csv", "bad": bad, "csv": csv_path, "tmp": tmp_path}
    argv = ["schema", "draft", *[a.format(**fill) for a in args]]
    if "-o" not in argv:
        argv += ["-o", str(out)]
    before = set(tmp_path.rglob("*"))
    rc = main(argv)
    assert rc == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ppdp: error:"), lines
    assert pattern in lines[0]
    assert captured.out == ""
    assert set(tmp_path.rglob("*")) == before


def test_check_prints_the_encoding(tmp_path, capsys) -> None:
    from ppdp.datasets import adult_schema

    path = adult_schema().to_file(tmp_path / "adult.json")
    assert main(["schema", "check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "encoded features: 33 (35 with the label block)" in out


def test_check_rejects_an_invalid_schema(tmp_path, capsys) -> None:
    path = tmp_path / "s.json"
    path.write_text(
        json.dumps({"columns": [{"name": "a", "type": "numeric", "lower": 3, "upper": 1}]})
    )
    assert main(["schema", "check", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "column 'a': lower (3.0) must be < upper (1.0)" in err[0]


def test_check_refuses_yaml_booleans_in_one_line(tmp_path, capsys) -> None:
    path = tmp_path / "yn.yaml"
    path.write_text(
        "columns:\n"
        "  - {name: age, type: numeric, lower: 0, upper: 110, integer: true}\n"
        "  - {name: smoker, type: categorical, categories: [no, yes]}\n"
    )
    assert main(["schema", "check", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip().splitlines() == [
        "ppdp: error: categories of 'smoker' contain booleans (false, true): YAML reads no/yes "
        "as booleans; quote them: ['no', 'yes']"
    ]


@pytest.fixture
def clinic(tmp_path):
    """An ID, a bmi with gaps, and a schema declaring both under nan_policy 'error'."""
    n = 40
    bmi = [20.0 + i % 7 for i in range(n)]
    bmi[:3] = [float("nan")] * 3
    data = tmp_path / "clinic.csv"
    pd.DataFrame({"visit_id": range(5000, 5000 + n), "bmi": bmi}).to_csv(data, index=False)
    schema = tmp_path / "s.json"
    cols = [
        {"name": "visit_id", "type": "numeric", "lower": 0, "upper": 10000, "integer": True},
        {"name": "bmi", "type": "numeric", "lower": 10, "upper": 60},
    ]
    schema.write_text(json.dumps({"columns": cols}))
    return schema, data


def test_check_data_names_an_identifier_and_the_refusal(clinic, capsys) -> None:
    schema, data = clinic
    main(["schema", "check", str(schema), "--data", str(data)])
    captured = capsys.readouterr()
    said = captured.out + captured.err
    assert "column 'visit_id': 40 distinct values in 40 rows; it looks like an identifier" in said
    assert "column 'bmi': 3 missing or non-finite value(s)" in said
    assert re.search(r"^  bmi +\[10, 60\] +0 +0\.0%$", captured.out, re.M)  # report kept


def test_check_data_exits_2_when_a_release_would_refuse_the_data(clinic, capsys) -> None:
    schema, data = clinic
    assert main(["schema", "check", str(schema), "--data", str(data)]) == 2
    err = capsys.readouterr().err
    assert "ppdp: error: column 'bmi': 3 missing or non-finite value(s)" in err
    fixed = json.loads(schema.read_text())
    fixed["columns"] = fixed["columns"][1:]
    fixed["columns"][0]["impute"] = 25
    fixed["nan_policy"] = "impute"
    schema.write_text(json.dumps(fixed))
    assert main(["schema", "check", str(schema), "--data", str(data)]) == 0
