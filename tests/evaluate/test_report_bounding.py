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


def test_parquet_report_states_the_same_share_as_in_memory(tmp_path, capsys) -> None:
    """The same panel as a CSV and as four Parquet files (shuffled, so most persons' rows
    span several files): the Parquet report's bounding block is the in-memory one's, with
    the ``auto`` cap the guarantee states, and its HTML has the custodian's section."""
    pytest.importorskip("dask.dataframe")
    pytest.importorskip("pyarrow")
    from ppdp.cli import main

    df = panel()
    df.to_csv(tmp_path / "t.csv", index=False)
    shuffled = df.sample(frac=1.0, random_state=2).reset_index(drop=True)
    (tmp_path / "ds").mkdir()
    for i, part in enumerate(np.array_split(np.arange(len(shuffled)), 4)):
        shuffled.iloc[part].to_parquet(tmp_path / "ds" / f"part-{i}.parquet", index=False)
    per_file = [set(shuffled.iloc[p]["pid"]) for p in np.array_split(np.arange(len(df)), 4)]
    assert len(per_file[0] & per_file[1]) > 10  # many persons' rows span files
    unit = {"column": "pid", "max_rows": "auto", "auto": {"upper": 12}}
    Schema.from_dict({"columns": COLUMNS, "privacy_unit": unit}).to_file(tmp_path / "s.json")
    argv = ["publish", "synth", str(tmp_path / "t.csv"), "--schema", str(tmp_path / "s.json")]
    assert main([*argv, "--epsilon", "1", "-o", str(tmp_path / "r.csv")]) == 0
    capsys.readouterr()
    blocks = {}
    for name, original in [("mem", tmp_path / "t.csv"), ("pq", tmp_path / "ds")]:
        report = ["report", str(tmp_path / "r.csv"), "--original", str(original)]
        report += ["--schema", str(tmp_path / "s.json"), "-o", str(tmp_path / f"{name}.html")]
        report += ["--json", str(tmp_path / f"{name}.json"), "--scheduler", "sync"]
        assert main(report) == 0
        blocks[name] = json.loads((tmp_path / f"{name}.json").read_text())["bounding"]
    side = json.loads((tmp_path / "r.csv.guarantee.json").read_text())
    k = side["guarantee"]["details"]["privacy_unit"]["max_rows"]
    assert blocks["pq"] is not None and blocks["pq"] == blocks["mem"]
    assert blocks["pq"]["max_rows"] == k
    sizes = df.groupby("pid").size()
    assert blocks["pq"]["by_cap"]["max_rows"] == int(np.maximum(sizes - k, 0).sum())
    html = (tmp_path / "pq.html").read_text()
    assert "Contribution bounding (custodian only)" in html and f"max_rows = {k}" in html


def test_dataset_report_bounding_of_a_dask_frame_and_a_declared_cap() -> None:
    """A Dask frame whose persons span partitions, a declared cap and no guarantee: the
    block equals :func:`dropped_share` on the whole column; without a unit it is None."""
    dd = pytest.importorskip("dask.dataframe")
    from ppdp.evaluate.parquet_report import dataset_report

    df = panel().sample(frac=1.0, random_state=3).reset_index(drop=True)
    df.loc[[3, 40], "pid"] = np.nan  # rows without an id: dropped, counted apart
    schema = Schema.from_dict(
        {"columns": COLUMNS, "privacy_unit": {"column": "pid", "max_rows": 3}}
    )
    frame = dd.from_pandas(df, npartitions=5, sort=False)
    spans = frame.map_partitions(lambda p: p[["pid"]].drop_duplicates()).compute()
    assert spans["pid"].duplicated().any()  # some person's rows are in several partitions
    release = df[["age", "sex"]].sample(frac=1.0, random_state=4).reset_index(drop=True)
    r = dataset_report(frame, release, schema, scheduler="sync")
    assert r.bounding == dropped_share(df["pid"], "pid", 3)
    assert r.bounding["by_cap"] == {
        "max_rows": int(np.maximum(df.groupby("pid").size() - 3, 0).sum()),
        "missing_ids": 2,
    }
    assert r.bounding["by_cap"]["max_rows"] > 0
    plain = Schema.from_dict({"columns": COLUMNS})
    r = dataset_report(frame[["age", "sex"]], release, plain, scheduler="sync")
    assert r.bounding is None


GROUP_COLUMNS = [
    *COLUMNS,
    {"name": "reg", "type": "categorical", "categories": ["a", "b", "c"]},
]


def group_panel(even: bool) -> pd.DataFrame:
    """150 persons in 1-5 of the 6 (sex, reg) groups. ``even``: every group of a person has
    2-4 rows, so after ``max_rows_per_group = 2`` all are of one size (no draw changes the
    counts); otherwise 1-4 rows (groups of unequal size: the counts depend on the keys)."""
    rng = np.random.default_rng(5)
    cells = [(s, r) for s in "FM" for r in "abc"]
    rows = []
    for p in range(150):
        for g in rng.choice(6, rng.integers(1, 6), replace=False):
            for _ in range(rng.integers(2 if even else 1, 5)):
                rows.append((p, float(rng.uniform(0, 100)), *cells[g]))
    return pd.DataFrame(rows, columns=["pid", "age", "sex", "reg"])


def _publish_groupby(tmp_path, capsys, df: pd.DataFrame) -> tuple[dict[str, int], dict]:
    """Publish a GroupBy release with both caps; the custodian's per-cap counts (stderr)
    and the sidecar."""
    import re

    from ppdp.cli import main

    df.to_csv(tmp_path / "t.csv", index=False)
    unit = {"column": "pid", "max_rows": 3}
    schema = Schema.from_dict({"columns": GROUP_COLUMNS, "privacy_unit": unit})
    schema.to_file(tmp_path / "s.json")
    argv = ["publish", "groupby", str(tmp_path / "t.csv"), "--schema", str(tmp_path / "s.json")]
    argv += ["--by", "sex,reg", "--max-groups", "2", "--max-rows-per-group", "2"]
    assert main([*argv, "--epsilon", "1", "--seed", "3", "-o", str(tmp_path / "r.csv")]) == 0
    said = capsys.readouterr().err
    printed = {cap: int(n.replace(",", "")) for n, cap in re.findall(r"([\d,]+) by (\w+)=", said)}
    side = json.loads((tmp_path / "r.csv.guarantee.json").read_text())
    assert "dropped" not in json.dumps(side)  # never in the release's files
    return printed, side


def test_groupby_caps_in_the_bounding_block_equal_the_counts_printed_at_publish(
    tmp_path, capsys
) -> None:
    """Both group caps, groups of one size after L∞: the block's rows dropped per cap are
    the ones the publish printed (custodian's line), exactly, and the HTML lists each cap."""
    from types import SimpleNamespace

    from ppdp.evaluate._report_html import _bounding_html
    from ppdp.evaluate.report import bounding_of

    df = group_panel(even=True)
    printed, side = _publish_groupby(tmp_path, capsys, df)
    assert set(printed) == {"max_rows_per_group", "max_groups", "max_rows"}  # each one drops
    schema = Schema.from_file(tmp_path / "s.json")
    b = bounding_of(df, schema, side)
    assert b["exact"] is True
    assert b["by_cap"] == {**printed, "missing_ids": 0}
    assert b["kept"] == len(df) - sum(printed.values())
    assert (b["max_groups"], b["max_rows_per_group"], b["max_rows"]) == (2, 2, 3)
    html = _bounding_html(SimpleNamespace(bounding=b))
    for cap, value in (("max_groups", 2), ("max_rows_per_group", 2), ("max_rows", 3)):
        assert f"{cap} = {value}</td><td>{printed[cap]:,}</td>" in html
    assert "about" not in html


def test_groupby_caps_with_unequal_groups_are_about_and_say_how(tmp_path, capsys) -> None:
    """Groups of unequal size: which a person keeps is keyed-random, so ``max_groups`` and
    ``max_rows`` are one draw ("about", the method stated); ``max_rows_per_group`` is exact."""
    from types import SimpleNamespace

    from ppdp.evaluate._report_html import _bounding_html
    from ppdp.evaluate.report import bounding_of

    df = group_panel(even=False)
    printed, side = _publish_groupby(tmp_path, capsys, df)
    b = bounding_of(df, Schema.from_file(tmp_path / "s.json"), side)
    assert b["exact"] is False and "one draw" in b["method"]
    assert b["by_cap"]["max_rows_per_group"] == printed["max_rows_per_group"]
    sizes = df.groupby(["pid", "sex", "reg"]).size()
    assert printed["max_rows_per_group"] == int(np.maximum(sizes - 2, 0).sum())
    html = _bounding_html(SimpleNamespace(bounding=b))
    assert "about " in html and "one draw" in html


def test_groupby_caps_on_a_dask_original_say_they_are_in_memory_only(tmp_path, capsys) -> None:
    """A Dask original: the block keeps ``max_rows`` (counted before the group caps) and says
    in a note that the group caps are recomputed in memory only."""
    dd = pytest.importorskip("dask.dataframe")
    from ppdp.evaluate.parquet_report import _bounding

    df = group_panel(even=True)
    _, side = _publish_groupby(tmp_path, capsys, df)
    frame = dd.from_pandas(df, npartitions=3, sort=False)
    schema = Schema.from_file(tmp_path / "s.json")
    b = _bounding(frame, frame["pid"], schema, side, "sync")
    assert "in-memory original only" in b["note"] and "max_groups" not in b["by_cap"]
    assert b["by_cap"]["max_rows"] == int(np.maximum(df.groupby("pid").size() - 3, 0).sum())


def test_a_release_of_synthetic_persons_is_reported_beside_its_synthetic_ids(tmp_path, capsys):
    """A synthetic table of persons (a ``per_person`` column) holds the unit's column with
    synthetic ids: the report takes it (never compares it) and still refuses any other
    undeclared column (seen in the second new-user trial of ``ppdp ui``)."""
    from ppdp.cli import main
    from ppdp.evaluate.report import quality_report
    from ppdp.exceptions import DataValidationError

    df = panel()
    df["sex"] = np.where(df["pid"] % 3 == 0, "F", "M")  # one value per person
    df.to_csv(tmp_path / "t.csv", index=False)
    columns = [COLUMNS[0], {**COLUMNS[1], "per_person": True}]
    unit = {"column": "pid", "max_rows": 8}
    schema = Schema.from_dict({"columns": columns, "privacy_unit": unit})
    schema.to_file(tmp_path / "s.json")
    argv = ["publish", "synth", str(tmp_path / "t.csv"), "--schema", str(tmp_path / "s.json")]
    assert main([*argv, "--epsilon", "1", "-o", str(tmp_path / "r.csv")]) == 0
    release = pd.read_csv(tmp_path / "r.csv")
    assert "pid" in release.columns and str(release["pid"].iloc[0]).startswith("P")
    capsys.readouterr()
    report = ["report", str(tmp_path / "r.csv"), "--original", str(tmp_path / "t.csv")]
    assert (
        main([*report, "--schema", str(tmp_path / "s.json"), "-o", str(tmp_path / "r.html")]) == 0
    )
    assert capsys.readouterr().out.startswith("verdict: ")
    with pytest.raises(DataValidationError, match="has undeclared 'x'"):
        quality_report(df, release.assign(x=1), schema)
