"""A Parquet dataset that changes between the validating scan and the release.

Each file's identity (stat, inode, footer hash) is recorded when the dataset is opened and
checked before the spend and at every partition read. A change before the spend is refused
with nothing charged; a change after it stops the release in one line that says ε was
charged, and nothing is written. Each scenario fails on the code before the identities
(which released the changed files, or spoke of free space).
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

import ppdp.data.distributed as dist
import ppdp.release as base
from ppdp.accounting import budget_report
from ppdp.cli import main
from ppdp.datasets import load_adult

pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")


@pytest.fixture
def dataset(tmp_path):
    df, schema = load_adult()
    df = df.iloc[:1200].reset_index(drop=True)
    ds = tmp_path / "ds"
    ds.mkdir()
    for i in range(3):
        df.iloc[400 * i : 400 * (i + 1)].to_parquet(ds / f"part-{i}.parquet", index=False)
    schema.to_file(tmp_path / "s.json")
    ledger = tmp_path / "l.db"
    init = ["budget", "init", str(ledger), "--dataset-id", "a", "--epsilon", "10"]
    assert main([*init, "--delta", "1e-6"]) == 0
    return tmp_path, df, schema


def _change(root, df, schema, how: str) -> None:
    """Change part-1 in place of the validated one (renamed over it, as a writer would)."""
    target = root / "ds" / "part-1.parquet"
    part = df.iloc[400:800].copy()
    if how == "delete":
        target.unlink()
        return
    if how == "category":
        col = next(c.name for c in schema.columns if getattr(c, "categories", None))
        part[col] = part[col].astype(object)
        part.loc[part.index[0], col] = "UNDECLARED"
    elif how == "nan":
        col = next(c.name for c in schema.columns if getattr(c, "lower", None) is not None)
        part[col] = part[col].astype(float)
        part.loc[part.index[0], col] = np.nan
    elif how == "double":
        part = pd.concat([part, part])
    tmp = root / "ds" / ".next.parquet"
    part.to_parquet(tmp, index=False)
    os.replace(tmp, target)


def _publish(root, capsys) -> tuple[int, list[str]]:
    argv = ["publish", "pca", str(root / "ds"), "--schema", str(root / "s.json")]
    argv += ["--epsilon", "1", "--components", "2", "-o", str(root / "out")]
    argv += ["--ledger", str(root / "l.db"), "--scheduler", "sync", "-q"]
    rc = main([*argv, "--seed", "3", "--allow-seeded"])
    err = [line for line in capsys.readouterr().err.splitlines() if "LowUtility" not in line]
    return rc, err


def _spent(root) -> float:
    return budget_report(root / "l.db").spent.epsilon


HOWS = ["category", "nan", "double", "delete"]


@pytest.mark.parametrize("how", HOWS)
def test_a_change_after_the_scan_is_refused_before_the_spend(dataset, monkeypatch, capsys, how):
    root, df, schema = dataset
    scan = dist.scan_table

    def scan_then_change(*args, **kwargs):
        result = scan(*args, **kwargs)
        _change(root, df, schema, how)
        return result

    monkeypatch.setattr(dist, "scan_table", scan_then_change)
    rc, err = _publish(root, capsys)
    assert rc == 2 and len(err) == 1, err
    assert "part-1.parquet" in err[0] and "nothing was charged" in err[0]
    assert _spent(root) == 0.0
    assert not (root / "out").exists() and not (root / "out.guarantee.json").exists()


@pytest.mark.parametrize("how", HOWS)
def test_a_change_after_the_spend_says_epsilon_was_charged(dataset, monkeypatch, capsys, how):
    root, df, schema = dataset
    charge = base.charge

    def charge_then_change(*args, **kwargs):
        records = charge(*args, **kwargs)
        _change(root, df, schema, how)
        return records

    monkeypatch.setattr(base, "charge", charge_then_change)
    rc, err = _publish(root, capsys)
    assert rc == 2 and len(err) == 1, err
    line = err[0]
    assert "part-1.parquet" in line and "ε was charged (ε=1" in line
    assert "nothing was released" in line and "free space" not in line
    if how == "delete":
        assert "vanished" in line
    assert _spent(root) == 1.0
    assert not (root / "out").exists() and not (root / "out.guarantee.json").exists()
    assert [p.name for p in root.iterdir() if p.name.startswith(".")] == []


def test_a_file_added_before_the_spend_is_refused(dataset, monkeypatch, capsys):
    root, df, _schema = dataset
    scan = dist.scan_table

    def scan_then_add(*args, **kwargs):
        result = scan(*args, **kwargs)
        df.iloc[:400].to_parquet(root / "ds" / "part-3.parquet", index=False)
        return result

    monkeypatch.setattr(dist, "scan_table", scan_then_add)
    rc, err = _publish(root, capsys)
    assert rc == 2 and len(err) == 1 and "part-3.parquet" in err[0] and "appeared" in err[0]
    assert _spent(root) == 0.0 and not (root / "out").exists()


def test_an_unchanged_dataset_is_released(dataset, capsys):
    root, _df, _schema = dataset
    rc, err = _publish(root, capsys)
    assert rc == 0, err
    assert len(pd.read_parquet(root / "out")) == 1200 and _spent(root) == 1.0


def test_a_rewrite_keeping_size_and_time_is_seen_in_the_footer(tmp_path):
    """Same inode, size and modification time, other statistics: the footer hash differs."""
    path = tmp_path / "a.parquet"
    pd.DataFrame({"x": [1.0, 2.0, 3.0]}).to_parquet(path, index=False)
    before = dist.file_identity(str(path))
    other = tmp_path / "b.parquet"
    pd.DataFrame({"x": [1.0, 2.0, 4.0]}).to_parquet(other, index=False)
    data = other.read_bytes()
    assert len(data) == before.size
    with open(path, "r+b") as fh:  # in place: the inode stays
        fh.write(data)
    os.utime(path, ns=(before.mtime_ns, before.mtime_ns))
    after = dist.file_identity(str(path))
    assert (after.inode, after.size, after.mtime_ns) == (before.inode, before.size, before.mtime_ns)
    assert dist._difference(before, after) == "was rewritten (its Parquet footer differs)"
    assert dist._difference(before, dist.file_identity(str(path))) is not None
    assert dist._difference(before, before) is None


@pytest.mark.parametrize("how", ["category", "nan"])
def test_the_release_pass_counts_what_it_reads(dataset, monkeypatch, capsys, how):
    """A rewrite no identity sees (here: the checks switched off) is still refused: each
    partition's encoding counts on the release pass must be the scan's for it."""
    root, df, schema = dataset
    monkeypatch.setattr(dist, "_verify", lambda *_a, **_k: None)
    charge = base.charge

    def charge_then_change(*args, **kwargs):
        records = charge(*args, **kwargs)
        _change(root, df, schema, how)
        return records

    monkeypatch.setattr(base, "charge", charge_then_change)
    rc, err = _publish(root, capsys)
    assert rc == 2 and len(err) == 1, err
    assert "partition 1 read 400 row(s) with other encoding counts" in err[0]
    assert "ε was charged (ε=1" in err[0] and "nothing was released" in err[0]
    assert _spent(root) == 1.0 and not (root / "out").exists()
