"""A Mul-LDA-DP owner's statistics from a Parquet dataset / Dask DataFrame (issue 16).

The owner's class sums and second moment are reduced over partitions (no noise there); the
owner then adds its noise and masks once. For the same seeds, a round whose owners hold
reduced statistics must release what a round whose owners hold the rows releases (to 1e-9
relative: the sums differ only in the order of float additions). Bad input: the in-memory
message with the whole table's count, raised before any round (so nothing is spent).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ppdp.data import Schema
from ppdp.exceptions import DataValidationError, ParameterError
from ppdp.federated.owner_data import OwnerStatistics, load_owner_statistics, owner_statistics
from ppdp.federated.roles import DataOwner
from ppdp.federated.simulate import build_round, run_round

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
            {"name": "hours", "type": "numeric", "lower": 0, "upper": 80},
            {"name": "dx", "type": "categorical", "categories": ["a", "b", "c"]},
        ],
        "label": {"name": "y", "classes": [0, 1]},
    }
)


def make_df(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return pd.DataFrame(
        {
            "age": np.clip(rng.normal(35 + 15 * y, 10), 0, 100),
            "hours": rng.uniform(0, 80, n),
            "dx": np.where(y == 1, rng.choice(["a", "b"], n), rng.choice(["b", "c"], n)),
            "y": y,
        }
    )


def write_dataset(folder, frames) -> None:
    folder.mkdir()
    for i, f in enumerate(frames):
        f.to_parquet(folder / f"part-{i}.parquet", index=False)


def owner_tables(tmp_path):
    """Two owners: each a Parquet folder (one with an empty file) and the same rows in memory."""
    owners = []
    for j, frames in enumerate(
        [[make_df(300, 1), make_df(4, 9).iloc[:0], make_df(250, 2)], [make_df(400, 3)]]
    ):
        write_dataset(tmp_path / f"owner{j}", frames)
        owners.append((tmp_path / f"owner{j}", pd.concat(frames, ignore_index=True)))
    return owners


def assert_stats_close(a: OwnerStatistics, b: OwnerStatistics) -> None:
    assert a.n == b.n and a.n_over_norm == b.n_over_norm
    np.testing.assert_array_equal(a.class_counts, b.class_counts)
    np.testing.assert_allclose(a.class_sums, b.class_sums, rtol=1e-12)
    np.testing.assert_allclose(a.second_moment, b.second_moment, rtol=1e-12)


def test_reduced_statistics_equal_the_in_memory_ones(tmp_path) -> None:
    (path, whole), _ = owner_tables(tmp_path)
    dist = load_owner_statistics(path, SCHEMA, scheduler="sync")
    mem = load_owner_statistics(whole, SCHEMA)
    assert_stats_close(dist, mem)
    X, y = SCHEMA.encode(whole)
    Xs = X / SCHEMA.max_row_l2_norm
    np.testing.assert_allclose(mem.class_sums[1], Xs[y == 1].sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(mem.second_moment, Xs.T @ Xs, rtol=1e-12)
    assert dist.n == len(whole) and dist.class_counts.sum() == len(whole)
    # a CSV file takes the in-memory path
    whole.to_csv(tmp_path / "t.csv", index=False)
    assert_stats_close(load_owner_statistics(tmp_path / "t.csv", SCHEMA), mem)


def _rows(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    X, y = SCHEMA.encode(df)
    return X / SCHEMA.max_row_l2_norm, y


@pytest.mark.parametrize("dealer", ["trusted", "none"])
def test_a_round_from_statistics_releases_what_a_round_from_rows_releases(tmp_path, dealer) -> None:
    owners = owner_tables(tmp_path)
    parts = [_rows(df) for _, df in owners]
    kw = {"epsilon": 1.0, "delta": 1e-5, "random_state": 4, "session_id": "s-16", "dealer": dealer}
    ref = build_round(parts, **kw)
    run_round(ref)
    rnd = build_round(parts, **kw)
    keys = {k: s.public_key for k, s in rnd.signers.items()}
    for (path, _), (name, old) in zip(owners, list(rnd.owners.items()), strict=True):
        stats = load_owner_statistics(path, SCHEMA, scheduler="sync")
        rnd.owners[name] = DataOwner(
            rnd.config,
            signer=rnd.signers[name],
            keys=keys,
            statistics=stats,
            random_state=old._rng,  # the same owner noise stream as the reference round
        )
    run_round(rnd)
    a, b = ref.publisher, rnd.publisher
    assert a.state == b.state == "done"
    np.testing.assert_allclose(b.noisy_means, a.noisy_means, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(b.noisy_second_moment, a.noisy_second_moment, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(b.directions, a.directions, rtol=1e-6, atol=1e-9)
    # another seed gives other noise (the comparison can fail)
    other = build_round(parts, **{**kw, "random_state": 5})
    run_round(other)
    assert not np.allclose(other.publisher.noisy_means, a.noisy_means, rtol=1e-9)


def test_bad_input_is_the_in_memory_message_before_any_round(tmp_path) -> None:
    frames = [make_df(200, 1), make_df(200, 2), make_df(200, 3)]
    for f in frames[1:]:
        f.loc[f.index % 6 == 0, "dx"] = "zz"
    write_dataset(tmp_path / "bad", frames)
    with pytest.raises(DataValidationError) as in_memory:
        SCHEMA.encode(pd.concat(frames, ignore_index=True))
    with pytest.raises(DataValidationError) as distributed:
        load_owner_statistics(tmp_path / "bad", SCHEMA, scheduler="sync")
    assert str(distributed.value) == str(in_memory.value) and "zz" not in str(in_memory.value)


def test_rows_beyond_the_declared_bound_are_counted_over_the_whole_table(tmp_path) -> None:
    (path, whole), _ = owner_tables(tmp_path)
    bound = 1.0  # encoded rows reach sqrt(3) > 1: many rows fall outside
    with pytest.raises(DataValidationError) as distributed:
        load_owner_statistics(path, SCHEMA, norm_bound=bound, scheduler="sync")
    rnd = build_round([_rows(whole), _rows(whole)], epsilon=1.0, delta=1e-5, random_state=1)
    X, y = SCHEMA.encode(whole)
    with pytest.raises(DataValidationError) as in_memory:
        DataOwner(
            rnd.config,
            signer=rnd.signers["owner-1"],
            keys={k: s.public_key for k, s in rnd.signers.items()},
            X=X / bound,
            y=y,
        )
    assert str(distributed.value) == str(in_memory.value)
    n_over = int((np.linalg.norm(X, axis=1) > 1 + 1e-9).sum())
    assert f"X has {n_over} record(s)" in str(distributed.value) and n_over > 300


def test_owner_arguments_are_checked(tmp_path) -> None:
    (path, whole), _ = owner_tables(tmp_path)
    stats = load_owner_statistics(path, SCHEMA, scheduler="sync")
    X, y = _rows(whole)
    rnd = build_round([(X, y), (X, y)], epsilon=1.0, delta=1e-5, random_state=1)
    keys = {k: s.public_key for k, s in rnd.signers.items()}
    signer = rnd.signers["owner-1"]
    with pytest.raises(ParameterError, match="not both"):
        DataOwner(rnd.config, signer=signer, keys=keys, X=X, y=y, statistics=stats)
    with pytest.raises(ParameterError, match="required unless statistics"):
        DataOwner(rnd.config, signer=signer, keys=keys)
    proj = build_round([(X, y), (X, y)], epsilon=1.0, delta=1e-5, release="noisy-projections")
    with pytest.raises(ParameterError, match="release='noisy-projections'"):
        DataOwner(
            proj.config,
            signer=proj.signers["owner-1"],
            keys={k: s.public_key for k, s in proj.signers.items()},
            statistics=stats,
        )
    narrow = owner_statistics(X[:, :2], y, n_classes=2)
    with pytest.raises(DataValidationError, match="2 feature"):
        DataOwner(rnd.config, signer=signer, keys=keys, statistics=narrow)
    with pytest.raises(ParameterError, match="scheduler"):
        load_owner_statistics(whole, SCHEMA, scheduler="sync")
    with pytest.raises(ParameterError, match="norm_bound"):
        load_owner_statistics(whole, SCHEMA, norm_bound=0.0)


def test_a_dask_frame_on_a_local_cluster(tmp_path) -> None:
    distributed = pytest.importorskip("distributed")
    (_, whole), _ = owner_tables(tmp_path)
    frame = dd.from_pandas(whole, npartitions=3)
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        dist = load_owner_statistics(frame, SCHEMA, scheduler=client)
    assert_stats_close(dist, load_owner_statistics(whole, SCHEMA))
