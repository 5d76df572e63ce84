"""TableSynthesizer on a Parquet dataset / Dask DataFrame (issue 16).

The measurements (first-round tables, the selected tree, the edge tables) must equal the
in-memory ones for the same seed: every exact table is reduced from the partitions and the
noise is drawn in the driver in the same order. That equality for each model (tree,
chow-liu, pairs), with and without a label, under both relations and with kept pairs, and
the rows written by ``fit`` (as many as the model's n, reproducible, within the schema), are
checked by tests/test_registry_contract.py (its ``synth`` cases), as is an undeclared value
in one file. Here: the reduction itself, and rows sampled to Parquet, which must follow the
model's law (two-sample χ² against the in-memory sampler at α = 1e-4 per test, so a correct
sampler fails it once in 10⁴ runs).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget
from ppdp.data import Schema
from ppdp.exceptions import DataValidationError, ParameterError
from ppdp.publish import TableSynthesizer
from ppdp.publish.table_synth_model import (
    MarginalCounts,
    TablesAndSubBins,
    class_counts_for,
    sub_bin_codes,
    sub_bin_histogram,
)

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")


ALPHA = 1e-4


# make_df plants age -> level, a pair the tree often leaves off: the pair check names it
# (test_table_synth_check.py); here only the equality of the two paths is tested.
pytestmark = pytest.mark.filterwarnings("ignore::ppdp.exceptions.LowUtilityWarning")


def make_schema(label: bool = True) -> Schema:
    cols = [
        {"name": "age", "type": "numeric", "lower": 0, "upper": 100, "integer": True},
        {"name": "score", "type": "numeric", "lower": -1.0, "upper": 1.0},
        {"name": "level", "type": "numeric", "lower": 1, "upper": 5, "integer": True},
        {"name": "colour", "type": "categorical", "categories": ["red", "green", "blue"]},
        {"name": "shape", "type": "categorical", "categories": ["o", "x"]},
    ]
    d: dict = {"columns": cols}
    if label:
        d["label"] = {"name": "cls", "classes": ["c0", "c1"]}
    return Schema.from_dict(d)


def make_df(n: int, seed: int, *, label: bool = True) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cls = rng.integers(0, 2, n)
    colour = np.where(rng.random(n) < 0.8, cls % 3, rng.integers(0, 3, n))
    age = np.clip(rng.normal(25 + 20 * cls, 6), 0, 100).round()
    df = pd.DataFrame(
        {
            "age": age.astype(int),
            "score": rng.uniform(-1, 1, n),
            "level": np.clip(1 + age // 20, 1, 5).astype(int),
            "colour": np.array(["red", "green", "blue"])[colour],
            "shape": np.where(rng.random(n) < 0.9, colour == 0, rng.random(n) < 0.5),
        }
    )
    df["shape"] = np.where(df["shape"], "o", "x")
    if label:
        df["cls"] = [f"c{k}" for k in cls]
    return df


def write_dataset(folder, frames) -> None:
    folder.mkdir()
    for i, f in enumerate(frames):
        f.to_parquet(folder / f"part-{i}.parquet", index=False)


@pytest.fixture
def dataset(tmp_path):
    frames = [make_df(700, 1), make_df(5, 2).iloc[:0], make_df(900, 3), make_df(400, 4)]
    write_dataset(tmp_path / "in", frames)
    return tmp_path / "in", pd.concat(frames, ignore_index=True)


def acct() -> Accountant:
    return Accountant.in_memory(total=PrivacyBudget(10.0, 1e-3))


def assert_same_measurements(a: TableSynthesizer, b: TableSynthesizer) -> None:
    sa, sb = a.release_.statistics, b.release_.statistics
    assert sa.keys() == sb.keys() and len(sa) > 0
    for k in sa:
        np.testing.assert_allclose(sb[k], sa[k], rtol=1e-9, atol=0, err_msg=k)
    assert a.release_.guarantee.details["edges"] == b.release_.guarantee.details["edges"]
    # the pair check's draws too (its pairs and noisy TVDs)
    checked = a.release_.guarantee.details.get("checked_pairs")
    assert checked == b.release_.guarantee.details.get("checked_pairs")


def test_reduced_counts_are_the_whole_tables_counts(dataset) -> None:
    _, whole = dataset
    synth = TableSynthesizer(1.0, make_schema(), method="tree")
    plan = synth.plan()
    X, y = make_schema().encode(whole)
    parts = [synth._partition_statistics(X[a:b], y[a:b]) for a, b in ((0, 5), (5, 5), (5, None))]
    merged = parts[0] + parts[1] + parts[2]
    ref = MarginalCounts.of(
        plan.bins.codes(make_schema(), X, y), plan.bins.sizes, plan.counted_cliques()
    )
    # decode="sub-bins" (the default): the scan also reduces the sub-bin histograms of the
    # columns binned at equal widths (age, score), equal to the whole table's
    assert isinstance(merged, TablesAndSubBins) and merged.sub_bins.columns == (0, 1)
    for a in merged.sub_bins.columns:
        col = make_schema().columns[a]
        inner = plan.bins.sizes[a] - 2
        whole_codes = sub_bin_codes(col, X[:, make_schema().blocks[col.name].start], inner)
        expected = sub_bin_histogram(whole_codes, inner)
        np.testing.assert_array_equal(merged.sub_bins.histogram(a), expected)
        assert 0 < expected.sum() <= len(whole)  # a value at a bound is in no sub-bin
    merged = merged.tables
    assert merged.n == len(whole) and merged.cliques == ref.cliques
    for a, b in zip(merged.tables, ref.tables, strict=True):
        np.testing.assert_array_equal(a, b)
    uniform = TableSynthesizer(1.0, make_schema(), method="tree", decode="uniform")
    assert isinstance(uniform._partition_statistics(X, y), MarginalCounts)
    # every candidate edge of the selection is counted: 1 + 4 features -> C(4, 2) pairs
    assert len(plan.counted_cliques()) == len(plan.first) + math.comb(len(plan.features), 2)


def test_pair_tables_for_50_attributes_of_16_bins_fit_in_a_few_megabytes() -> None:
    cols = [{"name": f"x{i}", "type": "numeric", "lower": 0, "upper": 1} for i in range(50)]
    schema = Schema.from_dict({"columns": cols, "label": {"name": "y", "classes": [0, 1]}})
    plan = TableSynthesizer(1.0, schema).plan()
    assert plan.method == "tree"
    cells = sum(math.prod(plan.bins.sizes[a] for a in c) for c in plan.counted_cliques())
    assert len(plan.counted_cliques()) == 50 + 1225
    assert cells * 8 < 8 * 2**20  # 1225 pairs x 2 x 17 x 17 cells (+ the first round), int64


def test_sample_to_parquet_follows_the_models_law(dataset, tmp_path) -> None:
    path, _ = dataset
    synth = TableSynthesizer(2.0, make_schema(), method="tree", random_state=3)
    synth.fit(path, scheduler="sync")
    n = 20_000
    out = synth.sample_to_parquet(
        n, tmp_path / "syn", random_state=8, scheduler="sync", rows_per_partition=3_000
    )
    files = sorted(p.name for p in out.glob("part-*.parquet"))
    assert len(files) == 7  # 6 x 3000 + 2000
    got = pd.read_parquet(out)
    assert len(got) == n
    # the class counts are the largest-remainder split of n, exactly as in memory
    want = class_counts_for(synth._model, n)
    np.testing.assert_array_equal(got["cls"].value_counts().reindex(["c0", "c1"]).to_numpy(), want)
    ref = synth.sample(n, random_state=9)
    for cols in (("cls", "colour"), ("colour", "shape"), ("cls", "level")):
        ka = got.groupby(list(cols)).size()
        kb = ref.groupby(list(cols)).size()
        table = pd.concat([ka, kb], axis=1).fillna(0).to_numpy()
        table = table[table.sum(axis=1) > 0]
        p = stats.chi2_contingency(table)[1]
        assert p > ALPHA, (cols, p)
    # a broken sampler (classes ignored) must fail the same check
    broken = ref.copy()
    broken["cls"] = np.random.default_rng(0).permutation(broken["cls"].to_numpy())
    ka = got.groupby(["cls", "colour"]).size()
    kb = broken.groupby(["cls", "colour"]).size()
    assert stats.chi2_contingency(pd.concat([ka, kb], axis=1).fillna(0).to_numpy())[1] < ALPHA
    # reproducible for one seed; another seed differs
    again = synth.sample_to_parquet(
        n, tmp_path / "syn2", random_state=8, scheduler="threads", rows_per_partition=3_000
    )
    pd.testing.assert_frame_equal(pd.read_parquet(again), got)
    other = synth.sample_to_parquet(n, tmp_path / "syn3", random_state=10, rows_per_partition=3_000)
    assert not pd.read_parquet(other).equals(got)


def test_sample_to_parquet_with_a_joint_model(dataset, tmp_path) -> None:
    path, _ = dataset
    synth = TableSynthesizer(2.0, make_schema(), method="pairs", n_bins=4, random_state=3)
    synth.fit(path, scheduler="sync")
    out = synth.sample_to_parquet(5_000, tmp_path / "syn", random_state=1, rows_per_partition=999)
    got = pd.read_parquet(out)
    assert len(got) == 5_000 and len(list(out.glob("part-*.parquet"))) == 6
    ref = synth.sample(5_000, random_state=2)
    ka, kb = got.groupby(["cls", "colour"]).size(), ref.groupby(["cls", "colour"]).size()
    assert stats.chi2_contingency(pd.concat([ka, kb], axis=1).fillna(0).to_numpy())[1] > ALPHA


def test_output_checked_before_anything_is_spent(dataset, tmp_path) -> None:
    path, _ = dataset
    (tmp_path / "taken").mkdir()
    for out, match in ((tmp_path / "taken", "already exists"), (tmp_path / "no/x", "does not")):
        a = acct()
        with pytest.raises(ParameterError, match=match):
            TableSynthesizer(1.0, make_schema()).fit(
                path, accountant=a, scheduler="sync", output=out
            )
        assert a.spent.is_zero
    with pytest.raises(ParameterError, match="output"):
        TableSynthesizer(1.0, make_schema()).fit(make_df(50, 0), output=tmp_path / "o")


def test_one_row_dataset_is_refused_like_in_memory(tmp_path) -> None:
    write_dataset(tmp_path / "in", [make_df(1, 0), make_df(5, 1).iloc[:0]])
    a = acct()
    with pytest.raises(DataValidationError, match="1 row"):
        TableSynthesizer(1.0, make_schema()).fit(tmp_path / "in", accountant=a, scheduler="sync")
    assert a.spent.is_zero


def test_a_dask_frame_on_a_local_cluster_gives_the_same_measurements(dataset, tmp_path) -> None:
    distributed = pytest.importorskip("distributed")
    _, whole = dataset
    frame = dd.from_pandas(whole, npartitions=3)
    mem = TableSynthesizer(1.0, make_schema(), method="tree", random_state=21).fit(whole)
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        dist = TableSynthesizer(1.0, make_schema(), method="tree", random_state=21)
        dist.fit(frame, scheduler=client, output=tmp_path / "out")
        rows = dist.release_.data.compute()
        written = dist.sample_to_parquet(1000, tmp_path / "more", scheduler=client)
    assert_same_measurements(mem, dist)
    assert len(rows) == len(whole) and len(pd.read_parquet(written)) == 1000


def test_grouped_draw_equals_the_row_by_row_draw() -> None:
    from ppdp import noise
    from ppdp.publish.table_synth_model import _cdf_rows, _draw_grouped
    from ppdp.random import SeededRandom

    rng = np.random.default_rng(0)
    table = rng.random((12, 7)) * (rng.random((12, 7)) < 0.6)
    table[3] = 0.0  # a row with no mass: uniform fallback
    table[5] = [0.0, 0.25, 0.25, 0.0, 0.25, 0.25, 0.0]  # CDF values on the 2**-53 grid
    group = rng.integers(0, 12, 50_000)
    u = np.asarray(noise.uniform(50_000, random_state=SeededRandom(1)))
    u[:8] = [0.0, 0.25, 0.5, 0.75, 1.0 - 2.0**-53, 2.0**-53, 0.5, 0.25]  # ties with the CDF
    group[:8] = 5
    rows = table[group]  # the reference: each row's own normalised CDF, then count below u
    total = rows.sum(axis=1, keepdims=True)
    cdf = np.where(total > 0, np.cumsum(rows, axis=1) / np.where(total > 0, total, 1.0),
                   np.arange(1, 8) / 7)  # fmt: skip
    want = np.minimum((cdf < u[:, None]).sum(axis=1), 6)
    np.testing.assert_array_equal(_draw_grouped(_cdf_rows(table), group, u), want)
    assert set(np.unique(want[group == 3])) == set(range(7))
