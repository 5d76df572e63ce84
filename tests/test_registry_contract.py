"""The contract every registered publisher and learner meets (issue 31).

Parametrised over :data:`ppdp.registry.PUBLISHERS` and :data:`ppdp.registry.LEARNERS`, so a
newly registered mechanism is checked without an edit here (a new *required* flag needs an
example value in :data:`EXAMPLES`, and the test says so):

- the budget is checked before the data are read, then charged, then the release is made:
  a ledger too small refuses it with nothing spent and nothing released; a large enough one
  records exactly the release's guarantee, under the release's ledger indices;
- bad input (ε ≤ 0, a table whose declared column is missing and an unknown one present) is
  one line naming the parameter or column, with nothing spent and nothing written;
- the file workflow writes the guarantee file (a model file for a learner), and it reads
  back as the release's guarantee;
- a seeded release from a Parquet dataset (three files, one empty) or a Dask DataFrame
  states the same guarantee, noisy statistics and ledger records as the in-memory release
  (a learner: every fitted attribute), writes reproducible rows within the schema, and an
  undeclared value in one file is the in-memory message with nothing spent or written; the
  same for the options of :data:`VARIANTS` (a group-by's keys and means, bit for bit; the
  synthesizer's models, relations and kept pairs, its rows as many as its model's n) and of
  :data:`LEARNER_VARIANTS` (output perturbation, a Newton solve cut short); the
  file workflow on a Parquet dataset writes a folder with its guarantee file beside it, and
  a learner's model file trained on one is the in-memory file (guarantee, predictions);
- the audits' noise hook is unreachable from ``fit``: the class has no noise factor (no
  attribute, no parameter of ``__init__``, ``fit`` or ``run``), a rescaled source
  (:class:`ppdp.audit.ScaledNoise`) passed as ``random_state`` is refused with a ledger,
  and only the audit variant draws less noise, whose ``fit`` refuses an accountant.

Each test runs in well under a second per mechanism (a 400-row table).
"""

from __future__ import annotations

import inspect
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from ppdp.accounting import Accountant
from ppdp.audit import ScaledNoise, half_noise, is_noise_variant
from ppdp.budget import Guarantee, PrivacyBudget
from ppdp.data import Schema
from ppdp.evaluate.files import read_sidecar
from ppdp.exceptions import BudgetExceededError, DataValidationError, ParameterError
from ppdp.learn import PrivateClassifierBase, read_model
from ppdp.learn.files import build_learner, predict_file, train_model_file
from ppdp.publish import Publisher
from ppdp.publish.files import build_publisher, publish_table_file
from ppdp.registry import LEARNERS, PUBLISHERS

N = 400
SEED = 3
SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "x", "type": "numeric", "lower": 0, "upper": 10},
            {"name": "z", "type": "numeric", "lower": -1, "upper": 1},
            {"name": "c", "type": "categorical", "categories": ["a", "b", "c"]},
        ],
        # public class counts: what lda-projection takes by default
        "label": {"name": "y", "classes": [0, 1], "public_counts": [N // 2, N // 2]},
    }
)
#: A value for every flag that some registered method requires.
EXAMPLES: dict[str, Any] = {"--components": 2, "--delta": 1e-6}
#: Learner parameters that keep a fit fast, given to the learners that take them.
FAST: dict[str, Any] = {"n_components": 15, "rho_max_iter": 30, "feature_random_state": 1}


def _table(n: int = N) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], n // 2)
    rng.shuffle(y)
    return pd.DataFrame(
        {
            "x": np.clip(rng.normal(4.0 + 2.0 * y, 1.5), 0, 10),
            "z": rng.uniform(-1, 1, n),
            "c": rng.choice(list("abc"), n),
            "y": y,
        }
    )


def _public() -> pd.DataFrame:
    return _table(60).drop(columns="y")


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded-noise and low-utility warnings
        yield


# -- building each registered mechanism ------------------------------------------------------


def _publisher(
    name: str,
    epsilon: float = 2.0,
    seed: int | None = SEED,
    options: dict[str, Any] | None = None,
    schema: Schema = SCHEMA,
) -> Publisher:
    missing = [f for f in PUBLISHERS.entry(name).required if f not in EXAMPLES]
    assert not missing, f"give EXAMPLES a value for {missing} (required by {name})"
    options = {**{f: EXAMPLES[f] for f in PUBLISHERS.entry(name).required}, **(options or {})}
    pub = build_publisher(name, epsilon=epsilon, schema=schema, random_state=seed, options=options)
    assert isinstance(pub, Publisher)
    return pub


def _learner_options(name: str) -> dict[str, Any]:
    accepted = set(LEARNERS.load(name)._get_param_names())
    return {k: v for k, v in {**FAST, "schema": SCHEMA}.items() if k in accepted}


def _needs_public(name: str) -> bool:
    return "public_X" in LEARNERS.load(name)._get_param_names()


def _learner(
    name: str, epsilon: float = 1.0, seed: int | None = SEED, options: dict[str, Any] | None = None
) -> PrivateClassifierBase:
    est = build_learner(
        name,
        schema=SCHEMA,
        epsilon=epsilon,
        random_state=seed,
        public_X=_public() if _needs_public(name) else None,
        options={**_learner_options(name), **(options or {})},
    )
    assert isinstance(est, PrivateClassifierBase)
    return est


def _accountant(total: PrivacyBudget | None = None, relation: str = "replace-one") -> Accountant:
    return Accountant.in_memory(total=total or PrivacyBudget(10.0, 1e-3), relation=relation)


def _ledger_file(tmp_path: Path) -> Path:
    path = tmp_path / "budget.db"
    Accountant.open(path, dataset_id="contract", total=PrivacyBudget(10.0, 1e-3)).close()
    return path


def _spent(path: Path) -> PrivacyBudget:
    acct = Accountant.open_existing(path)
    try:
        return acct.spent
    finally:
        acct.close()


def _files(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` and its bytes (the ledger's too: nothing recorded)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _cost(guarantee: Guarantee) -> PrivacyBudget:
    return PrivacyBudget(guarantee.epsilon, guarantee.delta)


def _one_line(message: str, *words: str) -> None:
    assert "\n" not in message, message
    for word in words:
        assert word in message, message


PUBLISHER_NAMES = PUBLISHERS.names()
LEARNER_NAMES = LEARNERS.names()


def test_the_registry_is_what_is_checked() -> None:
    """Guards the parametrisation: every mechanism of the registry, each once."""
    assert len(PUBLISHER_NAMES) == len(set(PUBLISHER_NAMES)) >= 7
    assert len(LEARNER_NAMES) == len(set(LEARNER_NAMES)) >= 4
    for name in PUBLISHER_NAMES:
        assert issubclass(PUBLISHERS.load(name), Publisher)
        assert PUBLISHERS.load(name).output_kind in ("rows", "groups", "projection")
    for name in LEARNER_NAMES:
        assert issubclass(LEARNERS.load(name), PrivateClassifierBase)


# -- budget checked, charged, released -------------------------------------------------------


@pytest.mark.parametrize("name", PUBLISHER_NAMES)
def test_publisher_checks_then_charges_then_releases(name: str) -> None:
    pub = _publisher(name)
    cost = pub.privacy_budget()
    small = _accountant(PrivacyBudget(cost.epsilon / 2, max(cost.delta, 1e-3)))
    with pytest.raises(BudgetExceededError):
        pub.fit(_table(), accountant=small, allow_seeded=True)
    assert small.history() == [] and getattr(pub, "release_", None) is None

    acct = _accountant()
    pub.fit(_table(), accountant=acct, allow_seeded=True)
    release = pub.release_
    assert acct.spent == cost == _cost(release.guarantee)
    assert cost.epsilon == pytest.approx(2.0, rel=1e-12)  # the ε asked for, all of it
    assert [r.index for r in acct.history()] == list(release.ledger_indices) != []
    assert pub.output_table() is not None


@pytest.mark.parametrize("name", LEARNER_NAMES)
def test_learner_checks_then_charges_then_releases(name: str) -> None:
    est = _learner(name)
    small = _accountant(PrivacyBudget(0.5, 1e-3))
    with pytest.raises(BudgetExceededError):
        est.fit(_table(), accountant=small, allow_seeded=True)
    assert small.history() == [] and getattr(est, "coef_", None) is None

    acct = _accountant()
    est.fit(_table(), accountant=acct, allow_seeded=True)
    assert acct.spent == _cost(est.guarantee_) == PrivacyBudget(1.0)
    assert [r.index for r in acct.history()] == list(est.ledger_indices_) != []


# -- bad input: one line, nothing spent, nothing written ---------------------------------------


BAD_EPSILONS = [0.0, -1.0]


@pytest.mark.parametrize("epsilon", BAD_EPSILONS)
@pytest.mark.parametrize("name", PUBLISHER_NAMES)
def test_publisher_bad_epsilon_spends_and_writes_nothing(name, epsilon, tmp_path) -> None:
    ledger, out = _ledger_file(tmp_path), tmp_path / "out.csv"
    (tmp_path / "in.csv").write_text(_table().to_csv(index=False), encoding="utf-8")
    options = {f: EXAMPLES[f] for f in PUBLISHERS.entry(name).required}
    before = _files(tmp_path)
    with pytest.raises(ParameterError) as info:
        publish_table_file(
            name, tmp_path / "in.csv", schema=SCHEMA, output=out, epsilon=epsilon,
            options=options, ledger=ledger,
        )  # fmt: skip
    _one_line(str(info.value), "epsilon", repr(epsilon))
    assert _files(tmp_path) == before  # no output, and the ledger's bytes unchanged
    assert _spent(ledger) == PrivacyBudget(0.0)


@pytest.mark.parametrize("epsilon", BAD_EPSILONS)
@pytest.mark.parametrize("name", LEARNER_NAMES)
def test_learner_bad_epsilon_spends_and_writes_nothing(name, epsilon, tmp_path) -> None:
    acct, out = _accountant(), tmp_path / "model.json"
    with pytest.raises(ParameterError) as info:
        train_model_file(
            name, _table(), schema=SCHEMA, output=out, epsilon=epsilon, accountant=acct,
            public=_public() if _needs_public(name) else None,
        )  # fmt: skip
    _one_line(str(info.value), "epsilon", repr(epsilon))
    assert acct.history() == [] and list(tmp_path.iterdir()) == []


def _renamed() -> pd.DataFrame:
    """The table with its declared column ``z`` missing and an unknown one in its place."""
    return _table().rename(columns={"z": "unknown"})


@pytest.mark.parametrize("name", PUBLISHER_NAMES)
def test_publisher_unknown_column_spends_and_writes_nothing(name, tmp_path) -> None:
    ledger, out = _ledger_file(tmp_path), tmp_path / "out.csv"
    (tmp_path / "in.csv").write_text(_renamed().to_csv(index=False), encoding="utf-8")
    options = {f: EXAMPLES[f] for f in PUBLISHERS.entry(name).required}
    before = _files(tmp_path)
    with pytest.raises(DataValidationError) as info:
        publish_table_file(
            name, tmp_path / "in.csv", schema=SCHEMA, output=out, epsilon=1.0,
            options=options, ledger=ledger, random_state=SEED, allow_seeded=True,
        )  # fmt: skip
    _one_line(str(info.value), "'z'")
    assert _files(tmp_path) == before  # no output, and the ledger's bytes unchanged
    assert _spent(ledger) == PrivacyBudget(0.0)


@pytest.mark.parametrize("name", LEARNER_NAMES)
def test_learner_unknown_column_spends_and_writes_nothing(name, tmp_path) -> None:
    acct = _accountant()
    with pytest.raises(DataValidationError) as info:
        train_model_file(
            name, _renamed(), schema=SCHEMA, output=tmp_path / "model.json", epsilon=1.0,
            accountant=acct, random_state=SEED, allow_seeded=True,
            public=_public() if _needs_public(name) else None,
        )  # fmt: skip
    _one_line(str(info.value), "'z'")
    assert acct.history() == [] and list(tmp_path.iterdir()) == []


# -- the guarantee file ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["csv", "parquet"])
@pytest.mark.parametrize("name", PUBLISHER_NAMES)
def test_publisher_writes_a_readable_guarantee_file(name, kind, tmp_path) -> None:
    """A CSV file gives a table file; a Parquet dataset (three files, one empty) a folder of
    Parquet parts with ``_SUCCESS``, its rows counted in the guarantee file beside it, and
    nothing hidden left behind."""
    ledger = _ledger_file(tmp_path)
    if kind == "csv":
        data, out = tmp_path / "in.csv", tmp_path / "out.csv"
        data.write_text(_table().to_csv(index=False), encoding="utf-8")
    else:
        data, out = _partitioned("parquet", tmp_path), tmp_path / "out"
    options = {f: EXAMPLES[f] for f in PUBLISHERS.entry(name).required}
    result = publish_table_file(
        name, data, schema=SCHEMA, output=out, epsilon=1.0, options=options, ledger=ledger,
        random_state=SEED, allow_seeded=True, scheduler="sync" if kind == "parquet" else None,
    )  # fmt: skip
    side, content = read_sidecar(out)
    assert side == result.sidecar and content is not None and out.exists()
    release = result.release
    assert Guarantee.from_dict(content["guarantee"]) == release.guarantee
    assert content["method"] == name and content["seeded"] is True
    assert content["ledger_indices"] == list(release.ledger_indices)
    # what the publisher adds is there, JSON-exact
    extra = json.loads(json.dumps(result.publisher.guarantee_fields()))
    assert {k: content[k] for k in extra} == extra
    assert _spent(ledger) == _cost(release.guarantee) == result.cost
    if kind == "parquet":
        parts = sorted(p.name for p in out.glob("part-*.parquet"))
        assert content["format"] == "parquet-dataset" and parts and result.n_rows == N
        assert sorted(p.name for p in out.iterdir()) == sorted(["_SUCCESS", *parts])
        rows = pd.read_parquet(out)
        assert content["rows"] == result.rows_written == len(rows) == len(result.table.compute())
        if PUBLISHERS.load(name).output_kind == "rows":
            assert set(SCHEMA.column_names) <= set(rows.columns)
        assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("name", LEARNER_NAMES)
def test_learner_writes_a_readable_model_file_with_its_guarantee(name, tmp_path) -> None:
    acct = _accountant()
    result = train_model_file(
        name, _table(), schema=SCHEMA, output=tmp_path / "model.json", epsilon=1.0,
        accountant=acct, random_state=SEED, allow_seeded=True, options=_fast_options(name),
        public=_public() if _needs_public(name) else None,
    )  # fmt: skip
    model = read_model(result.path)
    assert model.guarantee == result.guarantee == result.estimator.guarantee_
    assert model.estimator_name == LEARNERS.entry(name).class_name
    assert acct.spent == _cost(model.guarantee)


def _fast_options(name: str) -> dict[str, Any]:
    return {k: v for k, v in _learner_options(name).items() if k != "schema"}


# -- the same run on a partitioned table ------------------------------------------------------

DISTRIBUTED_PUBLISHERS = [n for n in PUBLISHER_NAMES if PUBLISHERS.load(n).supports_distributed]
DISTRIBUTED_LEARNERS = [n for n in LEARNER_NAMES if LEARNERS.load(n).supports_distributed]
ROW_LEVEL = [n for n in DISTRIBUTED_PUBLISHERS if _publisher(n).row_level_output]
#: A Parquet dataset of three files (the middle one empty) and a Dask DataFrame.
PARTITIONED = ["parquet", "dask-frame"]


def _partitioned(kind: str, tmp_path: Path, df: pd.DataFrame | None = None) -> Any:
    pytest.importorskip("dask.dataframe")
    df = _table() if df is None else df
    if kind == "dask-frame":
        import dask.dataframe as dd

        return dd.from_pandas(df, npartitions=3)
    folder = tmp_path / "in"
    folder.mkdir()
    for i, part in enumerate((df.iloc[:250], df.iloc[:0], df.iloc[250:])):
        part.to_parquet(folder / f"part-{i}.parquet", index=False)
    return folder


def _records(acct: Accountant) -> list[tuple[Any, ...]]:
    """What the ledger says of each charge, the index and the time left out."""
    return [(r.mechanism, r.budget, r.relation, r.details, r.event) for r in acct.history()]


def _computed(data: Any) -> Any:
    return data.compute() if hasattr(data, "compute") else data


def _within_schema(rows: pd.DataFrame) -> None:
    assert list(rows.columns) == list(_table().columns)
    assert rows["x"].between(0, 10).all() and rows["z"].between(-1, 1).all()
    assert set(rows["c"]) <= {"a", "b", "c"} and set(rows["y"]) <= {0, 1}


#: Options beyond the defaults whose release from a Parquet dataset must be the in-memory
#: one too: a group-by's keys and means, the synthesizer's models, relation and kept pairs
#: (``"label": False`` drops the label from the schema and the table).
VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("groupby", {"by": "c,y", "means": "x,z"}),
    ("groupby", {"by": "c,y", "means": "x,z", "relation": "add/remove"}),
    ("synth", {"method": "tree"}),
    ("synth", {"method": "tree", "label": False}),
    ("synth", {"method": "chow-liu"}),
    ("synth", {"method": "pairs", "n_bins": 4}),
    ("synth", {"method": "tree", "relation": "add/remove"}),
    ("synth", {"method": "chow-liu", "relation": "add/remove", "label": False}),
    ("synth", {"method": "tree", "keep": "x:z,c:y"}),
    ("synth", {"method": "chow-liu", "keep": "x:z,c:y"}),
]
#: Publishers whose exact statistics are integers that add across partitions: the noisy
#: statistics are bit-for-bit the in-memory ones, not only to rounding.
EXACT = {"groupby"}
PARTITIONED_CASES = [
    pytest.param(name, {}, kind, id=f"{name}-{kind}")
    for name in DISTRIBUTED_PUBLISHERS
    for kind in PARTITIONED
] + [
    pytest.param(
        name, opts, "parquet", id=f"{name}-parquet-" + ",".join(f"{k}={v}" for k, v in opts.items())
    )
    for name, opts in VARIANTS
    if name in DISTRIBUTED_PUBLISHERS
]


def _unlabelled() -> Schema:
    return Schema.from_dict({k: v for k, v in SCHEMA.to_dict().items() if k != "label"})


@pytest.mark.parametrize(("name", "options", "kind"), PARTITIONED_CASES)
def test_publisher_partitioned_release_equals_the_in_memory_one(
    name, options, kind, tmp_path
) -> None:
    """One seed, one release: the statistics (drawn in the driver from the same source as in
    memory), the guarantee and the ledger's records are the in-memory ones, and so is a
    table released in the driver. Rows that a release writes partition by partition come
    from per-partition streams: as many as in memory (the synthesizer's model n, noisy under
    add/remove), checked against the schema and for reproducibility (their law: the
    publishers' own distributed tests)."""
    options = dict(options)
    schema, table = SCHEMA, _table()
    if not options.pop("label", True):
        schema, table = _unlabelled(), table.drop(columns="y")

    def build(seed: int = SEED) -> Publisher:
        return _publisher(name, seed=seed, options=options, schema=schema)

    relation = options.get("relation", "replace-one")
    mem_acct, dist_acct = _accountant(relation=relation), _accountant(relation=relation)
    mem = build().fit(table, accountant=mem_acct, allow_seeded=True)
    data = _partitioned(kind, tmp_path, table)
    dist = build()
    output = tmp_path / "out" if dist.fit_writes_output else None
    dist.fit(data, dist_acct, allow_seeded=True, scheduler="threads", output=output)
    a, b = mem.release_, dist.release_
    assert b.guarantee == a.guarantee
    assert _records(dist_acct) == _records(mem_acct) != [] and dist_acct.spent == mem_acct.spent
    shared = sorted(set(a.statistics) & set(b.statistics))
    assert shared or not a.statistics, (sorted(a.statistics), sorted(b.statistics))
    if name in EXACT or name == "synth":
        assert sorted(b.statistics) == sorted(a.statistics)
    for key in shared:  # float sums in another order: equal to rounding
        if name in EXACT:
            np.testing.assert_array_equal(b.statistics[key], a.statistics[key], err_msg=key)
        np.testing.assert_allclose(b.statistics[key], a.statistics[key], 1e-9, 1e-12, err_msg=key)
    if output is None or not hasattr(b.data, "compute"):
        if b.data is not None:  # a table released in the driver
            pd.testing.assert_frame_equal(_computed(b.data), a.data)
    else:
        rows = b.data.compute()
        assert len(rows) == len(a.data) and list(rows.columns) == list(a.data.columns)
        if relation == "add/remove" and not dist.row_level_output:
            assert len(rows) != len(table)  # the model's n is private: its noisy estimate
        if list(rows.columns) == list(_table().columns):
            _within_schema(rows)
        assert (output / "_SUCCESS").is_file()
        again = build().fit(data, scheduler="sync", output=tmp_path / "again")
        pd.testing.assert_frame_equal(again.release_.data.compute(), rows)
    # another seed draws another release: the equalities above are not vacuous
    other = build(SEED + 1).fit(table).release_
    both = [k for k in shared if k in other.statistics]  # merged levels are noisy choices
    assert any(not np.array_equal(other.statistics[k], a.statistics[k]) for k in both) or (
        not shared and not other.data.equals(a.data)
    )


def _undeclared(column: str = "c") -> pd.DataFrame:
    """The table with an undeclared category (``"zz"``) or class (2) in the last file only."""
    df = _table()
    df.loc[df.index[300::7], column] = "zz" if column == "c" else 2
    return df


@pytest.mark.parametrize("name", DISTRIBUTED_PUBLISHERS)
def test_publisher_bad_partition_is_the_in_memory_message(name, tmp_path) -> None:
    """An undeclared value in one file: the in-memory message (one line, the value not
    shown), nothing spent, nothing written, no staging left. (A group-by checks the columns
    it reads only: it groups by the column that holds the value.)"""
    options = {"--by": "c"} if name == "groupby" else None
    with pytest.raises(DataValidationError) as in_memory:
        _publisher(name, options=options).fit(_undeclared())
    data, acct = _partitioned("parquet", tmp_path, _undeclared()), _accountant()
    pub = _publisher(name, options=options)  # every registered publisher writes to a folder
    with pytest.raises(DataValidationError) as got:
        pub.fit(data, acct, allow_seeded=True, scheduler="sync", output=tmp_path / "out")
    assert str(got.value) == str(in_memory.value)
    _one_line(str(got.value))
    assert "zz" not in str(got.value) and getattr(pub, "release_", None) is None
    assert acct.history() == [] and sorted(p.name for p in tmp_path.iterdir()) == ["in"]


@pytest.mark.parametrize("name", ROW_LEVEL)
def test_row_level_output_is_required_and_checked_before_anything(name, tmp_path) -> None:
    data = _partitioned("parquet", tmp_path)
    (tmp_path / "taken").mkdir()
    for output, match in ((None, r"^output \(None\)"), (tmp_path / "taken", "already exists")):
        acct = _accountant()
        with pytest.raises(ParameterError, match=match):
            _publisher(name).fit(data, acct, allow_seeded=True, scheduler="sync", output=output)
        assert acct.history() == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "taken"]


#: Fitted attributes not compared: the hybrid's public fit object (its result is ``rho_``).
_NOT_COMPARED = {"rho_fit_"}


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) and a.dtype.kind in "fc":
        return np.shape(a) == np.shape(b) and np.allclose(a, b, rtol=0, atol=1e-9)
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    if isinstance(a, float):
        return bool(b == pytest.approx(a, rel=0, abs=1e-9))
    return bool(a == b)


#: Learner options whose model from a Parquet dataset must be the in-memory one too: output
#: perturbation, and a Newton solve cut short (the certified finish completes it).
LEARNER_VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("logreg", {"perturbation": "output"}),
    ("svm", {"perturbation": "output"}),
    ("logreg", {"perturbation": "output", "max_iter": 1}),
]
LEARNER_CASES = [
    pytest.param(name, {}, kind, id=f"{name}-{kind}")
    for name in DISTRIBUTED_LEARNERS
    for kind in PARTITIONED
] + [
    pytest.param(
        name, opts, "parquet", id=f"{name}-parquet-" + ",".join(f"{k}={v}" for k, v in opts.items())
    )
    for name, opts in LEARNER_VARIANTS
    if name in DISTRIBUTED_LEARNERS
]


@pytest.mark.parametrize(("name", "options", "kind"), LEARNER_CASES)
def test_learner_partitioned_model_equals_the_in_memory_one(name, options, kind, tmp_path) -> None:
    mem_acct, dist_acct = _accountant(), _accountant()
    mem = _learner(name, options=options).fit(_table(), accountant=mem_acct, allow_seeded=True)
    dist = _learner(name, options=options)
    data = _partitioned(kind, tmp_path)
    dist.fit(data, accountant=dist_acct, allow_seeded=True, scheduler="threads")
    assert dist.guarantee_.to_dict() == mem.guarantee_.to_dict()
    assert _records(dist_acct) == _records(mem_acct) != []
    # every fitted attribute (coef_, rho_, noise_scale_, classes_, feature names, the
    # certified residual...) as in memory; the model to the solver's tolerance
    fitted = [k for k in vars(mem) if k.endswith("_") and not k.startswith("_")]
    assert "coef_" in fitted
    for key in fitted:
        if key not in _NOT_COMPARED:
            assert _same_value(getattr(dist, key), getattr(mem, key)), key
    other = _learner(name, seed=SEED + 1, options=options).fit(_table())
    assert np.max(np.abs(other.coef_ - mem.coef_)) > 1e-6


@pytest.mark.parametrize("name", DISTRIBUTED_LEARNERS)
def test_learner_model_file_from_a_parquet_folder_is_the_in_memory_one(name, tmp_path) -> None:
    """``train_model_file`` on a Parquet folder: one charge to the ledger file, and a model
    file whose guarantee and predictions are those of the in-memory file."""
    ledger = _ledger_file(tmp_path)
    common = {
        "schema": SCHEMA, "epsilon": 1.0, "random_state": SEED, "allow_seeded": True,
        "options": _fast_options(name), "public": _public() if _needs_public(name) else None,
    }  # fmt: skip
    folder = _partitioned("parquet", tmp_path)
    dist = train_model_file(
        name, folder, output=tmp_path / "d.json", ledger=ledger, scheduler="sync", **common
    )
    mem = train_model_file(name, _table(), output=tmp_path / "m.json", **common)
    assert dist.path.is_file() and dist.ledger_indices == (1,)
    assert _spent(ledger) == _cost(dist.guarantee) == PrivacyBudget(1.0)
    # the assumptions' words differ ("class labels are declared" / "are public"): summaries
    assert read_model(dist.path).guarantee.summary() == mem.guarantee.summary()
    csv = tmp_path / "rows.csv"
    _table().to_csv(csv, index=False)
    other = train_model_file(name, _table(), output=tmp_path / "o.json", **{
        **common, "random_state": SEED + 1})  # fmt: skip
    d, m, o = (
        pd.read_csv(predict_file(r.path, csv, output=tmp_path / f"{r.path.stem}.csv").path)
        for r in (dist, mem, other)
    )
    np.testing.assert_allclose(d["score"], m["score"], rtol=1e-9, atol=1e-9)
    assert (d["prediction"] == m["prediction"]).all()
    assert not np.allclose(o["score"], m["score"], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("column", ["c", "y"], ids=["category", "class"])
@pytest.mark.parametrize("name", DISTRIBUTED_LEARNERS)
def test_learner_bad_partition_is_the_in_memory_message(name, column, tmp_path) -> None:
    with pytest.raises(DataValidationError) as in_memory:
        _learner(name).fit(_undeclared(column))
    data, acct = _partitioned("parquet", tmp_path, _undeclared(column)), _accountant()
    est = _learner(name)
    with pytest.raises(DataValidationError) as got:
        est.fit(data, accountant=acct, allow_seeded=True, scheduler="sync")
    assert str(got.value) == str(in_memory.value) and "zz" not in str(got.value)
    _one_line(str(got.value))
    assert not hasattr(est, "classes_") and getattr(est, "coef_", None) is None
    assert acct.history() == [] and sorted(p.name for p in tmp_path.iterdir()) == ["in"]


# -- the audit's noise hook is out of reach of fit ---------------------------------------------


def _check_hook(cls: type, fitted: Any, fit: Any) -> None:
    """No noise factor on the class or in its parameters; a rescaled ``random_state`` and the
    audit variant are both refused with a ledger, nothing spent."""
    assert not is_noise_variant(cls)
    assert not [n for n in dir(cls) if "noise_factor" in n or "multiplier" in n]
    for method in (cls.__init__, cls.fit, cls.run):
        params = inspect.signature(method).parameters
        assert not [p for p in params if "multiplier" in p or "factor" in p], params
    assert not [k for k in vars(fitted) if "multiplier" in k or "noise_factor" in k]
    params = fitted.get_params()
    for build, message in (
        (lambda: cls(**{**params, "random_state": ScaledNoise(SEED, 0.5)}), "^random_state"),
        (lambda: half_noise(cls)(**params), r"^accountant \(Accountant\) must be None"),
    ):
        acct = _accountant()
        with pytest.raises(ParameterError, match=message):
            fit(build(), acct)
        assert acct.history() == []


def _same_release(a: Any, b: Any) -> bool:
    """Equal noisy statistics and equal released rows."""
    if sorted(a.statistics) != sorted(b.statistics):
        return False
    stats = all(np.array_equal(a.statistics[k], b.statistics[k]) for k in a.statistics)
    rows = (a.data is None) == (b.data is None) and (a.data is None or a.data.equals(b.data))
    return stats and rows


@pytest.mark.parametrize("name", PUBLISHER_NAMES)
def test_publisher_audit_hook_is_unreachable_from_fit(name) -> None:
    cls = PUBLISHERS.load(name)
    pub = _publisher(name, epsilon=0.2).fit(_table())
    _check_hook(cls, pub, lambda p, acct: p.fit(_table(), accountant=acct, allow_seeded=True))
    # the rescaled noise is live in the audit variant: the same seed draws other noise
    half = half_noise(cls)(**pub.get_params()).fit(_table()).release_
    assert not _same_release(half, pub.release_)


@pytest.mark.parametrize("name", LEARNER_NAMES)
def test_learner_audit_hook_is_unreachable_from_fit(name) -> None:
    cls = LEARNERS.load(name)
    est = _learner(name).fit(_table())
    _check_hook(cls, est, lambda e, acct: e.fit(_table(), accountant=acct, allow_seeded=True))
    half = half_noise(cls)(**est.get_params()).fit(_table())
    assert not np.array_equal(half.coef_, est.coef_)
