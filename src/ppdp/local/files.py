"""The local collector's file workflows: what ``ppdp local report|estimate`` do.

:func:`report_values_file` perturbs one column of a respondent's CSV file and sends it to a
collector, journaled beside the file so that a rerun sends exactly what was not delivered;
:func:`report_lines` says what happened. :func:`estimate_file` reconstructs the
distribution from a collector's totals into ``OUT.csv`` and its guarantee ``OUT.json``,
checking both outputs before anything is read. See ``docs/local-collector.md``.

Examples
--------
>>> from ppdp.local.files import report_values_file, report_lines
>>> run = report_values_file("values.csv", config="client.yaml",  # doctest: +SKIP
...                          server="https://collector.example")
>>> print("\\n".join(report_lines(run)))  # doctest: +SKIP
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ppdp.exceptions import ParameterError

__all__ = [
    "LocalReportRun",
    "estimate_file",
    "parse_harmonics",
    "report_lines",
    "report_values_file",
]

PathLike = str | os.PathLike[str]

#: The equal bins over the declared domain of an additive randomizer's estimate by default.
DEFAULT_BINS = 50
#: The methods that use ``harmonics`` (additive randomizers only).
FOURIER_METHODS = ("fourier", "em-fourier")


@dataclass(frozen=True)
class LocalReportRun:
    """What :func:`report_values_file` did.

    Attributes
    ----------
    result : ReportResult
        The collector client's result (reports sent, delivered, already counted, ...).
    journal, state : Path or str
        The client-side journal of perturbed reports, and the client's report marker.
    column, survey : str
        The column reported and the survey it was reported to.
    """

    result: Any
    journal: PathLike
    state: PathLike
    column: str
    survey: str


def report_values_file(
    values: PathLike,
    *,
    config: PathLike,
    server: str,
    column: str | None = None,
    batch_size: int = 5000,
    random_state: Any = None,
    journal: PathLike | None = None,
    state: PathLike | None = None,
    again: bool = False,
) -> LocalReportRun:
    """Perturb the values of ``column`` of ``values`` (a CSV file) here and send them.

    ``journal`` defaults to ``VALUES.report-journal`` (``VALUES.COLUMN.report-journal`` with
    ``column``), ``state`` to the client key's path + ``.reports.json``. The other
    parameters are :func:`ppdp.local.collector.report`'s.
    """
    from ppdp.local.collector import (
        CollectorConfig,
        default_state_path,
        read_values,
        report,
        value_column,
    )

    data = read_values(values, column=column)
    name = value_column(values, column=column)
    if journal is None:
        journal = f"{values}{'' if column is None else f'.{column}'}.report-journal"
    cfg = CollectorConfig.from_file(config)
    state = state or default_state_path(cfg.require_client().key)
    result = report(
        config=cfg,
        server=server,
        values=data,
        batch_size=batch_size,
        random_state=random_state,
        journal=journal,
        column=name,
        state=state,
        again=again,
    )
    return LocalReportRun(result, journal, state, name, cfg.survey)


def report_lines(run: LocalReportRun) -> list[str]:
    """What ``ppdp local report`` prints about a run, one line per item."""
    r, lines = run.result, []
    if r.again:
        lines.append(
            f"report {r.reports_of_column} of column {run.column!r} of survey "
            f"{run.survey!r} by this client (--again): the guarantees compose, each report "
            f"spends the local guarantee again (recorded in {run.state})"
        )
    if r.batches == 0:
        return [
            *lines,
            f"all {r.total} reports of the journal {run.journal} were already delivered; "
            "nothing sent (a new journal would perturb the values again and spend their "
            "guarantee a second time)",
        ]
    if r.already:
        lines.append(
            f"resumed the journal {run.journal}: {r.already} of {r.total} reports had "
            "been delivered before"
        )
    again = f" ({r.duplicates} already counted by the collector)" if r.duplicates else ""
    lines.append(
        f"sent {r.sent} perturbed reports in {r.batches} batch(es){again}; "
        f"delivered {r.delivered} of {r.total}; the collector now holds {r.count}"
    )
    return lines


def parse_harmonics(text: str) -> int | str:
    """``"auto"`` or a positive integer, from the text of ``--harmonics``.

    Raises
    ------
    ParameterError
        Anything else (one line naming the value and what is allowed).
    """
    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        raise ParameterError(f"harmonics ({text!r}) must be 'auto' or a positive integer") from None
    if value < 1:
        raise ParameterError(f"harmonics ({value}) must be 'auto' or >= 1")
    return value


def _design_options(
    cfg: Any, method: str | None, bins: int | None, harmonics: int | str | None
) -> dict[str, Any]:
    """The ``bins`` and ``harmonics`` that the design and method use; refuse the others.

    A characteristic-vector randomizer's estimate has one bin per region of its own domain,
    so it takes neither; among additive methods only the Fourier ones take ``harmonics``.
    A ``method`` that does not fit the design is left to
    :func:`ppdp.local.collector.estimate_totals` to refuse.
    """
    from ppdp.local.collector import Aggregator
    from ppdp.local.collector._estimate import ADDITIVE_METHODS, CHARACTERISTIC_METHODS

    agg = Aggregator.from_config(cfg)
    if agg.kind == "characteristic":
        if (method or "auto") not in CHARACTERISTIC_METHODS:
            return {}
        why = (
            "a characteristic-vector randomizer: its own domain fixes the estimate's bins (one "
            f"per region, {int(agg.randomizer.k)})"
        )
        if bins is not None:
            raise ParameterError(
                f"bins ({bins!r}) does not apply to {why}; leave bins (--bins) out"
            )
        if harmonics is not None:
            raise ParameterError(
                f"harmonics ({harmonics!r}) does not apply to {why} and no Fourier step; leave "
                "harmonics (--harmonics) out"
            )
        return {}
    method = method or "em"
    if method not in ADDITIVE_METHODS:
        return {}
    options: dict[str, Any] = {"bins": DEFAULT_BINS if bins is None else bins}
    if method in FOURIER_METHODS:
        options["harmonics"] = "auto" if harmonics is None else harmonics
    elif harmonics is not None:
        raise ParameterError(
            f"harmonics ({harmonics!r}) is used only by method 'fourier' or 'em-fourier', not "
            f"by {method!r}; leave harmonics (--harmonics) out or choose one of those methods"
        )
    return options


def estimate_file(
    *,
    config: PathLike,
    output: PathLike,
    server: str | None = None,
    store: PathLike | None = None,
    method: str | None = None,
    bins: int | None = None,
    harmonics: int | str | None = None,
    delta: float | None = None,
    force: bool = False,
) -> tuple[Any, Path]:
    """Reconstruct the distribution into ``output`` (CSV) and its guarantee ``OUT.json``.

    Parameters
    ----------
    config : path
        The collector's config (YAML or JSON): its randomizer decides the design.
    output : path
        The estimate (CSV); the guarantee goes to ``OUT.json`` beside it. Both are checked
        first (not an input, not an existing file unless ``force``).
    server, store : optional
        Exactly one: a running collector's URL, or its SQLite store.
    method : str, optional
        See :func:`ppdp.local.collector.estimate_totals` (default ``"em"`` for an additive
        randomizer, ``"auto"`` for a characteristic-vector one).
    bins : int, optional
        Equal bins over the declared domain, additive randomizers only; None means
        :data:`DEFAULT_BINS` (50). Refused for a characteristic-vector randomizer, whose
        own domain fixes the bins.
    harmonics : int or "auto", optional
        Fourier harmonics, for methods ``"fourier"`` and ``"em-fourier"`` only; None means
        ``"auto"`` there. Refused for any other method (it would be ignored).
    delta : float, optional
        The δ at which the guarantee is stated.
    force : bool, default False
        Replace an existing ``output`` and ``OUT.json``.

    Returns
    -------
    tuple
        The :class:`~ppdp.local.collector.CollectorEstimate` and the guarantee file's path.

    Raises
    ------
    ParameterError
        An output that may not be written, or ``bins`` / ``harmonics`` given where the
        design or method does not use them (before the collector is contacted).
    """
    from ppdp._io import check_output
    from ppdp.local.collector import CollectorConfig, estimate

    out = Path(output)
    if out.suffix.lower() == ".json":
        raise ParameterError(f"--output ({str(out)!r}) must not end in .json (that is the sidecar)")
    side = out.with_suffix(".json")
    db = [] if store is None else [store, f"{store}-wal", f"{store}-shm"]
    check_output(
        out,
        sidecars=[("--output's guarantee file", side)],
        inputs=[("config", config), *(("collector's store", p) for p in db)],
        force=force,
    )
    cfg = CollectorConfig.from_file(config)
    options = _design_options(cfg, method, bins, harmonics)
    result = estimate(
        config=cfg, server=server, store=store, method=method, delta=delta, output=output, **options
    )
    return result, side
