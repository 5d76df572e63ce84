"""The release object and the check → validate → spend → add-noise flow of ``ppdp.correlated``."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ppdp import noise
from ppdp.accounting import Accountant, Charge, check_charges
from ppdp.accounting.events import EpsilonDelta, Pufferfish
from ppdp.budget import Guarantee, PrivacyBudget
from ppdp.exceptions import ParameterError, ParameterTypeError
from ppdp.mechanisms.grid import (
    as_query_value,
    check_scale,
    effective_sensitivity,
    snap_and_add_noise,
)
from ppdp.random import RandomSource, RandomState, resolve_random_state
from ppdp.release import InMemoryTable, ReleaseOptions, run_release

__all__ = ["CorrelatedRelease", "Query", "release_sequence"]

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

    One :func:`ppdp.release.run_release` of the trace (an in-memory table of ``T`` public
    rows). The ledger records a :class:`~ppdp.accounting.events.Pufferfish` event (only a
    ``basic`` ledger takes it: Pufferfish has no composition theorem), or, with
    ``pufferfish=False`` (group DP), an ε-DP :class:`~ppdp.accounting.events.EpsilonDelta`.
    """
    options = ReleaseOptions(
        accountant=accountant, allow_seeded=allow_seeded, idempotency_key=idempotency_key
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
    sigma = sigma_of(T)
    if not math.isfinite(sigma):
        raise ParameterError(f"{name} is not applicable to this Θ at T = {T}: nothing released")
    budget = PrivacyBudget(epsilon)
    steps = _SequenceSteps(
        name=name,
        random_state=random_state,
        event=(
            Pufferfish(epsilon=budget.epsilon, mechanism=name)
            if pufferfish
            else EpsilonDelta(epsilon=budget.epsilon)
        ),
        lipschitz=2.0 / T if query == "histogram" else lipschitz,
        sigma=sigma,
        query=query,
        k=k,
        encode=encode,
        facts_of=facts_of,
        guarantee_of=guarantee_of,
    )
    result = run_release(steps, sequence, options)
    index = result.records[0].index if result.records else None
    return CorrelatedRelease(
        steps.value, steps.scale, steps.guarantee, steps.facts, index, result.seeded
    )


@dataclass
class _SequenceSteps:
    """How a correlated release plans, scans and releases (:class:`ppdp.release.ReleaseSteps`).

    The scan encodes the trace and answers the query; its dimension fixes the Laplace scale
    and the grid, the facts and the guarantee, all public (as ``T`` is); the charge carries
    them as details.
    """

    name: str
    random_state: RandomState
    event: Any
    lipschitz: float
    sigma: float
    query: str | Query
    k: int
    encode: Callable[[Any], NDArray[np.int64]]
    facts_of: Callable[[int], dict[str, Any]]
    guarantee_of: Callable[[dict[str, Any]], Guarantee]
    value: Any = None
    scale: float = 0.0
    facts: dict[str, Any] = field(default_factory=dict)
    guarantee: Any = None

    def validated(self) -> Any:
        return contextlib.nullcontext()

    def table(self, data: Any, options: ReleaseOptions) -> InMemoryTable:
        return InMemoryTable(data, len(data))

    def plan(self, table: Any) -> list[Charge]:
        return [Charge(self.event, self.name)]

    def source(self) -> RandomSource:
        return resolve_random_state(self.random_state)

    def check(self, accountant: Accountant, charges: list[Charge], key: str | None) -> None:
        check_charges(accountant, charges, mechanism=self.name, idempotency_key=key)

    def scan(self, table: Any, on_invalid: str, on_scan: Any) -> Any:
        codes, query = self.encode(table.data), self.query
        if query == "histogram":
            raw = histogram(codes, self.k)
        else:
            raw, _ = as_query_value(query(codes), name="query(sequence)")  # type: ignore[operator]
        flat = np.asarray(raw, dtype=np.float64).reshape(-1)
        self.scale, lam = grid_scale(self.lipschitz, self.sigma, flat.size)
        T = len(table.data)
        self.facts = {
            "T": T,
            "sigma_max": self.sigma,
            "lipschitz": self.lipschitz,
            "query": "histogram"
            if query == "histogram"
            else getattr(query, "__name__", "callable"),
            "noise_scale": self.scale,
            "granularity": lam,
            "dimension": int(flat.size),
            **self.facts_of(T),
        }
        self.guarantee = self.guarantee_of(self.facts)
        return raw, flat, lam

    def rows_scanned(self, scan: Any) -> int:
        return int(self.facts["T"])

    def replan(self, table: Any, scan: Any, charges: list[Charge]) -> list[Charge]:
        # Recorded as Pufferfish, not DP: a ledger reader can tell the two apart
        # (Pufferfish does not compose in general; the total is bookkeeping).
        kind = self.guarantee.kind.value
        details = {"relation": "replace-one", "privacy_definition": kind, **self.facts}
        return [Charge(self.event, self.name, details)]

    def unaccounted(self, source: RandomSource) -> None:
        """Said in the log only (by the run)."""

    def release(
        self, table: Any, scan: Any, source: RandomSource, charges: list[Charge], output: Any
    ) -> Guarantee:
        raw, flat, lam = scan
        self.value = add_noise(flat, self.scale, lam, source).reshape(np.shape(raw))
        return self.guarantee

    def finish(self, records: tuple[Any, ...], seeded: bool) -> None:
        """The ledger index and seeding go to the release object (built by the caller)."""
