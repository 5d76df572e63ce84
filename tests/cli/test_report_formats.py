"""``ppdp report`` with an original in another format than the release (trial item 1):
--sep and --encoding apply to the original only; a release is read as ppdp wrote it; a
read that leaves many values undeclared gives no verdict, loudly."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ppdp.cli import main
from ppdp.data import CategoricalColumn, NumericColumn, Schema
from ppdp.evaluate import NOT_JUDGED, VERDICTS

pytest.importorskip("sklearn")
pytest.importorskip("matplotlib")

DOCTORS = ("Dr. Núñez", "Dr. Müller", "Dr. Åsa Öberg", "Dr. Smith")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("formats")
    rng = np.random.default_rng(3)
    n = 600
    df = pd.DataFrame(
        {
            "age": rng.integers(18, 90, n),
            "doctor": rng.choice(DOCTORS, n),
            "sex": rng.choice([1, 2], n),
        }
    )
    schema = Schema(
        columns=(
            NumericColumn("age", 0, 110, integer=True),
            CategoricalColumn("doctor", DOCTORS),
            CategoricalColumn("sex", (1, 2)),
        )
    )
    schema.to_file(root / "s.json")
    df.to_csv(root / "orig.csv", index=False)  # UTF-8, comma
    df.to_csv(root / "latin.csv", index=False, sep=";", encoding="latin-1")
    argv = ["publish", "laplace", str(root / "orig.csv"), "--schema", str(root / "s.json")]
    assert main([*argv, "--epsilon", "5", "-o", str(root / "rel.csv"), "-q"]) == 0
    return root


def _report(files, original, tmp_path, *extra):
    js = tmp_path / "r.json"
    argv = ["report", str(files / "rel.csv"), "--original", str(files / original)]
    argv += ["--schema", str(files / "s.json"), "-o", str(tmp_path / "r.html")]
    code = main([*argv, "--json", str(js), *extra])
    return code, (json.loads(js.read_text()) if code == 0 else None)


def test_sep_and_encoding_apply_to_the_original_only(files, tmp_path, capsys):
    code, data = _report(files, "latin.csv", tmp_path, "--sep", ";", "--encoding", "latin-1")
    assert code == 0, capsys.readouterr().err
    assert data["verdict"] in VERDICTS
    doctor = next(c for c in data["columns"] if c["name"] == "doctor")
    assert doctor["cells"] == list(DOCTORS)  # no "(undeclared)" cell in either table


def test_a_misread_original_gives_no_verdict_and_says_why(files, tmp_path, capsys):
    code, data = _report(files, "orig.csv", tmp_path, "--encoding", "latin-1")
    assert code == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"verdict: {NOT_JUDGED}\n  ")
    assert err.startswith("ppdp report: warning: no verdict: ")
    assert "of the original's values in column 'doctor' are not declared" in out
    assert "--encoding" in out
    assert data["verdict"] == NOT_JUDGED


def test_help_says_the_flags_are_the_originals(capsys):
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "the original's" in text and "as ppdp wrote it" in text
