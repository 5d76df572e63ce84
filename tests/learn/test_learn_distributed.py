"""Learners on a Dask DataFrame or a Parquet dataset (issue 16): the same release as in memory
for the same seed, the solver's certificate, validation before the spend, one-line refusals.

Every registered learner's fitted attributes and ledger records equal memory's for one seed
(output perturbation and a Newton cut short too), and an undeclared category or class in one
file is the in-memory message with nothing spent, in tests/test_registry_contract.py; here
the cases it does not run (the solver over partitions, masking, prediction, a local
cluster)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget
from ppdp.data import Schema
from ppdp.exceptions import DataValidationError, ParameterError, PrivacyLeakWarning
from ppdp.learn import (
    HybridRBFSVM,
    PrivateLinearSVM,
    PrivateLogisticRegression,
    PrivateRBFSVM,
)
from ppdp.learn._erm import (
    HuberLoss,
    LogisticLoss,
    PartitionedERMData,
    certified_gradient_bound,
    erm_partition_terms,
    solve_erm,
)

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "a", "type": "numeric", "lower": 0, "upper": 10},
            {"name": "b", "type": "numeric", "lower": -5, "upper": 5},
            {"name": "c", "type": "categorical", "categories": ["x", "y", "z"]},
        ],
        "label": {"name": "t", "classes": ["no", "yes"]},
    }
)
#: Rows per file; the second file is empty.
SIZES = (700, 0, 900, 400)


def make_df(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "a": rng.uniform(-1, 11, n),  # a few values clipped by the schema
            "b": rng.normal(0, 2, n),
            "c": rng.choice(["x", "y", "z"], n),
        }
    )
    score = df["a"] / 10 - 0.5 + 0.1 * df["b"] + 0.3 * (df["c"] == "x") + 0.3 * rng.normal(size=n)
    df["t"] = np.where(score > 0, "yes", "no")
    df["id"] = np.arange(n)  # an extra column, ignored
    return df


def write_dataset(folder, frames) -> None:
    folder.mkdir()
    for i, f in enumerate(frames):
        f.to_parquet(folder / f"part-{i}.parquet", index=False)


@pytest.fixture
def dataset(tmp_path):
    frames = [make_df(k, seed) for seed, k in enumerate(SIZES)]
    write_dataset(tmp_path / "in", frames)
    return tmp_path / "in", pd.concat(frames, ignore_index=True)


def ledger(tmp_path) -> Accountant:
    return Accountant.open(tmp_path / "budget.db", dataset_id="t", total=PrivacyBudget(10.0))


@pytest.fixture(autouse=True)
def _quiet_seeded_warnings():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*random_state.*")
        warnings.filterwarnings("ignore", message=".*seed.*")
        yield


def test_a_dask_frame_on_a_local_cluster_gives_the_same_model(dataset, tmp_path) -> None:
    distributed = pytest.importorskip("distributed")
    _, whole = dataset
    frame = dd.from_pandas(whole, npartitions=3)
    mem = PrivateLogisticRegression(epsilon=1.0, schema=SCHEMA, random_state=8).fit(whole)
    acct = ledger(tmp_path)
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        dist = PrivateLogisticRegression(epsilon=1.0, schema=SCHEMA, random_state=8)
        dist.fit(frame, accountant=acct, allow_seeded=True, scheduler=client)
        labels = dist.predict(frame).compute(scheduler=client)
    np.testing.assert_allclose(dist.coef_, mem.coef_, rtol=0, atol=1e-9)
    assert acct.spent.epsilon == pytest.approx(1.0) and len(acct.history()) == 1
    assert dist.ledger_indices_ and not dist.replayed_
    np.testing.assert_array_equal(labels.to_numpy(), mem.predict(whole))


def test_predict_on_a_parquet_dataset_is_lazy_and_matches_memory(dataset) -> None:
    path, whole = dataset
    clf = PrivateLinearSVM(epsilon=1.0, schema=SCHEMA, random_state=2).fit(whole)
    labels = clf.predict(path)
    scores = clf.decision_function(path)
    assert hasattr(labels, "compute") and hasattr(scores, "compute")
    np.testing.assert_array_equal(labels.compute(scheduler="sync").to_numpy(), clf.predict(whole))
    np.testing.assert_allclose(
        scores.compute(scheduler="sync").to_numpy(), clf.decision_function(whole), rtol=1e-12
    )


# ------------------------------------------------------------------ the solver over partitions


def _problem(n: int = 3000, d: int = 5, seed: int = 0):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, d))
    Z /= np.maximum(1.0, np.linalg.norm(Z, axis=1))[:, None]
    y = np.where(Z @ rng.normal(size=d) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return Z, y


def _evaluator(Z, y, cuts):
    parts = np.split(np.arange(len(Z)), cuts)

    def evaluate(W, loss, curvature):
        out = None
        for idx in parts:
            p = erm_partition_terms(Z[idx], y[idx], W, loss=loss, n=len(Z), curvature=curvature)
            out = p if out is None else out + p
        return out

    return evaluate


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.5)], ids=lambda x: x.name)
def test_partitioned_newton_reaches_the_in_memory_minimiser_and_certifies_it(loss) -> None:
    Z, y = _problem()
    t = np.full(Z.shape[1], 1e-3)
    data = PartitionedERMData(_evaluator(Z, y, [0, 10, 1500, 1500, 2999]), len(Z), Z.shape[1])
    kw = dict(loss=loss, regularization=1e-3, extra_l2=0.0, linear_term=t)
    w, info = data.solve(tol=1e-11, max_iter=100, **kw)
    ref, ok, rinfo = solve_erm(
        Z, y, loss=loss, regularization=1e-3, extra_linear_term=t, tol=1e-11, max_iter=100
    )
    assert ok and info["gradient_norm"] <= 1e-11
    assert info["n_iter"] == rinfo["n_iter"]  # the same iterates, to rounding
    np.testing.assert_allclose(w, ref, rtol=0, atol=1e-10)
    # one pass per Newton step (full steps accepted) plus the start; the certificate of the
    # returned w reuses the pass that evaluated it, and a fresh pass gives the same bound
    passes = data.n_passes
    bound = data.certify(w, w_norm_bound=None, **kw)
    assert data.n_passes == passes
    fresh = PartitionedERMData(_evaluator(Z, y, [7, 2000]), len(Z), Z.shape[1])
    assert fresh.certify(w, w_norm_bound=None, **kw) == pytest.approx(bound, rel=1e-6)
    memory = certified_gradient_bound(
        Z, y, w, loss=loss, regularization=1e-3, extra_linear_terms=t[None]
    )[0]
    assert bound == pytest.approx(memory, rel=1e-6) and bound <= 1e-10


def test_a_warm_start_from_a_sample_changes_the_passes_not_the_minimiser() -> None:
    Z, y = _problem(6000, 6, seed=3)
    kw = dict(loss=LogisticLoss(), regularization=1e-4, extra_l2=0.0, linear_term=None)
    cold = PartitionedERMData(_evaluator(Z, y, [3000]), len(Z), Z.shape[1])
    warm = PartitionedERMData(
        _evaluator(Z, y, [3000]), len(Z), Z.shape[1], sample=lambda: (Z[:500], y[:500])
    )
    w_cold, info_cold = cold.solve(tol=1e-11, max_iter=100, **kw)
    w_warm, info_warm = warm.solve(tol=1e-11, max_iter=100, **kw)
    assert info_warm["gradient_norm"] <= 1e-11 and info_cold["gradient_norm"] <= 1e-11
    # both within tol/Λ = 1e-7 of the one minimiser (measured: 1e-9 apart)
    np.testing.assert_allclose(w_warm, w_cold, rtol=0, atol=2e-11 / 1e-4)
    assert warm.n_passes < cold.n_passes
    assert warm.certify(w_warm, w_norm_bound=None, **kw) <= 1e-10


def test_a_table_that_changes_between_passes_is_refused() -> None:
    Z, y = _problem(400, 3, seed=4)
    evaluate = _evaluator(Z, y, [200])
    data = PartitionedERMData(evaluate, 401, 3)  # the scan counted one row more
    with pytest.raises(DataValidationError, match=r"read 400 rows where the scan counted 401"):
        data.solve(
            loss=LogisticLoss(),
            regularization=1e-2,
            extra_l2=0.0,
            linear_term=None,
            tol=1e-10,
            max_iter=10,
        )


def test_partition_sums_add_up_to_the_whole_tables() -> None:
    Z, y = _problem(500, 4, seed=1)
    W = np.random.default_rng(2).normal(size=(3, 4))
    whole = erm_partition_terms(Z, y, W, loss=LogisticLoss(), n=500)
    split = erm_partition_terms(Z[:0], y[:0], W, loss=LogisticLoss(), n=500)  # empty part
    for a, b in ((0, 120), (120, 121), (121, 500)):
        split = split + erm_partition_terms(Z[a:b], y[a:b], W, loss=LogisticLoss(), n=500)
    assert split.n_rows == 500 and split.values.shape == (4, 3)
    np.testing.assert_allclose(split.values.sum(axis=0), whole.values[0], rtol=1e-13)
    np.testing.assert_allclose(split.gradient.sum(axis=0), whole.gradient[0], atol=1e-15)
    np.testing.assert_allclose(split.hessian, whole.hessian, atol=1e-15)


# ------------------------------------------------------------------ bad input, nothing spent


def test_total_mode_masks_as_in_memory_and_spends(tmp_path) -> None:
    frames = [make_df(k, seed) for seed, k in enumerate(SIZES)]
    frames[2].loc[[3, 10, 11], "t"] = "maybe"
    frames[3].loc[[0, 5], "c"] = "w"
    write_dataset(tmp_path / "bad", frames)
    whole = pd.concat(frames, ignore_index=True)
    accts = []
    for _ in range(2):
        acct = Accountant.in_memory(total=PrivacyBudget(5.0))
        acct.on_invalid = "mask"
        accts.append(acct)
    kw = dict(epsilon=1.0, schema=SCHEMA, random_state=9)
    mem = PrivateLogisticRegression(**kw).fit(whole, accountant=accts[0], allow_seeded=True)
    dist = PrivateLogisticRegression(**kw)
    dist.fit(tmp_path / "bad", accountant=accts[1], allow_seeded=True, scheduler="sync")
    np.testing.assert_allclose(dist.coef_, mem.coef_, rtol=0, atol=1e-9)
    assert accts[1].spent.epsilon == pytest.approx(1.0)


def test_too_few_rows_is_refused_as_in_memory(tmp_path) -> None:
    one = make_df(1, 0)
    write_dataset(tmp_path / "one", [one, one.iloc[:0]])
    acct = ledger(tmp_path)
    with pytest.raises(DataValidationError) as mem_err:
        PrivateLogisticRegression(epsilon=1.0, schema=SCHEMA).fit(one)
    with pytest.raises(DataValidationError) as dist_err:
        PrivateLogisticRegression(epsilon=1.0, schema=SCHEMA).fit(
            tmp_path / "one", accountant=acct, scheduler="sync"
        )
    assert str(dist_err.value) == str(mem_err.value) and acct.history() == []


@pytest.mark.parametrize(
    ("make", "kwargs", "match"),
    [
        (
            lambda: PrivateLogisticRegression(schema=SCHEMA, tuning=(1e-3, 1e-2)),
            {},
            r"^tuning \(\(0\.001, 0\.01\)\) is not supported for a Dask DataFrame",
        ),
        (
            lambda: PrivateRBFSVM(schema=SCHEMA, tuning="private", param_grid={"C": [1, 2]}),
            {},
            r"^tuning \('private'\) is not supported",
        ),
        (
            lambda: PrivateLogisticRegression(data_norm=2.0),
            {},
            r"^X \('.*'\) is a distributed table: PrivateLogisticRegression needs schema=",
        ),
        (
            lambda: PrivateLinearSVM(schema=SCHEMA),
            {"y": np.ones(2000)},
            r"^y \(ndarray\) must be left out for a Dask DataFrame or a Parquet dataset: "
            r"the labels are the table's column 't'",
        ),
        (
            lambda: PrivateLogisticRegression(schema=SCHEMA),
            {"scheduler": "nonsense"},
            r"^scheduler \('nonsense'\) must be 'local'",
        ),
    ],
    ids=["linear-tuning", "rbf-private-tuning", "no-schema", "y-given", "bad-scheduler"],
)
def test_unsupported_combinations_are_one_line_and_spend_nothing(
    dataset, tmp_path, make, kwargs, match
) -> None:
    path, _ = dataset
    acct = ledger(tmp_path)
    kwargs = {"scheduler": "sync", **kwargs}
    with pytest.raises(ParameterError, match=match) as err:
        make().fit(path, accountant=acct, **kwargs)
    assert "\n" not in str(err.value)
    assert acct.history() == []


def test_a_scheduler_for_an_in_memory_table_is_refused(dataset) -> None:
    _, whole = dataset
    with pytest.raises(ParameterError, match=r"^scheduler \('sync'\) is for a Dask DataFrame"):
        PrivateLogisticRegression(schema=SCHEMA).fit(whole, scheduler="sync")


def test_hybrid_warns_about_public_rows_found_in_the_private_files(dataset) -> None:
    path, whole = dataset
    public = whole.drop(columns=["t", "id"]).iloc[[1, 2, 3, 800, 1500]]
    make = lambda: HybridRBFSVM(  # noqa: E731
        public, epsilon=1.0, n_components=5, schema=SCHEMA, rho_max_iter=5, random_state=0
    )
    with pytest.warns(PrivacyLeakWarning) as mem_warn:
        make().fit(whole)
    with pytest.warns(PrivacyLeakWarning) as dist_warn:
        make().fit(path, scheduler="sync")
    leak = [str(w.message) for w in mem_warn if issubclass(w.category, PrivacyLeakWarning)]
    dleak = [str(w.message) for w in dist_warn if issubclass(w.category, PrivacyLeakWarning)]
    assert dleak == leak and leak[0].startswith("5 of 5 public rows")


def test_partitions_processed_in_small_blocks_give_the_same_model(dataset, monkeypatch) -> None:
    from ppdp.learn import _base

    monkeypatch.setattr(_base, "_BLOCK_ROWS", 128)  # 900 rows: 8 blocks in one partition
    path, whole = dataset
    mem = PrivateLogisticRegression(epsilon=1.0, schema=SCHEMA, random_state=4).fit(whole)
    dist = PrivateLogisticRegression(epsilon=1.0, schema=SCHEMA, random_state=4)
    dist.fit(path, scheduler="sync")
    np.testing.assert_allclose(dist.coef_, mem.coef_, rtol=0, atol=1e-9)
