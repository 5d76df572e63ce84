"""The Dask engine: agreement with numpy to 1e-9 relative, Parquet, schedulers, lazy import."""

from __future__ import annotations

import logging
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from ppdp.data import CUSTODIAN_LOGGER, Schema, SufficientStats
from ppdp.exceptions import DataValidationError, OptionalDependencyError

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

RTOL = 1e-9


def _assert_close(a: SufficientStats, b: SufficientStats) -> None:
    assert a.n == b.n
    np.testing.assert_allclose(a.sum_x, b.sum_x, rtol=RTOL)
    np.testing.assert_allclose(a.sum_xx, b.sum_xx, rtol=RTOL)
    if b.classes is not None:
        assert len(a.classes) == len(b.classes)
        np.testing.assert_array_equal(a.class_counts, b.class_counts)
        np.testing.assert_allclose(a.class_sum_x, b.class_sum_x, rtol=RTOL)
        np.testing.assert_allclose(a.class_sum_xx, b.class_sum_xx, rtol=RTOL)


@pytest.fixture
def data(seed):
    rng = np.random.default_rng(seed)
    X = rng.random((2_000, 5))
    y = rng.integers(0, 3, 2_000)
    y[y == 2] = 1  # class 2 is declared but empty
    return X, y


@pytest.mark.parametrize("scheduler", ["sync", "threads"])
def test_numpy_pandas_dask_agree(data, scheduler) -> None:
    X, y = data
    ref = SufficientStats.compute(X, y, n_classes=3)
    pdf = pd.DataFrame(X, columns=list("abcde"))
    _assert_close(SufficientStats.compute(pdf, pd.Series(y), n_classes=3), ref)
    darr = da.from_array(X, chunks=(300, 2))  # column chunks are merged, row chunks kept
    dy = da.from_array(y, chunks=450)  # misaligned label chunks are realigned
    _assert_close(SufficientStats.compute(darr, dy, n_classes=3, scheduler=scheduler), ref)
    _assert_close(SufficientStats.compute(darr, y, n_classes=3, scheduler=scheduler), ref)
    ddf = dd.from_pandas(pdf.assign(label=y), npartitions=7)
    got = SufficientStats.compute(ddf, "label", n_classes=3, scheduler=scheduler, split_every=2)
    _assert_close(got, ref)
    assert got.feature_names == tuple("abcde")
    assert got.class_counts[2] == 0
    plain = SufficientStats.compute(darr, scheduler=scheduler)
    _assert_close(plain, SufficientStats.compute(X))


def test_dask_input_checks(data) -> None:
    X, y = data
    ddf = dd.from_pandas(pd.DataFrame(X, columns=list("abcde")).assign(t="x"), npartitions=3)
    with pytest.raises(DataValidationError, match="'t' is not numeric"):
        SufficientStats.compute(ddf, scheduler="sync")
    X[5, 3] = np.nan
    with pytest.raises(DataValidationError, match="X column 3 contains NaN"):
        SufficientStats.compute(da.from_array(X, chunks=500), scheduler="sync")
    bad_y = y.copy()
    bad_y[0] = 7
    with pytest.raises(DataValidationError, match="outside the declared classes"):
        SufficientStats.compute(
            da.from_array(np.nan_to_num(X), chunks=500), bad_y, n_classes=3, scheduler="sync"
        )


def _adultish(n: int, rng: np.random.Generator) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": rng.integers(10, 100, n),  # bounds [17, 90]: some clipping
            "hours": rng.uniform(0, 80, n),
            "sex": rng.choice(["F", "M"], n),
            "income": rng.choice(["lo", "hi"], n),
        }
    )


SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "age", "type": "numeric", "lower": 17, "upper": 90, "integer": True},
            {"name": "hours", "type": "numeric", "lower": 0, "upper": 80},
            {"name": "sex", "type": "categorical", "categories": ["F", "M", "X"]},
        ],
        "label": {"name": "income", "classes": ["lo", "hi"]},
    }
)


@pytest.fixture
def parquet_dir(tmp_path, seed):
    rng = np.random.default_rng(seed)
    df = _adultish(3_000, rng)
    folder = tmp_path / "pq"
    folder.mkdir()
    for i, lo in enumerate(range(0, 3_000, 700)):
        df.iloc[lo : lo + 700].assign(extra=1.0).to_parquet(folder / f"part-{i}.parquet")
    return folder, df


@pytest.mark.parametrize("include_label", [False, True])
def test_from_parquet_matches_in_memory(parquet_dir, include_label, caplog) -> None:
    folder, df = parquet_dir
    X, y, report = SCHEMA.encode(df, include_label=include_label, return_report=True)
    ref = SufficientStats.compute(X, y, n_classes=2)
    with caplog.at_level(logging.INFO, logger=CUSTODIAN_LOGGER):
        got, got_report = SufficientStats.from_parquet(
            folder,
            schema=SCHEMA,
            include_label=include_label,
            scheduler="threads",
            return_report=True,
        )
    _assert_close(got, ref)
    assert got.classes == ("lo", "hi")
    assert got.feature_names == SCHEMA.layout(include_label=include_label).feature_names
    assert dict(got_report.clipped) == dict(report.clipped) and report.clipped["age"] > 0
    assert got_report.n_rows == 3_000
    logged = [r for r in caplog.records if r.name == CUSTODIAN_LOGGER]
    assert len(logged) == 1  # one merged line, not one per partition
    np.testing.assert_array_equal(got.class_sum_x[:, SCHEMA.blocks["sex"]][:, 2], [0, 0])


def test_from_parquet_single_file_and_errors(parquet_dir, tmp_path) -> None:
    folder, _ = parquet_dir
    one = sorted(folder.iterdir())[0]
    st = SufficientStats.from_parquet(one, schema=SCHEMA, scheduler="sync")
    assert st.n == 700
    with pytest.raises(FileNotFoundError):
        SufficientStats.from_parquet(tmp_path / "nope", schema=SCHEMA, scheduler="sync")
    other = Schema.from_dict(
        {"columns": [{"name": "weight", "type": "numeric", "lower": 0, "upper": 1}]}
    )
    with pytest.raises(DataValidationError, match="lacks column"):
        SufficientStats.from_parquet(folder, schema=other, scheduler="sync")
    with pytest.raises(ValueError, match="scheduler"):
        SufficientStats.from_parquet(folder, schema=SCHEMA, scheduler=42)


def test_missing_dask_gives_install_hint(monkeypatch) -> None:
    from ppdp.data import _dask

    for mod in ("dask", "dask.array", "dask.dataframe", "dask.delayed"):
        monkeypatch.setitem(sys.modules, mod, None)
    with pytest.raises(OptionalDependencyError, match=r"pip install 'ppdp\[dask\]'"):
        _dask.import_dask()
    with pytest.raises(OptionalDependencyError, match=r"ppdp\[dask\]"):
        SufficientStats.from_parquet("x.parquet", schema=SCHEMA)


def test_core_imports_without_dask() -> None:
    code = (
        "import sys\n"
        "for m in ('dask', 'distributed', 'pyarrow'): sys.modules[m] = None\n"
        "import ppdp, ppdp.data, ppdp.datasets, ppdp.cli._schema\n"
        "import numpy as np\n"
        "from ppdp.data import SufficientStats\n"
        "st = SufficientStats.compute(np.eye(3), [0, 1, 1], n_classes=2)\n"
        "assert st.class_counts.tolist() == [1, 2]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


@pytest.mark.slow
def test_local_cluster_default(parquet_dir) -> None:
    """``scheduler=None`` starts a LocalCluster (kept tiny here) and shuts it down."""
    folder, df = parquet_dir
    X, y = SCHEMA.encode(df)
    got = SufficientStats.from_parquet(
        folder,
        schema=SCHEMA,
        cluster_kwargs={"n_workers": 1, "threads_per_worker": 1, "processes": False},
    )
    _assert_close(got, SufficientStats.compute(X, y, n_classes=2))
