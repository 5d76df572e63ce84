"""LAP and EXP baselines on a Parquet dataset / Dask DataFrame (issue 16).

Row-level releases: each partition is randomised from its own stream and written to
``output`` in row order inside ``fit``. The noise streams differ from the in-memory one, so
the rows are compared in distribution: the residuals (released minus true ``x``) and the
kept-category rate against an in-memory release on the same rows, two-sample tests at
α = 1e-4 each (a correct implementation fails one once in 10⁴ runs), with a half-noise
variant that must fail the same test. Same seed: the same files, whatever the scheduler.

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
from ppdp.audit import noise_variant
from ppdp.budget import PrivacyBudget
from ppdp.data import Schema
from ppdp.exceptions import DataValidationError
from ppdp.publish.baselines import ExponentialPublisher, LaplacePublisher

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

from ppdp.data.distributed import SUCCESS_MARKER  # noqa: E402

PUBLISHERS = [LaplacePublisher, ExponentialPublisher]
ALPHA = 1e-4
SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "x", "type": "numeric", "lower": 10, "upper": 20},
            {"name": "c", "type": "categorical", "categories": ["a", "b", "c", "d"]},
        ],
        "label": {"name": "y", "classes": [0, 1, 2]},
    }
)


def make_df(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x": rng.uniform(10, 20, size=n),
            "c": rng.choice(list("abcd"), size=n),
            "y": rng.integers(0, 3, size=n),
        }
    )


def write_dataset(folder, frames) -> None:
    folder.mkdir()
    for i, f in enumerate(frames):
        f.to_parquet(folder / f"part-{i}.parquet", index=False)


@pytest.fixture
def dataset(tmp_path):
    frames = [make_df(1500, 1), make_df(5, 2).iloc[:0], make_df(1000, 3), make_df(1500, 4)]
    write_dataset(tmp_path / "in", frames)
    return tmp_path / "in", pd.concat(frames, ignore_index=True)


def acct() -> Accountant:
    return Accountant.in_memory(total=PrivacyBudget(100.0, 1e-3))


def fit_distributed(cls, path, out, *, eps=30.0, seed=1, scheduler="sync", multiplier=1.0):
    variant = cls if multiplier == 1.0 else noise_variant(cls, multiplier)
    pub = variant(eps, SCHEMA, random_state=seed, allow_large_epsilon=True)
    pub.fit(path, scheduler=scheduler, output=out)
    return pub


@pytest.mark.parametrize("cls", PUBLISHERS)
def test_rows_follow_the_in_memory_law(cls, dataset, tmp_path) -> None:
    path, whole = dataset
    mem = cls(30.0, SCHEMA, random_state=2, allow_large_epsilon=True).fit(whole).release_.data
    dist = fit_distributed(cls, path, tmp_path / "out").release_.data.compute()
    half = fit_distributed(cls, path, tmp_path / "half", multiplier=0.5).release_.data.compute()
    assert len(dist) == len(whole) and list(dist.columns) == list(mem.columns)

    def residual(out: pd.DataFrame) -> np.ndarray:
        return out["x"].to_numpy() - whole["x"].to_numpy()

    def kept(out: pd.DataFrame) -> list[int]:
        same = int((out["c"].to_numpy() == whole["c"].to_numpy()).sum())
        return [same, len(out) - same]

    assert stats.ks_2samp(residual(dist), residual(mem)).pvalue > ALPHA
    assert stats.chi2_contingency([kept(dist), kept(mem)])[1] > ALPHA
    # the broken control (half the noise) fails the same residual test
    assert stats.ks_2samp(residual(half), residual(mem)).pvalue < ALPHA


@pytest.mark.parametrize("cls", PUBLISHERS)
def test_row_order_kept_and_output_reproducible(cls, dataset, tmp_path) -> None:
    path, whole = dataset
    a = fit_distributed(cls, path, tmp_path / "a", eps=5000.0)
    b = fit_distributed(cls, path, tmp_path / "b", eps=5000.0, scheduler="threads")
    got = a.release_.data.compute()
    pd.testing.assert_frame_equal(got, b.release_.data.compute())
    # almost no noise: every row is its input row, in order
    assert np.abs(got["x"].to_numpy() - whole["x"].to_numpy()).max() < 0.5
    assert (got["c"].to_numpy() == whole["c"].to_numpy()).mean() > 0.999
    assert (tmp_path / "a" / SUCCESS_MARKER).is_file()
    files = sorted(p.name for p in (tmp_path / "a").glob("part-*.parquet"))
    assert files == [f"part-{i:05d}.parquet" for i in range(4)]  # the empty one too
    c = fit_distributed(cls, path, tmp_path / "c", eps=5000.0, seed=9)
    assert not c.release_.data.compute().equals(got)
    assert a.release_.encoded is None and a.release_.guarantee.kind == b.release_.guarantee.kind


def test_partitions_draw_independent_noise(tmp_path) -> None:
    same = make_df(400, 7)
    write_dataset(tmp_path / "in", [same, same])
    out = fit_distributed(LaplacePublisher, tmp_path / "in", tmp_path / "out")
    got = out.release_.data.compute()
    first, second = got.iloc[:400]["x"].to_numpy(), got.iloc[400:]["x"].to_numpy()
    assert np.mean(first == second) < 0.05  # the same rows, different noise


def test_empty_dataset_is_refused_like_in_memory(tmp_path) -> None:
    write_dataset(tmp_path / "in", [make_df(5, 0).iloc[:0]])
    a = acct()
    with pytest.raises(DataValidationError, match="0 rows"):
        LaplacePublisher(1.0, SCHEMA).fit(
            tmp_path / "in", accountant=a, scheduler="sync", output=tmp_path / "out"
        )
    assert a.spent.is_zero and not (tmp_path / "out").exists()


def test_a_dask_frame_on_a_local_cluster(dataset, tmp_path) -> None:
    distributed = pytest.importorskip("distributed")
    _, whole = dataset
    frame = dd.from_pandas(whole, npartitions=3)
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        pub = LaplacePublisher(5000.0, SCHEMA, random_state=4, allow_large_epsilon=True)
        pub.fit(frame, scheduler=client, output=tmp_path / "out")
        got = pub.release_.data.compute()
    again = LaplacePublisher(5000.0, SCHEMA, random_state=4, allow_large_epsilon=True)
    again.fit(frame, scheduler="sync", output=tmp_path / "again")
    pd.testing.assert_frame_equal(got, again.release_.data.compute())
    assert np.abs(got["x"].to_numpy() - whole["x"].to_numpy()).max() < 0.5
