"""Budget ledger files: what ``ppdp budget init|show`` and ``ppdp ledger anchor`` do.

:func:`init_budget_ledger` creates a dataset's ledger (never over an existing one);
:func:`format_budget_report` is the text of ``ppdp budget show`` (:func:`release_history`,
its rows one per release); :func:`anchor_ledger`
verifies a ledger, signs an anchor of its head and records it in the anchor registry.

Examples
--------
>>> from ppdp.accounting.files import init_budget_ledger
>>> line = init_budget_ledger("adult.ledger", dataset_id="adult", epsilon=4.0)  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ppdp.budget import PrivacyBudget, budget_number, remaining_number
from ppdp.exceptions import ParameterError

__all__ = [
    "HistoryRow",
    "anchor_ledger",
    "format_budget_report",
    "init_budget_ledger",
    "release_history",
]


def init_budget_ledger(
    path: str | os.PathLike[str],
    *,
    dataset_id: str,
    epsilon: float,
    delta: float = 0.0,
    relation: str = "replace-one",
    composition: str = "basic",
    anchor: str | None = None,
    allow_large_epsilon: bool = False,
) -> str:
    """Create the budget ledger of ``dataset_id`` at ``path``; return the line that says so.

    Refuses an existing ``path`` (a budget is never re-initialised) and a total ``epsilon``
    above 10 unless ``allow_large_epsilon`` (the limit every release has: a larger total
    is a weak guarantee for the dataset); the other checks are
    :meth:`ppdp.accounting.Accountant.open`'s, made before anything is written (among them:
    ``composition`` ``"pld"`` or ``"rdp"`` needs a ``delta`` > 0, the target δ at which
    every spend is composed).
    """
    from ppdp._validation import MAX_DEFAULT_EPSILON, check_bool
    from ppdp.accounting import Accountant

    path = Path(path)
    if path.exists():
        raise ParameterError(f"ledger ({path}) already exists; a budget is never re-initialised")
    large = isinstance(epsilon, int | float) and epsilon > MAX_DEFAULT_EPSILON
    if large and not check_bool("allow_large_epsilon", allow_large_epsilon):
        raise ParameterError(
            f"epsilon ({budget_number(epsilon)}) of the dataset's total budget must be at most "
            f"{MAX_DEFAULT_EPSILON:g}, the limit of every release: a larger total is a weak "
            "guarantee; pass allow_large_epsilon=True to accept it"
        )
    with Accountant.open(
        path,
        dataset_id=dataset_id,
        total=PrivacyBudget(epsilon, delta),
        relation=relation,
        anchor=anchor,
        composition=composition,
    ) as acct:
        how = "" if acct.composition == "basic" else f", {acct.composition} composition"
        return (
            f"created budget ledger {path} for dataset {acct.dataset_id!r}: total {acct.total}, "
            f"{acct.relation.value}{how}"
        )


def anchor_ledger(
    path: str | os.PathLike[str],
    *,
    key: str | os.PathLike[str] | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    anchor: str | None = None,
    record: bool = True,
) -> tuple[Any, str]:
    """Verify the ledger at ``path`` and sign an anchor of its head with ``key``.

    ``key`` defaults to the key beside the ledger (``LEDGER.key``). The anchor is recorded
    as the dataset's latest in the default anchor registry unless ``record`` is false.
    Returns the :class:`~ppdp.ledger.Anchor` and where it was recorded, in words.
    """
    from ppdp.accounting import key_path_for
    from ppdp.ledger import AnchorRegistry, Ledger, load_private_key

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"ledger file {path} does not exist")
    key_file = Path(key) if key else key_path_for(path)
    if not key_file.is_file():
        raise ParameterError(
            f"--key ({key_file}) does not exist; pass the signing key of a signer the ledger pins"
        )
    registry = AnchorRegistry.default()
    with Ledger.open(
        path,
        signer=load_private_key(key_file),
        checkpoint=checkpoint,
        anchor=anchor,
        anchor_registry=registry,
    ) as led:
        signed = led.anchor()
    where = "not recorded (--no-record)"
    if record:
        where = f"recorded in {registry.record(signed, ledger_path=path)}"
    return signed, where


def _budget(b: PrivacyBudget) -> str:
    return f"ε={budget_number(b.epsilon)}, δ={budget_number(b.delta)}"


def _fact(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _unit_text(spends: Any) -> str:
    """What the ledger's spends protect: its first spend's privacy unit (docs/proofs/
    privacy-unit.md), or single rows."""
    unit = spends[0].details.get("privacy_unit") if spends else None
    if not spends:
        return "not fixed yet (the first spend fixes it: single rows, or a privacy unit)"
    if not isinstance(unit, dict) or "column" not in unit:
        return "single rows"
    return f"persons of column {unit['column']!r} (each release bounds their rows)"


def _head_lines(report: Any) -> list[str]:
    v = report.verification
    lines = [
        # the chain's length counts its header record too: not the number of spends below
        f"ledger:    {report.path} (verified: a chain of {v.length} records, the header "
        f"included; head {v.head_hash[:16]}…)",
        f"dataset:   {report.dataset_id}",
        f"relation:  {report.relation.value} ({report.composition} composition)",
        f"unit:      {_unit_text(report.spends)}",
        f"total:     {_budget(report.total)}",
    ]
    if report.composition == "basic":
        return [
            *lines,
            f"spent:     {_budget(report.spent)}",
            f"remaining: ε={remaining_number(report.remaining.epsilon, report.total.epsilon)}, "
            f"δ={remaining_number(report.remaining.delta, report.total.delta)}",
        ]
    # a composed ε at the target δ: not a sum, so the headroom is not additive either
    target = budget_number(report.total.delta)
    return [
        *lines,
        f"spent:     ε={budget_number(report.spent.epsilon)} at δ={target} "
        f"(every spend composed, {report.composition})",
        f"remaining: ε={remaining_number(report.remaining.epsilon, report.total.epsilon)} "
        "of headroom at δ="
        f"{target} (whether a release fits is decided by composing it)",
    ]


def _could_still_line(report: Any) -> str:
    from ppdp.accounting import last_release_records

    last = last_release_records(report.spends)
    count = report.could_still_release
    more = f"{count:,}" if count < 100_000 else "at least 100,000"
    what = (
        f"entry {last[0].index}: {last[0].mechanism}"
        if len(last) == 1
        else f"entries {last[0].index}-{last[-1].index}"
    )
    return (
        f"what you could still release: {more} more like the last release ({what}) "
        f"under {report.composition} composition"
    )


def _spend_facts(report: Any, i: int, running: list[Any], *, verbose: bool) -> list[str]:
    """The lines under spend ``i`` in ``ppdp budget show``: its recorded facts (``verbose``),
    its event with the total so far, and the entry that records its release."""
    spend = report.spends[i]
    lines = []
    if verbose and spend.details:
        lines.append("; ".join(f"{k}: {_fact(v)}" for k, v in spend.details.items()))
    if spend.event is not None:
        t = running[i]
        lines.append(
            f"event: {spend.event.describe()}; total so far ({report.composition}): "
            f"ε={budget_number(t.epsilon)}, δ={budget_number(t.delta)}"
        )
    released = getattr(report, "releases", {}).get(spend.index)
    if released is not None:  # its own entry, so the spend indices skip it
        key = f" (idempotency key {spend.idempotency_key!r})" if spend.idempotency_key else ""
        lines.append(f"released: entry {released} records this release{key}")
    return lines


@dataclass(frozen=True)
class HistoryRow:
    """One release in a budget ledger's history (:func:`release_history`).

    Attributes
    ----------
    entries : tuple of int
        The ledger indices of its spend entries (a release charged in parts has several).
    time : str
        The ISO 8601 UTC time of its first entry.
    method : str
        The mechanism charged (``GroupByPublisher``), with its parts where it has several
        (``GroupByPublisher: counts; sums of age``).
    spent : PrivacyBudget
        The (ε, δ) its entries charged, added up (under PLD / RDP each entry's own (ε, δ),
        not what it added to the composed total).
    relation : str
        The neighbouring relation of the charge (``replace-one``).
    unit : str
        What it protects: ``per row``, or ``per person (pid, ≤ 5 rows each)``.
    left : PrivacyBudget
        What the ledger had left after it (:attr:`BudgetReport.left`).
    seeded : bool
        Whether any of its entries used a seeded, reproducible stream (not for production).
    facts : tuple of str
        The lines ``ppdp budget show -v`` prints under its entries.
    """

    entries: tuple[int, ...]
    time: str
    method: str
    spent: PrivacyBudget
    relation: str
    unit: str
    left: PrivacyBudget
    seeded: bool
    facts: tuple[str, ...]


def _spend_unit(details: dict[str, Any]) -> str:
    unit = details.get("privacy_unit")
    if not isinstance(unit, dict) or "column" not in unit:
        return "per row"
    return f"per person ({unit['column']}, ≤ {unit.get('max_rows')} rows each)"


def _method(records: Any) -> str:
    names = [r.mechanism.split(": ", 1) for r in records]
    head = names[0][0]
    if len(records) == 1 or any(n[0] != head for n in names):
        return "; ".join(r.mechanism for r in records)
    return f"{head}: " + "; ".join(n[1] if len(n) > 1 else n[0] for n in names)


def release_history(report: Any) -> list[HistoryRow]:
    """A verified ledger's history, one row per release (entries charged in parts are
    one release, :func:`ppdp.accounting.release_groups`), in ledger order: what ``ppdp
    budget show -v`` prints, as rows (``ppdp ui``'s ledger screen).

    ``report``: a :class:`~ppdp.accounting.BudgetReport`.
    """
    from ppdp.accounting import release_groups

    running = list(report.running) or [report.spent] * len(report.spends)
    left = list(report.left) or [report.remaining] * len(report.spends)
    where = {s.index: i for i, s in enumerate(report.spends)}
    rows = []
    for group in release_groups(report.spends):
        last = where[group[-1].index]
        spent = PrivacyBudget(0.0)
        for r in group:
            spent = spent + r.budget
        facts: list[str] = []
        for r in group:
            facts += [f"entry {r.index}: {r.mechanism}"]
            facts += _spend_facts(report, where[r.index], running, verbose=True)
        row = HistoryRow(
            entries=tuple(r.index for r in group), time=group[0].time, method=_method(group),
            spent=spent, relation=group[0].relation.value, unit=_spend_unit(group[0].details),
            left=left[last], seeded=any(r.seeded for r in group), facts=tuple(facts),
        )  # fmt: skip
        rows.append(row)
    return rows


def format_budget_report(report: Any, *, verbose: bool = False) -> str:
    """The text ``ppdp budget show`` prints for a :class:`~ppdp.accounting.BudgetReport`.

    ``verbose``: each spend's recorded facts too.
    """
    lines = [*_head_lines(report), ""]
    if not report.spends:
        return "\n".join([*lines, "no spends yet"])
    running = list(report.running) or [report.spent] * len(report.spends)
    # under PLD/RDP the columns are each event's own (ε, δ), not what it added to the total
    head = ("ε", "δ") if report.composition == "basic" else ("event ε", "event δ")
    rows = [("index", "time", "mechanism", *head, "seeded")]
    rows += [
        (
            str(s.index),
            s.time,
            s.mechanism,
            budget_number(s.epsilon),
            budget_number(s.delta),
            "yes" if s.seeded else "no",
        )
        for s in report.spends
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    pad = " " * (widths[0] + 2)
    for i, r in enumerate(rows):
        cells = [r[0].rjust(widths[0])] + [
            c.ljust(w) for c, w in zip(r[1:], widths[1:], strict=True)
        ]
        lines.append("  ".join(cells).rstrip())
        if i > 0:
            lines += [pad + t for t in _spend_facts(report, i - 1, running, verbose=verbose)]
    lines.append(f"{len(report.spends)} spends")
    if report.could_still_release is not None:
        lines.append(_could_still_line(report))
    return "\n".join(lines)
