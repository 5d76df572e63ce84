"""What a release says when it is done: its guarantee, where it was charged, and whether it
was seeded (what ``ppdp publish``, ``train``, ``correlated`` and ``local`` print).

Examples
--------
>>> from ppdp.accounting.receipt import receipt_lines
>>> receipt_lines("adult.ledger", [3, 4], seeded=False)
['charged in adult.ledger (entries 3, 4)']
>>> receipt_lines(None, [], seeded=True)
['note: --seed was given, so the noise is reproducible and NOT fit for a real release']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["guarantee_lines", "ledger_total", "receipt_lines"]


def guarantee_lines(
    guarantee: Any, *, verbose: int = 0, label: str = "guarantee", full_in: Any = None
) -> list[str]:
    """A release's guarantee: its one-line summary, and the full statement when ``verbose``.

    Parameters
    ----------
    guarantee : Guarantee
        The release's :class:`~ppdp.budget.Guarantee`. One with no formal guarantee (kind
        ``none``) always gets its full statement: the reason is the message.
    verbose : int, default 0
        Nonzero: the full statement too.
    label : str, default "guarantee"
        What the first line calls it.
    full_in : path, optional
        The file holding the full statement (a release's sidecar), named on a second line
        when the full text is not given.

    Returns
    -------
    list of str
    """
    lines = [f"{label}: {guarantee.summary()}"]
    if verbose or not guarantee.is_private:
        lines.append(f"  in full: {guarantee}")
    elif full_in is not None:
        lines.append(f"  in full in {full_in} (or add -v)")
    return lines


def ledger_total(state: Any) -> str:
    """``ledger total ε=2, δ=1e-09 (basic composition)``: everything charged so far.

    Parameters
    ----------
    state : Accountant
        The ledger's accountant (or its state), read before it is closed; the total is
        composed under the ledger's own composition.

    Returns
    -------
    str
    """
    from ppdp.budget import budget_number

    g = state.guarantee
    delta = f", δ={budget_number(g.delta)}" if g.delta > 0 else ""
    return f"ledger total ε={budget_number(g.epsilon)}{delta} ({state.composition} composition)"


def receipt_lines(
    ledger: Any,
    indices: Sequence[int],
    *,
    seeded: bool,
    state: Any = None,
    replayed: bool = False,
) -> list[str]:
    """A release's closing lines: where it was charged, and a note when it was seeded.

    Parameters
    ----------
    ledger : path or None
        The ledger the release was charged in (None: none).
    indices : sequence of int
        The ledger entries of the release.
    seeded : bool
        Whether the noise came from a given seed.
    state : Accountant, optional
        The ledger's state, for its total (:func:`ledger_total`).
    replayed : bool, default False
        Whether the release retried a charge made under its idempotency key by a run that
        died before releasing: nothing was charged this time.

    Returns
    -------
    list of str
    """
    lines = []
    if ledger is not None and indices:
        word = "entry" if len(indices) == 1 else "entries"
        total = "" if state is None else f"; {ledger_total(state)}"
        where = f"{ledger} ({word} {', '.join(map(str, indices))})"
        if replayed:
            lines.append(
                f"NOT charged again: a retry of the charge in {where} under its idempotency "
                f"key (that run died before releasing){total}"
            )
        else:
            lines.append(f"charged in {where}{total}")
    if seeded:
        lines.append(
            "note: --seed was given, so the noise is reproducible and NOT fit for a real release"
            + (" (--allow-seeded is recorded in the ledger)" if ledger else "")
        )
    return lines
