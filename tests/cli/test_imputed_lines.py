"""Missing values filled with impute constants are said: by schema check, publish and train."""

from __future__ import annotations

import json

import pytest

from ppdp.cli import main


@pytest.fixture
def files(tmp_path):
    rows = ["age;sex;y"]
    for i in range(200):
        sex = "" if i % 10 == 0 else "MF"[i % 2]  # 20 of 200 missing: 10 %
        age = "" if i == 7 else str(20 + i % 50)  # 1 of 200 missing: 0.5 %
        rows.append(f"{age};{sex};{'ab'[(i // 3) % 2]}")
    data = tmp_path / "d.csv"
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    schema = tmp_path / "s.json"
    schema.write_text(
        json.dumps(
            {
                "columns": [
                    {"name": "age", "type": "numeric", "lower": 0, "upper": 100, "impute": 50},
                    {"name": "sex", "type": "categorical", "categories": ["M", "F"], "impute": "F"},
                ],
                "label": {"name": "y", "classes": ["a", "b"]},
                "nan_policy": "impute",
            }
        ),
        encoding="utf-8",
    )
    return data, schema, tmp_path


def test_schema_check_lists_each_filled_column_with_its_constant(files, capsys):
    data, schema, _ = files
    assert main(["schema", "check", str(schema), "--data", str(data)]) == 0
    out = capsys.readouterr().out.splitlines()
    i = out.index("missing values filled with the schema's impute constants:")
    assert out[i + 2].split() == ["age", "50", "1", "0.5%"]
    assert out[i + 3].split() == ["sex", "'F'", "20", "10.0%"]


def test_publish_says_the_fill_and_warns_above_five_percent(files, capsys):
    data, schema, tmp = files
    argv = ["publish", "synth", str(data), "--schema", str(schema), "--epsilon", "1"]
    assert main([*argv, "-o", str(tmp / "o.csv"), "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert (
        "ppdp publish: filled missing values with the schema's impute constants: "
        "'age': 1 (0.5%), 'sex': 20 (10.0%)" in err
    )
    warned = [line for line in err.splitlines() if "of its values were missing" in line]
    assert len(warned) == 1 and "column 'sex': 10.0%" in warned[0] and "('F')" in warned[0]


def test_quiet_keeps_the_warning_and_drops_the_count(files, capsys):
    data, schema, tmp = files
    argv = ["publish", "synth", str(data), "--schema", str(schema), "--epsilon", "1", "-q"]
    assert main([*argv, "-o", str(tmp / "o.csv"), "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert "filled missing values" not in err
    assert "column 'sex': 10.0% of its values were missing" in err


def test_train_says_the_fill(files, capsys):
    data, schema, tmp = files
    argv = ["train", "logreg", str(data), "--schema", str(schema), "--epsilon", "1"]
    assert main([*argv, "-o", str(tmp / "m.json"), "--dry-run"]) == 0
    assert "ppdp train: filled missing values with the schema's impute constants" in (
        capsys.readouterr().err
    )


def test_nothing_is_said_without_missing_values(files, capsys):
    data, schema, _ = files
    text = data.read_text().splitlines()
    full = [text[0]] + [f"30;M;{'ab'[i % 2]}" for i in range(50)]
    data.write_text("\n".join(full) + "\n")
    assert main(["schema", "check", str(schema), "--data", str(data)]) == 0
    assert "impute constants" not in capsys.readouterr().out


def test_a_parquet_dataset_says_the_fill_too(files, capsys):
    pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    data, schema, tmp = files
    folder = tmp / "ds"
    folder.mkdir()
    df = pd.read_csv(data, sep=";")
    df.iloc[:100].to_parquet(folder / "part-0.parquet", index=False)
    df.iloc[100:].to_parquet(folder / "part-1.parquet", index=False)
    argv = ["publish", "synth", str(folder), "--schema", str(schema), "--epsilon", "1"]
    assert main([*argv, "-o", str(tmp / "out"), "--dry-run", "--scheduler", "sync"]) == 0
    err = capsys.readouterr().err
    assert "filled missing values with the schema's impute constants: 'age': 1 (0.5%)" in err
    assert "column 'sex': 10.0% of its values were missing" in err
