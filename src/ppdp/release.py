"""The release run: plan → check → scan → charge → release → record, written once.

Every publisher's and private learner's ``fit`` is one :func:`run_release` (DESIGN.md
contract 2, RELIABILITY.md (c)):

1. **plan**: the parameters are validated and the planned charges fixed from them and the
   public number of rows when the container shows it (an in-memory table);
2. **check**: a seeded source is refused with an accountant (unless ``allow_seeded``), so
   is an audit's rescaled source (:func:`ppdp.random.refuse_rescaled`, always), then
   :func:`ppdp.accounting.check_charges`; refused here, the data are never read;
3. **scan**: one validating pass over the table. An in-memory table is one partition,
   scanned where it lies; a Dask DataFrame or a Parquet dataset is scanned partition by
   partition inside a Dask session (:func:`ppdp.data.distributed.scan_table`), and the
   files scanned must be the files released (:func:`~ppdp.data.distributed.check_unchanged`).
   An error costs nothing. The plan is then fixed with the scanned (public) row count;
4. **charge**: :func:`ppdp.accounting.charge`, durably (stops here for a dry run:
   ``ReleaseOptions(dry_run=True)`` runs every check of a real run and spends nothing);
5. **release**: the noise is drawn, only now;
6. **record**: a keyed release is recorded in the ledger before ``fit`` returns.

What differs between a publisher and a learner (how they plan, scan and release) is a
:class:`ReleaseSteps` object their base class builds; what differs between an in-memory
table and a partitioned one is its :class:`InMemoryTable` or :class:`PartitionedTable`.
The options of one run are one frozen :class:`ReleaseOptions`. Steps 2 (the budget), 4 and
6 on the ledger are one :class:`ReleaseLedger`, which a release whose steps are messages
apart (the federated round) keeps between them.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ppdp.accounting import (
    Accountant,
    Charge,
    charge,
    check_charges,
    claim_key,
    record_keyed_release,
)
from ppdp.exceptions import ParameterTypeError
from ppdp.random import RandomSource, refuse_rescaled, refuse_seeded

__all__ = [
    "InMemoryTable",
    "PartitionedTable",
    "ReleaseLedger",
    "ReleaseOptions",
    "ReleaseSteps",
    "RunResult",
    "WorkflowOptions",
    "run_release",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReleaseOptions:
    """How one release runs: every option of ``fit`` besides the data, in one object.

    Attributes
    ----------
    accountant : Accountant or None
        The dataset's accountant; without one nothing is recorded.
    allow_seeded : bool
        Permit a seeded ``random_state`` with an accountant (recorded in the ledger).
    idempotency_key : str or None
        A key unique to this release request: a retry charges nothing again.
    scheduler : optional
        Where a distributed table is processed (:func:`ppdp.data.distributed.dask_session`).
    output : path or None
        The folder a distributed row-level release is written to.
    dry_run : bool
        Run every check of a real run, then stop before the charge.
    on_scan : callable or None
        Called with a distributed table's scan (:class:`~ppdp.data.distributed.TableScan`)
        as soon as it is complete, before the estimator's own checks of it and the charge
        (the file workflows tell the custodian the clipping counts from it).
    """

    accountant: Accountant | None = None
    allow_seeded: bool = False
    idempotency_key: str | None = None
    scheduler: Any = None
    output: str | os.PathLike[str] | None = None
    dry_run: bool = False
    on_scan: Callable[[Any], None] | None = None

    def __post_init__(self) -> None:
        acct = self.accountant
        if acct is not None and not isinstance(acct, Accountant):
            raise ParameterTypeError(
                f"accountant ({type(acct).__name__}) must be a ppdp.accounting.Accountant"
            )

    @property
    def on_invalid(self) -> str:
        """The accountant's mode for invalid values (``"raise"`` without one)."""
        return self.accountant.on_invalid if self.accountant is not None else "raise"


@dataclass(frozen=True)
class RunResult:
    """What one run did (or, for a dry run, would do).

    Attributes
    ----------
    charges : tuple of Charge
        The charges made (a dry run: that would be made), with the scanned row count.
    n_rows : int
        The rows scanned (the custodian's: private under add/remove).
    scan : object
        The estimator's scan of the table (a distributed table's
        :class:`~ppdp.data.distributed.TableScan` carries the custodian's ``report``).
    records : tuple
        The ledger records of the charge (empty without an accountant or for a dry run).
    seeded : bool
        The noise came (or would come) from a reproducible seed.
    dry_run : bool
        The run stopped before the charge.
    """

    charges: tuple[Charge, ...]
    n_rows: int
    scan: Any
    records: tuple[Any, ...] = ()
    seeded: bool = False
    dry_run: bool = False

    @property
    def report(self) -> Any:
        """The custodian's encoding report of a distributed scan (None in memory)."""
        return getattr(self.scan, "report", None)


class InMemoryTable:
    """A table in memory: one partition, scanned where it lies (no session, no staging).

    Parameters
    ----------
    data : object
        The table as the estimator takes it (a DataFrame, an array).
    rows : int or None
        Its number of rows when the container shows it (``None``: only the scan says).
    """

    partitioned = False

    def __init__(self, data: Any, rows: int | None) -> None:
        self.data = data
        self.rows = rows

    @contextlib.contextmanager
    def session(self) -> Iterator[Any]:
        """Nothing to open; the stage of a memory release has nothing to guard."""
        yield _NoStage()

    def check_unchanged(self) -> None:
        """An in-memory table cannot change between its scan and its release."""


class PartitionedTable:
    """A Dask DataFrame or a Parquet dataset, scanned partition by partition.

    Parameters
    ----------
    data : dask DataFrame or path
        The table (``ppdp.data.distributed.is_distributed``).
    schema : Schema
        The declared schema its columns are read with.
    scheduler : optional
        As :func:`ppdp.data.distributed.dask_session` takes it; a path without one starts a
        ``LocalCluster``.
    param : str
        The parameter name the one-line errors use (``"data"``, ``"X"``).
    """

    partitioned = True
    rows = None  # only the scan says

    def __init__(self, data: Any, schema: Any, *, scheduler: Any, param: str = "data") -> None:
        self.data = data
        self.schema = schema
        self.param = param
        self._scheduler = scheduler
        self.scheduler: Any = None
        self.frame: Any = None

    @contextlib.contextmanager
    def session(self) -> Iterator[Any]:
        """The Dask session and the release's guard; opens the table's files inside."""
        from ppdp.data.distributed import dask_session, guarded_release, open_table

        local_default = not hasattr(self.data, "to_delayed")  # a path: start a LocalCluster
        with (
            guarded_release() as stage,
            dask_session(self._scheduler, default_local_cluster=local_default) as sched,
        ):
            self.scheduler = sched
            self.frame = open_table(self.data, self.schema, param=self.param)
            yield stage

    def scan(
        self,
        *,
        include_label: bool,
        on_invalid: str,
        partition_fn: Any,
        frame: Any = None,
        partition_rows: bool = False,
    ) -> Any:
        """One validating pass (:func:`ppdp.data.distributed.scan_table`) over the table, or
        over ``frame``, a lazy view of it (each person's rows bounded, under a privacy unit);
        ``partition_rows``: ``partition_fn`` also reads each partition's rows."""
        from ppdp.data.distributed import scan_table

        return scan_table(
            self.frame if frame is None else frame,
            self.schema,
            include_label=include_label,
            on_invalid=on_invalid,
            partition_fn=partition_fn,
            scheduler=self.scheduler,
            partition_rows=partition_rows,
        )

    def check_unchanged(self) -> None:
        """The files scanned are the files the release reads."""
        from ppdp.data.distributed import check_unchanged

        if self.param == "data":
            check_unchanged(self.frame)
        else:
            check_unchanged(self.frame, param=self.param)


class _NoStage:
    def spent(self, records: Sequence[Any]) -> None:
        """Nothing to guard in memory."""


@dataclass
class ReleaseLedger:
    """Steps 2 (the budget), 4 (the charge) and 6 (the record) of one run, on its ledger.

    :func:`run_release` makes one per run. A release whose steps are messages apart keeps
    one between them: the federated round checks at its start, charges at its last owner's
    commitment and records at its release (``docs/federated.md``).

    Attributes
    ----------
    options : ReleaseOptions
        The accountant, ``allow_seeded`` and the key (claimed by the caller, if any).
    charges : list of Charge
    mechanism : str
        The name the budget check's refusal gives.
    records : tuple of SpendRecord
        The charge's ledger records, once made.
    """

    options: ReleaseOptions
    charges: list[Charge]
    mechanism: str
    records: tuple[Any, ...] = ()

    def check(self) -> None:
        """Refuse now (:class:`~ppdp.exceptions.BudgetExceededError`) unless the charges
        fit (:func:`~ppdp.accounting.check_charges`)."""
        acct, key = self.options.accountant, self.options.idempotency_key
        check_charges(acct, self.charges, mechanism=self.mechanism, idempotency_key=key)

    def charge(self, seeded: bool) -> tuple[Any, ...]:
        """Record every charge durably (:func:`~ppdp.accounting.charge`); the records."""
        acct, key = self.options.accountant, self.options.idempotency_key
        allow = self.options.allow_seeded
        self.records = charge(
            acct, self.charges, seeded=seeded, allow_seeded=allow, idempotency_key=key
        )
        return self.records

    def record(self, guarantee: Any, **details: Any) -> Any:
        """Record the release, linked to its first charge, before it leaves: with
        ``details`` (a protocol's), else a run's keyed release
        (:func:`~ppdp.accounting.record_keyed_release`). The ledger entry with details."""
        acct = self.options.accountant
        if details and acct is not None:
            return acct.record_release(guarantee, spend=self.records[0], **details)
        record_keyed_release(acct, self.records, guarantee, self.options.idempotency_key)
        return None


class ReleaseSteps(Protocol):
    """What an estimator's base class gives the run: how it plans, scans and releases.

    A steps object serves one run (it may keep what one step found for the next).
    """

    name: str
    #: The estimator's ``random_state`` parameter, as given (named in a refusal).
    random_state: Any

    def validated(self) -> contextlib.AbstractContextManager[Any]:
        """The block inside which the parameters are validated once."""
        ...

    def table(self, data: Any, options: ReleaseOptions) -> InMemoryTable | PartitionedTable:
        """The table ``data`` is, with every check of the arguments (one line each)."""
        ...

    def plan(self, table: Any) -> list[Charge]:
        """The planned charges, from the parameters and ``table.rows`` (may be None)."""
        ...

    def source(self) -> RandomSource:
        """The random source of the release."""
        ...

    def check(self, accountant: Accountant, charges: list[Charge], key: str | None) -> None:
        """Step 2 beyond the seeded source: the budget (and the learner's relation)."""
        ...

    def scan(self, table: Any, on_invalid: str, on_scan: Callable[[Any], None] | None) -> Any:
        """Step 3: validate the data (and reduce a distributed table's statistics)."""
        ...

    def rows_scanned(self, scan: Any) -> int:
        """The number of rows the scan read."""
        ...

    def replan(self, table: Any, scan: Any, charges: list[Charge]) -> list[Charge]:
        """The charges with the scanned row count, and what is said before the spend."""
        ...

    def unaccounted(self, source: RandomSource) -> None:
        """What a release without an accountant says."""
        ...

    def release(
        self, table: Any, scan: Any, source: RandomSource, charges: list[Charge], output: Any
    ) -> Any:
        """Step 5: draw the noise; return the release's :class:`~ppdp.budget.Guarantee`."""
        ...

    def finish(self, records: tuple[Any, ...], seeded: bool) -> None:
        """Keep the ledger entries, replay and seeding state on the estimator."""
        ...


def run_release(steps: ReleaseSteps, data: Any, options: ReleaseOptions) -> RunResult:
    """Run one release: plan, check, scan, charge, release, record (see the module docstring).

    Parameters
    ----------
    steps : ReleaseSteps
        The estimator's steps (built by its base class).
    data : object
        The private table.
    options : ReleaseOptions
        The accountant and every option of the run.

    Returns
    -------
    RunResult
    """
    acct = options.accountant
    with steps.validated(), claim_key(acct, options.idempotency_key):
        table = steps.table(data, options)
        charges = steps.plan(table)
        source = steps.source()
        seeded = not source.is_secure
        if acct is not None:
            refuse_rescaled(source, value=steps.random_state)
            refuse_seeded(seeded, allow_seeded=options.allow_seeded, value=steps.random_state)
            steps.check(acct, charges, options.idempotency_key)
        with table.session() as stage:
            scan = steps.scan(table, options.on_invalid, options.on_scan)
            charges = steps.replan(table, scan, charges)
            table.check_unchanged()
            n_rows = steps.rows_scanned(scan)
            if options.dry_run:
                return RunResult(tuple(charges), n_rows, scan, seeded=seeded, dry_run=True)
            ledger = ReleaseLedger(options, charges, steps.name)
            records = ledger.charge(seeded)
            stage.spent(records)
            if acct is None:
                logger.info("%s.fit without an accountant: nothing is recorded", steps.name)
                steps.unaccounted(source)
            guarantee = steps.release(table, scan, source, charges, options.output)
        ledger.record(guarantee)
        steps.finish(records, seeded)
        return RunResult(tuple(charges), n_rows, scan, records, seeded)


@dataclass(frozen=True)
class WorkflowOptions:
    """The release options of a file workflow (``ppdp publish``, ``ppdp train``), one object.

    The workflows take them as keyword arguments (their public signature) and pass this
    one frozen object to their steps, instead of forwarding each by name.

    Attributes
    ----------
    ledger : path or None
        The dataset's budget ledger; without one the spend is recorded nowhere.
    random_state : optional
        Reproducible noise for experiments (refused with a ledger unless ``allow_seeded``).
    allow_seeded, allow_large_epsilon : bool
        The permissions of a seeded release through a ledger and of a large ε.
    idempotency_key : str or None
        A key unique to this release request.
    force : bool
        Replace an existing output.
    dry_run : bool
        Every check of a real run, then stop before the charge.
    scheduler : optional
        Where a distributed input is processed.
    say : callable or None
        Called with each progress or warning line for the custodian.
    """

    ledger: str | os.PathLike[str] | None = None
    random_state: Any = None
    allow_seeded: bool = False
    allow_large_epsilon: bool = False
    idempotency_key: str | None = None
    force: bool = False
    dry_run: bool = False
    scheduler: Any = None
    say: Callable[[str], None] | None = None

    def tell(self, line: str) -> None:
        """Say ``line`` to the custodian (nothing without ``say``)."""
        if self.say is not None:
            self.say(line)

    def release_options(self, accountant: Any, **changes: Any) -> ReleaseOptions:
        """The :class:`ReleaseOptions` of the estimator's run, with ``accountant``."""
        base = {
            "accountant": accountant,
            "allow_seeded": self.allow_seeded,
            "idempotency_key": self.idempotency_key,
            "dry_run": self.dry_run,
        }
        return ReleaseOptions(**{**base, **changes})
