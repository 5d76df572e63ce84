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

__all__ = ["guarantee_lines", "ledger_total", "receipt_lines", "replace_one_equivalent"]


def replace_one_equivalent(guarantee: Any) -> str | None:
    """What an add/remove guarantee is worth under replace-one, in words (None otherwise).

    Replacing a record is removing it and adding another: two add/remove steps. By group
    privacy of size 2, an (ε, δ)-DP add/remove mechanism is (2ε, (1 + e^ε)·δ)-DP under
    replace-one, an ε-DP one 2ε-DP, and a ρ-zCDP one 4ρ-zCDP. These are bounds: a
    mechanism may do better under replace-one, never worse. So an add/remove ε is worth
    about twice a replace-one ε when comparing releases.

    Parameters
    ----------
    guarantee : Guarantee
        A release's :class:`~ppdp.budget.Guarantee`.

    Returns
    -------
    str or None
        ``"≈ (2ε, (1+e^ε)δ) = (2, 3.718e-09) under replace-one"`` and the like; None
        unless the guarantee is a DP or zCDP guarantee under add/remove.

    Examples
    --------
    >>> from ppdp.budget import Guarantee
    >>> replace_one_equivalent(Guarantee.approx(1, 1e-9, relation="add/remove"))
    '≈ (2ε, (1+e^ε)δ) = (2, 3.718e-09) under replace-one'
    >>> replace_one_equivalent(Guarantee.pure(0.5, relation="add/remove"))
    '≈ 2ε = 1 under replace-one'
    >>> replace_one_equivalent(Guarantee.pure(0.5, relation="replace-one")) is None
    True
    """
    import math

    from ppdp.budget import GuaranteeKind, Neighbouring

    if guarantee.relation is not Neighbouring.ADD_REMOVE:
        return None
    kind, eps, delta = guarantee.kind, guarantee.epsilon, guarantee.delta
    if kind is GuaranteeKind.ZCDP and guarantee.rho is not None:
        return f"≈ 4ρ = {4 * guarantee.rho:.4g} (ρ-zCDP) under replace-one"
    if kind not in (GuaranteeKind.PURE, GuaranteeKind.APPROX) or eps is None:
        return None
    if not delta:
        return f"≈ 2ε = {2 * eps:.4g} under replace-one"
    grown = (1.0 + math.exp(eps)) * delta if eps < 700 else math.inf
    return f"≈ (2ε, (1+e^ε)δ) = ({2 * eps:.4g}, {grown:.4g}) under replace-one"


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
    also = replace_one_equivalent(guarantee)
    lines = [f"{label}: {guarantee.summary()}" + (f"; {also}" if also else "")]
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
