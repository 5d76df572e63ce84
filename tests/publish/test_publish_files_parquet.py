"""publish_table_file on a Parquet dataset: a partitioned folder, its guarantee beside it.

The release is a folder of part files with ``_SUCCESS``; ``OUT.guarantee.json`` lies beside
it; both appear together or not at all; the clipping warning comes from the fit's one scan;
a dry run scans and spends nothing; refusals come before the spend. The folder, its parts
and its guarantee file are checked for every registered publisher by
tests/test_registry_contract.py; here what the adult table and the workflow's own paths add.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

from ppdp import PrivacyBudget
from ppdp._io import OutputWriteError
from ppdp.accounting import budget_report
from ppdp.cli import main
from ppdp.data.distributed import SUCCESS_MARKER
from ppdp.datasets import load_adult
from ppdp.exceptions import ParameterError
from ppdp.publish import files as pf
from ppdp.publish.files import publish_table_file

pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

N_ROWS = 1200


@pytest.fixture(scope="module")
def adult(tmp_path_factory):
    root = tmp_path_factory.mktemp("adult_parquet")
    df, schema = load_adult()
    df = df.iloc[:N_ROWS].reset_index(drop=True)
    folder = root / "ds"
    folder.mkdir()
    for i, (a, b) in enumerate([(0, 500), (500, 500), (500, N_ROWS)]):  # one empty file
        df.iloc[a:b].to_parquet(folder / f"part-{i}.parquet", index=False)
    df.to_csv(root / "adult.csv", index=False)
    schema.to_file(root / "adult.json")
    return root, df, schema


def _ledger(tmp_path):
    (tmp_path / "ledger").mkdir()
    path = tmp_path / "ledger" / "budget.db"
    argv = ["budget", "init", str(path), "--dataset-id", "adult", "--epsilon", "10"]
    assert main([*argv, "--delta", "1e-6"]) == 0
    return path


def _spent(ledger) -> PrivacyBudget:
    return budget_report(ledger).spent


def _visible(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))


def _hidden(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def _parts(folder) -> list[str]:
    return sorted(p.name for p in folder.glob("part-*.parquet"))


@pytest.mark.filterwarnings("ignore::ppdp.exceptions.LowUtilityWarning")  # the pair check
def test_clipping_warning_comes_from_the_one_scan(adult, tmp_path, monkeypatch):
    root, df, _schema = adult
    spoiled = tmp_path / "spoiled"
    spoiled.mkdir()
    bad = df.copy()
    bad.loc[:199, "age"] = 500  # 200 of 1,200 values above the declared bound
    bad.iloc[:600].to_parquet(spoiled / "a.parquet", index=False)
    bad.iloc[600:].to_parquet(spoiled / "b.parquet", index=False)
    import ppdp.data.distributed as distributed

    scans = []
    real_scan = distributed.scan_table

    def counting(*args, **kwargs):
        scans.append(1)
        return real_scan(*args, **kwargs)

    monkeypatch.setattr(distributed, "scan_table", counting)
    lines: list[str] = []
    publish_table_file(
        "synth",
        spoiled,
        schema=root / "adult.json",
        output=tmp_path / "rel",
        epsilon=1.0,
        scheduler="sync",
        say=lines.append,
    )
    warned = [line for line in lines if line.startswith("warning: column 'age'")]
    assert len(warned) == 1 and "200 of 1,200 values" in warned[0]
    assert len(scans) == 1  # no second pass for the warning


def test_dry_run_scans_and_spends_nothing(adult, tmp_path):
    root, _df, _schema = adult
    ledger = _ledger(tmp_path)
    result = publish_table_file(
        "pca",
        root / "ds",
        schema=root / "adult.json",
        output=tmp_path / "rel",
        epsilon=1.0,
        options={"n_components": 2},
        ledger=ledger,
        scheduler="sync",
        dry_run=True,
    )
    assert result.dry_run and result.n_rows == N_ROWS and result.report.n_rows == N_ROWS
    assert result.charges and result.after is not None
    assert _spent(ledger) == PrivacyBudget(0.0)
    assert not (tmp_path / "rel").exists() and not (tmp_path / "rel.guarantee.json").exists()


def test_force_replaces_only_a_complete_ppdp_folder(adult, tmp_path):
    root, _df, _schema = adult
    kwargs = {
        "schema": root / "adult.json",
        "epsilon": 1.0,
        "options": {"n_components": 2},
        "scheduler": "sync",
    }
    out = tmp_path / "rel"
    publish_table_file("pca", root / "ds", output=out, **kwargs)
    with pytest.raises(ParameterError, match="already exists; pass --force"):
        publish_table_file("pca", root / "ds", output=out, **kwargs)
    first = pd.read_parquet(out)
    publish_table_file("pca", root / "ds", output=out, force=True, **kwargs)
    assert not pd.read_parquet(out).equals(first)  # fresh noise, replaced in one step
    assert _hidden(tmp_path) == []
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(ParameterError, match="not a complete ppdp output folder"):
        publish_table_file("pca", root / "ds", output=foreign, force=True, **kwargs)
    assert (foreign / "notes.txt").read_text() == "keep me"


@pytest.mark.filterwarnings("ignore::ppdp.exceptions.LowUtilityWarning")  # the pair check
@pytest.mark.parametrize("step", ["the rows written in fit", "the final rename"])
def test_a_failed_write_after_the_spend_leaves_nothing_visible(adult, tmp_path, monkeypatch, step):
    root, _df, _schema = adult
    ledger = _ledger(tmp_path)
    real_replace = os.replace

    def failing(src, dst):
        name = os.path.basename(dst)
        hit = name == "rel" if step == "the final rename" else name.startswith(".rel.staging")
        if os.path.isdir(src) and hit:
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(OutputWriteError, match="failed after the spend") as err:
        publish_table_file(
            "synth",
            root / "ds",
            schema=root / "adult.json",
            output=tmp_path / "rel",
            epsilon=1.0,
            ledger=ledger,
            scheduler="sync",
        )
    assert "\n" not in str(err.value)
    assert not (tmp_path / "rel").exists() and not (tmp_path / "rel.guarantee.json").exists()
    assert [n for n in _hidden(tmp_path) if "rel" in n] == []
    assert _spent(ledger) == PrivacyBudget(1.0, 1e-9)  # the spend stands, as the line says


def test_refusals_before_the_spend(adult, tmp_path, monkeypatch):
    root, _df, schema = adult
    ledger = _ledger(tmp_path)
    base = {"schema": root / "adult.json", "epsilon": 1.0, "ledger": ledger, "scheduler": "sync"}
    with pytest.raises(ParameterError, match="released as a folder of Parquet files"):
        publish_table_file(
            "pca", root / "ds", output=tmp_path / "o.csv", options={"n_components": 2}, **base
        )
    with pytest.raises(ParameterError, match="lies in or holds the data"):
        publish_table_file(
            "pca", root / "ds", output=root / "ds" / "o", options={"n_components": 2}, **base
        )
    laplace = type(pf.build_publisher("laplace", epsilon=1.0, schema=schema))
    monkeypatch.setattr(laplace, "supports_distributed", False)
    with pytest.raises(ParameterError, match=r"method \('laplace'\) does not take a Parquet"):
        publish_table_file("laplace", root / "ds", output=tmp_path / "o", **base)
    with pytest.raises(ParameterError, match=r"scheduler .* is for a Parquet dataset"):
        publish_table_file("laplace", root / "adult.csv", output=tmp_path / "o.csv", **base)
    assert _spent(ledger) == PrivacyBudget(0.0)
    assert _visible(tmp_path) == ["ledger"]


def test_a_single_parquet_file_is_read_in_memory_unless_a_scheduler_is_given(adult, tmp_path):
    root, df, _schema = adult
    single = tmp_path / "one.parquet"
    df.to_parquet(single, index=False)
    kwargs = {"schema": root / "adult.json", "epsilon": 1.0, "options": {"n_components": 2}}
    in_memory = publish_table_file("pca", single, output=tmp_path / "a.csv", **kwargs)
    assert in_memory.path.is_file() and in_memory.rows_written == N_ROWS
    dist = publish_table_file("pca", single, output=tmp_path / "b", scheduler="sync", **kwargs)
    assert (dist.path / SUCCESS_MARKER).is_file() and dist.rows_written == N_ROWS


def test_lda_projection_rows_or_its_direction(adult, tmp_path):
    """Row-level projections are written by fit; the direction is a one-part table."""
    root, df, _schema = adult
    sizes = df["income"].value_counts()
    options = {"delta": 1e-6, "class_counts": f"{sizes['<=50K']},{sizes['>50K']}"}
    common = {"schema": root / "adult.json", "epsilon": 1.0, "scheduler": "sync"}
    rows = publish_table_file(
        "lda-projection",
        root / "ds",
        output=tmp_path / "proj",
        options={**options, "release": "noisy-projections"},
        **common,
    )
    assert rows.rows_written == N_ROWS and list(pd.read_parquet(rows.path).columns) == ["lda_1"]
    direction = publish_table_file(
        "lda-projection",
        root / "ds",
        output=tmp_path / "dir",
        options={**options, "release": "direction"},
        **common,
    )
    table = pd.read_parquet(direction.path)
    side = json.loads((tmp_path / "dir.guarantee.json").read_text())
    assert _parts(direction.path) == ["part-00000.parquet"]
    assert list(table["feature"]) == side["features"] and side["rows"] == len(table)
    np.testing.assert_allclose(table["lda_1"], np.asarray(side["directions"])[:, 0])


def test_laplace_writes_one_part_per_input_partition(adult, tmp_path):
    root, df, _schema = adult
    result = publish_table_file(
        "laplace",
        root / "ds",
        schema=root / "adult.json",
        output=tmp_path / "rel",
        epsilon=1.0,
        scheduler="sync",
    )
    assert result.rows_written == N_ROWS
    assert len(_parts(result.path)) == 3  # one part per input partition, the empty one too
    got = pd.read_parquet(result.path)
    assert list(got.columns) == list(df.columns) and len(got) == N_ROWS
