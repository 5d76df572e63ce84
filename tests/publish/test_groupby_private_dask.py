"""GroupByPublisher with private keys and quantiles on a Parquet dataset or a Dask DataFrame.

The per-key statistics (counts, integer sums, sums of squares, quantile-grid histograms)
are aggregated partition by partition and add exactly, and the selection and the noise are
drawn in the driver in the in-memory order: one seed gives the in-memory table, with rows
split over several files (one empty) and, under a privacy unit, persons whose rows span
files. DP-SIPS too: with a unit from the distinct (person, key) pairs, which add by union
across partitions, without one from the counts. The quantiles' grid sampler draws exactly
what the exponential mechanism on the snapped values draws. Bad input: the in-memory
message (the whole table's count), nothing spent.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest

from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget
from ppdp.cli import main
from ppdp.data import Schema
from ppdp.exceptions import DataValidationError, ParameterError
from ppdp.publish import GroupByPublisher
from ppdp.publish.group_quantiles import (
    GRID,
    CellCounts,
    exponential_quantiles,
    grid_cells,
    histogram_quantiles,
)
from ppdp.random import resolve_random_state

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

COLUMNS = [
    {"name": "dx", "type": "categorical", "open": True, "categories": ["Z99", "C1"]},
    {"name": "sex", "type": "categorical", "categories": ["F", "M"]},
    {"name": "los", "type": "numeric", "lower": 1, "upper": 365},
]


def schema(max_rows: int | None = None) -> Schema:
    d: dict = {"columns": COLUMNS}
    if max_rows is not None:
        d["privacy_unit"] = {"column": "pid", "max_rows": max_rows}
    return Schema.from_dict(d)


def hospital(seed: int = 0, n: int = 3000) -> pd.DataFrame:
    """A long-tailed code column (Zipf), 1 to 4 rows per person, persons shuffled."""
    rng = np.random.default_rng(seed)
    codes = np.minimum(rng.zipf(1.6, n), 400)
    pid = np.repeat(np.arange(n), rng.integers(1, 5, n))[:n]
    df = pd.DataFrame(
        {
            "pid": pid,
            "dx": [f"C{c}" for c in codes],
            "sex": rng.choice(["F", "M"], n),
            "los": np.round(rng.gamma(2.0, 6.0, n) + 1, 1),
        }
    )
    return df.sample(frac=1.0, random_state=seed).reset_index(drop=True)


@pytest.fixture
def dataset(tmp_path):
    whole = hospital()
    cuts = [0, 900, 900, 2100, len(whole)]  # one empty file; persons span files
    folder = tmp_path / "in"
    folder.mkdir()
    for i, (a, b) in enumerate(itertools.pairwise(cuts)):
        whole.iloc[a:b].to_parquet(folder / f"part-{i}.parquet", index=False)
    assert whole.iloc[:900]["pid"].isin(whole.iloc[2100:]["pid"]).any()
    return folder, whole


def both(data, whole, unit=None, seed=7, **kw):
    kw = {"by": ["dx"], "keys": "private", "delta": 1e-6, **kw}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mem = GroupByPublisher(1.0, schema(unit), random_state=seed, **kw).fit(whole)
        dist = GroupByPublisher(1.0, schema(unit), random_state=seed, **kw)
        dist.fit(data, scheduler="sync")
    return mem, dist


def assert_same(mem, dist) -> None:
    pd.testing.assert_frame_equal(dist.release_.data, mem.release_.data)
    for key, value in mem.release_.statistics.items():
        np.testing.assert_array_equal(dist.release_.statistics[key], value)
    assert dist.release_.guarantee == mem.release_.guarantee


@pytest.mark.parametrize("selection", ["laplace", "gaussian", "truncated-geometric"])
@pytest.mark.parametrize("relation", ["replace-one", "add/remove"])
def test_private_keys_on_parquet_equal_the_in_memory_release(dataset, selection, relation):
    path, whole = dataset
    kw = {"means": ["los"], "variances": ["los"], "quantiles": ["los"], "q": [0.5, 0.9]}
    mem, dist = both(path, whole, selection=selection, relation=relation, **kw)
    assert_same(mem, dist)
    table = mem.release_.data
    assert table["dx"].tolist()[:2] == ["Z99", "C1"] and len(table) >= 3  # declared first
    assert {"p50_los", "p90_los", "var_los", "mean_los_lo"} <= set(table.columns)
    other, _ = both(path, whole, seed=8, selection=selection, relation=relation, **kw)
    assert not other.release_.data["p50_los"].equals(table["p50_los"])  # the test can fail


def test_declared_and_private_columns_mix_on_a_dask_frame(dataset):
    _, whole = dataset
    frame = dd.from_pandas(whole, npartitions=3)
    mem, dist = both(frame, whole, by=["sex", "dx"], means=["los"], quantiles=["los"])
    assert_same(mem, dist)
    assert mem.release_.data[["sex", "dx"]].head(4).values.tolist() == [
        ["F", "Z99"],
        ["F", "C1"],
        ["M", "Z99"],
        ["M", "C1"],
    ]


def test_the_label_groups_and_float_codes_are_integer_keys_on_parquet(tmp_path):
    labelled = Schema.from_dict(
        {
            "columns": [
                {"name": "dx", "type": "categorical", "open": True},
                {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
            ],
            "label": {"name": "y", "classes": [0, 1]},
        }
    )
    rng = np.random.default_rng(0)
    n = 4000
    df = pd.DataFrame(
        {
            "dx": rng.choice([401.0, 402.0, 7.0], n),  # codes read as floats
            "age": rng.uniform(0, 100, n),
            "y": rng.integers(0, 2, n),
        }
    )
    (tmp_path / "d").mkdir()
    df.iloc[:1500].to_parquet(tmp_path / "d" / "a.parquet")
    df.iloc[1500:].to_parquet(tmp_path / "d" / "b.parquet")
    kw = {"by": ["y", "dx"], "keys": "private", "delta": 1e-6, "means": ["age"]}
    kw |= {"quantiles": ["age"], "random_state": 1}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mem = GroupByPublisher(1.0, labelled, **kw).fit(df)
        dist = GroupByPublisher(1.0, labelled, **kw).fit(tmp_path / "d", scheduler="sync")
    assert_same(mem, dist)
    table = mem.release_.data
    assert table[["y", "dx"]].values.tolist() == [
        [y, k] for y in (0, 1) for k in ("401", "402", "7")
    ]


@pytest.mark.parametrize("selection", ["laplace", "gaussian"])
def test_a_privacy_unit_whose_persons_span_partitions_gives_the_same_release(dataset, selection):
    path, whole = dataset
    kw = {"means": ["los"], "variances": ["los"], "quantiles": ["los"]}
    mem, dist = both(path, whole, unit=2, selection=selection, **kw)
    assert_same(mem, dist)
    assert {"p50_los", "p50_los_lo", "p50_los_hi"} <= set(mem.release_.data.columns)
    assert mem.bounding_summary == dist.bounding_summary  # the same rows were kept


@pytest.mark.parametrize("unit", [None, 2])
@pytest.mark.parametrize("relation", ["replace-one", "add/remove"])
def test_dp_sips_on_parquet_equals_the_in_memory_release(dataset, unit, relation):
    """Persons span files and one file is empty; with a unit the selection reads the
    distinct (person, key) pairs of the bounded rows, without one the per-key counts."""
    path, whole = dataset
    kw = {"selection": "dp-sips", "relation": relation, "means": ["los"]}
    mem, dist = both(path, whole, unit=unit, **kw)
    assert_same(mem, dist)
    assert len(mem.release_.data) > 3  # keys beyond the two declared ones were selected
    if unit is not None:
        assert mem.bounding_summary == dist.bounding_summary
    other, _ = both(path, whole, unit=unit, seed=8, **kw)
    assert not other.release_.data.equals(mem.release_.data)  # the test can fail


@pytest.mark.parametrize("unit", [None, 2])
def test_dp_sips_on_a_dask_frame_equals_the_in_memory_release(dataset, unit):
    _, whole = dataset
    frame = dd.from_pandas(whole, npartitions=4)
    kw = {"by": ["sex", "dx"], "selection": "dp-sips", "max_groups": 2} if unit else {}
    mem, dist = both(frame, whole, unit=unit, **{"selection": "dp-sips", **kw})
    assert_same(mem, dist)


def test_dp_sips_pairs_of_partitions_add_to_the_tables_pairs(dataset):
    """The aggregate of two halves carries the whole table's distinct (person, key) pairs
    (a person in both halves counted once per key); without a unit no pairs at all."""
    _, whole = dataset
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for unit in (2, None):
            pub = GroupByPublisher(
                1.0, schema(unit), by=["dx"], keys="private", delta=1e-6, selection="dp-sips"
            )
            plan = pub.plan()
            halves = [pub._encode(part) for part in (whole.iloc[:1000], whole.iloc[1000:])]
            a, b = (pub._keyed_aggregate(plan, rows, y) for rows, y in halves)
            rows, y = pub._encode(whole)
            full = pub._keyed_aggregate(plan, rows, y)
            if unit is None:
                assert full.pairs is None and (a + b).pairs is None
                continue
            got = (a + b).pairs
            assert not got.duplicated().any()
            assert set(map(tuple, got.to_numpy())) == set(map(tuple, full.pairs.to_numpy()))
            spanning = whole.iloc[:1000]["pid"].isin(whole.iloc[1000:]["pid"])
            assert spanning.any() and len(got) < len(a.pairs) + len(b.pairs)
            assert not full.pairs["dx"].isin(["Z99", "C1"]).any()  # declared keys: no weight


def test_the_rows_a_person_keeps_do_not_depend_on_the_row_order_with_open_keys():
    """Two rows of one person that differ only in their open key were one "identical" row
    to the bounding's fingerprint, so which one was kept followed the row order."""
    base = pd.DataFrame(
        {"pid": [1, 1, 2, 2, 3], "dx": ["A", "B", "A", "B", "A"], "sex": "F", "los": 5.0}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(5):
            kept = []
            for order in (base, base.iloc[::-1]):
                pub = GroupByPublisher(
                    1.0, schema(1), by=["dx"], keys="private", delta=1e-6, random_state=seed
                )
                rows = pub._bounded(order, resolve_random_state(seed), "raise")
                kept.append(sorted(map(tuple, rows[["pid", "dx"]].to_numpy().tolist())))
            assert kept[0] == kept[1]


@pytest.mark.parametrize("method", ["exponential+tree", "tree", "exponential"])
def test_quantiles_of_declared_keys_on_parquet_equal_the_in_memory_ones(dataset, method):
    path, whole = dataset
    kw = {"by": ["sex"], "keys": "declared", "delta": None, "quantiles": ["los"], "q": [0.25]}
    mem, dist = both(path, whole, means=["los"], quantile_method=method, **kw)
    assert_same(mem, dist)
    truth = whole.groupby("sex")["los"].quantile(0.25).to_numpy()
    np.testing.assert_allclose(mem.release_.data["p25_los"], truth, atol=1.5)
    assert ("p25_los_lo" in mem.release_.data.columns) == (method != "exponential")


def test_the_command_line_publishes_private_keys_of_a_parquet_folder(dataset, tmp_path):
    path, whole = dataset
    mem, _ = both(path, whole, seed=2, means=["los"], quantiles=["los"])
    schema().to_file(tmp_path / "s.json")
    argv = ["publish", "groupby", str(path), "--schema", str(tmp_path / "s.json"), "--by", "dx"]
    argv += ["--keys", "private", "--delta", "1e-6", "--means", "los", "--quantiles", "los"]
    argv += ["--epsilon", "1", "-o", str(tmp_path / "cli"), "--seed", "2", "--scheduler", "sync"]
    assert main(argv) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "cli"), mem.release_.data)


def test_the_command_line_runs_dp_sips_on_a_parquet_folder(dataset, tmp_path):
    path, whole = dataset
    mem, _ = both(path, whole, unit=2, seed=2, selection="dp-sips", means=["los"])
    schema(2).to_file(tmp_path / "s.json")
    argv = ["publish", "groupby", str(path), "--schema", str(tmp_path / "s.json"), "--by", "dx"]
    argv += ["--keys", "private", "--delta", "1e-6", "--means", "los", "--selection", "dp-sips"]
    argv += ["--epsilon", "1", "-o", str(tmp_path / "cli"), "--seed", "2", "--scheduler", "sync"]
    assert main(argv) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "cli"), mem.release_.data)


# -- bad input: the in-memory message, nothing spent ---------------------------------------


def test_missing_keys_in_several_files_are_counted_over_the_whole_table(dataset):
    path, whole = dataset
    whole = whole.copy()
    whole.loc[[5, 2500], "dx"] = None  # one in the first file, one in the last
    for i, (a, b) in enumerate([(0, 900), (900, 900), (900, 2100), (2100, len(whole))]):
        whole.iloc[a:b].to_parquet(path / f"part-{i}.parquet", index=False)
    acct = Accountant.in_memory(total=PrivacyBudget(5.0, 1e-5))
    pub = GroupByPublisher(1.0, schema(), by=["dx"], keys="private", delta=1e-6)
    with pytest.raises(DataValidationError) as in_memory:
        pub.fit(whole)
    with pytest.raises(DataValidationError) as distributed:
        pub.fit(path, accountant=acct, scheduler="sync")
    assert str(distributed.value) == str(in_memory.value)
    assert "'dx': 2 value(s) are missing" in str(in_memory.value)
    assert acct.history() == []


def test_masked_missing_keys_give_the_in_memory_release_and_one_whole_table_count(dataset, caplog):
    """The accountant's total mode: a row without its open key is left out, in memory and
    on Parquet alike, and the custodian's log counts them over the whole table."""
    path, whole = dataset
    whole = whole.copy()
    whole.loc[[5, 2500], "dx"] = None
    for i, (a, b) in enumerate([(0, 900), (900, 900), (900, 2100), (2100, len(whole))]):
        whole.iloc[a:b].to_parquet(path / f"part-{i}.parquet", index=False)
    releases = []
    for data in (whole, path):
        acct = Accountant.in_memory(total=PrivacyBudget(5.0, 1e-5))
        acct.on_invalid = "mask"
        pub = GroupByPublisher(
            1.0, schema(), by=["dx"], keys="private", delta=1e-6, means=["los"], random_state=4
        )
        caplog.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            extra = {"scheduler": "sync"} if data is path else {}
            pub.fit(data, accountant=acct, allow_seeded=True, **extra)
        assert "'dx': 2 missing key(s) left out" in caplog.text
        releases.append(pub.release_.data)
    pd.testing.assert_frame_equal(releases[1], releases[0])


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"by": ["dxx"]}, r"^by \('dxx'\) is not a column"),
        ({"delta": None}, r"^delta \(None\): keys='private' needs delta > 0"),
        ({"quantiles": ["los"], "q": [1.0]}, r"^q \(1.0\) must be a probability"),
        ({"min_count": -1}, r"^min_count \(-1\) must be a number >= 0"),
    ],
)
def test_bad_input_on_parquet_is_one_line_and_spends_nothing(dataset, kw, match):
    path, _ = dataset
    acct = Accountant.in_memory(total=PrivacyBudget(5.0, 1e-5))
    kw = {"by": ["dx"], "keys": "private", "delta": 1e-6, **kw}
    with pytest.raises(ParameterError, match=match) as err:
        GroupByPublisher(1.0, schema(), **kw).fit(path, accountant=acct, scheduler="sync")
    assert "\n" not in str(err.value)
    assert acct.history() == []


# -- the quantile grid ---------------------------------------------------------------------


def _exact_em(groups, values, n_groups, p, eps, lower, upper, source):
    """The exponential mechanism on the continuous range over raw values, sampled exactly
    (gap chosen ∝ length · exp(−ε|rank − pn|/2), then uniform in it): the reference."""
    v = np.clip(values, lower, upper)
    order = np.lexsort((v, groups))
    v, g = v[order], groups[order]
    counts = np.bincount(g, minlength=n_groups)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    gaps = counts + 1
    seg_start = np.concatenate([[0], np.cumsum(gaps)[:-1]])
    seg = np.repeat(np.arange(n_groups), gaps)
    i = np.arange(gaps.sum()) - seg_start[seg]
    n = counts[seg]
    hi = max(len(v) - 1, 0)
    left = np.where(i == 0, lower, v[np.clip(starts[seg] + i - 1, 0, hi)] if len(v) else lower)
    right = np.where(i == n, upper, v[np.clip(starts[seg] + i, 0, hi)] if len(v) else upper)
    length = np.maximum(right - left, 0.0)
    with np.errstate(divide="ignore"):
        logw = np.log(length) - eps * np.abs(i - p * n) / 2.0
    w = np.exp(logw - np.maximum.reduceat(logw, seg_start)[seg])
    cs = np.cumsum(w)
    before = np.concatenate([[0.0], cs])[seg_start]
    total = cs[seg_start + gaps - 1] - before
    from ppdp import noise

    u = np.asarray(noise.uniform(2 * n_groups, random_state=source))
    pick = np.clip(
        np.searchsorted(cs, before + u[:n_groups] * total, side="right"),
        seg_start,
        seg_start + gaps - 1,
    )
    return np.clip(left[pick] + u[n_groups:] * length[pick], lower, upper)


@pytest.mark.parametrize("seed", range(6))
def test_the_grid_sampler_draws_what_the_exact_mechanism_on_snapped_values_draws(seed):
    rng = np.random.default_rng(seed)
    n_groups, n = 4, 200
    g = rng.integers(0, n_groups - 1, n)  # the last group is empty
    raw = rng.uniform(-5, 400, n) if seed % 2 else rng.integers(1, 30, n).astype(float)
    cells = grid_cells(raw, 1.0, 365.0)
    snapped = np.minimum(1.0 + cells * (364.0 / GRID), 365.0)
    assert np.all(np.abs(snapped - np.clip(raw, 1, 365)) <= 364.0 / GRID / 2 + 1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for p in (0.1, 0.5, 0.9):
            ref = _exact_em(g, snapped, n_groups, p, 0.8, 1.0, 365.0, resolve_random_state(seed))
            got = exponential_quantiles(
                g, raw, n_groups, p, 0.8, 1.0, 365.0, resolve_random_state(seed)
            )
            np.testing.assert_array_equal(got, ref)
            # the histogram in pieces (as partitions give it) draws the same
            half = n // 2
            pieces = CellCounts.of(g[:half], cells[:half]) + CellCounts.of(g[half:], cells[half:])
            again = histogram_quantiles(
                pieces, n_groups, p, 0.8, 1.0, 365.0, resolve_random_state(seed)
            )
            np.testing.assert_array_equal(again, got)


# -- the per-key aggregate -----------------------------------------------------------------


def test_aggregates_of_pieces_add_up_to_the_aggregate_of_the_whole_exactly():
    """Keys of two columns, integer sums beyond 2⁵³ (where float sums are no longer exact),
    a quantile histogram: the sum of the pieces' aggregates is the whole's, key by key."""
    from ppdp.publish.groupby_keys import KeyedAggregate

    rng = np.random.default_rng(3)
    n = 5000
    labels = {
        "a": rng.choice(["x", "y"], n).astype(object),
        "b": np.array([f"k{i}" for i in rng.zipf(1.5, n) % 300], dtype=object),
    }
    sums = np.stack([rng.integers(-(2**23), 2**23, n), np.full(n, 2**44 + 1)]).astype(np.int64)
    cells = [rng.integers(0, GRID + 1, n)]
    whole = KeyedAggregate.of_rows(labels, sums, cells)
    cuts = [0, 1200, 1200, 4100, n]
    parts = [
        KeyedAggregate.of_rows(
            {k: v[a:b] for k, v in labels.items()}, sums[:, a:b], [cells[0][a:b]]
        )
        for a, b in itertools.pairwise(cuts)
    ]
    merged = (parts[0] + parts[1]) + (parts[2] + parts[3])

    def table(agg):
        frame = agg.keys.copy()
        for j, row in enumerate(agg.stats):
            frame[f"s{j}"] = row
        return frame.sort_values(["a", "b"]).reset_index(drop=True)

    pd.testing.assert_frame_equal(table(merged), table(whole))
    assert int(merged.stats[2].max()) > 2**53  # the exactness is tested where it matters

    def histogram(agg):  # groups renumbered by the sorted keys
        order = agg.keys.sort_values(["a", "b"]).index.to_numpy()
        new = np.empty(len(order), dtype=np.int64)
        new[order] = np.arange(len(order))
        return agg.cells[0].regroup(new)

    a, b = histogram(whole), histogram(merged)
    for field in ("groups", "cells", "counts"):
        np.testing.assert_array_equal(getattr(b, field), getattr(a, field))
