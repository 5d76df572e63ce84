"""File-level release for the CLI: THETA.json + TRACE.csv → OUT.json (written atomically).

THETA.json::

    {"states": ["active", "still", ...],          # optional, default 0..k-1
     "transitions": [[[p11, p12, ...], ...], ...], # one or more k×k row-stochastic matrices
     "initials": null}                             # or one entry per matrix: [q1..qk] or null

``null`` initial laws are unconstrained (the worst case over initial laws is protected).

TRACE.csv: one column with a header line (any name), one state per line, in time order.
Values are matched against the declared states as text (``"1"`` matches state ``1``).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from ppdp._io import atomic_path, check_output, ledger_files, write_error
from ppdp.correlated._release import CorrelatedRelease
from ppdp.correlated.markov import MarkovChainClass
from ppdp.correlated.mqm import MarkovQuiltMechanism
from ppdp.data.draft import detect_separator
from ppdp.exceptions import DataValidationError, ParameterError

__all__ = ["load_theta", "read_trace", "release_trace_file"]

logger = logging.getLogger(__name__)


def load_theta(path: str | Path) -> MarkovChainClass:
    """Read Θ from THETA.json (format in the module docstring)."""
    p = Path(path)
    if p.is_dir():
        raise ParameterError(f"theta file ({str(p)!r}) is a folder, not a file")
    if not p.exists():
        raise ParameterError(f"theta file ({str(p)!r}) does not exist")
    try:
        obj = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ParameterError(f"theta file ({str(p)!r}) is not valid JSON: {exc.msg}") from exc
    except RecursionError:
        raise ParameterError(f"theta file ({str(p)!r}) is nested too deeply") from None
    return MarkovChainClass.from_dict(obj)


def read_trace(path: str | Path, theta: MarkovChainClass) -> np.ndarray:
    """Read TRACE.csv (one column, header line) as declared states (unknown ones kept as None).

    Every line after the header is one time step: an empty or blank line is refused, not
    skipped (skipping it would join two steps that are not adjacent, so the trace would no
    longer follow a chain of Θ, and its length T sets the noise)."""
    p = Path(path)
    if not p.exists() and not p.is_dir():
        raise ParameterError(f"trace file ({str(p)!r}) does not exist")
    try:
        df = pd.read_csv(p, dtype=str, keep_default_na=False, skip_blank_lines=False)
    except pd.errors.EmptyDataError as exc:
        raise DataValidationError(f"trace file ({str(p)!r}) is empty") from exc
    if df.shape[1] != 1:
        raise DataValidationError(
            f"trace file ({str(p)!r}) must have exactly one column, not {df.shape[1]}"
        )
    sep = detect_separator(p)
    if sep not in (None, ","):  # one column read by commas: the header holds several
        shown = "a tab" if sep == "\t" else repr(sep)
        raise DataValidationError(
            f"trace file ({str(p)!r}): its header {str(df.columns[0])!r} looks like several "
            f"columns separated by {shown}; a trace file has exactly one column, the state "
            "of each time step, one per line"
        )
    by_text = {str(s): s for s in theta.states}
    col = df.iloc[:, 0].str.strip()
    blank = np.flatnonzero(col.to_numpy() == "")
    if blank.size:
        lines = ", ".join(str(i + 2) for i in blank[:5]) + (" …" if blank.size > 5 else "")
        many = blank.size > 1
        raise DataValidationError(
            f"trace file ({str(p)!r}) has {blank.size} empty entr{'ies' if many else 'y'} "
            f"(line{'s' if many else ''} {lines}): a trace needs the state of every time "
            "step; skipping one would join steps that are not adjacent"
        )
    out = np.empty(len(col), dtype=object)
    out[:] = [by_text.get(v) for v in col]
    return out


def release_trace_file(
    *,
    theta: str | Path,
    trace: str | Path,
    output: str | Path,
    epsilon: float,
    method: Literal["exact", "approx"] = "exact",
    query: Literal["histogram"] = "histogram",
    ledger: str | Path | None = None,
    seed: int | None = None,
    allow_seeded: bool = False,
    force: bool = False,
) -> CorrelatedRelease:
    """Release the histogram of a trace with MQM and write OUT.json atomically.

    The output is checked first (a writable folder, not an input, not an existing file
    unless ``force``), then the parameters (ε, Θ, method, a ``seed`` with a ``ledger`` only
    with ``allow_seeded``) before the trace is read; the ledger (if any) is checked before
    and charged after the trace is validated; nothing is written when anything fails before
    the spend. A write that fails after it (disk full) raises
    :class:`~ppdp._io.OutputWriteError`: the spend stands.
    """
    from ppdp.accounting import Accountant
    from ppdp.random import refuse_seeded

    out = check_output(
        output,
        param="output",
        inputs=[("theta file", theta), ("trace", trace), *ledger_files(ledger)],
        force=force,
    )
    if ledger is not None:
        refuse_seeded(seed is not None, allow_seeded=allow_seeded, param="seed", value=seed)
    if query != "histogram":
        raise ParameterError(f"query ({query!r}) must be 'histogram'")
    th = load_theta(theta)
    mech = MarkovQuiltMechanism(epsilon, th, method=method)
    acct = Accountant.open_existing(ledger) if ledger is not None else None
    try:
        if acct is not None:
            acct.check(mech.budget, mechanism=mech.name)
        seq = read_trace(trace, th)
        rel = mech.release(
            seq, "histogram", random_state=seed, accountant=acct, allow_seeded=allow_seeded
        )
    finally:
        if acct is not None:
            acct.close()
    doc: dict[str, Any] = {
        "states": [s if isinstance(s, int | str) else str(s) for s in th.states],
        "histogram": dict(
            zip([str(s) for s in th.states], [float(v) for v in rel.value], strict=True)
        ),
        **rel.to_dict(),
        "ledger": None if ledger is None else str(ledger),
    }
    try:
        with atomic_path(out) as tmp:
            tmp.write_text(json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False))
    except OSError as exc:
        charged = (
            f"ε={epsilon!r} in {ledger}, entry {rel.ledger_index}"
            if ledger is not None
            else f"ε={epsilon!r}, unrecorded"
        )
        raise write_error(exc, out, charged=charged) from exc
    return rel
