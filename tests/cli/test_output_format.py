"""--output-sep / --output-decimal: a release and predictions written for a European
spreadsheet hold the same values, the report reads such a release back, and a format that
cannot apply is refused before anything is written."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ppdp.cli import main
from ppdp.data import Schema
from ppdp.datasets import load_adult

EU = ["--output-sep", ";", "--output-decimal", ","]


@pytest.fixture(scope="module")
def adult(tmp_path_factory):
    root = tmp_path_factory.mktemp("output_format")
    df, schema = load_adult("train")
    df = df.iloc[:1500].copy()
    df["ratio"] = (df["hours-per-week"] / 99).round(3)  # a float column: decimal commas
    spec = schema.to_dict()
    spec["columns"].append(
        {"name": "ratio", "type": "numeric", "lower": 0, "upper": 1, "decimals": 3}
    )
    df.to_csv(root / "adult.csv", index=False)
    Schema.from_dict(spec).to_file(root / "adult.json")
    return root


def _publish(root, out, *extra) -> None:
    argv = ["publish", "synth", str(root / "adult.csv"), "--schema", str(root / "adult.json")]
    assert main([*argv, "--epsilon", "1", "--seed", "3", "-q", "-o", str(out), *extra]) == 0


def test_a_european_csv_holds_the_same_release(adult, capsys):
    _publish(adult, adult / "plain.csv")
    _publish(adult, adult / "eu.csv", *EU)
    text = (adult / "eu.csv").read_text(encoding="utf-8")
    assert text.splitlines()[0].count(";") == 11 and "," in text  # decimal commas
    plain = pd.read_csv(adult / "plain.csv")
    eu = pd.read_csv(adult / "eu.csv", sep=";", decimal=",")
    pd.testing.assert_frame_equal(plain, eu)


def test_the_report_reads_it_back_without_a_decimal_warning(adult, capsys):
    for name in ("plain", "eu"):
        if not (adult / f"{name}.csv").exists():
            _publish(adult, adult / f"{name}.csv", *(EU if name == "eu" else ()))
    capsys.readouterr()
    numbers = []
    for name in ("plain", "eu"):
        out = adult / f"{name}.json"
        argv = ["report", str(adult / f"{name}.csv"), "--original", str(adult / "adult.csv")]
        argv += ["--schema", str(adult / "adult.json"), "-o", str(adult / f"{name}.html")]
        assert main([*argv, "--json", str(out), "--force"]) == 0
        data = json.loads(out.read_text())
        data.pop("release_info", None)
        numbers.append(json.dumps(data["columns"], sort_keys=True))
    assert numbers[0] == numbers[1]
    assert "decimal mark" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("output", "extra", "words"),
    [
        ("r.parquet", ["--output-sep", ";"], "apply to a CSV output, not"),
        ("r.csv", ["--output-decimal", ","], "--output-decimal (',') cannot also be the separator"),
        ("r.csv", ["--output-sep", ";;"], "--output-sep (';;') must be one character"),
        ("r.csv", ["--output-sep", '"'], "must be one character that is not a quote"),
    ],
)
def test_a_format_that_cannot_apply_is_refused_before_anything(adult, capsys, output, extra, words):
    argv = ["publish", "synth", str(adult / "adult.csv"), "--schema", str(adult / "adult.json")]
    argv += ["--epsilon", "1", "-o", str(adult / "refused" / output), *extra]
    (adult / "refused").mkdir(exist_ok=True)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and "reading" not in err
    assert list((adult / "refused").iterdir()) == []


def test_predictions_in_a_tab_separated_decimal_comma_file(adult, tmp_path):
    model = tmp_path / "m.json"
    argv = ["train", "logreg", str(adult / "adult.csv"), "--schema", str(adult / "adult.json")]
    assert main([*argv, "--epsilon", "1", "--seed", "1", "-q", "-o", str(model)]) == 0
    base = ["predict", str(model), str(adult / "adult.csv")]
    assert main([*base, "-o", str(tmp_path / "p.csv")]) == 0
    assert (
        main([*base, "-o", str(tmp_path / "q.csv"), "--output-sep", "tab", "--output-decimal", ","])
        == 0
    )
    plain = pd.read_csv(tmp_path / "p.csv")
    tabbed = pd.read_csv(tmp_path / "q.csv", sep="\t", decimal=",")
    pd.testing.assert_frame_equal(plain, tabbed)
    assert "\t" in (tmp_path / "q.csv").read_text().splitlines()[0]
