"""``ppdp report`` on a group-by release (custodian only): each released statistic against
its true value on the rows the release read (after its contribution bounding), its
intervals' coverage, the rows each cap dropped and, for private keys, the keys counted
(never named unless released). Bad input: one line, non-zero exit, nothing written."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from ppdp.cli import main
from ppdp.data import Schema
from ppdp.publish.group_quantiles import GRID

pytest.importorskip("matplotlib")

COLUMNS = [
    {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
    {"name": "sex", "type": "categorical", "categories": ["F", "M"]},
    {"name": "reg", "type": "categorical", "categories": ["a", "b", "c"]},
]


def fitting_panel(n_persons: int = 400, seed: int = 0) -> pd.DataFrame:
    """Persons with 1-3 rows in at most 2 groups and at most 2 rows per group (no cap of
    ``max_rows 3, max_groups 2, max_rows_per_group 2`` chooses a row), ages partly outside
    the bounds (clipped)."""
    rng = np.random.default_rng(seed)
    cells = [(s, r) for s in "FM" for r in "abc"]
    rows = []
    for p in range(n_persons):
        groups = rng.choice(6, 2, replace=False)
        sizes = [2, 1] if rng.random() < 0.5 else [1, rng.integers(0, 2)]
        for g, k in zip(groups, sizes, strict=True):
            for _ in range(k):
                rows.append((float(p), float(rng.uniform(-10, 110)), *cells[g]))
    return pd.DataFrame(rows, columns=["pid", "age", "sex", "reg"])


def _files(tmp_path, df: pd.DataFrame, schema: dict) -> tuple[str, str]:
    df.to_csv(tmp_path / "t.csv", index=False)
    Schema.from_dict(schema).to_file(tmp_path / "s.json")
    return str(tmp_path / "t.csv"), str(tmp_path / "s.json")


def _publish(tmp_path, extra: list[str], seed: int = 3) -> str:
    argv = ["publish", "groupby", str(tmp_path / "t.csv"), "--schema", str(tmp_path / "s.json")]
    out = str(tmp_path / "r.csv")
    assert main([*argv, *extra, "--seed", str(seed), "-o", out]) == 0
    return out


def _report(tmp_path, release: str, original: str | None = None) -> tuple[int, dict | None]:
    argv = ["report", release, "--original", original or str(tmp_path / "t.csv")]
    argv += ["--schema", str(tmp_path / "s.json"), "-o", str(tmp_path / "rep.html")]
    rc = main([*argv, "--json", str(tmp_path / "rep.json"), "--force"])
    if rc != 0:
        return rc, None
    return rc, json.loads((tmp_path / "rep.json").read_text())


def _by_stat(numbers: dict) -> dict[str, dict]:
    return {e["statistic"]: e for e in numbers["groups"]["statistics"]}


def test_the_figures_equal_a_direct_computation(tmp_path, capsys) -> None:
    """No cap chooses a row: the true values are the release's own, and every figure
    (median and largest |error|, the trivial release's, the coverage) equals the one
    computed here with pandas on the original's rows, the ages clipped."""
    df = fitting_panel()
    unit = {"column": "pid", "max_rows": 3}
    _files(tmp_path, df, {"columns": COLUMNS, "privacy_unit": unit})
    caps = ["--max-groups", "2", "--max-rows-per-group", "2"]
    stats = ["--means", "age", "--variances", "age", "--quantiles", "age"]
    out = _publish(tmp_path, ["--by", "sex,reg", *caps, *stats, "--epsilon", "3"])
    capsys.readouterr()
    rc, numbers = _report(tmp_path, out)
    assert rc == 0 and numbers["kind"] == "groupby"
    said = capsys.readouterr().out
    b = numbers["bounding"]
    assert b["exact"] is True and b["by_cap"] == {
        "max_rows_per_group": 0,
        "max_groups": 0,
        "max_rows": 0,
        "missing_ids": 0,
    }
    assert "bounding (custodian only): 0.0% of" in said and "0 by max_groups=2" in said
    assert "pairs" not in said.splitlines()[0]
    kept = df.assign(age=df["age"].clip(0, 100))
    grouped = kept.groupby(["sex", "reg"])["age"]
    truth = pd.DataFrame(
        {
            "count": grouped.size(),
            "mean_age": grouped.mean(),
            "var_age": grouped.var(ddof=0),
            "std_age": grouped.std(ddof=0),
            "p50_age": grouped.quantile(0.5, interpolation="lower"),
        }
    )
    release = pd.read_csv(out).set_index(["sex", "reg"])
    assert len(release) == 6
    got = _by_stat(numbers)
    trivial = {"count": truth["count"].mean(), "mean_age": 50.0, "var_age": 100**2 / 12}
    trivial |= {"std_age": 100 / np.sqrt(12), "p50_age": 50.0}
    for stat, tol in [("count", 0), ("mean_age", 1e-5), ("var_age", 0.1), ("std_age", 1e-3)]:
        err = (release[stat] - truth[stat]).abs()
        e = got[stat]
        assert e["exact"] is True and e["groups"] == 6
        assert e["median_abs_error"] == pytest.approx(err.median(), abs=tol)
        assert e["max_abs_error"] == pytest.approx(err.max(), abs=tol)
        base = (trivial[stat] - truth[stat]).abs().median()
        assert e["trivial_median_abs_error"] == pytest.approx(base, abs=tol)
        inside = (release[f"{stat}_lo"] <= truth[stat]) & (truth[stat] <= release[f"{stat}_hi"])
        assert e["coverage"] == pytest.approx(inside.mean()) and e["interval"] == 0.95
    q = got["p50_age"]  # on the release's grid: within a grid step of the sorted values'
    err = (release["p50_age"] - truth["p50_age"]).abs()
    assert q["median_abs_error"] == pytest.approx(err.median(), abs=100 / GRID)
    # the default tree quantiles carry intervals: their coverage is read like the others'
    inside = (release["p50_age_lo"] <= truth["p50_age"]) & (
        truth["p50_age"] <= release["p50_age_hi"]
    )
    assert q["coverage"] == pytest.approx(inside.mean()) and q["interval"] == 0.95
    assert numbers["groups"]["keys"]["released"] == 6 and numbers["groups"]["keys"]["in_data"] == 6
    html = (tmp_path / "rep.html").read_text()
    assert "Quality report of a group-by release" in html
    assert "Contribution bounding (custodian only)" in html and "about" not in html


def test_counts_are_exact_when_only_max_rows_per_group_drops_rows(tmp_path, capsys) -> None:
    """Only L∞ binds: each person keeps min(rows, 2) of each group whatever the keys, so the
    true counts are exact (``Σ_p min(n_pg, 2)``); which rows are kept is a draw, so the
    means are "about"."""
    rng = np.random.default_rng(1)
    rows = [
        (p, float(rng.uniform(0, 100)), "FM"[p % 2], "abc"[p % 3])
        for p in range(300)
        for _ in range(rng.integers(1, 5))
    ]
    df = pd.DataFrame(rows, columns=["pid", "age", "sex", "reg"])
    _files(tmp_path, df, {"columns": COLUMNS, "privacy_unit": {"column": "pid", "max_rows": 4}})
    argv = ["--by", "sex,reg", "--max-rows-per-group", "2", "--means", "age", "--epsilon", "1"]
    out = _publish(tmp_path, argv)
    capsys.readouterr()
    rc, numbers = _report(tmp_path, out)
    assert rc == 0
    got = _by_stat(numbers)
    per = df.groupby(["pid", "sex", "reg"]).size().clip(upper=2)
    truth = per.groupby(["sex", "reg"]).sum()
    release = pd.read_csv(out).set_index(["sex", "reg"])
    err = (release["count"] - truth.reindex(release.index)).abs()
    assert got["count"]["exact"] is True and got["mean_age"]["exact"] is False
    assert got["count"]["median_abs_error"] == err.median()
    assert got["count"]["max_abs_error"] == err.max()
    assert numbers["bounding"]["by_cap"]["max_rows_per_group"] == int(
        (df.groupby(["pid", "sex", "reg"]).size() - 2).clip(lower=0).sum()
    )
    html = (tmp_path / "rep.html").read_text()
    assert "about " in html  # the means' figures


def _many_groups(n_cells: int = 300, seed: int = 4) -> tuple[pd.DataFrame, list[dict]]:
    """Persons of 1-3 rows in one of ``n_cells`` declared cells: ``max_rows 3`` chooses no
    row, so the true counts are exact and each person may bring 3 rows."""
    rng = np.random.default_rng(seed)
    cells = [f"c{i:03d}" for i in range(n_cells)]
    sizes = rng.integers(1, 4, 3 * n_cells)
    pid = np.repeat(np.arange(sizes.size), sizes)
    cell = np.repeat(rng.choice(cells, sizes.size), sizes)
    df = pd.DataFrame({"pid": pid, "cell": cell, "age": rng.uniform(0, 100, pid.size)})
    columns = [
        {"name": "cell", "type": "categorical", "categories": cells},
        {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
    ]
    return df, columns


def test_count_coverage_is_nominal_and_fails_with_intervals_from_per_row_noise(
    tmp_path, capsys, monkeypatch
) -> None:
    """300 groups, each count's noise independent: with the right intervals (at least 0.95
    each) the report's coverage is >= 0.90 but with probability P(Bin(300, 0.95) < 270)
    < 2e-4 (the false-positive rate; seeded, so the run is fixed). The broken variant
    computes the intervals from the noise of one row (b / 3) while the counts carry one
    person's (3 rows): its coverage falls far below."""
    assert binom.cdf(269, 300, 0.95) < 2e-4
    from ppdp.publish.groupby import GroupByPublisher

    df, columns = _many_groups()
    _files(tmp_path, df, {"columns": columns, "privacy_unit": {"column": "pid", "max_rows": 3}})
    argv = ["--by", "cell", "--epsilon", "1"]
    out = _publish(tmp_path, argv)
    capsys.readouterr()
    rc, numbers = _report(tmp_path, out)
    count = _by_stat(numbers)["count"]
    assert rc == 0 and count["exact"] is True and count["groups"] == 300
    assert count["coverage"] >= 0.90

    right = GroupByPublisher._count_noise

    def per_row(self, plan):  # the wrong noise: one row's, not one person's
        law, scale = right(self, plan)
        return law, scale / plan.contribution

    monkeypatch.setattr(GroupByPublisher, "_count_noise", per_row)
    out = _publish(tmp_path, [*argv, "--force"])
    capsys.readouterr()
    rc, numbers = _report(tmp_path, out)
    broken = _by_stat(numbers)["count"]
    assert rc == 0 and broken["coverage"] < 0.80


HOSPITAL = [
    {"name": "dx", "type": "categorical", "open": True, "categories": ["Z99", "C1"]},
    {"name": "sex", "type": "categorical", "categories": ["F", "M"]},
    {"name": "los", "type": "numeric", "lower": 1, "upper": 365},
]


def hospital(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    """A long-tailed code column (most codes rare: not released), 1-4 rows per person."""
    rng = np.random.default_rng(seed)
    codes = np.minimum(rng.zipf(1.6, n), 400)
    pid = np.repeat(np.arange(n), rng.integers(1, 5, n))[:n]
    return pd.DataFrame(
        {
            "pid": pid,
            "dx": [f"C{c}" for c in codes],
            "sex": rng.choice(["F", "M"], n),
            "los": np.round(rng.gamma(2.0, 6.0, n) + 1, 1),
        }
    )


def test_private_keys_are_counted_and_an_unreleased_key_is_never_named(tmp_path, capsys) -> None:
    df = hospital()
    _files(tmp_path, df, {"columns": HOSPITAL, "privacy_unit": {"column": "pid", "max_rows": 2}})
    argv = ["--by", "dx", "--keys", "private", "--delta", "1e-6", "--means", "los"]
    out = _publish(tmp_path, [*argv, "--epsilon", "1"])
    capsys.readouterr()
    rc, numbers = _report(tmp_path, out)
    assert rc == 0
    keys = numbers["groups"]["keys"]
    released = set(pd.read_csv(out)["dx"].astype(str))
    in_data = set(df["dx"])
    assert keys["mode"] == "private" and keys["released"] == len(released)
    assert keys["in_data"] == len(in_data)
    assert keys["in_data_not_released"] == len(in_data - released)
    assert keys["released_declared"] == 2  # declared keys: always released
    assert keys["released_from_data"] == len(released - {"Z99", "C1"})
    assert len(in_data - released) > 50  # many rare codes are not released
    said = capsys.readouterr().out
    text = (tmp_path / "rep.html").read_text() + (tmp_path / "rep.json").read_text() + said
    for key in in_data - released:
        assert f"{key}<" not in text and f'"{key}"' not in text and f"{key} " not in text
    assert "rows the release read" in (tmp_path / "rep.html").read_text()


def test_a_partitioned_release_is_read_and_a_parquet_original_is_one_line(tmp_path, capsys) -> None:
    """A release folder (from a Parquet input) is reported against the CSV original; a
    Parquet dataset original is refused in one line, nothing written."""
    pytest.importorskip("dask.dataframe")
    pytest.importorskip("pyarrow")
    df = hospital(1200)
    _files(tmp_path, df, {"columns": HOSPITAL, "privacy_unit": {"column": "pid", "max_rows": 2}})
    (tmp_path / "in").mkdir()
    df.iloc[:600].to_parquet(tmp_path / "in" / "a.parquet", index=False)
    df.iloc[600:].to_parquet(tmp_path / "in" / "b.parquet", index=False)
    argv = ["publish", "groupby", str(tmp_path / "in"), "--schema", str(tmp_path / "s.json")]
    argv += ["--by", "sex", "--means", "los", "--epsilon", "1", "--seed", "1"]
    assert main([*argv, "-o", str(tmp_path / "rel"), "--scheduler", "sync"]) == 0
    capsys.readouterr()
    rc, numbers = _report(tmp_path, str(tmp_path / "rel"))
    assert rc == 0 and _by_stat(numbers)["count"]["groups"] == 2
    (tmp_path / "rep.html").unlink()
    rc, _ = _report(tmp_path, str(tmp_path / "rel"), original=str(tmp_path / "in"))
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "a Parquet dataset or Dask original" in err[0]
    assert not (tmp_path / "rep.html").exists()


@pytest.mark.parametrize(
    ("break_it", "message"),
    [
        ("not-groupby", "are not a group-by release's: it lacks 'count'"),
        ("no-guarantee", "looks like a group-by release"),
        ("extra-column", "that a group-by release of (sex, reg) with means of (age)"),
        ("original-columns", "the original's columns do not match the schema: it lacks 'reg'"),
        ("no-unit-column", "the original lacks column 'pid', the privacy unit's id column"),
        ("schema-without-unit", "the schema declares no privacy unit but the release states"),
        ("foreign-group", "group(s) of the release are not declared in the schema"),
        ("not-a-number", "the release's column 'count' holds 'many', not a number"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, break_it, message) -> None:
    df = fitting_panel(60)
    unit = {"column": "pid", "max_rows": 3}
    _files(tmp_path, df, {"columns": COLUMNS, "privacy_unit": unit})
    out = _publish(tmp_path, ["--by", "sex,reg", "--means", "age", "--epsilon", "1"])
    release, original = pd.read_csv(out), df
    if break_it == "not-groupby":
        release = df.drop(columns="pid")
    elif break_it == "no-guarantee":
        (tmp_path / "r.csv.guarantee.json").unlink()
    elif break_it == "extra-column":
        release["income"] = 1.0
    elif break_it == "original-columns":
        original = df.drop(columns="reg")
    elif break_it == "no-unit-column":
        original = df.drop(columns="pid")
    elif break_it == "schema-without-unit":
        Schema.from_dict({"columns": COLUMNS}).to_file(tmp_path / "s.json")
    elif break_it == "foreign-group":
        release.loc[0, "reg"] = "z"
    elif break_it == "not-a-number":
        release["count"] = release["count"].astype(object)
        release.loc[0, "count"] = "many"
    release.to_csv(out, index=False)
    original.to_csv(tmp_path / "o.csv", index=False)
    capsys.readouterr()
    rc, _ = _report(tmp_path, out, original=str(tmp_path / "o.csv"))
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("ppdp: error: ")
    assert message in err[0]
    assert not (tmp_path / "rep.html").exists() and not (tmp_path / "rep.json").exists()


def test_the_whole_table_is_one_group(tmp_path, capsys) -> None:
    """No ``--by`` and no unit: one group, whose true count is the table's rows and true
    mean the clipped ages' mean."""
    df = fitting_panel(100).drop(columns="pid")
    _files(tmp_path, df, {"columns": COLUMNS})
    out = _publish(tmp_path, ["--means", "age", "--epsilon", "1"])
    capsys.readouterr()
    rc, numbers = _report(tmp_path, out)
    assert rc == 0 and numbers["bounding"] is None
    release = pd.read_csv(out)
    got = _by_stat(numbers)
    assert got["count"]["max_abs_error"] == abs(release["count"][0] - len(df))
    mean = df["age"].clip(0, 100).mean()
    assert got["mean_age"]["max_abs_error"] == pytest.approx(abs(release["mean_age"][0] - mean))
    assert numbers["groups"]["keys"]["in_data"] == 1 and numbers["groups"]["exact"] is True
