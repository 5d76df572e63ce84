"""Built-in audits of the basic mechanisms, each with its positive control.

Every configuration puts the neighbouring pair at the worst case of the mechanism's
sensitivity analysis and uses the output itself as the statistic:

- ``"laplace"``: ``LaplaceMechanism(ε, Δ=1)`` on the values 0 and 1.
- ``"gaussian"``: ``GaussianMechanism(ε, δ, Δ=1)`` (analytic calibration) on 0 and 1,
  audited for (ε, δ); or, with ``profile_epsilon=ε'``, for the point ``(ε', δ(ε'))`` of
  its privacy profile, where ``δ(ε')`` is Balle & Wang's exact δ of the calibrated σ at
  ε'. The mechanism promises every point of that profile, and points with ε' ≈ ε/4 and
  δ(ε') of a few percent are far easier to refute from samples than (ε, 1e-5): the
  profile audit catches 10–20 % too little noise where the plain one cannot.
- ``"discrete-laplace"``: ``DiscreteLaplaceMechanism(ε, Δ=1)`` on the counts 0 and 1. The
  event ``s ≤ 0`` has probability ``1/(1+q)`` against ``q/(1+q)``, ``q = e^{−ε}``: a ratio
  of exactly ``e^ε``, so the audit can get close to the claim, and the half-scale control
  (really 2ε-DP) is far above it.
- ``"exponential"`` / ``"permute-and-flip"``: ``ExponentialMechanism(ε, Δ=1)`` with that
  method on k = 32 candidates, utilities ``(0, …, 0)`` against ``(1, −1, …, −1)``: every
  utility moves by exactly Δ, the one candidate up and all the others down, which is where
  the selection probability of candidate 0 moves the most. Statistic: the chosen index.

``noise_multiplier`` scales the mechanism's noise (the Gumbel noise for the exponential
mechanism) while the claim stays ε: the samplers draw from a :class:`ScaledNoise` source.
``noise_multiplier=0.5`` is the positive control, a broken mechanism that a working audit
must fail.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppdp._validation import check_int, check_option, check_positive
from ppdp.audit._harness import AuditResult, Sampler, audit
from ppdp.audit.variants import CONTROL_NOISE_MULTIPLIER, ScaledNoise
from ppdp.exceptions import ParameterError
from ppdp.mechanisms import (
    DiscreteLaplaceMechanism,
    ExponentialMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    gaussian_delta,
)
from ppdp.random import RandomSource, RandomState, resolve_random_state

__all__ = [
    "CONTROL_NOISE_MULTIPLIER",
    "MECHANISMS",
    "ControlledAudit",
    "audit_mechanism",
    "audit_with_control",
    "default_draws",
]

#: Names accepted by :func:`audit_mechanism`.
MECHANISMS = ("laplace", "gaussian", "exponential", "permute-and-flip", "discrete-laplace")

#: Candidates of the exponential-mechanism audit (see the module docstring).
EXPONENTIAL_CANDIDATES = 32

# (n_select, n_measure) per side. Laplace and Gaussian draws are cheap and vectorised, so
# they use 10^6 measurement draws (as Google's stochastic tester does); each exponential
# draw costs k = 32 Gumbel variates. Power at these defaults: docs/audit.md.
_DEFAULT_DRAWS = {
    "laplace": (100_000, 1_000_000),
    "gaussian": (100_000, 1_000_000),
    "exponential": (20_000, 200_000),
    "permute-and-flip": (20_000, 200_000),
    "discrete-laplace": (100_000, 1_000_000),
}


def default_draws(name: str) -> tuple[int, int]:
    """``(n_select, n_measure)`` used by :func:`audit_mechanism` for ``name``."""
    return _DEFAULT_DRAWS[check_option("name", name, MECHANISMS)]


def _pair(
    name: str, epsilon: float, delta: float, noise_multiplier: float, profile_epsilon: float | None
) -> tuple[Sampler, Sampler, float, float]:
    """Samplers on D and D′ and the (ε, δ) claim to audit."""
    if name == "laplace":
        lap = LaplaceMechanism(epsilon=epsilon, sensitivity=1.0)
        return (
            _scalar(lap._sample, 0.0, noise_multiplier),
            _scalar(lap._sample, 1.0, noise_multiplier),
            epsilon,
            0.0,
        )
    if name == "discrete-laplace":
        dlap = DiscreteLaplaceMechanism(epsilon=epsilon, sensitivity=1)
        return (
            _scalar(dlap._sample, 0, noise_multiplier),
            _scalar(dlap._sample, 1, noise_multiplier),
            epsilon,
            0.0,
        )
    if name == "gaussian":
        gauss = GaussianMechanism(epsilon=epsilon, delta=delta, sensitivity=1.0)
        claim_eps, claim_delta = epsilon, delta
        if profile_epsilon is not None:
            claim_eps = profile_epsilon
            # The exact δ of the calibrated σ at ε' (rounded up, so the claim stays true).
            exact = gaussian_delta(gauss.sigma, profile_epsilon, gauss.effective_sensitivity)
            claim_delta = min(exact * (1 + 1e-9), 0.999)
        return (
            _scalar(gauss._sample, 0.0, noise_multiplier),
            _scalar(gauss._sample, 1.0, noise_multiplier),
            claim_eps,
            claim_delta,
        )
    method = "gumbel" if name == "exponential" else "permute-and-flip"
    expo = ExponentialMechanism(epsilon=epsilon, sensitivity=1.0, method=method)
    u = np.zeros(EXPONENTIAL_CANDIDATES)
    u_prime = np.full(EXPONENTIAL_CANDIDATES, -1.0)
    u_prime[0] = 1.0
    return (
        _scalar(expo._sample, u, noise_multiplier),
        _scalar(expo._sample, u_prime, noise_multiplier),
        epsilon,
        0.0,
    )


def _scalar(sample: Callable[..., Any], value: Any, multiplier: float) -> Sampler:
    def sampler(n: int, source: RandomSource) -> Any:
        return sample(value, n, ScaledNoise(source, multiplier))

    return sampler


def audit_mechanism(
    name: str,
    *,
    epsilon: float = 1.0,
    delta: float = 1e-5,
    noise_multiplier: float = 1.0,
    profile_epsilon: float | None = None,
    n_select: int | None = None,
    n_measure: int | None = None,
    alpha: float = 1e-6,
    random_state: RandomState = None,
) -> AuditResult:
    """Audit one of ppdp's basic mechanisms at its worst-case neighbouring pair.

    Parameters
    ----------
    name : {"laplace", "gaussian", "exponential", "permute-and-flip", "discrete-laplace"}
    epsilon : float, default 1.0
        The ε the mechanism is built for and claims.
    delta : float, default 1e-5
        δ of the Gaussian mechanism (ignored by the pure-DP mechanisms, audited with δ = 0).
    noise_multiplier : float, default 1.0
        Scale the noise by this factor while still claiming ε; 0.5 is the positive control
        and must fail.
    profile_epsilon : float, optional
        Gaussian only: audit the point ``(ε', δ(ε'))`` of the mechanism's privacy profile
        instead of ``(ε, δ)`` (see the module docstring); ``epsilon`` and ``delta`` still
        calibrate the mechanism.
    n_select, n_measure : int, optional
        Draws per side; defaults from :func:`default_draws`.
    alpha : float, default 1e-6
        False-positive rate of the audit.
    random_state : None, int, SeedSequence, Generator or RandomSource, optional

    Returns
    -------
    AuditResult
    """
    name = check_option("name", name, MECHANISMS)
    multiplier = check_positive("noise_multiplier", noise_multiplier)
    d_select, d_measure = _DEFAULT_DRAWS[name]
    n_select = d_select if n_select is None else check_int("n_select", n_select, minimum=100)
    n_measure = d_measure if n_measure is None else check_int("n_measure", n_measure, minimum=100)
    if profile_epsilon is not None:
        if name != "gaussian":
            raise ParameterError(
                f"profile_epsilon ({profile_epsilon!r}) applies to the 'gaussian' audit only, "
                f"not {name!r}"
            )
        profile_epsilon = check_positive("profile_epsilon", profile_epsilon)
    sample_d, sample_d_prime, claim_eps, claim_delta = _pair(
        name, epsilon, delta, multiplier, profile_epsilon
    )
    return audit(
        sample_d,
        sample_d_prime,
        claimed_epsilon=claim_eps,
        delta=claim_delta,
        n_select=n_select,
        n_measure=n_measure,
        alpha=alpha,
        random_state=random_state,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlledAudit:
    """An audit of a mechanism together with its positive control (half the noise).

    ``ok`` is True iff the mechanism passed and the control failed. A control that passes
    means the audit has no power: the audit itself is broken.
    """

    mechanism: str
    result: AuditResult
    control: AuditResult

    @property
    def ok(self) -> bool:
        """The mechanism passed and its half-noise control failed."""
        return self.result.passed and not self.control.passed

    @property
    def control_failed(self) -> bool:
        """True when the positive control was caught, as it must be."""
        return not self.control.passed

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {
            "mechanism": self.mechanism,
            "ok": self.ok,
            "result": self.result.to_dict(),
            "control": self.control.to_dict(),
            "control_noise_multiplier": CONTROL_NOISE_MULTIPLIER,
        }


def audit_with_control(
    name: str,
    *,
    epsilon: float = 1.0,
    delta: float = 1e-5,
    profile_epsilon: float | None = None,
    n_select: int | None = None,
    n_measure: int | None = None,
    alpha: float = 1e-6,
    random_state: RandomState = None,
    draws: int | None = None,
) -> ControlledAudit:
    """Run :func:`audit_mechanism` on ``name`` and on its half-noise positive control.

    Both draw from one source (resolved once), so a seed makes the pair reproducible.
    ``draws`` (``ppdp audit --draws``) sets ``n_measure`` and, unless given, ``n_select`` to
    a tenth of it (at least 100): a selection mechanism's draws cost more each.
    """
    if draws is not None:
        n_measure = draws if n_measure is None else n_measure
        n_select = max(100, draws // 10) if n_select is None else n_select
    source = resolve_random_state(random_state)
    kwargs: dict[str, Any] = {
        "epsilon": epsilon,
        "delta": delta,
        "profile_epsilon": profile_epsilon,
        "n_select": n_select,
        "n_measure": n_measure,
        "alpha": alpha,
        "random_state": source,
    }
    result = audit_mechanism(name, noise_multiplier=1.0, **kwargs)
    control = audit_mechanism(name, noise_multiplier=CONTROL_NOISE_MULTIPLIER, **kwargs)
    return ControlledAudit(mechanism=name, result=result, control=control)
