"""What every publisher shares: the release object and the check-validate-spend-release flow.

A publisher follows the scikit-learn contract: ``__init__`` only stores its parameters;
``fit(df, accountant=None)`` is the only step that spends budget and returns ``self``;
the result is in ``release_``; ``sample`` / ``transform`` are free post-processing.

``fit`` is the release run (:func:`ppdp.release.run_release`, with this module's steps),
always in this order (DESIGN.md contract 2, RELIABILITY.md (c)):

1. validate the parameters (:meth:`Publisher._validate_params`), which also fixes the
   planned spends from the parameters, the schema and the number of rows (public under
   the replace-one relation these sources use; never read under add/remove, where it is
   private: :meth:`Publisher._public_rows`) alone; a publisher's parameters are one
   declarative constraint table (:mod:`ppdp._params`), checked once per ``fit``
   into a frozen parameter object (:meth:`Publisher._params`);
2. :func:`ppdp.accounting.check_charges` (and refuse a seeded ``random_state`` unless
   ``allow_seeded=True``): refused here, the data are never read;
3. encode and validate the data (:meth:`Publisher._encode`): an error costs nothing;
4. :func:`ppdp.accounting.charge` every planned charge, durably (one entry each, with
   its typed event and the caller's ``idempotency_key``);
5. compute and add noise (:meth:`Publisher._release`), only now.

A Dask DataFrame or a Parquet dataset (``ppdp.data.distributed``) takes the same steps
with a distributed step 3: one scan validates every partition (errors carry the whole
table's counts, exactly as in memory) and reduces the publisher's partition statistics
(:meth:`Publisher._partition_statistics`); the noise is then drawn in the driver, or, for
row-level outputs, partition by partition from :class:`ppdp.random.PartitionStreams`, and
written to ``output`` as partitioned Parquet inside ``fit``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ppdp._params import FIT_PARAMS_KEY, ValidatedParams
from ppdp.accounting import (
    Accountant,
    Charge,
    check_charges,
)
from ppdp.accounting.events import PrivacyEvent
from ppdp.budget import Guarantee, Neighbouring, PrivacyBudget
from ppdp.data import Schema
from ppdp.exceptions import (
    DataValidationError,
    NotFittedError,
    ParameterError,
    ParameterTypeError,
    PrivacyLeakWarning,
    user_stacklevel,
)
from ppdp.publish._noise_limits import planned_charges
from ppdp.publish.unit_choice import choice_charge, is_choice, resolve, with_choice
from ppdp.random import RandomSource, RandomState, resolve_random_state
from ppdp.release import (
    InMemoryTable,
    PartitionedTable,
    ReleaseOptions,
    RunResult,
    run_release,
)

__all__ = ["Charge", "Publisher", "Release"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Release:
    """What a publisher released, and what it promises.

    Attributes
    ----------
    data : pandas.DataFrame or None
        The released table, decoded to the schema (None for releases that are only
        statistics, such as a synthesizer's noisy sufficient statistics).
    encoded : ndarray or None
        The same release in the encoded ``[0, 1]`` + one-hot space (what the utility
        metrics compare), when there is a table.
    guarantee : Guarantee
        Kind, parameters, neighbouring relation and assumptions.
    statistics : dict of str to ndarray
        Noisy measurements that are part of the release (differentially private).
    ledger_indices : tuple of int
        The ledger entries that charged for this release (empty without an accountant).
    seeded : bool
        True when the noise came from a reproducible seed (not fit for a real release).
    replayed : bool
        True when ``fit`` was given an ``idempotency_key`` whose charges were already in
        the ledger: nothing was charged again (see ``docs/proofs/ledger.md``, the replay
        hazard, before publishing such a release).
    """

    data: pd.DataFrame | None
    encoded: NDArray[np.float64] | None
    guarantee: Guarantee
    statistics: dict[str, NDArray[np.float64]] = field(default_factory=dict)
    ledger_indices: tuple[int, ...] = ()
    seeded: bool = False
    replayed: bool = False

    def save(
        self, path: str | os.PathLike[str], *, method: str = "python", force: bool = False
    ) -> Path:
        """Write the released table and its guarantee file (``PATH.guarantee.json``) together.

        Both files appear at once or not at all, as ``ppdp publish`` writes them, so
        ``ppdp report`` and ``ppdp note`` read the result like a command's release.

        Parameters
        ----------
        path : path
            ``.csv``, ``.csv.gz`` or ``.parquet``.
        method : str, default "python"
            The publisher's registry name (``"synth"``, ``"groupby"``...), recorded in the
            guarantee file: the report and the note read what the release holds from it.
        force : bool, default False
            Replace existing files.

        Returns
        -------
        Path
            The table's path.
        """
        from ppdp._io import atomic_paths, check_output
        from ppdp.publish.files import sidecar_for, sidecar_text, write_table

        if self.data is None:
            raise ParameterError("this release holds no table to save (its statistics only)")
        out = Path(os.fspath(path))
        side = sidecar_for(out)
        check_output(out, param="path", suffixes=(".csv", ".gz", ".parquet"), force=force,
                     sidecars=[("the guarantee file", side)])  # fmt: skip
        with atomic_paths(side, out) as (tmp_side, tmp_out):
            tmp_side.write_text(sidecar_text(method, self, None, {}), encoding="utf-8")
            write_table(self.data, tmp_out, name=out.name)
        return out

    def _repr_html_(self) -> str:
        """A notebook's view: the guarantee and the first rows."""
        from html import escape

        head = f"<p><strong>{escape(self.guarantee.summary())}</strong>"
        if self.seeded:
            head += " <em>(seeded noise: not fit for a real release)</em>"
        head += "</p>"
        if self.data is None:
            return head + f"<p>Statistics: {escape(', '.join(self.statistics))}</p>"
        rows = f"<p>{len(self.data):,} rows × {self.data.shape[1]} columns</p>"
        return head + rows + self.data.head(10).to_html(index=False, max_cols=20)


def new_folder(output: Any, param: str) -> Path:
    """A folder a distributed release will create: it must not exist, and its parent must."""
    if not isinstance(output, str | os.PathLike):
        raise ParameterTypeError(f"{param} ({output!r}) must be a folder path")
    path = Path(os.fspath(output))
    if path.exists():
        raise ParameterError(f"{param} ({str(path)!r}) already exists; choose a new folder")
    if not path.parent.is_dir():
        raise ParameterError(
            f"{param} ({str(path)!r}): the folder {str(path.parent)!r} does not exist"
        )
    return path


def _warn_delta_of_rows(charges: list[Charge], n_rows: int | None) -> None:
    """A :class:`PrivacyLeakWarning` when the release's δ is at least ``1/n``.

    δ is the probability that the ε bound fails; at ``δ ≥ 1/n`` a mechanism that publishes
    one whole record at random meets the guarantee, so it protects no one. Said before the
    spend, from the public row count only: ``n_rows`` is None where ``n`` is private (under
    add/remove, :meth:`Publisher._public_rows`), and then nothing is said, since a warning
    that depends on ``n`` would tell neighbouring tables apart for free."""
    delta = sum(planned.budget.delta for planned in charges)
    if n_rows and delta >= 1.0 / n_rows:
        warnings.warn(
            f"delta ({delta!r}) >= 1/n (n={n_rows}): such a delta allows releasing a whole "
            "record; choose delta much smaller than 1/n",
            PrivacyLeakWarning,
            stacklevel=user_stacklevel(),
        )


def _public_row_count(df: Any) -> int | None:
    """The number of rows, read from the container's shape only (public under replace-one;
    :meth:`Publisher._public_rows` drops it under add/remove)."""
    if isinstance(df, pd.DataFrame):
        return len(df)
    if isinstance(df, np.ndarray) and df.ndim == 2:
        return int(df.shape[0])
    return None


class Publisher(ValidatedParams):
    """Base class of the publishers; see the module docstring for the flow of :meth:`fit`.

    Subclasses implement :meth:`_planned_charges` (returning the planned charges),
    :meth:`_encode` (optional) and :meth:`_release`. They store ``schema`` and
    ``random_state`` as attributes of the same name.
    """

    schema: Schema
    random_state: RandomState

    #: True when :meth:`fit` accepts a Dask DataFrame or a Parquet dataset.
    supports_distributed: ClassVar[bool] = False
    #: True when the release has one row per input row: distributed input then needs an
    #: ``output`` folder, written inside :meth:`fit`.
    row_level_output: ClassVar[bool] = False
    #: What the release's file holds, for the readers of release files (``ppdp report``):
    #: ``"rows"`` (rows of the schema, compared with the original), ``"groups"`` (one row
    #: per declared group) or ``"projection"`` (LDA projections or directions, which the
    #: guarantee file carries too).
    output_kind: ClassVar[str] = "rows"

    @property
    def fit_writes_output(self) -> bool:
        """True when a distributed ``fit`` writes the rows to ``output`` itself: a row-level
        release, or a publisher whose :meth:`_check_output` takes a folder (the synthesizer:
        its rows continue the release's own random stream)."""
        return self.row_level_output or type(self)._check_output is not Publisher._check_output

    @property
    def computes_table(self) -> bool:
        """True when the table written is computed from the release (:meth:`output_table`
        overridden: the LDA projection's direction table)."""
        return type(self).output_table is not Publisher.output_table

    @property
    def scan_note(self) -> str | None:
        """Why a distributed ``fit`` reads its input more than once, for a progress line
        (None: one pass)."""
        return None

    # -- to implement ---------------------------------------------------------------------

    def _validate_params(self, n_rows: int | None = None) -> list[Charge]:
        """Check every parameter; return the spends one ``fit`` will make.

        ``n_rows`` is the public number of rows when known (in ``fit``), so the ledger
        details can record the exact noise scales; ``None`` when only the cost is asked.
        The budgets of the charges must not depend on it. An ε whose noise the samplers
        cannot draw is refused here, in one line naming the smallest ε that works
        (:func:`ppdp.publish._noise_limits.planned_charges`).
        """
        charges = planned_charges(self, n_rows, type(self)._planned_charges)
        return choice_charge(self.schema, type(self).__name__, self._relation()) + charges

    def _relation(self) -> Neighbouring:
        """The neighbouring relation of the release (a ``relation`` parameter, else
        replace-one)."""
        params = self._params() if self._params_type is not None else self
        return Neighbouring.parse(getattr(params, "relation", Neighbouring.REPLACE_ONE))

    def _planned_charges(self, n_rows: int | None) -> list[Charge]:
        """The charges of one ``fit`` from the parameters (see :meth:`_validate_params`)."""
        raise NotImplementedError

    def _encode(
        self, df: pd.DataFrame, on_invalid: str = "raise"
    ) -> tuple[NDArray[np.float64], NDArray[np.int64] | None]:
        """Encode and validate the data (default: ``schema.encode(df)``).

        ``on_invalid="mask"`` (the accountant's total mode): no check that depends on the
        values may raise; see :attr:`ppdp.accounting.Accountant.on_invalid`.
        """
        return self.schema.encode(df, on_invalid=on_invalid)

    def checked_table(self, data: Any) -> Any:
        """``data`` as this release checks and encodes it: ``data`` itself (every declared
        column). A release that reads the values of some columns only gives the others one
        declared value, so that nothing in them is refused, counted or warned about
        (:meth:`ppdp.publish.GroupByPublisher.checked_table`)."""
        return data

    def _release(
        self,
        X: NDArray[np.float64],
        y: NDArray[np.int64] | None,
        source: RandomSource,
        charges: list[Charge],
    ) -> Release:
        """Compute the statistics, add the noise, build the :class:`Release`."""
        raise NotImplementedError

    # -- to implement for distributed input (supports_distributed = True) ------------------

    def _distributed_include_label(self) -> bool:
        """Encode the label's one-hot block into the partitions' ``X`` (default: when declared)."""
        return self.schema.label is not None

    def _partition_statistics(self, X: NDArray[np.float64], y: NDArray[np.int64] | None) -> Any:
        """What the scan reduces from one encoded partition (merged with ``+``); with
        :meth:`_partition_reads_rows`, called as ``(X, y, rows)``, ``rows`` the partition's
        rows as read (the columns ``X`` does not encode: the open ``by`` columns)."""
        return None

    def _partition_reads_rows(self) -> bool:
        """Whether :meth:`_partition_statistics` also reads each partition's rows."""
        return False

    def _check_scan(self, scan: Any, on_invalid: str) -> None:
        """The publisher's own checks of the scanned table (default: at least 2 rows)."""
        if scan.n_rows < 2:
            raise DataValidationError(
                f"data has {scan.n_rows} row(s); {type(self).__name__} needs at least 2"
            )

    def _release_distributed(
        self,
        frame: Any,
        scan: Any,
        source: RandomSource,
        charges: list[Charge],
        *,
        scheduler: Any,
        output: Any,
    ) -> Release:
        """Add the noise to the scanned statistics (or write noisy rows to ``output``)."""
        raise NotImplementedError

    # -- the shared flow --------------------------------------------------------------------

    def privacy_budget(self) -> PrivacyBudget:
        """What one :meth:`fit` costs, from the parameters alone (basic composition)."""
        total = PrivacyBudget(0.0)
        with self._params_once():
            charges = self._validate_params()
        for planned in charges:
            total = total + planned.budget
        return total

    def planned_charges(self) -> list[Charge]:
        """The charges one :meth:`fit` makes, from the parameters alone (what a budget check
        before the data are read compares with the ledger)."""
        with self._params_once():
            return self._validate_params()

    def privacy_events(self) -> tuple[PrivacyEvent, ...]:
        """The typed events one :meth:`fit` charges, from the parameters alone.

        The events the ledger records may state exact noise scales that need the public
        number of rows; their cost is the same.
        """
        with self._params_once():
            charges = self._validate_params()
        return tuple(e for planned in charges for e in planned.events)

    def fit(
        self,
        df: Any,
        accountant: Accountant | None = None,
        *,
        allow_seeded: bool = False,
        idempotency_key: str | None = None,
        scheduler: Any = None,
        output: str | os.PathLike[str] | None = None,
    ) -> Publisher:
        """Check the budget, validate the data, record the spends, then release.

        Parameters
        ----------
        df : pandas.DataFrame, dask DataFrame, or path to a Parquet dataset
            The private table, with the schema's columns. A Dask DataFrame or a Parquet
            dataset (a folder, a file or a glob; needs the ``dask`` extra) is processed
            partition by partition, for the publishers with ``supports_distributed``.
        accountant : Accountant, optional
            The dataset's accountant. Without one nothing is recorded: the caller is then
            responsible for the budget (a log line says so).
        allow_seeded : bool, default False
            With an accountant, a seeded ``random_state`` is refused (before the data are
            read) unless this is True: the same seed on neighbouring tables cancels the
            noise exactly. The ledger records the seeded spend and this permission.
        idempotency_key : str, optional
            A key unique to this release request (``ppdp publish --idempotency-key``): a
            retry with the same key charges nothing again (``release_.replayed``); a copy
            started while another run holds the key is refused (``KeyInUseError``).
        scheduler : optional
            Distributed input only: ``"local"`` (a ``LocalCluster``, the default for a
            Parquet path), an address ``"tcp://host:8786"``, a ``distributed.Client``, or
            a Dask local scheduler name; see :func:`ppdp.data.distributed.dask_session`.
        output : path, optional
            Distributed input to a row-level publisher only (required there): the folder
            the released rows are written to, as partitioned Parquet, atomically.

        Returns
        -------
        self
        """
        options = ReleaseOptions(
            accountant=accountant,
            allow_seeded=allow_seeded,
            idempotency_key=idempotency_key,
            scheduler=scheduler,
            output=output,
        )
        self.run(df, options)
        return self

    def run(self, df: Any, options: ReleaseOptions | None = None) -> RunResult:
        """:meth:`fit` with its options as one object, returning what the run did.

        ``ReleaseOptions(dry_run=True)`` runs every check of a real release (parameters,
        budget, one validating scan of the data) and stops before the charge: nothing is
        spent or released, and the result's ``charges`` are those a real run would make.

        Parameters
        ----------
        df : pandas.DataFrame, dask DataFrame, or path to a Parquet dataset
            The private table (see :meth:`fit`).
        options : ReleaseOptions, optional
            The accountant and every option of the run (default: none, no accountant).

        Returns
        -------
        ppdp.release.RunResult
        """
        return run_release(_PublisherSteps(self), df, options or ReleaseOptions())

    def _check_fit_arguments(self) -> None:
        if not isinstance(self.schema, Schema):
            raise ParameterTypeError(
                f"schema ({type(self.schema).__name__}) must be a ppdp.data.Schema; "
                "load one with Schema.from_file(path)"
            )

    def _check_partitioned(self) -> None:
        """Refuse, in one line, parameters that need the table in memory (a Dask DataFrame
        or a Parquet dataset was given); nothing by default."""

    def _public_rows(self, n_rows: int | None) -> int | None:
        """``n_rows`` where the number of rows is public (replace-one), None where it is
        private (add/remove, a ``relation`` parameter of the publisher).

        Everything :meth:`fit` says before the release (the ledger details of the planned
        charges, the ``δ ≥ 1/n`` warning) reads the row count through this, so that under
        add/remove no output but the noisy release depends on ``n``.
        """
        if self.schema.privacy_unit is not None:
            return None  # rows per person are private: only persons are counted, noisily
        return n_rows if self._relation() is Neighbouring.REPLACE_ONE else None

    def _finish(self, release: Release, records: list[Any], seeded: bool) -> None:
        self.release_ = Release(
            data=release.data,
            encoded=release.encoded,
            guarantee=release.guarantee,
            statistics=release.statistics,
            ledger_indices=tuple(r.index for r in records),
            seeded=seeded,
            replayed=bool(records) and all(r.replayed for r in records),
        )

    # -- privacy unit (docs/proofs/privacy-unit.md) -----------------------------------------

    @property
    def bounding_summary(self) -> str | None:
        """The custodian's line of the last fit's contribution bounding (persons, rows
        dropped), or None without a privacy unit. Computed from the private data: for the
        custodian's terminal or log only, never released."""
        return getattr(self, "_custodian_bounding_line", None)

    def _contribution_bounds(self) -> Any:
        """The caps of each person (:class:`ppdp.data.contribution.ContributionBounds`), or
        None without a privacy unit. Publishers with group caps override it."""
        from ppdp.data.contribution import ContributionBounds

        unit = self.schema.privacy_unit
        return None if unit is None else ContributionBounds(unit)

    def _bounded(self, df: Any, source: RandomSource, on_invalid: str) -> Any:
        """``df`` with at most the caps' rows of each person (``df`` itself without a unit)."""
        bounds = self._contribution_bounds()
        if bounds is None:
            return df
        from ppdp.data.contribution import bound_table, bounding_keys

        kept, counts = bound_table(
            df, self.schema, bounds, bounding_keys(source), on_invalid=on_invalid
        )
        self._custodian_bounding_line = counts.summary(bounds)  # custodian only, never released
        return kept

    def _bounded_frame(self, frame: Any, source: RandomSource, on_invalid: str) -> Any:
        """The distributed :meth:`_bounded`: ``(bounded frame, delayed counts or None)``."""
        bounds = self._contribution_bounds()
        if bounds is None:
            return frame, None
        from ppdp.data.contribution import bound_dask, bounding_keys

        return bound_dask(frame, self.schema, bounds, bounding_keys(source), on_invalid=on_invalid)

    def _log_bounding(self, counts: Any, scheduler: Any) -> None:
        """The custodian's line of a distributed bounding (one more pass over the counts)."""
        if counts is None:
            return
        from ppdp.data.contribution import log_dask_counts

        bounds = self._contribution_bounds()
        merged = log_dask_counts(counts, bounds, scheduler=scheduler)
        self._custodian_bounding_line = merged.summary(bounds)  # custodian only, never released

    def _shipped(self) -> Publisher:
        """A shallow copy without a previous release, to send to every partition task."""
        import copy

        light = copy.copy(self)
        light.__dict__.pop("release_", None)
        return light

    def _check_output(self, output: Any, name: str) -> Any:
        """``output`` for a distributed fit: required exactly for row-level releases."""
        if not self.row_level_output:
            if output is not None:
                raise ParameterError(
                    f"output ({output!r}): {name} releases statistics, not rows; leave it unset"
                )
            return None
        if output is None:
            raise ParameterError(
                f"output (None): {name} releases one row per input row; give a folder to "
                "write them to (partitioned Parquet)"
            )
        return new_folder(output, "output")

    def _check_fitted(self) -> Release:
        release = getattr(self, "release_", None)
        if release is None:
            raise NotFittedError(f"{type(self).__name__} is not fitted: call fit(df) first")
        return release

    @property
    def guarantee(self) -> Guarantee:
        """The guarantee of the fitted release."""
        return self._check_fitted().guarantee

    def output_table(self) -> pd.DataFrame | None:
        """The table a file workflow writes for the fitted release (default: its data).

        Post-processing of the release: it reads nothing of the private table."""
        return self._check_fitted().data

    def guarantee_fields(self) -> dict[str, Any]:
        """What the release's guarantee file carries beside the guarantee (default: nothing)."""
        return {}

    def get_params(self) -> dict[str, Any]:
        """The constructor parameters (scikit-learn style)."""
        import inspect

        names = [p for p in inspect.signature(type(self).__init__).parameters if p != "self"]
        return {p: getattr(self, p) for p in names}

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items() if k != "schema")
        return f"{type(self).__name__}({params})"


class _PublisherSteps:
    """How a publisher plans, scans and releases, for :func:`ppdp.release.run_release`."""

    def __init__(self, publisher: Publisher) -> None:
        self.publisher = publisher
        self.name = type(publisher).__name__
        self.random_state = publisher.random_state
        self.output: Any = None
        self.released: Release | None = None
        self._source: Any = None
        self.frame: Any = None  # the partitioned table as scanned and released (bounded)
        self._dry_run = False
        self._declared: Schema | None = None  # an auto unit's schema, while k is chosen

    @contextlib.contextmanager
    def validated(self) -> Iterator[None]:
        pub = self.publisher
        try:
            with pub._params_once():
                yield
        finally:
            if self._declared is not None:  # the declared max_rows: auto, after the run
                pub.schema = self._declared
                self._declared = None

    def table(self, data: Any, options: ReleaseOptions) -> InMemoryTable | PartitionedTable:
        from ppdp.data.distributed import is_distributed

        pub = self.publisher
        pub._check_fit_arguments()
        self._dry_run = options.dry_run
        if is_distributed(data):
            if not pub.supports_distributed:
                raise ParameterError(
                    f"{self.name} does not accept a Dask DataFrame or a Parquet dataset; read "
                    "the table into a pandas DataFrame"
                )
            pub._check_partitioned()
            self.output = pub._check_output(options.output, self.name)
            return PartitionedTable(data, pub.schema, scheduler=options.scheduler)
        for name, value in (("scheduler", options.scheduler), ("output", options.output)):
            if value is not None:
                raise ParameterError(
                    f"{name} ({value!r}) is for a Dask DataFrame or a Parquet dataset; "
                    f"df is a {type(data).__name__}, processed in memory"
                )
        return InMemoryTable(data, _public_row_count(data))

    def plan(self, table: Any) -> list[Charge]:
        if table.rows is None:
            return self.publisher._validate_params(None)
        n_rows = self.publisher._public_rows(table.rows)
        charges = self.publisher._validate_params(n_rows)
        _warn_delta_of_rows(charges, n_rows)
        return charges

    def source(self) -> RandomSource:
        self._source = resolve_random_state(self.publisher.random_state)
        return self._source

    def check(self, accountant: Accountant, charges: list[Charge], key: str | None) -> None:
        check_charges(accountant, charges, mechanism=self.name, idempotency_key=key)

    def _choose_max_rows(self, table: Any, on_invalid: str) -> None:
        """``max_rows: auto``: draw ``k`` (before the bounding's keys) and make the
        publisher calibrate to it for the rest of the run (``docs/proofs/privacy-unit.md``
        §5). A dry run draws nothing: it plans for ``auto.upper``."""
        pub = self.publisher
        unit = pub.schema.privacy_unit
        if unit is None or not unit.is_auto or self._dry_run:
            return
        frame = table.frame if table.partitioned else table.data
        if unit.column not in getattr(frame, "columns", ()):
            return  # the bounding refuses it in one line
        resolved = resolve(
            pub.schema,
            frame[unit.column],
            self._source,
            relation=pub._relation(),
            on_invalid=on_invalid,
            scheduler=getattr(table, "scheduler", None),
        )
        self._declared = pub.schema
        pub.schema = resolved
        if FIT_PARAMS_KEY in pub.__dict__:  # validate afresh with the chosen k
            pub.__dict__[FIT_PARAMS_KEY] = None
        if table.partitioned:
            table.schema = resolved

    def scan(self, table: Any, on_invalid: str, on_scan: Any) -> Any:
        pub = self.publisher
        self._choose_max_rows(table, on_invalid)
        if not table.partitioned:  # each person's rows bounded first (privacy unit)
            bounded = pub._bounded(table.data, self._source, on_invalid)
            return pub._encode(pub.checked_table(bounded), on_invalid=on_invalid)
        self.frame, bounding = pub._bounded_frame(table.frame, self._source, on_invalid)
        scan = table.scan(
            include_label=pub._distributed_include_label(),
            on_invalid=on_invalid,
            partition_fn=pub._shipped()._partition_statistics,
            frame=pub.checked_table(self.frame),
            partition_rows=pub._partition_reads_rows(),
        )
        pub._log_bounding(bounding, table.scheduler)
        if on_scan is not None:
            on_scan(scan)
        pub._check_scan(scan, on_invalid)
        return scan

    def rows_scanned(self, scan: Any) -> int:
        return int(scan.n_rows) if hasattr(scan, "n_rows") else int(scan[0].shape[0])

    def replan(self, table: Any, scan: Any, charges: list[Charge]) -> list[Charge]:
        if not table.partitioned:
            if self._declared is not None:  # calibrated to the chosen max_rows now
                return self.publisher._validate_params(None)
            return charges
        n_rows = self.publisher._public_rows(scan.n_rows)
        charges = self.publisher._validate_params(n_rows)
        _warn_delta_of_rows(charges, n_rows)
        return charges

    def unaccounted(self, source: RandomSource) -> None:
        """A publisher's unaccounted release is said in the log only."""

    def release(
        self, table: Any, scan: Any, source: RandomSource, charges: list[Charge], output: Any
    ) -> Guarantee:
        pub = self.publisher
        own = [c for c in charges if not is_choice(c)]  # the publisher's own charges
        if table.partitioned:
            released = pub._release_distributed(
                self.frame, scan, source, own, scheduler=table.scheduler, output=self.output
            )
        else:
            X, y = scan
            released = pub._release(X, y, source, own)
        unit = pub.schema.privacy_unit
        if unit is not None and unit.chosen:
            released = dataclasses.replace(
                released, guarantee=with_choice(released.guarantee, unit)
            )
        self.released = released
        return released.guarantee

    def finish(self, records: tuple[Any, ...], seeded: bool) -> None:
        assert self.released is not None
        self.publisher._finish(self.released, list(records), seeded)
