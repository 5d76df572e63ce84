"""``TableSynthesizer(binning="private-quantiles")`` on a Parquet dataset: two scans.

The first scan reduces the exact fine histograms of the quantile columns from the
partitions; the driver measures the cut points from them with the in-memory draws, then a
second scan counts the tables on those bins. For the same seed the release must be the
in-memory one exactly: the same cut points, the same noisy statistics (bit for bit), the
same synthetic rows. Also: every draw still sums to the stated ρ, the ledger is charged once
(between the two scans), and the command line takes a folder.
"""

from __future__ import annotations

import functools
import itertools
import logging
import pickle

import numpy as np
import pandas as pd
import pytest
from test_table_synth import _intercept, drawn_rho

from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget
from ppdp.cli import main
from ppdp.data import Schema
from ppdp.exceptions import DataValidationError, LowUtilityWarning
from ppdp.publish import TableSynthesizer
from ppdp.publish import table_synth as ts
from ppdp.publish import table_synth_model as model

pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

import ppdp.data.distributed as distributed

N_PARTS = (900, 1300, 800)


def _schema(*, label: bool = True) -> Schema:
    d: dict = {
        "columns": [
            {"name": "income", "type": "numeric", "lower": 0, "upper": 1_000_000},
            {"name": "age", "type": "numeric", "lower": 18, "upper": 100, "integer": True},
            {"name": "region", "type": "categorical", "categories": ["n", "s", "e", "w"]},
        ]
    }
    if label:
        d["label"] = {"name": "y", "classes": ["a", "b"]}
    return Schema.from_dict(d)


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    income = np.clip(np.round(rng.lognormal(10.0, 0.9, n), 2), 0, 1_000_000)
    income[: n // 20] = 0.0  # some rows at the lower bound (their own code)
    return pd.DataFrame(
        {
            "income": income,
            "age": rng.integers(18, 100, n),
            "region": rng.choice(["n", "s", "e", "w"], n, p=[0.4, 0.3, 0.2, 0.1]),
            "y": np.where(income > 30_000, "b", "a"),
        }
    )


@pytest.fixture
def dataset(tmp_path):
    frames = [_table(n, seed) for seed, n in enumerate(N_PARTS)]
    folder = tmp_path / "in"
    folder.mkdir()
    for i, f in enumerate(frames):
        f.to_parquet(folder / f"part-{i}.parquet", index=False)
    return folder, pd.concat(frames, ignore_index=True)


def _quantiles(eps: float = 1.0, **kw) -> TableSynthesizer:
    return TableSynthesizer(eps, _schema(), binning="private-quantiles", **kw)


@pytest.mark.parametrize("method", ["tree", "pairs", "chow-liu"])
def test_the_release_is_the_in_memory_one_for_one_seed(dataset, tmp_path, method):
    folder, whole = dataset
    kw = {"method": method, "n_bins": 6 if method == "pairs" else 12, "random_state": 21}
    mem = _quantiles(**kw).fit(whole)
    dist = _quantiles(**kw)
    dist.fit(folder, scheduler="sync", output=tmp_path / "out")
    # the cut points (and every other fact of the guarantee)
    details = dist.release_.guarantee.details
    assert details["cuts"] == mem.release_.guarantee.details["cuts"]
    assert set(details["cuts"]) == {"income", "age"}
    assert details == mem.release_.guarantee.details
    assert dist.release_.guarantee.assumptions == mem.release_.guarantee.assumptions
    # the noisy statistics, the quantile histograms included, bit for bit
    sm, sd = mem.release_.statistics, dist.release_.statistics
    assert sd.keys() == sm.keys() and "noisy-sub-bins:income" in sd
    for key in sm:
        np.testing.assert_array_equal(sd[key], sm[key], err_msg=key)
    assert dist._plan == mem._plan and dist._model.n == mem._model.n == len(whole)
    # the same model: the same synthetic rows, in memory and partition by partition
    pd.testing.assert_frame_equal(
        dist.sample(3000, random_state=4), mem.sample(3000, random_state=4)
    )
    a = dist.sample_to_parquet(5000, tmp_path / "a", random_state=6, scheduler="sync")
    b = mem.sample_to_parquet(5000, tmp_path / "b", random_state=6, scheduler="sync")
    pd.testing.assert_frame_equal(pd.read_parquet(a), pd.read_parquet(b))
    # the rows fit() wrote: n of them, inside the schema
    written = dist.release_.data.compute()
    assert len(written) == len(whole) and dist.release_.encoded is None
    assert written.income.between(0, 1_000_000).all() and set(written.y) <= {"a", "b"}
    # a different seed gives other cut points or other counts (the comparison can fail)
    other = _quantiles(**{**kw, "random_state": 22}).fit(whole).release_.statistics
    assert not np.array_equal(other["noisy-coarse:income"], sm["noisy-coarse:income"])


def test_without_output_no_rows_are_drawn_and_statistics_still_match(dataset):
    folder, whole = dataset
    mem = _quantiles(relation="add/remove", random_state=3).fit(whole)
    dist = _quantiles(relation="add/remove", random_state=3).fit(folder, scheduler="sync")
    assert dist.release_.data is None
    sm, sd = mem.release_.statistics, dist.release_.statistics
    assert sd.keys() == sm.keys()
    for key in sm:
        np.testing.assert_array_equal(sd[key], sm[key], err_msg=key)
    assert dist._model.n == mem._model.n  # the noisy estimate of n, as in memory


def test_fine_histograms_reduced_from_partitions_are_the_whole_tables(dataset):
    folder, whole = dataset
    schema = _schema()
    synth = _quantiles()
    plan = synth.plan()
    X, y = schema.encode(whole)
    ref = ts._fine_histograms(schema, plan, X)
    assert ref is not None and ref.columns == plan.quantile_columns
    bounds = np.cumsum((0, *N_PARTS))
    parts = [synth._partition_statistics(X[a:b], y[a:b]) for a, b in itertools.pairwise(bounds)]
    parts = [pickle.loads(pickle.dumps(p)) for p in parts]  # shipped back from workers
    merged = parts[0] + parts[1] + parts[2]
    assert isinstance(merged, model.FineHistograms) and merged.columns == ref.columns
    for a, b in zip(merged.counts, ref.counts, strict=True):
        np.testing.assert_array_equal(a, b)
    # the first scan's value over the Parquet files is the same
    scan = distributed.scan_table(
        distributed.open_table(folder, schema),
        schema,
        include_label=False,
        partition_fn=synth._shipped()._partition_statistics,
        scheduler="sync",
    )
    assert scan.n_partitions == 3
    for a, b in zip(scan.value.counts, ref.counts, strict=True):
        np.testing.assert_array_equal(a, b)
    # each histogram counts the rows off the lower bound, and rows at it are left out
    income = ref.histogram(plan.quantile_columns[0])
    assert income.sum() == np.count_nonzero(whole.income > 0) < len(whole)
    with pytest.raises(ValueError, match="different columns"):
        merged + model.FineHistograms((9,), (income,))


def test_coarse_and_sub_bin_tables_from_the_histogram_are_bit_for_bit_equal(dataset):
    _, whole = dataset
    schema = _schema()
    col = schema.column("income")
    fine = model.fine_codes(col, schema.encode(whole)[0][:, schema.blocks["income"].start])
    hist = model.fine_histogram(fine)
    coarse = model.coarse_table(fine)
    assert model.coarse_of(hist).tobytes() == coarse.tobytes()
    rng = np.random.default_rng(0)
    sets = [
        np.flatnonzero(coarse > 0),
        np.array([0, 3, 15]),
        np.arange(model.COARSE_BINS),
        np.zeros(0, dtype=np.int64),
        np.sort(rng.choice(model.COARSE_BINS, 5, replace=False)),
    ]
    for occupied in sets:
        want = model.sub_table(fine, occupied)
        got = model.sub_bins_of(hist, occupied)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), occupied


@pytest.mark.parametrize(("method", "relation"), [("tree", "replace-one"), ("pairs", "add/remove")])
def test_every_draw_sums_to_the_stated_rho_on_the_distributed_path(
    monkeypatch, dataset, method, relation
):
    folder, whole = dataset
    seen = _intercept(monkeypatch, utility_sensitivity=2.0 if relation == "replace-one" else 1.0)
    eps, delta = 0.8, 1e-6
    kw = {"delta": delta, "method": method, "relation": relation, "random_state": 3}
    schema = _schema(label=method == "tree")
    data = whole if method == "tree" else whole.drop(columns="y")
    if method != "tree":
        folder = folder.parent / "nolabel"
        folder.mkdir()
        data.to_parquet(folder / "part-0.parquet", index=False)
    synth = TableSynthesizer(eps, schema, binning="private-quantiles", n_bins=4, **kw)
    acct = Accountant.in_memory(total=PrivacyBudget(10.0, 1e-3), relation=relation)
    synth.fit(folder, accountant=acct, allow_seeded=True, scheduler="sync")
    half_sq = (2.0 if relation == "replace-one" else 1.0) / 2.0
    rho = drawn_rho(seen, relation)
    stats = synth.release_.statistics
    skipped = sum(stats[k].size == 0 for k in stats if k.startswith("noisy-sub-bins:"))
    rho += skipped * half_sq / synth.plan().sigma_quantiles ** 2
    stated = synth.release_.guarantee.details["rho"]
    assert stated * (1 - 1e-9) <= rho <= stated * (1 + 1e-12)
    assert model.cdp_delta(rho, eps) <= delta and acct.spent == PrivacyBudget(eps, delta)
    plan = synth.plan()
    k = 2 * len(plan.quantile_columns) - skipped
    assert k > 0 and seen["sigma"][:k] == [plan.sigma_quantiles] * k
    # the very draws of the in-memory fit, in the same order
    dist_seen = {key: list(v) for key, v in seen.items()}
    for v in seen.values():
        v.clear()
    TableSynthesizer(eps, schema, binning="private-quantiles", n_bins=4, **kw).fit(data)
    n_fit = len(dist_seen["sigma"])
    assert seen["sigma"][:n_fit] == dist_seen["sigma"] and seen["eps"] == dist_seen["eps"]
    assert seen["size"][:n_fit] == dist_seen["size"]


def test_the_ledger_is_charged_once_between_the_two_scans(monkeypatch, dataset, caplog):
    folder, _ = dataset
    events: list[str] = []
    real_scan = distributed.scan_table

    def scan(*args, **kwargs):
        events.append("scan:" + kwargs["on_invalid"])
        return real_scan(*args, **kwargs)

    acct = Accountant.in_memory(total=PrivacyBudget(10.0, 1e-3))
    real_spend = acct.spend

    def spend(*args, **kwargs):
        events.append("spend")
        return real_spend(*args, **kwargs)

    monkeypatch.setattr(distributed, "scan_table", scan)
    monkeypatch.setattr(acct, "spend", spend)
    with caplog.at_level(logging.INFO, logger="ppdp.publish.table_synth"):
        _quantiles(0.5).fit(folder, accountant=acct, scheduler="sync")
    assert events == ["scan:raise", "spend", "scan:mask"]
    assert len(acct.history()) == 1 and acct.spent == PrivacyBudget(0.5, 1e-9)
    said = [r.getMessage() for r in caplog.records if r.name == "ppdp.publish.table_synth"]
    assert any("pass 2 of 2: counting" in m for m in said), said
    assert any(m.endswith("pass 2 of 2 done") for m in said), said
    # equal-width binning still reads the data once
    events.clear()
    with pytest.warns(LowUtilityWarning, match="first bin"):  # the skewed income
        TableSynthesizer(0.5, _schema()).fit(folder, accountant=acct, scheduler="sync")
    assert events == ["scan:raise", "spend"]


def test_a_dataset_that_changes_between_the_scans_is_not_released(monkeypatch, dataset):
    folder, _ = dataset
    real_scan = distributed.scan_table
    calls: list[int] = []

    def scan(frame, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:  # a partition vanished after the first scan
            frame = frame.partitions[:2]
        return real_scan(frame, *args, **kwargs)

    monkeypatch.setattr(distributed, "scan_table", scan)
    acct = Accountant.in_memory(total=PrivacyBudget(10.0, 1e-3))
    synth = _quantiles()
    with pytest.raises(DataValidationError, match="changed between TableSynthesizer's two pass"):
        synth.fit(folder, accountant=acct, scheduler="sync")
    assert getattr(synth, "release_", None) is None
    assert acct.spent == PrivacyBudget(1.0, 1e-9)  # charged before the second scan


def test_the_second_scans_counter_is_picklable_and_uses_the_cut_bins(dataset):
    _, whole = dataset
    schema = _schema()
    synth = _quantiles(random_state=0).fit(whole)
    plan = synth._plan  # the bins cut at the measured points
    assert plan.bins != synth.plan().bins
    count = functools.partial(
        ts._count_tables, schema=schema, bins=plan.bins, cliques=plan.counted_cliques()
    )
    count = pickle.loads(pickle.dumps(count))
    X, y = schema.encode(whole)
    got = count(X[:1000], y[:1000]) + count(X[1000:], y[1000:])
    ref = model.MarginalCounts.of(
        plan.bins.codes(schema, X, y), plan.bins.sizes, plan.counted_cliques()
    )
    assert got.n == len(whole) and got.sizes == ref.sizes and got.cliques == ref.cliques
    for a, b in zip(got.tables, ref.tables, strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_command_line_publishes_a_folder_with_private_quantiles(dataset, tmp_path, capsys):
    folder, whole = dataset
    (tmp_path / "s.json").write_text(_schema().to_json())
    out = tmp_path / "release"
    argv = ["publish", "synth", str(folder), "--schema", str(tmp_path / "s.json")]
    argv += ["--epsilon", "1", "--binning", "private-quantiles", "-o", f"{out}/"]
    argv += ["--scheduler", "sync", "--seed", "1"]
    assert main(argv) == 0
    assert (out / distributed.SUCCESS_MARKER).is_file()
    rows = pd.read_parquet(out)
    assert len(rows) == len(whole) and rows.income.between(0, 1_000_000).all()
    sidecar = (tmp_path / "release.guarantee.json").read_text()
    assert (
        '"cuts"' in sidecar and '"income"' in sidecar and "each cut near its quantiles" in sidecar
    )
    assert (
        f"ppdp publish: scanning {folder} (two passes: the private-quantile cut points first, "
        "then the tables)" in capsys.readouterr().err
    )
