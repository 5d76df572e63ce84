"""ppdp.data.distributed: opening Parquet datasets, one validating scan, atomic partitioned output,
and the per-partition noise streams of ppdp.random."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ppdp.data import Schema, SufficientStats
from ppdp.exceptions import DataValidationError, ParameterError
from ppdp.random import PartitionStreams, SecureRandom, SeededRandom

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

from ppdp.data.distributed import (  # noqa: E402
    SUCCESS_MARKER,
    dask_session,
    encoded_partitions,
    is_distributed,
    open_table,
    parquet_files,
    read_parquet_dataset,
    scan_table,
    write_parquet_dataset,
)

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
            {"name": "dx", "type": "categorical", "categories": ["a", "b", "c"]},
        ],
        "label": {"name": "y", "classes": [0, 1]},
    }
)


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.uniform(-5, 110, n),  # some values clipped
            "dx": rng.choice(["a", "b", "c"], n),
            "y": rng.integers(0, 2, n),
            "id": np.arange(n),  # an extra column, ignored
        }
    )


def _write_files(folder, frames) -> None:
    folder.mkdir(exist_ok=True)
    for i, f in enumerate(frames):
        f.to_parquet(folder / f"part-{i}.parquet", index=False)


def _stats_fn(X, y):
    return SufficientStats.compute(X, y, n_classes=2)


def test_is_distributed(tmp_path) -> None:
    assert is_distributed("data/*.parquet") and is_distributed("x.parquet")
    assert is_distributed(tmp_path) and not is_distributed(str(tmp_path / "a.csv"))
    assert not is_distributed(pd.DataFrame()) and not is_distributed(np.zeros((2, 2)))
    assert is_distributed(dd.from_pandas(pd.DataFrame({"a": [1]}), npartitions=1))


def test_files_in_natural_order_and_markers_skipped(tmp_path) -> None:
    frames = [_table(5, i) for i in range(12)]
    _write_files(tmp_path / "ds", frames)
    (tmp_path / "ds" / SUCCESS_MARKER).write_text("{}")
    (tmp_path / "ds" / ".hidden.parquet").write_text("junk")
    names = [p.rsplit("/", 1)[1] for p in parquet_files(tmp_path / "ds")]
    assert names == [f"part-{i}.parquet" for i in range(12)]
    # open_table keeps that order: the ids come back as written
    got = open_table(tmp_path / "ds", SCHEMA).compute()
    assert list(got.columns) == ["age", "dx", "y"]
    np.testing.assert_array_equal(got["age"].to_numpy(), pd.concat(frames)["age"].to_numpy())


def test_scan_matches_memory_statistics_and_counts(tmp_path) -> None:
    frames = [_table(300, i) for i in range(4)] + [_table(0, 9)]  # an empty partition too
    _write_files(tmp_path / "ds", frames)
    whole = pd.concat(frames, ignore_index=True)
    X, y, report = SCHEMA.encode(whole, include_label=True, return_report=True)
    ref = SufficientStats.compute(X, y, n_classes=2)
    frame = open_table(tmp_path / "ds", SCHEMA)
    scan = scan_table(
        frame, SCHEMA, include_label=True, partition_fn=_stats_fn, scheduler="sync", split_every=2
    )
    assert scan.n_rows == 1200 and scan.n_partitions == 5
    assert scan.report == report
    np.testing.assert_allclose(scan.value.sum_xx, ref.sum_xx, rtol=1e-12)
    np.testing.assert_array_equal(scan.value.class_counts, ref.class_counts)


@pytest.mark.parametrize(
    "spoil",
    [
        lambda f: f.assign(dx=f["dx"].where(f.index % 7 != 0, "zz")),
        lambda f: f.assign(age=f["age"].where(f.index % 5 != 0, np.nan)),
        lambda f: f.assign(y=f["y"].where(f.index % 9 != 0, 5)),
    ],
    ids=["undeclared-category", "missing-value", "undeclared-class"],
)
def test_scan_raises_the_in_memory_error_with_the_global_count(tmp_path, spoil) -> None:
    # the same kind of problem in two of three partitions: the message must carry the sum
    frames = [_table(200, 0), spoil(_table(200, 1)), spoil(_table(230, 2))]
    _write_files(tmp_path / "ds", frames)
    whole = pd.concat(frames, ignore_index=True)
    with pytest.raises(DataValidationError) as in_memory:
        SCHEMA.encode(whole, include_label=True)
    frame = open_table(tmp_path / "ds", SCHEMA)
    with pytest.raises(DataValidationError) as distributed:
        scan_table(frame, SCHEMA, include_label=True, scheduler="sync")
    assert str(distributed.value) == str(in_memory.value)
    # total mode: nothing raises, the counts go to report.masked
    scan = scan_table(frame, SCHEMA, include_label=True, on_invalid="mask", scheduler="sync")
    _, _, report = SCHEMA.encode(whole, include_label=True, return_report=True, on_invalid="mask")
    assert scan.report.masked == report.masked and sum(report.masked.values()) > 0


def test_first_error_follows_the_schema_order(tmp_path) -> None:
    f = _table(50, 1)
    f.loc[3, "dx"] = "zz"  # second column
    g = _table(50, 2)
    g.loc[4, "age"] = np.nan  # first column, in another partition
    _write_files(tmp_path / "ds", [f, g])
    with pytest.raises(DataValidationError) as in_memory:
        SCHEMA.encode(pd.concat([f, g]), include_label=True)
    with pytest.raises(DataValidationError) as got:
        scan_table(open_table(tmp_path / "ds", SCHEMA), SCHEMA, include_label=True)
    assert str(got.value) == str(in_memory.value) and "'age'" in str(got.value)


def test_file_level_errors(tmp_path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataValidationError, match="holds no Parquet file"):
        open_table(tmp_path / "empty", SCHEMA)
    with pytest.raises(DataValidationError, match="matches no Parquet file"):
        open_table(str(tmp_path / "nothing" / "*.parquet"), SCHEMA)
    with pytest.raises(DataValidationError, match="does not exist"):
        open_table(tmp_path / "absent.parquet", SCHEMA)
    _write_files(tmp_path / "missing", [_table(5, 1), _table(5, 2).drop(columns="dx")])
    with pytest.raises(DataValidationError, match=r"'part-1.parquet' lacks column\(s\) 'dx'"):
        open_table(tmp_path / "missing", SCHEMA)
    mixed = _table(5, 2)
    mixed["age"] = mixed["age"].astype(str)
    _write_files(tmp_path / "mixed", [_table(5, 1), mixed])
    with pytest.raises(DataValidationError, match=r"'age' is stored as numeric .* but as text"):
        open_table(tmp_path / "mixed", SCHEMA)
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "a.parquet").write_bytes(b"not parquet")
    with pytest.raises(DataValidationError, match="not a readable Parquet file"):
        open_table(tmp_path / "junk", SCHEMA)


def test_integer_and_float_files_mix(tmp_path) -> None:
    a = _table(20, 1)
    b = _table(20, 2)
    b["age"] = b["age"].round().astype("int64")
    _write_files(tmp_path / "ds", [a, b])
    scan = scan_table(open_table(tmp_path / "ds", SCHEMA), SCHEMA, include_label=True)
    assert scan.n_rows == 40


def test_write_is_atomic_and_ordered(tmp_path) -> None:
    from dask import delayed

    parts = [delayed(pd.DataFrame)({"i": np.arange(k * 10, k * 10 + 10)}) for k in range(11)]
    out = write_parquet_dataset(parts, tmp_path / "out", scheduler="threads")
    back = read_parquet_dataset(out).compute()
    np.testing.assert_array_equal(back["i"].to_numpy(), np.arange(110))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    with pytest.raises(ParameterError, match="already exists"):
        write_parquet_dataset(parts, tmp_path / "out")

    def boom() -> pd.DataFrame:
        raise RuntimeError("worker lost")

    with pytest.raises(RuntimeError, match="worker lost"):
        write_parquet_dataset([*parts, delayed(boom)()], tmp_path / "out2", scheduler="sync")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # nothing half-written
    with pytest.raises(RuntimeError):
        write_parquet_dataset([delayed(boom)()], tmp_path / "out", overwrite=True)
    np.testing.assert_array_equal(read_parquet_dataset(out).compute()["i"], np.arange(110))
    with pytest.raises(ParameterError, match="does not exist"):
        write_parquet_dataset(parts, tmp_path / "no" / "out")
    (tmp_path / "half").mkdir()
    with pytest.raises(DataValidationError, match="no _SUCCESS marker"):
        read_parquet_dataset(tmp_path / "half")


def test_encoded_partitions_are_in_order(tmp_path) -> None:
    frames = [_table(30, i) for i in range(3)]
    _write_files(tmp_path / "ds", frames)
    import dask

    parts = encoded_partitions(open_table(tmp_path / "ds", SCHEMA), SCHEMA, include_label=False)
    got = np.vstack([X for X, _ in dask.compute(*parts, scheduler="sync")])
    X, _ = SCHEMA.encode(pd.concat(frames))
    np.testing.assert_array_equal(got, X)


def test_unreachable_scheduler_is_one_line() -> None:
    with pytest.raises(ParameterError, match="cannot be reached"):  # noqa: SIM117
        with dask_session("tcp://127.0.0.1:9"):
            pass
    with pytest.raises(ParameterError, match="must be 'local'"):  # noqa: SIM117
        with dask_session(42):
            pass


# ------------------------------------------------------------------ PartitionStreams


def test_partition_streams_are_reproducible_distinct_and_picklable() -> None:
    a = PartitionStreams(SeededRandom(3))
    b = PartitionStreams(SeededRandom(3))
    assert not a.is_secure and PartitionStreams(SecureRandom()).is_secure
    np.testing.assert_array_equal(a.stream(5).uint64(100), b.stream(5).uint64(100))
    assert not np.array_equal(a.stream(0).uint64(100), a.stream(1).uint64(100))
    # reading in pieces gives the same words as reading at once
    s = a.stream(2)
    pieces = np.concatenate([s.uint64(3), s.uint64(0), s.uint64(7)])
    np.testing.assert_array_equal(pieces, a.stream(2).uint64(10))
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(c.stream(4).uint64(8), a.stream(4).uint64(8))
    with pytest.raises(TypeError):
        pickle.dumps(a.stream(0))
    assert "key" not in repr(a) and repr(a) == "PartitionStreams(is_secure=False)"
    with pytest.raises(ParameterError):
        a.stream(-1)


@pytest.mark.statistical
def test_partition_stream_words_are_uniform() -> None:
    """Chi-square on the 256 byte values of 2^20 words from 8 streams; false-positive rate 1e-4.

    Fails on a broken stream, e.g. one that repeats a partition's key (see the second check).
    """
    streams = PartitionStreams(SeededRandom(11))
    words = np.concatenate([streams.stream(i).uint64(1 << 17) for i in range(8)])
    counts = np.bincount(words.view(np.uint8), minlength=256)
    p = stats.chisquare(counts).pvalue
    assert p > 1e-4
    # top bits of consecutive words: uniform doubles in [0, 1) pass a KS test
    u = (words >> np.uint64(11)).astype(np.float64) / 2.0**53
    assert stats.kstest(u[:200_000], "uniform").pvalue > 1e-4
    # broken control: every partition on one key gives identical streams, which a
    # cross-partition equality check catches at once
    assert len({streams.stream(i).uint64(4).tobytes() for i in range(64)}) == 64


def test_module_imports_without_dask() -> None:
    code = (
        "import sys; sys.modules['dask'] = None; import ppdp.data.distributed as d; "
        "print(d.is_distributed('x.csv'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
