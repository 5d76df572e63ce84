"""LDAProjectionPublisher on a Parquet dataset / Dask DataFrame (issue 16; docs/proofs/lda-dp.md).

The directions must be the in-memory ones for the same seed; the noisy projections are drawn
per partition, so they agree with memory in distribution (a KS test of the residuals against
the per-row Laplace law) and are exactly reproducible for the same seed and partitioning, in
row order. The in-memory checks (declared class counts, δ < 1/n) run on the whole table, and
refusals spend nothing.

The checks every registered publisher shares (the statistics, guarantee and ledger records of
memory for one seed, reproducible rows within the schema, an undeclared value in one file and
a missing or taken output refused with nothing spent) are in tests/test_registry_contract.py.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget
from ppdp.data import Schema
from ppdp.exceptions import (
    DataValidationError,
    NotDifferentiallyPrivateWarning,
    ParameterError,
    PrivacyLeakWarning,
)
from ppdp.publish.lda_projection import LDAProjectionPublisher

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "a", "type": "numeric", "lower": 0, "upper": 10},
            {"name": "b", "type": "numeric", "lower": 0, "upper": 1},
            {"name": "c", "type": "categorical", "categories": ["x", "y", "z"]},
        ],
        "label": {"name": "lab", "classes": ["p", "q", "r"]},
    }
)
SIZES = (2000, 0, 1500, 2500)  # one empty file


def _frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    lab = rng.integers(0, 3, n)
    return pd.DataFrame(
        {
            "a": np.clip(rng.normal(2 + 3 * lab, 1.5), 0, 10),
            "b": np.clip(rng.normal(0.3 + 0.2 * (lab == 2), 0.2), 0, 1),
            "c": np.where(lab == 0, "x", rng.choice(["y", "z"], n)),
            "lab": np.array(["p", "q", "r"])[lab],
        }
    )


def _dataset(folder, frames) -> pd.DataFrame:
    folder.mkdir()
    for i, f in enumerate(frames):
        f.to_parquet(folder / f"part-{i}.parquet", index=False)
    return pd.concat(frames, ignore_index=True)


def _counts(whole: pd.DataFrame) -> list[int]:
    return whole["lab"].value_counts().reindex(["p", "q", "r"]).tolist()


@pytest.fixture
def table(tmp_path):
    whole = _dataset(tmp_path / "ds", [_frame(n, i) for i, n in enumerate(SIZES)])
    return tmp_path / "ds", whole


def _pub(whole: pd.DataFrame, seed: int = 3, **kwargs) -> LDAProjectionPublisher:
    return LDAProjectionPublisher(
        8.0, 1e-6, SCHEMA, class_counts=_counts(whole), random_state=seed, **kwargs
    )


def test_transform_of_a_distributed_release_is_the_in_memory_one(table, tmp_path) -> None:
    """Post-processing works on the distributed release as on the in-memory one (the
    release itself, its charge and its reproducibility: tests/test_registry_contract.py)."""
    path, whole = table
    mem = _pub(whole).fit(whole).release_
    pub = _pub(whole)
    pub.fit(path, scheduler="sync", output=tmp_path / "out")
    np.testing.assert_allclose(pub.transform(whole.head(50)), mem_transform(mem, whole.head(50)))


def mem_transform(release, df: pd.DataFrame) -> np.ndarray:
    X, _ = SCHEMA.without_label().encode(df)
    return (X / release.statistics["scale"][0]) @ release.statistics["directions"]


@pytest.mark.statistical
def test_row_noise_is_the_per_row_laplace_law(table, tmp_path) -> None:
    """KS test of Ỹ − (x/R)ᵀŴ against Lap(b); false-positive rate 1e-4; 12,000 residuals.

    Misordered rows, a stream shared by two partitions, or the wrong scale fail: the same
    residuals against 0.8·b are rejected.
    """
    path, whole = table
    pub = _pub(whole, seed=11)
    pub.fit(path, scheduler="sync", output=tmp_path / "out")
    X, _ = SCHEMA.encode(whole)
    exact = (X / pub.scale_) @ pub.directions_
    residuals = (pub.release_.data.compute().to_numpy() - exact).reshape(-1)
    c = pub._params()
    b = pub._projection_mechanism(c.e3, c.r, c.p).scale
    assert stats.kstest(residuals, stats.laplace(scale=b).cdf).pvalue > 1e-4
    assert stats.kstest(residuals, stats.laplace(scale=0.8 * b).cdf).pvalue < 1e-4


def test_a_dask_frame_on_a_local_cluster_gives_the_sync_rows(table, tmp_path) -> None:
    from distributed import Client, LocalCluster

    _, whole = table
    frame = dd.from_pandas(whole, npartitions=4)
    ref = _pub(whole, seed=6)
    ref.fit(frame, scheduler="sync", output=tmp_path / "sync")
    mem = _pub(whole, seed=6).fit(whole).release_
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        pub = _pub(whole, seed=6)
        pub.fit(frame, scheduler=client, output=tmp_path / "cluster")
    np.testing.assert_allclose(pub.directions_, mem.statistics["directions"], rtol=1e-9)
    pd.testing.assert_frame_equal(pub.release_.data.compute(), ref.release_.data.compute())


def test_direction_only_needs_no_output_and_raw_projections_are_exact(table, tmp_path) -> None:
    path, whole = table
    mem = _pub(whole, release="direction").fit(whole).release_
    with pytest.raises(ParameterError, match="releases statistics, not rows; leave it unset"):
        _pub(whole, release="direction").fit(path, scheduler="sync", output=tmp_path / "o")
    pub = _pub(whole, release="direction").fit(path, scheduler="sync")
    assert pub.release_.data is None and not (tmp_path / "o").exists()
    np.testing.assert_allclose(pub.directions_, mem.statistics["directions"], rtol=1e-9)
    raw = _pub(whole, release="raw-projections")
    with pytest.warns(NotDifferentiallyPrivateWarning):
        raw.fit(path, scheduler="sync", output=tmp_path / "raw")
    X, _ = SCHEMA.encode(whole)
    np.testing.assert_allclose(
        raw.release_.data.compute().to_numpy(), (X / raw.scale_) @ raw.directions_, rtol=1e-12
    )
    assert not raw.release_.guarantee.is_private


def test_declared_counts_output_and_delta_are_checked_as_in_memory(table, tmp_path) -> None:
    path, whole = table
    wrong = _counts(whole)
    wrong[0], wrong[1] = wrong[0] + 1, wrong[1] - 1
    bad = LDAProjectionPublisher(8.0, 1e-6, SCHEMA, class_counts=wrong, random_state=1)
    with pytest.raises(DataValidationError) as in_memory:
        bad.fit(whole)
    with Accountant.open(
        tmp_path / "l.db", dataset_id="d", total=PrivacyBudget(10.0, 1e-2)
    ) as acct:
        with pytest.raises(DataValidationError) as got:
            bad.fit(path, acct, allow_seeded=True, scheduler="sync", output=tmp_path / "out")
        assert str(got.value) == str(in_memory.value)
        with pytest.raises(ParameterError, match=r"^output \(None\): LDAProjectionPublisher"):
            _pub(whole).fit(path, acct, allow_seeded=True, scheduler="sync")
        assert acct.spent == PrivacyBudget(0.0) and acct.history() == []
        big_delta = LDAProjectionPublisher(
            8.0, 1e-3, SCHEMA, class_counts=_counts(whole), random_state=1
        )
        with pytest.warns(PrivacyLeakWarning, match=r"delta \(0.001\) >= 1/n \(n=6000\)"):
            big_delta.fit(path, acct, allow_seeded=True, scheduler="sync", output=tmp_path / "d")
    assert not (tmp_path / "out").exists()
