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

__all__ = ["LocalReportRun", "estimate_file", "report_lines", "report_values_file"]

PathLike = str | os.PathLike[str]


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


def estimate_file(
    *,
    config: PathLike,
    output: PathLike,
    server: str | None = None,
    store: PathLike | None = None,
    method: str | None = None,
    bins: int = 50,
    harmonics: int | str = "auto",
    delta: float | None = None,
    force: bool = False,
) -> tuple[Any, Path]:
    """Reconstruct the distribution into ``output`` (CSV) and its guarantee ``OUT.json``.

    Both outputs are checked first (not an input, not an existing file unless ``force``).
    The other parameters are :func:`ppdp.local.collector.estimate`'s. Returns the
    estimate and the guarantee file's path.
    """
    from ppdp._io import check_output
    from ppdp.local.collector import estimate

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
    result = estimate(
        config=config,
        server=server,
        store=store,
        method=method,
        bins=bins,
        harmonics=harmonics,
        delta=delta,
        output=output,
    )
    return result, side
