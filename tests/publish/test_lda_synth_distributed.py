"""DPLDASynthesizer on a Parquet dataset / Dask DataFrame (issue 16; docs/proofs/dp-lda.md).

The noisy statistics must be the in-memory ones for the same seed; the synthetic rows are
post-processing, generated part by part into ``output``: with one part they are the
in-memory rows (another order), with several they keep the class sizes and track the same
targets, and the same seed reproduces them exactly. Refusals spend nothing.

The checks every registered publisher shares (the statistics, guarantee and ledger records of
memory for one seed, reproducible rows within the schema, an undeclared value in one file and
a missing or taken output refused with nothing spent) are in tests/test_registry_contract.py.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import ppdp.publish.lda_synth as lda_synth
from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget
from ppdp.data import Schema
from ppdp.exceptions import DataValidationError, ParameterError
from ppdp.publish.lda_synth import DPLDASynthesizer, part_class_counts, part_sizes

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

SIZES = (700, 0, 500, 800)  # one empty file


def _schema(public_counts=None) -> Schema:
    label: dict = {"name": "lab", "classes": [0, 1]}
    if public_counts is not None:
        label["public_counts"] = list(public_counts)
    return Schema.from_dict(
        {
            "columns": [
                {"name": "a", "type": "numeric", "lower": 0, "upper": 10},
                {"name": "b", "type": "numeric", "lower": 0, "upper": 1},
                {"name": "c", "type": "categorical", "categories": ["x", "y", "z"]},
            ],
            "label": label,
        }
    )


def _frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    lab = rng.choice([0, 1], n, p=[0.6, 0.4])
    return pd.DataFrame(
        {
            "a": np.clip(rng.normal(3 + 4 * lab, 1.5), 0, 10),
            "b": rng.uniform(0, 1, n),
            "c": np.where(lab == 1, rng.choice(["x", "y"], n), rng.choice(["y", "z"], n)),
            "lab": lab,
        }
    )


def _dataset(folder, frames) -> pd.DataFrame:
    folder.mkdir()
    for i, f in enumerate(frames):
        f.to_parquet(folder / f"part-{i}.parquet", index=False)
    return pd.concat(frames, ignore_index=True)


@pytest.fixture
def table(tmp_path):
    whole = _dataset(tmp_path / "ds", [_frame(n, i) for i, n in enumerate(SIZES)])
    return tmp_path / "ds", whole


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    return df.sort_values(list(df.columns)).reset_index(drop=True)


@pytest.mark.parametrize("class_sizes", ["noisy", "public"])
def test_statistics_equal_memory_and_one_part_gives_the_memory_rows(
    table, tmp_path, class_sizes
) -> None:
    path, whole = table
    schema = _schema(np.bincount(whole["lab"], minlength=2))
    mem = DPLDASynthesizer(2.0, schema, random_state=5, class_sizes=class_sizes).fit(whole)
    acct = Accountant.in_memory(total=PrivacyBudget(3.0))
    pub = DPLDASynthesizer(2.0, schema, random_state=5, class_sizes=class_sizes)
    pub.fit(path, acct, allow_seeded=True, scheduler="sync", output=tmp_path / "out")
    assert set(pub.release_.statistics) == set(mem.release_.statistics)
    for key, value in mem.release_.statistics.items():
        np.testing.assert_allclose(pub.release_.statistics[key], value, rtol=1e-9)
    assert acct.spent == PrivacyBudget(2.0) and pub.release_.encoded is None
    rows = pub.release_.data.compute()
    assert len(rows) == len(whole) and list(rows.columns) == list(mem.release_.data.columns)
    # one part (n <= 2**16): the greedy sampler's rows, shuffled by another stream
    pd.testing.assert_frame_equal(_sorted(rows), _sorted(mem.release_.data))
    assert not rows.equals(mem.release_.data)
    # sample() is post-processing of the same release, as in memory
    pd.testing.assert_frame_equal(pub.sample(50, random_state=1), mem.sample(50, random_state=1))


def test_parts_keep_the_class_sizes_and_targets(table, tmp_path, monkeypatch) -> None:
    from distributed import Client, LocalCluster

    path, whole = table
    schema = _schema()
    monkeypatch.setattr(lda_synth, "_ROWS_PER_PART", 600)
    pub = DPLDASynthesizer(2.0, schema, random_state=3)
    pub.fit(path, scheduler="sync", output=tmp_path / "sync")
    rows = pub.release_.data.compute()
    assert len(list((tmp_path / "sync").glob("part-*.parquet"))) == 4  # 2000 rows / 600
    sizes = pub.release_.statistics["class_sizes"]
    np.testing.assert_array_equal(np.bincount(rows["lab"], minlength=2), sizes)
    # every part tracks the same noisy targets: the synthetic class means of the numeric
    # column stay close to the one-part (in-memory) synthesis
    mem = DPLDASynthesizer(2.0, schema, random_state=3).fit(whole).release_.data
    for c in (0, 1):
        got = rows.loc[rows["lab"] == c, "a"].mean()
        assert abs(got - mem.loc[mem["lab"] == c, "a"].mean()) < 0.25
    # the same seed reproduces the parts exactly, on a LocalCluster too
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        again = DPLDASynthesizer(2.0, schema, random_state=3)
        again.fit(dd.from_pandas(whole, npartitions=3), scheduler=client, output=tmp_path / "c")
    pd.testing.assert_frame_equal(again.release_.data.compute(), rows)


@pytest.mark.parametrize("seed", range(20))
def test_part_class_counts_are_exact(seed: int) -> None:
    rng = np.random.default_rng(seed)
    classes = rng.integers(0, 50, rng.integers(2, 6))
    parts = part_sizes(int(classes.sum()), int(rng.integers(1, 40)))
    got = part_class_counts(classes, parts)
    assert (got >= 0).all()
    np.testing.assert_array_equal(got.sum(axis=1), parts)
    np.testing.assert_array_equal(got.sum(axis=0), classes)
    assert parts.max() - parts.min() <= 1


@pytest.mark.parametrize("declared", [[1200, 800], [1201, 800]], ids=["wrong", "sum"])
def test_public_counts_are_checked_against_the_whole_table(table, tmp_path, declared) -> None:
    path, whole = table
    schema = _schema(declared)
    assert np.bincount(whole["lab"]).tolist() != declared
    with pytest.raises(DataValidationError) as in_memory:
        DPLDASynthesizer(1.0, schema, class_sizes="public").fit(whole)
    with Accountant.open(tmp_path / "l.db", dataset_id="d", total=PrivacyBudget(2.0)) as acct:
        with pytest.raises(DataValidationError) as got:
            DPLDASynthesizer(1.0, schema, class_sizes="public").fit(
                path, acct, scheduler="sync", output=tmp_path / "out"
            )
        assert acct.spent == PrivacyBudget(0.0)
    assert str(got.value) == str(in_memory.value)
    assert not (tmp_path / "out").exists()


def test_one_row_and_missing_output_are_refused_before_the_spend(tmp_path) -> None:
    whole = _dataset(tmp_path / "one", [_frame(1, 0), _frame(0, 1)])
    with pytest.raises(DataValidationError) as in_memory:
        DPLDASynthesizer(1.0, _schema()).fit(whole)
    with Accountant.open(tmp_path / "l.db", dataset_id="d", total=PrivacyBudget(2.0)) as acct:
        with pytest.raises(DataValidationError) as got:
            DPLDASynthesizer(1.0, _schema()).fit(
                tmp_path / "one", acct, scheduler="sync", output=tmp_path / "out"
            )
        assert str(got.value) == str(in_memory.value)
        with pytest.raises(ParameterError, match=r"^output \(None\): DPLDASynthesizer") as e:
            DPLDASynthesizer(1.0, _schema()).fit(tmp_path / "one", acct, scheduler="sync")
        assert "\n" not in str(e.value)
        assert acct.spent == PrivacyBudget(0.0) and acct.history() == []
    assert not (tmp_path / "out").exists()
