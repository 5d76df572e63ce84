"""DPPCAPublisher on a Parquet dataset / Dask DataFrame (issue 16; docs/proofs/dp-pca.md).

Stage 1 must give the in-memory statistics for the same seed; stage 2's rows are drawn per
partition, so they agree with memory in distribution (a KS test of the noise residuals) and
are exactly reproducible for the same seed and partitioning. Refusals spend nothing and
leave no output folder.

The checks every registered publisher shares (the statistics, guarantee and ledger records of
memory for one seed, reproducible rows within the schema, an undeclared value in one file and
a missing or taken output refused with nothing spent) are in tests/test_registry_contract.py.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ppdp.data import Schema
from ppdp.exceptions import DataValidationError
from ppdp.publish.pca import DPPCAPublisher

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "age", "type": "numeric", "lower": 0, "upper": 100, "integer": True},
            {"name": "score", "type": "numeric", "lower": -1.0, "upper": 1.0},
            {"name": "colour", "type": "categorical", "categories": ["red", "green", "blue"]},
        ],
        "label": {"name": "y", "classes": ["no", "yes"]},
    }
)
#: Numerics on [0, 1], no label: decoding is the identity on the encoding, so with k = p the
#: released rows give back the noisy projections exactly (for the residual test).
NUMERIC = Schema.from_dict(
    {
        "columns": [
            {"name": f"x{j}", "type": "numeric", "lower": 0.0, "upper": 1.0} for j in range(3)
        ]
    }
)
SIZES = (700, 0, 500, 800)  # one empty file


def _frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    score = np.clip(rng.normal(0.2, 0.4, n), -1, 1)
    colour = rng.choice(["red", "green", "blue"], n, p=[0.5, 0.3, 0.2])
    return pd.DataFrame(
        {
            "age": np.clip(np.round(rng.normal(40, 12, n)), 0, 100).astype(int),
            "score": score,
            "colour": colour,
            "y": np.where(score + 0.3 * (colour == "red") > 0.4, "yes", "no"),
        }
    )


def _numeric_frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.4, 0.6, (n, 1))
    return pd.DataFrame(
        np.clip(base + rng.normal(0, 0.02, (n, 3)), 0.4, 0.6), columns=["x0", "x1", "x2"]
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


def test_a_dask_frame_on_a_local_cluster_gives_the_sync_release(table, tmp_path) -> None:
    from distributed import Client, LocalCluster

    _, whole = table
    frame = dd.from_pandas(whole, npartitions=3)
    ref = DPPCAPublisher(1.0, 2, SCHEMA, random_state=4)
    ref.fit(frame, scheduler="sync", output=tmp_path / "sync")
    mem = DPPCAPublisher(1.0, 2, SCHEMA, random_state=4).fit(whole).release_
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        pub = DPPCAPublisher(1.0, 2, SCHEMA, random_state=4)
        pub.fit(frame, scheduler=client, output=tmp_path / "cluster")
    for key in ("mean", "components", "eigenvalues"):
        np.testing.assert_allclose(pub.release_.statistics[key], mem.statistics[key], rtol=1e-9)
    pd.testing.assert_frame_equal(pub.release_.data.compute(), ref.release_.data.compute())


@pytest.mark.statistical
def test_row_noise_is_the_stage_two_laplace_law(tmp_path) -> None:
    """KS test of the residuals Ỹ − (X − μ̃)Ū against Lap(b₂); false-positive rate 1e-4.

    With k = p the decoded rows give Ỹ = (X̄ − μ̃)Ū back exactly (no clamping happens: the
    data lie in [0.4, 0.6] and the noise is about 0.02). Misordered rows, a repeated stream
    or the wrong scale fail: the same residuals against 0.8·b₂ are rejected.
    """
    frames = [_numeric_frame(n, 10 + i) for i, n in enumerate((1500, 0, 1200, 1300))]
    whole = _dataset(tmp_path / "ds", frames)
    pub = DPPCAPublisher(400.0, 3, NUMERIC, random_state=1, allow_large_epsilon=True)
    pub.fit(tmp_path / "ds", scheduler="sync", output=tmp_path / "out")
    st = pub.release_.statistics
    U, mu = st["components"], st["mean"]
    X_bar = pub.release_.data.compute().to_numpy()
    assert ((X_bar > 0.0) & (X_bar < 1.0)).all()
    X = whole.to_numpy()
    residuals = ((X_bar - mu) @ U - (X - mu) @ U).reshape(-1)
    b2 = pub._stage2_mechanism().scale
    assert stats.kstest(residuals, stats.laplace(scale=b2).cdf).pvalue > 1e-4
    assert stats.kstest(residuals, stats.laplace(scale=0.8 * b2).cdf).pvalue < 1e-4
    # independent partitions: the first rows of two partitions do not share their noise
    first = residuals.reshape(-1, 3)
    assert not np.allclose(first[0], first[1500])


def test_fewer_than_two_rows_gives_the_in_memory_message(tmp_path) -> None:
    whole = _dataset(tmp_path / "ds", [_frame(1, 0), _frame(0, 1)])
    with pytest.raises(DataValidationError) as in_memory:
        DPPCAPublisher(1.0, 2, SCHEMA).fit(whole)
    with pytest.raises(DataValidationError) as got:
        DPPCAPublisher(1.0, 2, SCHEMA).fit(
            tmp_path / "ds", scheduler="sync", output=tmp_path / "out"
        )
    assert str(got.value) == str(in_memory.value)
    assert not (tmp_path / "out").exists()
