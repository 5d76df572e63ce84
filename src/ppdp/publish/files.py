"""Publishing a table file: what ``ppdp publish`` does, for a Python caller.

:func:`publish_table_file` builds the publisher registered under the method's name
(:data:`ppdp.registry.PUBLISHERS`; its parameters are validated before the data are
read), checks the budget in the dataset's ledger, reads the table, ``fit``\\ s through the
ledger (check, validate the data, spend, release), then writes the table and its
``OUT.guarantee.json`` atomically. Invalid input writes nothing and spends nothing.

A Parquet dataset (a folder or a glob) or a Dask DataFrame goes through
:func:`publish_dataset` instead (the folder helpers are :mod:`ppdp.publish.parquet_files`'s):
one validating scan inside ``fit``, and the release written as a folder of Parquet parts
with ``_SUCCESS``, its guarantee beside it.

Examples
--------
>>> from ppdp.publish.files import publish_table_file
>>> result = publish_table_file(  # doctest: +SKIP
...     "pca", "adult.csv", schema="adult.schema.json", output="adult.dp.csv",
...     epsilon=1.0, options={"n_components": 3}, ledger="adult.ledger")
>>> result.guarantee.summary()  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ppdp.budget import Neighbouring
from ppdp.exceptions import ParameterError
from ppdp.release import WorkflowOptions

__all__ = [
    "TABLE_SUFFIXES",
    "PublishResult",
    "build_publisher",
    "encode_report",
    "planned_remaining",
    "publish_table_file",
    "say_corrections",
    "say_imputed",
    "sidecar_for",
    "sidecar_text",
    "warn_clipping",
    "warn_crowded_features",
    "write_table",
]

TABLE_SUFFIXES = (".csv", ".csv.gz", ".parquet")
#: A column with more than this share of its values clipped to the declared bounds warns.
CLIP_WARN_SHARE = 0.05
#: Flags every run carries (with a default) that the methods without them ignore.
_IGNORED_ELSEWHERE = frozenset({"--class-sizes"})


def _parse_counts(text: Any) -> list[int] | None:
    """``"34014,11208"`` -> ``[34014, 11208]``; None (and a list) stays as it is."""
    if text is None or not isinstance(text, str):
        return text  # type: ignore[no-any-return]
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise ParameterError(
            f"--class-counts ({text!r}) must be comma-separated integers, one per class"
        ) from None


#: Flag values given as text on the command line, parsed once the method takes them.
_PARSE: dict[str, Callable[[Any], Any]] = {"--class-counts": _parse_counts}


def build_publisher(
    method: str,
    *,
    epsilon: float,
    schema: Any,
    random_state: Any = None,
    allow_large_epsilon: bool = False,
    options: Mapping[str, Any] | None = None,
) -> Any:
    """The publisher registered as ``method`` (its parameters are validated when it is fitted).

    ``options`` holds the method-specific options, keyed by their ``ppdp publish`` flag
    (``"--components"``) or by the constructor parameter (``"n_components"``); ``None``
    keeps the default. One given to a method that does not take it is refused in one line,
    as is a method's required option left out.
    """
    from ppdp.registry import PUBLISHERS

    entry = PUBLISHERS.entry(method)
    by_param = {p: f for e in PUBLISHERS.entries() for f, p in e.flags.items()}
    given = {by_param.get(k, k): v for k, v in (options or {}).items() if v is not None}
    for flag, value in given.items():
        if flag not in entry.flags and flag not in _IGNORED_ELSEWHERE:
            owners = " and ".join(PUBLISHERS.owners(flag))
            if not owners:
                raise ParameterError(f"{flag} ({value}) is not an option of any method")
            raise ParameterError(f"{flag} ({value}) applies to {owners} only, not {method}")
    for flag, what in entry.required.items():
        if flag not in given:
            raise ParameterError(f"{flag} (not given) is required for {method}: {what}")
    kwargs = {
        entry.flags[f]: _PARSE.get(f, lambda v: v)(v) for f, v in given.items() if f in entry.flags
    }
    if allow_large_epsilon:
        kwargs["allow_large_epsilon"] = True
    return entry.load()(epsilon=epsilon, schema=schema, random_state=random_state, **kwargs)


def encode_report(schema: Any, df: Any, *, on_invalid: str = "raise") -> Any:
    """The custodian's :class:`~ppdp.data.EncodeReport` of ``df`` (not logged, not released)."""
    from ppdp.data.encoding import encode

    return encode(schema, df, log=False, on_invalid=on_invalid)[2]  # type: ignore[arg-type]


def warn_clipping(schema: Any, report: Any, say: Any) -> None:
    """One warning line per column with more than 5 % of its values clipped (custodian-side)."""
    from ppdp.data.schema_files import bounds_text

    n = int(report.n_rows)
    if n < 1:
        return
    for col in schema.numeric_columns:
        k = int(report.clipped.get(col.name, 0))
        if k / n > CLIP_WARN_SHARE:
            say(
                f"warning: column {col.name!r}: {k:,} of {n:,} values ({k / n:.1%}) lie outside "
                f"the declared bounds {bounds_text(col)} and were clipped; widen "
                "the bounds in the schema if they are public knowledge"
            )


def say_corrections(schema: Any, report: Any, say: Any) -> None:
    """What the encoding corrected in the custodian's table: clipped values
    (:func:`warn_clipping`) and filled missing values (:func:`say_imputed`)."""
    warn_clipping(schema, report, say)
    say_imputed(schema, report, say)


#: A numeric feature with at least this share of its values strictly inside the lowest
#: sixteenth of its declared range is crowded near 0 for a learner (custodian-side warning).
CROWDED_SHARE = 0.5


def warn_crowded_features(schema: Any, X: Any, say: Any) -> None:
    """One warning line per linear numeric feature whose encoded values crowd into the
    lowest sixteenth of [0, 1] (values at the bound itself excluded): a skewed column
    declared on a wide range, which a learner barely sees (custodian-side). A date column,
    which takes no log scale, is told to declare bounds closer to its dates."""
    import numpy as np

    from ppdp.data.schema_files import bounds_text

    n = len(X)
    if n < 1:
        return
    for col in schema.numeric_columns:
        if col.scale != "linear":
            continue
        u = X[:, schema.blocks[col.name].start]
        share = float(np.count_nonzero((u > 0.0) & (u < 1.0 / 16))) / n
        if share >= CROWDED_SHARE:
            fix = (
                "declare a lower bound closer to its dates, if public"
                if col.date
                else "declare 'scale: log' for it in the schema (or bounds closer to the "
                "values, if public)"
            )
            say(
                f"warning: column {col.name!r}: {share:.0%} of its values lie in the lowest "
                f"sixteenth of its declared range {bounds_text(col)}, so the model sees them "
                f"crowded near 0; {fix}"
            )


def say_imputed(schema: Any, report: Any, say: Any) -> None:
    """One line naming the missing values filled with the schema's impute constants, a
    warning when a column had more than 5 % of them (custodian-side)."""
    from ppdp.data.schema_files import impute_text

    n = int(report.n_rows)
    filled = {name: int(k) for name, k in report.imputed.items() if k}
    if n < 1 or not filled:
        return
    parts = ", ".join(f"{name!r}: {k:,} ({k / n:.1%})" for name, k in filled.items())
    say(f"filled missing values with the schema's impute constants: {parts}")
    for name, k in filled.items():
        if k / n > CLIP_WARN_SHARE:
            say(
                f"warning: column {name!r}: {k / n:.1%} of its values were missing and all "
                f"show its impute constant ({impute_text(schema.column(name))}) in the release, "
                "which distorts that column's distribution; if missing is common, a category "
                "of its own for it says more (map the missing token to it before the release)"
            )


def warn_identifiers(schema: Any, df: Any, say: Any) -> None:
    """One warning line per declared feature that looks like an identifier (custodian-side)."""
    from ppdp.data.schema_files import identifier_warnings

    for line in identifier_warnings(schema, df):
        say(f"warning: {line}")


def planned_remaining(acct: Any, charges: list[Any]) -> Any:
    """What the accountant would have left once ``charges`` are spent (None: refused)."""
    if acct is None:
        return None
    from ppdp.accounting.events import Composed

    events = tuple(e for c in charges for e in c.events)
    return acct.remaining_after(events[0] if len(events) == 1 else Composed(events=events))


def write_table(
    df: Any, path: Path, *, name: str | None = None, sep: str = ",", decimal: str = "."
) -> None:
    """Write ``df`` to ``path`` as CSV (gzip if ``name`` ends in .gz) or Parquet.

    ``name`` is the final file name (``path`` may be a temporary file whose name says
    nothing about the format); default ``path.name``. ``sep`` and ``decimal``: a CSV's
    separator and decimal mark (:func:`ppdp._io.check_csv_format` checks them).
    """
    from ppdp.exceptions import OptionalDependencyError

    low = (name or path.name).lower()
    if low.endswith(".parquet"):
        try:
            df.to_parquet(path, index=False)
        except ImportError as exc:
            raise OptionalDependencyError(
                "writing Parquet needs pyarrow: pip install 'ppdp[dask]'"
            ) from exc
    else:
        compression = "gzip" if low.endswith(".gz") else None
        df.to_csv(path, index=False, compression=compression, sep=sep, decimal=decimal)


def spreadsheet_dates(table: Any, schema: Any, sep: str, decimal: str) -> Any:
    """``table`` as a CSV for a spreadsheet writes it: with an ``output_sep`` or an
    ``output_decimal`` other than ``,`` and ``.`` (a European export), the dates of each
    date column that declares a ``date_format`` are written in it, as the data were
    (``14.03.2021``), not ISO; else (and for a column without one) ``table`` itself.
    Post-processing of released values; the result reads back with the same schema."""
    from ppdp.data.dates import written_as

    if (sep, decimal) == (",", "."):
        return table
    formats = {
        c.name: c.date_format
        for c in schema.numeric_columns
        if c.date and c.date_format is not None and c.name in table.columns
    }
    if not formats:
        return table
    table = table.copy()
    for name, fmt in formats.items():
        table[name] = written_as(table[name], fmt)
    return table


def sidecar_for(out: Path) -> Path:
    """Where a release's guarantee goes: ``OUT.guarantee.json``.

    For a partitioned release (a folder ``OUT/``) it lies *beside* the folder, not inside:
    ``release/`` -> ``release.guarantee.json``.
    """
    return out.with_name(out.name + ".guarantee.json")


def sidecar_text(
    method: str,
    release: Any,
    ledger: Any,
    extra: Mapping[str, Any],
    *,
    rows: int | None = None,
    folder: bool = False,
) -> str:
    """The JSON of a release's guarantee file (``folder``: a partitioned Parquet release)."""
    content: dict[str, Any] = {
        "method": method,
        "guarantee": release.guarantee.to_dict(),
        "ledger": None if ledger is None else str(ledger),
        "ledger_indices": list(release.ledger_indices),
        "seeded": release.seeded,
        **extra,
    }
    if folder:
        content["format"] = "parquet-dataset"
        content["rows"] = rows
    return json.dumps(content, indent=2, ensure_ascii=False, allow_nan=False)


@dataclass(frozen=True)
class LedgerState:
    """The ledger as it stood when the run closed it: composed total and what is left."""

    guarantee: Any
    composition: str
    remaining: Any


@dataclass(frozen=True)
class PublishResult:
    """What :func:`publish_table_file` did (or, for a dry run, would do).

    Attributes
    ----------
    path, sidecar : Path
        The release and its ``.guarantee.json`` (not written by a dry run).
    publisher : Publisher
        The publisher, fitted unless a dry run.
    table : DataFrame or None
        The table written (None for a dry run).
    cost : PrivacyBudget
        The release's declared cost.
    ledger : LedgerState or None
        The ledger after the run (None without one).
    charges, report, after : optional
        Dry run: the planned charges, the custodian's encoding report, and what the ledger
        would have left (None: refused or no ledger).
    rows_written : int or None
        The rows in the output (a partitioned release: from its ``_SUCCESS`` marker, where
        ``len(table)`` would read the whole folder); None for a dry run.
    """

    path: Path
    sidecar: Path
    publisher: Any
    table: Any
    cost: Any
    ledger: LedgerState | None
    n_rows: int
    dry_run: bool = False
    charges: Any = None
    report: Any = None
    after: Any = None
    rows_written: int | None = None

    @property
    def release(self) -> Any:
        """The publisher's ``release_`` (None for a dry run)."""
        return getattr(self.publisher, "release_", None) if not self.dry_run else None


def _charged(ledger: Any, release: Any, cost: Any) -> str:
    if ledger is None:
        return f"{cost}, recorded nowhere: no --ledger"
    return f"{cost} in {ledger}, entries {', '.join(map(str, release.ledger_indices))}"


def prepare_publisher(
    method: str,
    *,
    schema: Any,
    epsilon: float,
    options: Mapping[str, Any] | None,
    run: WorkflowOptions,
    scope: contextlib.ExitStack,
) -> tuple[Any, Any, Any, str | None]:
    """Refuse a seeded ledger release, load the schema, build and validate the publisher.

    The publisher's parameters are validated once, here, for the whole run: ``scope`` holds
    :meth:`~ppdp.publish.Publisher.validated` until the workflow ends. Returns the schema
    (a :class:`~ppdp.data.Schema`), the publisher, its cost and its low-utility message
    (already said as one line), all before the data are read or anything is spent.
    """
    from ppdp.data import Schema
    from ppdp.random import refuse_seeded

    random_state = run.random_state
    if run.ledger is not None:
        seeded = random_state is not None and not getattr(random_state, "is_secure", False)
        refuse_seeded(seeded, allow_seeded=run.allow_seeded, value=random_state)
    schema = schema if isinstance(schema, Schema) else Schema.from_file(schema)
    publisher = build_publisher(
        method,
        epsilon=epsilon,
        schema=schema,
        random_state=random_state,
        allow_large_epsilon=run.allow_large_epsilon,
        options=options,
    )
    scope.enter_context(publisher.validated())
    cost = publisher.privacy_budget()  # validates every parameter before the data are read
    low = getattr(publisher, "low_utility_message", None)
    message = low() if low is not None else None
    if message:  # said before anything is spent, from public quantities
        run.tell(f"warning: LowUtilityWarning: {message}")
    return schema, publisher, cost, message


def check_budget(acct: Any, publisher: Any, cost: Any, *, out: Path, run: WorkflowOptions) -> None:
    """Refuse a retry of a written release and a spend the ledger cannot take (or say that
    nothing will be recorded: a dry run's summary says it instead), before the data are
    read."""
    from ppdp.accounting import check_charges, refuse_released_retry

    refuse_released_retry(acct, run.idempotency_key, out)
    if acct is not None:
        check_charges(
            acct,
            publisher.planned_charges(),
            mechanism=type(publisher).__name__,
            idempotency_key=run.idempotency_key,
        )
    elif not run.dry_run:
        run.tell(f"warning: no --ledger given; the spend of {cost} is not recorded anywhere")


@dataclass(frozen=True)
class _Prepared:
    """A workflow's checked output and its built publisher, before the ledger is opened."""

    out: Path
    side: Path
    schema: Any
    publisher: Any
    cost: Any
    message: str | None

    def ignore_said(self) -> None:
        """Inside ``warnings.catch_warnings()``: leave out the warnings already said (the
        seeded noise, and the low-utility message said as one line before the spend)."""
        from ppdp.exceptions import InsecureRandomnessWarning, LowUtilityWarning

        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        if self.message:
            warnings.filterwarnings("ignore", re.escape(self.message), LowUtilityWarning)

    def dry_run(self, acct: Any, n_rows: int, charges: list[Any], report: Any) -> PublishResult:
        """The result of a dry run: what the run would charge, and leave."""
        return PublishResult(
            path=self.out,
            sidecar=self.side,
            publisher=self.publisher,
            table=None,
            cost=self.cost,
            ledger=_ledger_state(acct),
            n_rows=n_rows,
            dry_run=True,
            charges=charges,
            report=report,
            after=planned_remaining(acct, charges),
        )


def _ledger_state(acct: Any) -> LedgerState | None:
    return None if acct is None else LedgerState(acct.guarantee, acct.composition, acct.remaining)


def _prepare(
    method: str,
    data: Any,
    *,
    check: Callable[..., Any],
    schema: Any,
    output: str | os.PathLike[str],
    epsilon: float,
    options: Mapping[str, Any] | None,
    run: WorkflowOptions,
    scope: contextlib.ExitStack,
) -> _Prepared:
    """Every output check (``check``: a file's or a folder's), then the publisher built and
    validated: before anything is read or spent (DESIGN.md contract 6)."""
    from ppdp._io import ledger_files

    out = Path(os.fspath(output))
    side = sidecar_for(out)
    check(
        out,
        sidecars=[("--output's guarantee file", side)],
        inputs=[
            ("data", data if isinstance(data, str | os.PathLike) else None),
            ("schema", schema if isinstance(schema, str | os.PathLike) else None),
            *ledger_files(run.ledger),
        ],
        force=run.force,
    )
    schema, publisher, cost, message = prepare_publisher(
        method, schema=schema, epsilon=epsilon, options=options, run=run, scope=scope
    )
    return _Prepared(out, side, schema, publisher, cost, message)


@contextlib.contextmanager
def _ledger_checked(prepared: _Prepared, run: WorkflowOptions) -> Iterator[Any]:
    """The ledger opened, the idempotency key claimed (held until the release is recorded)
    and the budget checked; yields the accountant (None without a ledger), closed on exit."""
    from ppdp.accounting import Accountant, claim_key

    acct = Accountant.open_existing(run.ledger) if run.ledger else None
    claim = claim_key(acct, run.idempotency_key)
    try:
        claim.acquire()
        check_budget(acct, prepared.publisher, prepared.cost, out=prepared.out, run=run)
        yield acct
    finally:
        claim.release()
        if acct is not None:
            acct.close()


def publish_table_file(
    method: str,
    data: str | os.PathLike[str],
    *,
    schema: Any,
    output: str | os.PathLike[str],
    epsilon: float,
    options: Mapping[str, Any] | None = None,
    ledger: str | os.PathLike[str] | None = None,
    random_state: Any = None,
    allow_seeded: bool = False,
    allow_large_epsilon: bool = False,
    idempotency_key: str | None = None,
    force: bool = False,
    sep: str | None = None,
    encoding: str = "utf-8",
    dry_run: bool = False,
    say: Callable[[str], None] | None = None,
    scheduler: Any = None,
    output_sep: str = ",",
    output_decimal: str = ".",
) -> PublishResult:
    """Publish a private table file with ``method``, as ``ppdp publish`` does.

    Runs in the order every release follows: every output check (a writable folder, not an
    input, not an existing file unless ``force``), the publisher's parameters, the budget
    against ``ledger``, then the table is read, ``fit`` records the spend and releases,
    and the table and its guarantee (``OUT.guarantee.json``) are written together
    atomically. An error before the spend costs nothing and writes nothing; a write that
    fails after it raises :class:`~ppdp._io.OutputWriteError` and the spend stands.

    Parameters
    ----------
    method : str
        A name of :data:`ppdp.registry.PUBLISHERS` (``pca``, ``lda-synth``,
        ``lda-projection``, ``laplace``, ``exponential``, ``synth``).
    data : path or dask DataFrame
        The private table (``.csv``, ``.csv.gz``, ``.parquet``), or a table larger than
        memory: a folder of Parquet files, a glob (``"data/*.parquet"``) or a Dask
        DataFrame, processed partition by partition (the ``dask`` extra; see
        :mod:`ppdp.publish.parquet_files`). A single ``.parquet`` file is read into memory
        unless ``scheduler`` is given.
    schema : Schema or path
        The declared schema.
    output : path
        The release (``.csv``, ``.csv.gz`` or ``.parquet``). For a distributed input it is
        a folder, written as partitioned Parquet (``part-00000.parquet``, ..., and
        ``_SUCCESS``), with the guarantee in ``OUT.guarantee.json`` beside it.
    epsilon : float
        ε spent by this release.
    options : mapping, optional
        Method-specific options keyed by flag or parameter name (see :func:`build_publisher`).
    ledger : path, optional
        The dataset's budget ledger; without one the spend is recorded nowhere.
    random_state : int, optional
        Reproducible noise for experiments (NOT for real releases); refused with a ledger
        unless ``allow_seeded``.
    dry_run : bool, default False
        Run every check of a real run, then stop before the spend: the result's ``charges``,
        ``report`` and ``after`` describe the run; nothing is spent or written.
    say : callable, optional
        Called with each progress or warning line for the custodian (the CLI's stderr).
    scheduler : optional
        Where a distributed input is processed (``ppdp publish --scheduler``): ``None``
        or ``"local"`` (a ``LocalCluster`` on this machine), ``"tcp://host:8786"``, a
        ``distributed.Client``, or a Dask local scheduler (``"threads"``, ``"sync"``).
        An address that cannot be reached is refused in one line before the spend.
    output_sep, output_decimal : str, default "," and "."
        The separator and decimal mark of a CSV output (``";"`` and ``","`` for a
        spreadsheet set to a European locale); checked by :func:`ppdp._io.check_csv_format`
        before anything is read or spent. The report reads either back.

    Returns
    -------
    PublishResult
    """
    import functools

    from ppdp._io import check_csv_format, check_output
    from ppdp.publish.parquet_files import check_folder_output, distributed_input

    run = WorkflowOptions(
        ledger=ledger,
        random_state=random_state,
        allow_seeded=allow_seeded,
        allow_large_epsilon=allow_large_epsilon,
        idempotency_key=idempotency_key,
        force=force,
        dry_run=dry_run,
        scheduler=scheduler,
        say=say,
    )
    output_sep, output_decimal = check_csv_format(output, output_sep, output_decimal)
    distributed = distributed_input(data, scheduler)
    in_file = functools.partial(check_output, suffixes=TABLE_SUFFIXES)
    check = check_folder_output if distributed else in_file
    with contextlib.ExitStack() as scope:
        p = _prepare(
            method, data, check=check, schema=schema, output=output, epsilon=epsilon,
            options=options, run=run, scope=scope,
        )  # fmt: skip
        if distributed:
            return publish_dataset(method, data, p, run)
        return _publish_file(
            method, data, p, run, sep=sep, encoding=encoding, output_sep=output_sep,
            output_decimal=output_decimal,
        )  # fmt: skip


def _publish_file(
    method: str,
    data: str | os.PathLike[str],
    p: _Prepared,
    run: WorkflowOptions,
    *,
    sep: str | None,
    encoding: str,
    output_sep: str,
    output_decimal: str,
) -> PublishResult:
    """:func:`publish_table_file` for a file read into memory, once ``p`` is prepared."""
    from ppdp._io import atomic_paths, write_error
    from ppdp.data.draft import read_table

    ledger, say, tell = run.ledger, run.say, run.tell
    schema, publisher, cost, out = p.schema, p.publisher, p.cost, p.out
    with _ledger_checked(p, run) as acct:
        tell(f"reading {data}")
        wanted = (*schema.data_columns, *schema.open_column_names)
        df = read_table(data, columns=wanted, sep=sep, encoding=encoding, say_unread=True)
        on_invalid = acct.on_invalid if acct is not None else "raise"
        if run.dry_run:
            tell(f"{_rows(df, publisher)}; checking the data (dry run: nothing is spent)")
            with warnings.catch_warnings():
                p.ignore_said()
                charges = list(publisher.run(df, run.release_options(acct)).charges)
        checked = publisher.checked_table(df)  # a group-by: the columns it reads only
        report = encode_report(schema, checked, on_invalid=on_invalid)
        say_corrections(schema, report, tell)
        warn_identifiers(schema, checked, tell)
        if run.dry_run:
            return p.dry_run(acct, len(df), charges, report)
        tell(f"{_rows(df, publisher)}; checking the data and releasing ({method}, {cost})")
        caught: list[warnings.WarningMessage] = []
        try:
            # With ``say`` (the CLI) a warning of the fit is one ``say`` line, also when the
            # fit failed; without it, warnings reach the caller as warnings.
            with warnings.catch_warnings(record=say is not None) as recorded:
                if recorded is not None:
                    caught = recorded
                    warnings.simplefilter("always")
                p.ignore_said()
                publisher.run(df, run.release_options(acct))
        finally:
            for w in caught:
                tell(f"warning: {w.category.__name__}: {' '.join(str(w.message).split())}")
        if publisher.bounding_summary:  # privacy unit: the custodian's line
            tell(publisher.bounding_summary)
        state = _ledger_state(acct)
    release = publisher.release_
    table = publisher.output_table()
    if table is None:  # pragma: no cover - every table publisher releases data
        raise RuntimeError(f"{method} released no table")
    sidecar = sidecar_text(method, release, ledger, publisher.guarantee_fields())
    tell(f"writing {out}")
    try:
        with atomic_paths(p.side, out) as (tmp_side, tmp_out):
            tmp_side.write_text(sidecar, encoding="utf-8")
            written = spreadsheet_dates(table, schema, output_sep, output_decimal)
            write_table(written, tmp_out, name=out.name, sep=output_sep, decimal=output_decimal)
    except OSError as exc:
        raise write_error(exc, out, charged=_charged(ledger, release, cost)) from exc
    return PublishResult(
        path=out,
        sidecar=p.side,
        publisher=publisher,
        table=table,
        cost=cost,
        ledger=state,
        n_rows=len(df),
        rows_written=len(table),
    )


def publish_dataset(method: str, data: Any, p: _Prepared, run: WorkflowOptions) -> PublishResult:
    """:func:`publish_table_file` for a Parquet dataset or a Dask DataFrame, once ``p`` is
    prepared (every output check, the publisher's parameters).

    The same order as for a file: whether the method takes a distributed table, the budget;
    then one validating scan (inside ``fit``; the clipping warnings come from its counts),
    the spend, the release, the rows written partition by partition into a hidden folder,
    the guarantee file beside it, and the folder renamed into place. Returns a
    :class:`~ppdp.publish.files.PublishResult` whose ``table`` is a lazy Dask DataFrame of
    the folder and ``rows_written`` its rows.
    """
    import shutil

    from ppdp._io import write_error
    from ppdp.data.distributed import DaskRunError, dask_session, open_table
    from ppdp.publish.parquet_files import (
        _write_rows,
        folder_rows,
        move_into_place,
        readback,
        staging_folder,
        writes_rows,
    )

    ledger, tell = run.ledger, run.tell
    schema, publisher, cost, out = p.schema, p.publisher, p.cost, p.out
    path_in = data if isinstance(data, str | os.PathLike) else None
    how = writes_rows(publisher, method)  # refused before the ledger is opened
    staged = staging_folder(out)
    with _ledger_checked(p, run) as acct:
        try:
            open_table(data, schema)  # the files' footers, before a cluster is started
            local_default = path_in is not None
            with (
                dask_session(run.scheduler, default_local_cluster=local_default) as sched,
                warnings.catch_warnings(),
            ):
                p.ignore_said()
                scan_note = publisher.scan_note
                note = "" if run.dry_run or scan_note is None else f" ({scan_note})"
                tell(f"scanning {data if path_in is not None else 'the Dask DataFrame'}{note}")
                scanned: list[Any] = []

                def on_scan(scan: Any) -> None:
                    scanned.append(scan)
                    say_corrections(schema, scan.report, tell)

                release_options = run.release_options(
                    acct,
                    scheduler=sched,
                    output=staged if how == "fit" else None,
                    on_scan=on_scan,
                )
                try:
                    result = publisher.run(data, release_options)
                except OSError as exc:
                    if not scanned or run.dry_run:  # reading the data failed: nothing spent
                        raise
                    # The scan passed, so the spend was recorded; the rows' write failed.
                    where = f"in {ledger}" if ledger is not None else "recorded nowhere"
                    raise write_error(exc, out, charged=f"{cost} {where}") from exc
                n_rows = result.n_rows
                if publisher.bounding_summary:  # privacy unit: the custodian's line
                    tell(publisher.bounding_summary)
                if run.dry_run:
                    tell(f"{rows_text(n_rows, publisher)} checked (dry run: nothing is spent)")
                    return p.dry_run(acct, n_rows, list(result.charges), result.report)
                state = _ledger_state(acct)
                release = publisher.release_
                tell(f"{rows_text(n_rows, publisher)} released ({method}, {cost}); writing {out}")
                try:
                    if how != "fit":
                        _write_rows(publisher, method, staged, n_rows, scheduler=sched)
                    written = folder_rows(staged)
                    text = sidecar_text(
                        method,
                        release,
                        ledger,
                        publisher.guarantee_fields(),
                        rows=written,
                        folder=True,
                    )
                    move_into_place(staged, out, [(p.side, text)])
                except OSError as exc:
                    raise write_error(exc, out, charged=_charged(ledger, release, cost)) from exc
                except DaskRunError as exc:  # the rows' write, on a cluster that failed
                    raise DaskRunError(
                        f"{exc}; ε was charged ({_charged(ledger, release, cost)}) and nothing "
                        "was released: the charge stands"
                    ) from None
        finally:
            shutil.rmtree(staged, ignore_errors=True)
    return PublishResult(
        path=out,
        sidecar=p.side,
        publisher=publisher,
        table=readback(publisher, out),
        cost=cost,
        ledger=state,
        n_rows=n_rows,
        rows_written=written,
    )


def _rows(df: Any, publisher: Any) -> str:
    """The row count of a progress line (the custodian's), marked when ``n`` is private."""
    return rows_text(len(df), publisher)


def rows_text(n: int, publisher: Any) -> str:
    """``n`` rows for a progress line (the custodian's), marked custodian-only when the
    publisher's relation keeps ``n`` private (add/remove): the line is for the custodian's
    terminal or log, never for whoever chose the release."""
    relation = getattr(publisher, "relation", Neighbouring.REPLACE_ONE)
    private = Neighbouring.parse(relation) is Neighbouring.ADD_REMOVE  # checked already
    note = " (custodian only: n is private under add/remove)" if private else ""
    if getattr(getattr(publisher, "schema", None), "privacy_unit", None) is not None:
        note = " (custodian only: n is private under a privacy unit)"
    return f"{n:,} rows{note}"
