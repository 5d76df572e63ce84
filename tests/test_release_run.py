"""The release run (``ppdp.release``): one flow, its order, its dry run, one validation.

Every publisher's and learner's ``fit`` is :func:`ppdp.release.run_release`; these tests
check the run's order on a recording estimator, that a dry run is the run stopped before the
charge, and that a file workflow validates the estimator's parameters once (the constraint
table of :mod:`ppdp._params`, ε included), counted by wrapping ``check_table``.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest

import ppdp._params as params_module
import ppdp.release as release_module
from ppdp.accounting import Accountant, Charge
from ppdp.accounting.events import Exponential
from ppdp.budget import Guarantee, PrivacyBudget
from ppdp.data import Schema
from ppdp.learn.files import train_model_file
from ppdp.publish import LaplacePublisher
from ppdp.publish.files import publish_table_file
from ppdp.random import SecureRandom
from ppdp.release import InMemoryTable, ReleaseOptions, RunResult, run_release

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "a", "type": "numeric", "lower": 0, "upper": 10},
            {"name": "b", "type": "numeric", "lower": 0, "upper": 5},
        ],
        "label": {"name": "y", "classes": ["n", "p"]},
    }
)


def _table(n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "a": rng.uniform(0, 10, n),
            "b": rng.uniform(0, 5, n),
            "y": rng.choice(["n", "p"], n),
        }
    )


# -- the order of the run ---------------------------------------------------------------------


class _Recording:
    """A stand-in estimator that records each step the run asks of it."""

    name = "Recording"
    random_state = None

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def validated(self) -> Any:
        self.log.append("validated")
        return contextlib.nullcontext()

    def table(self, data: Any, options: ReleaseOptions) -> InMemoryTable:
        self.log.append("table")
        return InMemoryTable(data, len(data))

    def plan(self, table: Any) -> list[Charge]:
        self.log.append("plan")
        return [Charge((Exponential(epsilon=0.5),), "Recording", {})]

    def source(self) -> Any:
        self.log.append("source")
        return SecureRandom()

    def check(self, accountant: Any, charges: list[Charge], key: Any) -> None:
        self.log.append("check")

    def scan(self, table: Any, on_invalid: str, on_scan: Any) -> Any:
        self.log.append("scan")
        return table.data

    def rows_scanned(self, scan: Any) -> int:
        return len(scan)

    def replan(self, table: Any, scan: Any, charges: list[Charge]) -> list[Charge]:
        self.log.append("replan")
        return charges

    def unaccounted(self, source: Any) -> None:
        self.log.append("unaccounted")

    def release(self, table: Any, scan: Any, source: Any, charges: Any, output: Any) -> Any:
        self.log.append("release")
        return Guarantee.pure(0.5, relation="replace-one")

    def finish(self, records: Any, seeded: bool) -> None:
        self.log.append("finish")


@pytest.fixture
def acct() -> Accountant:
    return Accountant.in_memory(total=PrivacyBudget(10.0))


def _spy_charge(monkeypatch: pytest.MonkeyPatch, log: list[str]) -> None:
    charge, record = release_module.charge, release_module.record_keyed_release

    def logged_charge(*args: Any, **kwargs: Any) -> Any:
        log.append("charge")
        return charge(*args, **kwargs)

    def logged_record(*args: Any, **kwargs: Any) -> Any:
        log.append("record")
        return record(*args, **kwargs)

    monkeypatch.setattr(release_module, "charge", logged_charge)
    monkeypatch.setattr(release_module, "record_keyed_release", logged_record)


def test_the_run_plans_checks_scans_charges_releases_then_records(monkeypatch, acct) -> None:
    log: list[str] = []
    _spy_charge(monkeypatch, log)
    result = run_release(_Recording(log), [1, 2, 3], ReleaseOptions(accountant=acct))
    assert log == [
        "validated",
        "table",
        "plan",
        "source",
        "check",
        "scan",
        "replan",
        "charge",
        "release",
        "record",
        "finish",
    ]
    assert isinstance(result, RunResult) and not result.dry_run
    assert result.n_rows == 3 and len(result.records) == 1
    assert acct.spent.epsilon == pytest.approx(0.5)


def test_a_dry_run_is_the_run_stopped_before_the_charge(monkeypatch, acct) -> None:
    log: list[str] = []
    _spy_charge(monkeypatch, log)
    result = run_release(_Recording(log), [1, 2], ReleaseOptions(accountant=acct, dry_run=True))
    assert log == ["validated", "table", "plan", "source", "check", "scan", "replan"]
    assert result.dry_run and result.records == () and result.n_rows == 2
    assert acct.history() == []


def test_without_an_accountant_nothing_is_checked_and_the_run_says_so(monkeypatch) -> None:
    log: list[str] = []
    _spy_charge(monkeypatch, log)
    run_release(_Recording(log), [1], ReleaseOptions())
    assert "check" not in log
    assert log.index("charge") < log.index("unaccounted") < log.index("release")


def test_release_options_refuse_a_non_accountant_in_one_line() -> None:
    with pytest.raises(TypeError, match=r"^accountant \(str\) must be a ppdp.accounting"):
        ReleaseOptions(accountant="ledger.jsonl")  # type: ignore[arg-type]


def test_a_publisher_dry_run_charges_what_its_real_run_charges(acct) -> None:
    df = _table()
    pub = LaplacePublisher(1.0, SCHEMA, random_state=3)
    dry = pub.run(df, ReleaseOptions(accountant=acct, allow_seeded=True, dry_run=True))
    assert acct.history() == [] and getattr(pub, "release_", None) is None
    real = pub.run(df, ReleaseOptions(accountant=acct, allow_seeded=True))
    assert [c.budget for c in dry.charges] == [c.budget for c in real.charges]
    assert [c.details for c in dry.charges] == [c.details for c in real.charges]
    assert dry.n_rows == real.n_rows == len(df)
    assert len(acct.history()) == len(real.charges) and pub.release_.ledger_indices


# -- validation once ---------------------------------------------------------------------------


class _Checks:
    """Every constraint-table check, by estimator object (kept alive, so no id is reused).

    A low-utility message searches ε on trial copies of the publisher: each is another
    object, checked once at its own ε; what must not happen is the same estimator checked
    twice."""

    def __init__(self) -> None:
        self.objects: list[Any] = []

    def most(self) -> int:
        """The most checks of one estimator object."""
        ids = [id(o) for o in self.objects]
        return max((ids.count(i) for i in ids), default=0)

    def clear(self) -> None:
        self.objects.clear()


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> _Checks:
    seen = _Checks()
    original = params_module.check_table

    def counted(obj: Any, table: Any, params_type: Any) -> Any:
        seen.objects.append(obj)
        return original(obj, table, params_type)

    monkeypatch.setattr(params_module, "check_table", counted)
    return seen


@pytest.mark.parametrize("dry_run", [False, True], ids=["release", "dry-run"])
@pytest.mark.parametrize(
    ("method", "options"),
    [("laplace", {}), ("pca", {"n_components": 1}), ("synth", {})],
)
def test_a_publish_validates_its_parameters_once(tmp_path, checks, method, options, dry_run):
    data = tmp_path / "d.csv"
    _table().to_csv(data, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        publish_table_file(
            method,
            data,
            schema=SCHEMA,
            output=tmp_path / "out.csv",
            epsilon=1.0,
            options=options,
            random_state=1,
            dry_run=dry_run,
        )
    assert checks.most() == 1


@pytest.mark.parametrize("dry_run", [False, True], ids=["release", "dry-run"])
def test_a_training_run_validates_its_parameters_once(tmp_path, checks, dry_run) -> None:
    data = tmp_path / "d.csv"
    _table().to_csv(data, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        train_model_file(
            "logreg",
            data,
            schema=SCHEMA,
            output=tmp_path / "m.json",
            epsilon=1.0,
            random_state=1,
            dry_run=dry_run,
        )
    assert checks.most() == 1


def test_the_count_sees_a_second_validation(checks) -> None:
    """The broken variant of the workflow: the cost asked outside ``fit``'s scope is a
    second check, and the counter sees it (so a count of one above means something)."""
    pub = LaplacePublisher(1.0, SCHEMA, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pub.privacy_budget()
        pub.fit(_table())
    assert checks.most() == 2
    checks.clear()
    with warnings.catch_warnings(), pub.validated():
        warnings.simplefilter("ignore")
        pub.privacy_budget()
        pub.fit(_table())
    assert checks.most() == 1
