"""A controlled audit in words: what ``ppdp audit`` prints.

:func:`audit_lines` is the table of the mechanism's and its half-noise control's ε lower
bounds; :func:`audit_failure` the one line that says why an audit did not succeed (None when
the mechanism passed and the control failed, as it must).

Examples
--------
>>> from ppdp.audit import audit_with_control
>>> from ppdp.audit.summary import audit_failure, audit_lines
>>> outcome = audit_with_control("laplace", n_measure=10_000, random_state=0)  # doctest: +SKIP
>>> print("\\n".join(audit_lines(outcome)))  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

__all__ = ["audit_failure", "audit_lines"]


def audit_lines(outcome: Any) -> list[str]:
    """The audit of a :class:`~ppdp.audit.ControlledAudit` as a small table, one line each."""
    r, c = outcome.result, outcome.control
    return [
        f"ppdp audit {outcome.mechanism}: {r.n_measure:,} fresh draws per side, "
        f"α = {r.alpha:g} per audit",
        f"  {'':22}{'claimed ε':>10}{'ε lower bound':>15}  verdict",
        f"  {'mechanism':22}{r.claimed_epsilon:>10g}{r.epsilon_lower_bound:>15.4f}  "
        f"{'pass' if r.passed else 'FAIL'}",
        f"  {'control (½ noise)':22}{c.claimed_epsilon:>10g}{c.epsilon_lower_bound:>15.4f}  "
        f"{'pass' if c.passed else 'fail (as it must)'}",
        f"  event: {r.event}",
    ]


def audit_failure(outcome: Any, *, epsilon: float) -> str | None:
    """Why the audit of ``outcome`` (claimed ``epsilon``) did not succeed; None if it did."""
    if not outcome.control_failed:
        return (
            "the half-noise control passed the audit: the audit has no power here and is "
            "broken (raise --draws)"
        )
    r = outcome.result
    if not r.passed:
        return (
            f"{outcome.mechanism} FAILED its audit: the lower bound {r.epsilon_lower_bound:.4f} "
            f"exceeds the claimed epsilon {epsilon:g} (false-positive probability ≤ {r.alpha:g})"
        )
    return None
