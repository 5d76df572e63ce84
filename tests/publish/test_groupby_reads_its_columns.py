"""A group-by release checks and warns about the columns it reads only (by, the statistics'
columns, the privacy unit's), in memory, on a Parquet dataset and through ``ppdp publish
groupby``; what it releases for a seed is what the whole-table check gave; an error in a
column it reads is still refused in one line, nothing spent or written
(benchmarks/ui/new_user_trial.md, second trial, finding 6)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from test_groupby import make_df, make_schema

from ppdp.accounting import Accountant, budget_report
from ppdp.budget import PrivacyBudget
from ppdp.cli import main
from ppdp.data import Schema
from ppdp.evaluate.group_report import group_report
from ppdp.exceptions import DataValidationError
from ppdp.publish import GroupByPublisher

KW = {"by": ["sex"], "means": ["age"]}


def _dirty(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with errors in the columns a group-by by sex of age's mean does not read:
    an undeclared region, missing incomes (nan_policy 'error'), an undeclared class."""
    out = df.copy()
    out.loc[::7, "region"] = "W"
    out.loc[::5, "income"] = np.nan
    out.loc[::9, "y"] = "maybe"
    return out


def _release(data, schema=None, seed=3, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a seeded random_state warns
        pub = GroupByPublisher(1.0, schema or make_schema(), random_state=seed, **(kw or KW))
        where = {} if isinstance(data, pd.DataFrame) else {"scheduler": "sync"}
        return pub.fit(data, **where)


def _whole_table_check(monkeypatch) -> None:
    """The release as it was before: every declared column checked."""
    monkeypatch.setattr(GroupByPublisher, "checked_table", lambda self, data: data)


def test_errors_in_columns_it_does_not_read_are_not_refused_and_change_nothing() -> None:
    clean = make_df(2000, 1)
    with pytest.raises(DataValidationError, match=r"^column 'income'"):  # the whole table
        make_schema().encode(_dirty(clean))
    released = _release(_dirty(clean)).release_.data
    pd.testing.assert_frame_equal(released, _release(clean).release_.data)


def test_an_error_in_a_column_it_reads_is_still_refused_in_one_line_nothing_spent() -> None:
    for column, value in (("sex", "X"), ("age", "old")):
        bad = make_df(500, 2)
        bad[column] = bad[column].astype(object)
        bad.loc[::11, column] = value
        acct = Accountant.in_memory(total=PrivacyBudget(5.0))
        pub = GroupByPublisher(1.0, make_schema(), **KW)
        with pytest.raises(DataValidationError, match=rf"^column '{column}': \d+ ") as info:
            pub.fit(bad, accountant=acct)
        assert "\n" not in str(info.value)
        assert acct.history() == [] and getattr(pub, "release_", None) is None


def test_a_label_in_by_is_still_checked() -> None:
    bad = make_df(300, 4)
    bad.loc[::3, "y"] = "maybe"
    with pytest.raises(DataValidationError, match=r"^label 'y'"):
        _release(bad, by=["y"], means=["age"])


def test_a_valid_table_gives_the_release_of_the_whole_table_check(monkeypatch) -> None:
    """Under a privacy unit with caps too (the bounding fingerprints every column, as before)."""
    df = make_df(1500, 5)
    df["pid"] = np.arange(len(df)) // 3
    unit = make_schema().to_dict() | {"privacy_unit": {"column": "pid", "max_rows": 3}}
    schema = Schema.from_dict(unit)
    kw = {"by": ["sex", "region"], "means": ["age"], "variances": ["age"], "max_groups": 2,
          "max_rows_per_group": 1}  # fmt: skip
    new = _release(df, schema, **kw)
    _whole_table_check(monkeypatch)
    old = _release(df, schema, **kw)
    pd.testing.assert_frame_equal(new.release_.data, old.release_.data)


@pytest.fixture
def dataset(tmp_path):
    pytest.importorskip("dask.dataframe")
    pytest.importorskip("pyarrow")
    frames = [_dirty(make_df(700, 1)), make_df(900, 3), _dirty(make_df(400, 4))]
    folder = tmp_path / "in"
    folder.mkdir()
    for i, f in enumerate(frames):
        f.to_parquet(folder / f"part-{i}.parquet", index=False)
    return folder, pd.concat(frames, ignore_index=True)


def test_a_parquet_dataset_is_checked_in_the_columns_it_reads_only(dataset, tmp_path) -> None:
    path, whole = dataset
    dist = _release(path)
    pd.testing.assert_frame_equal(dist.release_.data, _release(whole).release_.data)
    bad = make_df(300, 6)
    bad.loc[::4, "sex"] = "X"
    bad.to_parquet(path / "part-9.parquet", index=False)
    acct = Accountant.in_memory(total=PrivacyBudget(5.0))
    pub = GroupByPublisher(1.0, make_schema(), **KW)
    with pytest.raises(DataValidationError, match=r"^column 'sex': 75 value"):
        pub.fit(path, accountant=acct, scheduler="sync")
    assert acct.history() == []


def test_the_cli_publishes_and_warns_about_the_columns_it_reads_only(tmp_path, capsys) -> None:
    df = make_df(1200, 7)
    df.loc[::2, "income"] = np.nan  # half missing: the impute warning, were it read
    df.loc[::3, "region"] = "W"  # undeclared, no other bucket: a refusal, were it read
    df.loc[::20, "age"] = np.nan  # 5 %: said, not warned
    data, schema = tmp_path / "t.csv", tmp_path / "s.json"
    df.to_csv(data, index=False)
    spec = make_schema(impute=True).to_dict()
    schema.write_text(json.dumps(spec), encoding="utf-8")
    ledger = tmp_path / "l.db"
    assert main(["budget", "init", str(ledger), "--dataset-id", "t", "--epsilon", "3"]) == 0
    out = tmp_path / "g.csv"
    args = ["publish", "groupby", str(data), "--schema", str(schema), "--by", "sex", "--means",
            "age", "--epsilon", "1", "--ledger", str(ledger), "-o", str(out)]  # fmt: skip
    assert main([*args, "--dry-run"]) == 0
    dry = capsys.readouterr().err
    assert main(args) == 0
    err = capsys.readouterr().err
    for said in (dry, err):
        assert "'age': 60 (5.0%)" in said  # a column it reads: said
        assert "income" not in said and "region" not in said
    assert out.is_file() and budget_report(ledger).spent.epsilon == pytest.approx(1.0)


def test_the_cli_refuses_an_error_in_a_column_it_reads_in_one_line(tmp_path, capsys) -> None:
    df = _dirty(make_df(600, 8))
    df.loc[::10, "sex"] = "X"
    data, schema = tmp_path / "t.csv", tmp_path / "s.json"
    df.to_csv(data, index=False)
    make_schema().to_file(schema)
    ledger = tmp_path / "l.db"
    assert main(["budget", "init", str(ledger), "--dataset-id", "t", "--epsilon", "3"]) == 0
    out = tmp_path / "g.csv"
    code = main(["publish", "groupby", str(data), "--schema", str(schema), "--by", "sex",
                 "--epsilon", "1", "--ledger", str(ledger), "-o", str(out)])  # fmt: skip
    assert code != 0
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("ppdp: error")]
    assert len(lines) == 1 and "column 'sex': 60 value(s)" in lines[0]
    assert not out.exists() and budget_report(ledger).spent.epsilon == 0.0


def test_the_report_of_such_a_release_reads_the_same_columns() -> None:
    clean = make_df(2000, 1)
    pub = _release(_dirty(clean))
    sidecar = {"method": "groupby", "guarantee": pub.release_.guarantee.to_dict()}
    report = group_report(_dirty(clean), pub.release_.data, make_schema(), sidecar)
    assert report.kind == "groupby" and report.groups["exact"]
