"""Text exports through the CLI: a Latin-1 file, decimal commas, a wrong --sep, and a
detected separator said only with -v (found in a new-user trial, items 2-5)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from ppdp.cli import main


@pytest.fixture
def clinic(tmp_path):
    rng = np.random.default_rng(5)
    n = 200
    return pd.DataFrame(
        {
            "sex": rng.choice([1, 2], n),
            "age": rng.integers(18, 90, n),
            "bmi": np.round(rng.uniform(16, 40, n), 1),
            "doctor": rng.choice(["Dr. Núñez", "Dr. Smith"], n),
        }
    )


def _schema(tmp_path):
    spec = {
        "schema_version": 1,
        "columns": [
            {"name": "sex", "type": "categorical", "categories": [1, 2]},
            {"name": "age", "type": "numeric", "lower": 0, "upper": 110, "integer": True},
            {"name": "bmi", "type": "numeric", "lower": 10, "upper": 60},
            {"name": "doctor", "type": "categorical", "categories": ["Dr. Núñez", "Dr. Smith"]},
        ],
    }
    path = tmp_path / "s.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    return path


def _one_line(capsys):
    """The one error line (progress lines aside), with no traceback."""
    err = capsys.readouterr().err
    assert "Traceback" not in err
    (line,) = [e for e in err.splitlines() if e.startswith("ppdp: error")]
    return line


def test_a_latin1_file_without_encoding_names_the_byte_and_the_flag(clinic, tmp_path, capsys):
    path = tmp_path / "latin.csv"
    clinic.to_csv(path, sep=";", index=False, encoding="latin-1")
    assert main(["schema", "draft", str(path)]) == 2
    err = _one_line(capsys)
    assert "is not valid UTF-8 (byte 0xfa at line " in err
    assert "pass --encoding (e.g. latin-1)" in err
    argv = ["publish", "laplace", str(path), "--schema", str(_schema(tmp_path))]
    assert main([*argv, "--epsilon", "1", "-o", str(tmp_path / "o.csv")]) == 2
    assert "is not valid UTF-8" in _one_line(capsys)
    assert (
        main([*argv, "--epsilon", "1", "-o", str(tmp_path / "o.csv"), "--encoding", "latin-1"]) == 0
    )


def test_decimal_commas_are_read_as_numbers_and_said(clinic, tmp_path, capsys, caplog):
    path = tmp_path / "excel.csv"
    clinic.to_csv(path, sep=";", index=False, decimal=",")
    out = tmp_path / "draft.json"
    with caplog.at_level("WARNING", logger="ppdp.data"):
        assert main(["schema", "draft", str(path), "-o", str(out)]) == 0
    assert "',' as the decimal mark" in caplog.text and "'bmi'" in caplog.text
    cols = {c["name"]: c for c in json.loads(out.read_text())["columns"]}
    assert cols["bmi"]["type"] == "numeric"
    argv = ["publish", "laplace", str(path), "--schema", str(_schema(tmp_path)), "--epsilon", "1"]
    assert main([*argv, "-o", str(tmp_path / "a.csv"), "-q"]) == 0
    # --decimal , says it: no warning; --decimal . reads text, which the schema refuses
    caplog.clear()
    with caplog.at_level("WARNING", logger="ppdp.data"):
        assert main([*argv, "-o", str(tmp_path / "b.csv"), "--decimal", ","]) == 0
    assert "decimal mark" not in caplog.text
    assert main([*argv, "-o", str(tmp_path / "c.csv"), "--decimal", "."]) == 2
    _one_line(capsys)


def test_a_wrong_sep_says_the_header_is_one_column_and_which_sep_works(clinic, tmp_path, capsys):
    path = tmp_path / "clinic.csv"
    clinic.to_csv(path, sep=";", index=False)
    argv = ["publish", "synth", str(path), "--sep", ",", "--schema", str(_schema(tmp_path))]
    assert main([*argv, "--epsilon", "1", "-o", str(tmp_path / "o.csv")]) == 2
    err = _one_line(capsys)
    assert "the header is one column ('sex;age;bmi;doctor')" in err
    assert "4 columns with --sep ';'" in err and "missing column" not in err


def test_the_detected_separator_is_said_only_with_v(clinic, tmp_path):
    path = tmp_path / "clinic.csv"
    clinic.to_csv(path, sep=";", index=False)

    def stderr(*flags):
        cmd = [sys.executable, "-m", "ppdp", *flags, "schema", "draft", str(path)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True)
        return done.stderr

    assert "separated" not in stderr()
    assert "read clinic.csv as ';'-separated" in stderr("-v")
