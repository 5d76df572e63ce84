"""The report of a release made under a privacy unit: the share of rows ``max_rows``
dropped, per cap, in the JSON and the HTML (custodian only; the release files hold none)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ppdp.data import Schema
from ppdp.data.contribution import dropped_share

pytest.importorskip("matplotlib")

COLUMNS = [
    {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
    {"name": "sex", "type": "categorical", "categories": ["F", "M"]},
]


def panel() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    sizes = rng.integers(1, 9, 150)
    pid = np.repeat(np.arange(150), sizes)
    n = len(pid)
    return pd.DataFrame(
        {"pid": pid, "age": rng.uniform(0, 100, n).round(1), "sex": rng.choice(["F", "M"], n)}
    )


def test_dropped_share_counts_what_max_rows_drops() -> None:
    ids = pd.Series([1, 1, 1, 1, 2, 2, 3, None])
    d = dropped_share(ids, "pid", 2)
    assert (
        d["rows"] == 8
        and d["persons"] == 3
        and d["by_cap"]
        == {
            "max_rows": 2,
            "missing_ids": 1,
        }
    )
    assert d["kept"] == 5 and d["share_dropped"] == pytest.approx(3 / 8)
    assert d["persons_over_max_rows"] == 1


def test_report_states_the_share_dropped_in_json_and_html(tmp_path, capsys) -> None:
    from ppdp.cli import main

    df = panel()
    df.to_csv(tmp_path / "t.csv", index=False)
    unit = {"column": "pid", "max_rows": "auto", "auto": {"upper": 12}}
    Schema.from_dict({"columns": COLUMNS, "privacy_unit": unit}).to_file(tmp_path / "s.json")
    argv = ["publish", "synth", str(tmp_path / "t.csv"), "--schema", str(tmp_path / "s.json")]
    assert main([*argv, "--epsilon", "1", "-o", str(tmp_path / "r.csv")]) == 0
    said = capsys.readouterr().err
    assert "% dropped" in said and "(custodian only, not released)" in said  # at publish
    side = json.loads((tmp_path / "r.csv.guarantee.json").read_text())
    assert "dropped" not in json.dumps(side)  # never in the release's files
    k = side["guarantee"]["details"]["privacy_unit"]["max_rows"]
    report = ["report", str(tmp_path / "r.csv"), "--original", str(tmp_path / "t.csv")]
    report += ["--schema", str(tmp_path / "s.json"), "-o", str(tmp_path / "rep.html")]
    assert main([*report, "--json", str(tmp_path / "rep.json")]) == 0
    b = json.loads((tmp_path / "rep.json").read_text())["bounding"]
    assert b == dropped_share(df["pid"], "pid", k)  # the chosen k, from the guarantee
    assert b["by_cap"]["max_rows"] == int(np.maximum(df.groupby("pid").size() - k, 0).sum())
    html = (tmp_path / "rep.html").read_text()
    assert "Contribution bounding (custodian only)" in html
    assert f"{b['share_dropped']:.1%} dropped" in html and f"max_rows = {k}" in html


def test_no_unit_no_bounding_section(tmp_path) -> None:
    from ppdp.evaluate.report import quality_report

    df = panel().drop(columns="pid")
    r = quality_report(
        df, df.sample(frac=1.0, random_state=1), Schema.from_dict({"columns": COLUMNS})
    )
    assert r.bounding is None and r.to_dict()["bounding"] is None
