"""Date columns released end to end: TableSynthesizer in memory and on Parquet, the quality
report, and the command line (draft, publish synth, report, train logreg)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from ppdp.cli import main
from ppdp.data import Schema
from ppdp.data.dates import day_texts, parse_dates
from ppdp.evaluate import quality_report
from ppdp.exceptions import InsecureRandomnessWarning
from ppdp.publish import TableSynthesizer

LO, HI = 16436, 20088  # 2015-01-01, 2024-12-31
WIDTH = (HI - LO) / 16  # one of the synthesizer's 16 equal-width bins: 228 days

SCHEMA = {
    "columns": [
        {"name": "seen", "type": "numeric", "date": True, "lower": "2015-01-01",
         "upper": "2024-12-31"},
        {"name": "ward", "type": "categorical", "categories": ["a", "b"]},
    ]
}  # fmt: skip


def table(n: int = 4000, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """Ward 'a' seen around 2017-02 (sd 150 days), ward 'b' around 2022-11 (sd 250 days)."""
    rng = np.random.default_rng(seed)
    ward = rng.random(n) < 0.4
    days = np.where(ward, rng.normal(17200, 150, n), rng.normal(19300, 250, n))
    days = days.round().clip(LO, HI).astype(np.int64)
    return pd.DataFrame({"seen": day_texts(days), "ward": np.where(ward, "a", "b")}), days


def synth(seed: int) -> TableSynthesizer:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        return TableSynthesizer(1.0, Schema.from_dict(SCHEMA), random_state=seed)


def test_a_synthetic_table_keeps_the_dates_distribution():
    df, days = table()
    rel = synth(3).fit(df).release_.data
    assert len(rel) == len(df) and pd.api.types.is_string_dtype(rel["seen"].dtype)
    got, not_dates = parse_dates(rel["seen"])
    assert not not_dates.any()  # every released value is an ISO date...
    assert rel["seen"].str.fullmatch(r"\d{4}-\d{2}-\d{2}").all()
    assert got.min() >= LO and got.max() <= HI  # ...within the declared bounds
    # Total variation over the 16 bins. Drawing 4,000 synthetic rows alone gives about
    # 0.015 (the data fill 6 bins: sum of sqrt(p (1 - p) / n) x 0.4); the Gaussian noise at
    # rho = 0.015 adds a few rows per bin. Seeds 0-4 measured 0.012 to 0.017; 0.05 leaves
    # three times that, while dates drawn uniformly within the bounds are at 0.52.
    edges = np.linspace(LO, HI, 17)
    p = np.histogram(days, edges)[0] / len(days)
    q = np.histogram(got, edges)[0] / len(got)
    assert 0.5 * np.abs(p - q).sum() < 0.05
    assert 0.5 * np.abs(p - 1 / 16).sum() > 0.5  # the check can fail
    # The dates stay tied to the ward: within a ward, values are drawn uniformly inside
    # their bin, so each mean is off by well under one bin width (measured 9 to 36 days
    # over seeds 0-4); a release losing the tie would be off by about 1,260 days.
    for w in ("a", "b"):
        real = days[df["ward"].to_numpy() == w].mean()
        assert abs(got[rel["ward"].to_numpy() == w].mean() - real) < WIDTH / 2


def test_a_parquet_input_gives_the_in_memory_release(tmp_path):
    pytest.importorskip("dask.dataframe")
    pytest.importorskip("pyarrow")
    df, days = table(3000, seed=1)
    folder = tmp_path / "in"
    folder.mkdir()
    # stored as timestamps (with a time of day, floored), not as the in-memory texts
    stamped = df.assign(seen=days.astype("datetime64[D]").astype("datetime64[ms]"))
    stamped["seen"] += pd.Timedelta(hours=7)
    for i, part in enumerate(np.array_split(np.arange(len(df)), 3)):
        stamped.iloc[part].to_parquet(folder / f"part-{i}.parquet", index=False)
    mem = synth(11).fit(df)
    dist = synth(11)
    dist.fit(folder, scheduler="sync")
    sa, sb = mem.release_.statistics, dist.release_.statistics
    assert sa.keys() == sb.keys() and sa
    for k in sa:
        np.testing.assert_allclose(sb[k], sa[k], rtol=1e-9, atol=0, err_msg=k)
    a = mem.sample(500, random_state=9)
    b = dist.sample(500, random_state=9)
    pd.testing.assert_frame_equal(a, b)
    assert not synth(12).fit(df).sample(500, random_state=9).equals(a)  # seeds differ


def test_the_quality_report_compares_dates_of_two_forms():
    df, _ = table(1500, seed=2)
    d = json.loads(json.dumps(SCHEMA))
    d["columns"][0]["date_format"] = "%d/%m/%Y"
    schema = Schema.from_dict(d)
    export = df.assign(seen=pd.to_datetime(df["seen"]).dt.strftime("%d/%m/%Y"))
    rel = synth(4).fit(df).release_.data  # ISO texts, read alongside the declared format
    report = quality_report(export, rel, schema)
    (col,) = [c for c in report.to_dict()["columns"] if c["name"] == "seen"]
    assert col["date"] is True and col["cells"][0] == "2015-01-01–2015-07-03"
    assert col["tv"] < 0.1 < col["tv_uniform"]
    html = report.to_html()
    assert "Declared bounds [2015-01-01, 2024-12-31]" in html and ">2016-01-01</text>" in html


# ------------------------------------------------------------------ the command line
@pytest.fixture(scope="module")
def survey(tmp_path_factory):
    """A survey export: interview dates ISO, birth dates dd/mm/yyyy, an outcome."""
    root = tmp_path_factory.mktemp("survey")
    rng = np.random.default_rng(5)
    n = 800
    interview = rng.integers(18262, 19358, n)  # 2020-01-01 .. 2022-12-31
    born = rng.integers(-7305, 7305, n)  # 1950 .. 1989
    out = np.where(born + rng.normal(0, 2000, n) > 0, "yes", "no")
    pd.DataFrame(
        {
            "interviewed": day_texts(interview),
            "born": pd.Series(born.astype("datetime64[D]")).dt.strftime("%d/%m/%Y"),
            "region": rng.choice(["north", "south"], n),
            "out": out,
        }
    ).to_csv(root / "survey.csv", index=False)
    return root


def test_draft_publish_report_and_train_on_a_table_with_dates(survey, tmp_path, capsys):
    data, schema = survey / "survey.csv", tmp_path / "survey.yaml"
    assert main(["schema", "draft", str(data), "-o", str(schema), "--label", "out", "-q"]) == 0
    drafted = Schema.from_file(schema)
    assert drafted.draft
    born = drafted.column("born")
    assert born.date and born.date_format == "%d/%m/%Y"
    assert born.to_dict()["lower"] >= "1950-01-01" and born.to_dict()["upper"] <= "1989-12-31"
    assert drafted.column("interviewed").date and drafted.column("interviewed").date_format is None
    schema.write_text(schema.read_text(encoding="utf-8").replace("draft: true\n", ""))
    capsys.readouterr()
    assert main(["schema", "check", str(schema)]) == 0
    assert f"date column 'born': [{born.to_dict()['lower']}, " in capsys.readouterr().out

    release = tmp_path / "release.csv"
    seeded = ["--seed", "1", "-q"]
    argv = ["publish", "synth", str(data), "--schema", str(schema), "--epsilon", "1"]
    assert main([*argv, "-o", str(release), *seeded]) == 0
    rel = pd.read_csv(release, dtype=str)
    for name in ("interviewed", "born"):
        col = Schema.from_file(schema).column(name)
        days, not_dates = parse_dates(rel[name])  # ISO, whatever the input's form
        assert not not_dates.any() and col.lower <= days.min() and days.max() <= col.upper

    js = tmp_path / "r.json"
    argv = ["report", str(release), "--original", str(data), "--schema", str(schema)]
    assert main([*argv, "-o", str(tmp_path / "r.html"), "--json", str(js), "--target", "out"]) == 0
    columns = {c["name"]: c for c in json.loads(js.read_text(encoding="utf-8"))["columns"]}
    assert columns["born"]["date"] is True and columns["born"]["tv"] < 0.2

    model = tmp_path / "model.json"
    argv = ["train", "logreg", str(data), "--schema", str(schema), "--epsilon", "1"]
    assert main([*argv, "-o", str(model), *seeded]) == 0
    assert json.loads(model.read_text(encoding="utf-8"))  # a model file was written
