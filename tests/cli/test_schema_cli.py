"""``ppdp schema draft`` and ``check``: thin wrappers, one-line errors, no partial output."""

from __future__ import annotations

import json

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
    assert s.column("city").categories == ("Oslo", "Bergen")  # type: ignore[union-attr]  # first seen
    # the '?' is missing: the draft imputes declared values (mid-bounds, first category)
    assert s.nan_policy == "impute"
    assert (s.column("age").impute, s.column("city").impute) == (45, "Oslo")  # type: ignore[union-attr]
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
        (["{csv}", "--max-categories", "0"], "max_categories"),
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
