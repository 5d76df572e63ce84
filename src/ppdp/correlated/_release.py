"""The release object and the check → validate → spend → add-noise flow of ``ppdp.correlated``."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ppdp import noise
from ppdp.accounting import (
    Accountant,
    Charge,
    charge,
    check_charges,
    claim_key,
    record_keyed_release,
)
from ppdp.accounting.events import EpsilonDelta, Pufferfish
from ppdp.budget import Guarantee, PrivacyBudget
from ppdp.exceptions import ParameterError, ParameterTypeError
from ppdp.mechanisms.grid import (
    as_query_value,
    check_scale,
    effective_sensitivity,
    snap_and_add_noise,
)
from ppdp.random import RandomSource, RandomState, refuse_seeded, resolve_random_state

__all__ = ["CorrelatedRelease", "Query", "release_sequence"]

logger = logging.getLogger(__name__)

#: A query maps the encoded trace (state indices 0..k-1) to a real vector.
Query = Callable[[NDArray[np.int64]], Any]


@dataclass(frozen=True)
class CorrelatedRelease:
    """What a correlated-data release published, and what it promises.

    Attributes
    ----------
    value : ndarray of float64
        The noisy query answer (for ``"histogram"``: the relative frequency of each
        declared state, in the order of ``theta.states``).
    noise_scale : float
        The Laplace scale actually used per coordinate (``L·σ_max`` plus the grid slack).
    guarantee : Guarantee
        ε-Pufferfish (or ε-DP for group DP), with the secrets, Θ and the model-in-Θ caveat.
    details : dict
        JSON-safe facts: mechanism, method, T, σ_max, the worst node and its quilt, L, ...
    ledger_index : int or None
        The ledger entry that charged for it (None without an accountant).
    seeded : bool
        True when the noise came from a reproducible seed (not fit for a real release).
    """

    value: NDArray[np.float64]
    noise_scale: float
    guarantee: Guarantee
    details: dict[str, Any] = field(default_factory=dict)
    ledger_index: int | None = None
    seeded: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (the CLI's output)."""
        return {
            "value": [float(x) for x in np.asarray(self.value).ravel()],
            "noise_scale": self.noise_scale,
            "guarantee": self.guarantee.to_dict(),
            "guarantee_text": str(self.guarantee),
            "details": self.details,
            "ledger_index": self.ledger_index,
            "seeded": self.seeded,
        }


def histogram(codes: NDArray[np.int64], k: int) -> NDArray[np.float64]:
    """Relative frequency of each state (changing one node moves it by ≤ 2/T in L1)."""
    return np.bincount(codes, minlength=k).astype(np.float64) / codes.size


def grid_scale(lipschitz: float, sigma: float, dimension: int) -> tuple[float, float]:
    """``(b, Λ)``: Laplace scale ``b ≥ (L + d·Λ)·σ`` exactly, on the grid Λ of ``L·σ``.

    Why: for the chosen quilt of each node, ``card/(ε − e) ≤ σ`` and ``card ≥ 1``; snapping
    adds at most ``d·Λ`` to the L1 change, so ``(L·card + dΛ)/(ε − e) ≤ (L + dΛ)·σ = b``.
    """
    ideal = check_scale("noise scale", lipschitz * sigma, what="lipschitz·σ_max")
    lam = noise.granularity(ideal)
    eff = effective_sensitivity(lipschitz, lam, dimension=dimension, norm="l1")
    b = eff * sigma
    while Fraction(b) < Fraction(eff) * Fraction(sigma):
        b = math.nextafter(b, math.inf)
    return check_scale("noise scale", b, what="(L + d·Λ)·σ_max"), lam


def add_noise(
    flat: NDArray[np.float64], scale: float, lam: float, source: RandomSource
) -> NDArray[np.float64]:
    """``snap(v, Λ) + Lap(scale)`` per coordinate on the grid Λ (the audit reuses this path).

    The step itself is :func:`ppdp.mechanisms.grid.snap_and_add_noise`, shared with the
    mechanisms.
    """
    return snap_and_add_noise(flat, granularity=lam, scale=scale, source=source, law="laplace")


def release_sequence(
    *,
    name: str,
    epsilon: float,
    sigma_of: Callable[[int], float],
    encode: Callable[[Any], NDArray[np.int64]],
    k: int,
    lipschitz: float,
    guarantee_of: Callable[[dict[str, Any]], Guarantee],
    facts_of: Callable[[int], dict[str, Any]],
    sequence: Any,
    query: str | Query,
    random_state: RandomState,
    accountant: Accountant | None,
    allow_seeded: bool = False,
    pufferfish: bool = True,
    idempotency_key: str | None = None,
) -> CorrelatedRelease:
    """Check the budget, validate the trace, charge, then add noise (in this order).

    The ledger records a :class:`~ppdp.accounting.events.Pufferfish` event (only a
    ``basic`` ledger takes it: Pufferfish has no composition theorem), or, with
    ``pufferfish=False`` (group DP), an ε-DP :class:`~ppdp.accounting.events.EpsilonDelta`.
    """
    if accountant is not None and not isinstance(accountant, Accountant):
        raise ParameterTypeError(
            f"accountant ({type(accountant).__name__}) must be a ppdp.accounting.Accountant"
        )
    if isinstance(query, str):
        if query != "histogram":
            raise ParameterError(f"query ({query!r}) must be 'histogram' or a callable")
    elif not callable(query):
        raise ParameterTypeError(f"query ({query!r}) must be 'histogram' or a callable")
    if not hasattr(sequence, "__len__") or isinstance(sequence, str | bytes):
        raise ParameterTypeError(
            f"sequence ({type(sequence).__name__}) must be a 1-D sequence of states"
        )
    T = len(sequence)  # the length of the trace is public (secrets are values, not presence)
    if T < 1:
        raise ParameterError("sequence is empty; a trace needs at least one state")
    L = 2.0 / T if query == "histogram" else lipschitz
    sigma = sigma_of(T)
    if not math.isfinite(sigma):
        raise ParameterError(f"{name} is not applicable to this Θ at T = {T}: nothing released")
    budget = PrivacyBudget(epsilon)
    event = (
        Pufferfish(epsilon=budget.epsilon, mechanism=name)
        if pufferfish
        else EpsilonDelta(epsilon=budget.epsilon)
    )
    with claim_key(accountant, idempotency_key):  # from the check to the record
        source = resolve_random_state(random_state)
        seeded = not source.is_secure
        if accountant is not None:
            refuse_seeded(seeded, allow_seeded=allow_seeded, value=random_state)
            check_charges(
                accountant, Charge(event, name), mechanism=name, idempotency_key=idempotency_key
            )
        codes = encode(sequence)
        if query == "histogram":
            raw = histogram(codes, k)
        else:
            raw, _ = as_query_value(query(codes), name="query(sequence)")
        flat = np.asarray(raw, dtype=np.float64).reshape(-1)
        scale, lam = grid_scale(L, sigma, flat.size)
        facts = {
            "T": T,
            "sigma_max": sigma,
            "lipschitz": L,
            "query": "histogram"
            if query == "histogram"
            else getattr(query, "__name__", "callable"),
            "noise_scale": scale,
            "granularity": lam,
            "dimension": int(flat.size),
            **facts_of(T),
        }
        guarantee = guarantee_of(facts)
        index = None
        # The charge is recorded as Pufferfish, not DP: a ledger reader can tell the two
        # apart (Pufferfish does not compose in general; the total is bookkeeping).
        details = {"relation": "replace-one", "privacy_definition": guarantee.kind.value, **facts}
        records = charge(
            accountant,
            Charge(event, name, details),
            seeded=seeded,
            allow_seeded=allow_seeded,
            idempotency_key=idempotency_key,
        )
        if records:
            index = records[0].index
        else:
            logger.info("%s.release without an accountant: nothing is recorded", name)
        value = add_noise(flat, scale, lam, source).reshape(np.shape(raw))
        record_keyed_release(accountant, records, guarantee, idempotency_key)
        return CorrelatedRelease(value, scale, guarantee, facts, index, seeded)
