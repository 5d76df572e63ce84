"""Noise calibration of Mul-LDA-DP for the publisher's *joint* view of all messages.

Per coordinate, owner ``j`` sends ``y_j = p_j + e_j + g_j``: its partial statistic ``p_j``
(on a power-of-two grid), a zero-sum mask ``e_j`` and its own noise ``g_j ~ N(0, σ²/m)``. The
masks cancel in the publisher's sum, which therefore carries ``Σ_j g_j ~ N(0, σ²)``: exactly
the centralised LDA-DP noise of level σ.

Whoever sees all ``m`` messages (the publisher, a ledger reader, an eavesdropper on every
link) sees ``p + n`` with ``n ~ N(0, σ²·Σ̂ ⊗ I)`` where, for masks built from pairwise
Gaussians (:mod:`ppdp.federated.masks`),

    ``Σ̂ = a·(I − J/m) + I/m``,  ``a = m·K/(m − 1)``,

``K = Var(e_j)/σ²`` the *mask scale* and ``J`` the all-ones matrix. Replacing one record of
owner ``j`` moves only ``p_j`` (by at most Δ in L2), so the joint view is a Gaussian
mechanism whose privacy loss is that of an isotropic one with sensitivity
``Δ·sqrt((Σ̂⁻¹)_jj)`` and noise σ. Since ``Σ̂⁻¹ = (I − J/m)/(a + 1/m) + J/m``:

    ``(Σ̂⁻¹)_jj = 1 + (m − 1)²/(m²K + m − 1)``  (:func:`joint_view_factor_closed_form`).

The paper's split (``K = (m−1)/m``) gives ``2m/(m + 1)``: the joint view leaks more than one
message (ALGORITHMS-publishing B.5 item 2). Large masks drive the factor to 1: the default
``K = 10⁴`` costs at most a relative ``(m−1)²/(2m²K) < 5·10⁻⁵`` more noise than the
centralised release. :func:`federated_noise_plan` calibrates σ for the joint view with the
exact factor, the grid and the float-summation pads. The argument, the collusion analysis
and the numbers are in ``docs/proofs/mul-lda-dp.md``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from scipy import optimize

from ppdp import noise
from ppdp._validation import check_int, check_option, check_positive
from ppdp.accounting.events import EpsilonDelta, PrivacyEvent
from ppdp.budget import Guarantee, Neighbouring, PrivacyBudget
from ppdp.data.stats import float_sum_error_bound
from ppdp.exceptions import (
    CalibrationError,
    NotDifferentiallyPrivateWarning,
    ParameterError,
    user_stacklevel,
)
from ppdp.mechanisms import gaussian_delta
from ppdp.publish.fisher import (
    CLASS_SUM_SENSITIVITY,
    SECOND_MOMENT_SENSITIVITY,
    LDANoisePlan,
    class_sum_mechanism,
    lda_noise_plan,
    second_moment_mechanism,
)

__all__ = [
    "DEFAULT_MASK_SCALE",
    "FederatedPlan",
    "coalition_factor",
    "federated_noise_plan",
    "gaussian_epsilon",
    "joint_view_factor",
    "joint_view_factor_closed_form",
    "noise_covariance",
    "paper_mask_scale",
]

#: Default ``K = Var(e_j)/σ²``: masks 100 times the aggregate noise's standard deviation.
DEFAULT_MASK_SCALE = 1.0e4
#: Largest accepted mask scale: masks must stay far below 2**52 grid steps (exact sums).
_MAX_MASK_SCALE = 1.0e12
#: Headroom (in grid steps) a message keeps below 2**53·Λ, where float sums stop being exact.
_EXACT_LIMIT_BITS = 52


def paper_mask_scale(n_owners: int) -> float:
    """``K`` of the paper's split: ``Var(e_j) = (1 − 1/m)σ²`` (ALGORITHMS-publishing B.4)."""
    m = check_int("n_owners", n_owners, minimum=2)
    return (m - 1) / m


def noise_covariance(n_owners: int, mask_scale: float) -> NDArray[np.float64]:
    """``Σ̂``: covariance of the noise vector ``(e_j + g_j)_j`` of one coordinate, in units of σ².

    ``Var(e_j) = K``, ``Σ_j e_j = 0`` (so ``Cov(e) = a(I − J/m)``, ``a = mK/(m−1)``), and
    ``g_j`` iid with variance ``1/m``.

    >>> noise_covariance(2, 0.5).tolist()  # the paper's split: each message has variance 1
    [[1.0, -0.5], [-0.5, 1.0]]
    """
    m = check_int("n_owners", n_owners, minimum=2)
    K = check_positive("mask_scale", mask_scale)
    a = m * K / (m - 1)
    return a * (np.eye(m) - np.full((m, m), 1.0 / m)) + np.eye(m) / m


def joint_view_factor(n_owners: int, mask_scale: float) -> float:
    """``sqrt((Σ̂⁻¹)_jj)`` by numerical inversion of :func:`noise_covariance` (same for all j).

    >>> round(joint_view_factor(3, paper_mask_scale(3)) ** 2, 12)
    1.5
    """
    cov = noise_covariance(n_owners, mask_scale)
    diag = np.diag(np.linalg.inv(cov))
    return float(math.sqrt(float(np.max(diag))))


def joint_view_factor_closed_form(n_owners: int, mask_scale: float) -> float:
    """``sqrt(1 + (m − 1)²/(m²K + m − 1))`` (module docstring).

    >>> joint_view_factor_closed_form(2, 0.5) ** 2
    1.3333333333333333
    """
    m = check_int("n_owners", n_owners, minimum=2)
    K = check_positive("mask_scale", mask_scale)
    return math.sqrt(1.0 + (m - 1) ** 2 / (m * m * K + m - 1))


def coalition_factor(
    n_owners: int,
    mask_scale: float,
    colluders: int,
    *,
    dealer: Literal["trusted", "none", "colluding"] = "trusted",
) -> float:
    """Joint-view factor for an honest owner when the publisher colludes with owners or the dealer.

    ``colluders`` other owners reveal their data, their own noise and what they know of the
    masks: with ``dealer="trusted"`` their masks ``e_l``; with ``dealer="none"`` their
    pairwise secrets (so ``e_j``'s terms shared with them). ``dealer="colluding"`` means the
    dealer reveals every mask. Returns ``sqrt(σ²·(Σ_c⁻¹)_jj)`` for the coalition's
    conditional noise covariance ``Σ_c`` of the honest owners' messages: the release is then
    a Gaussian mechanism with sensitivity ``Δ·factor`` and noise σ.

    As ``K → ∞`` the factor tends to ``sqrt(m/h)`` (``h`` honest owners): only the honest
    owners' own noise ``Σ_{honest} g`` protects them; with every other owner colluding (or
    the dealer), ``sqrt(m)`` (ALGORITHMS-publishing B.5 item 3).

    >>> round(coalition_factor(4, 1e8, 0), 6), round(coalition_factor(4, 1e8, 3), 6)
    (1.0, 2.0)
    """
    m = check_int("n_owners", n_owners, minimum=2)
    t = check_int("colluders", colluders, minimum=0)
    if t > m - 1:
        raise ParameterError(f"colluders ({t}) must be at most n_owners - 1 ({m - 1})")
    dealer = check_option("dealer", dealer, ("trusted", "none", "colluding"))
    K = check_positive("mask_scale", mask_scale)
    h = m - t
    if dealer == "colluding":
        return math.sqrt(m)
    s2 = K / (m - 1)  # variance of one pairwise mask r_jl
    if dealer == "none":
        # The coalition knows r_jl whenever l colludes; the rest is the complete graph on
        # the honest owners: Cov = s2 (h I − J_h).
        mask_cov = s2 * (h * np.eye(h) - np.ones((h, h)))
    else:
        full = m * s2 * (np.eye(m) - np.full((m, m), 1.0 / m))
        hh, cc = full[:h, :h], full[h:, h:]
        if t == 0:
            mask_cov = hh
        else:
            hc = full[:h, h:]
            mask_cov = hh - hc @ np.linalg.pinv(cc) @ hc.T
    cov = mask_cov + np.eye(h) / m
    return float(math.sqrt(float(np.max(np.diag(np.linalg.inv(cov))))))


def _delta_at(epsilon: float, mu: float) -> float:
    # δ(ε) of a Gaussian mechanism with μ = Δ/σ (Balle & Wang 2018, Theorem 8, log space)
    return gaussian_delta(1.0 / mu, epsilon, 1.0)


def gaussian_epsilon(mu: float, delta: float) -> float:
    """The smallest ε with ``δ(ε) ≤ delta`` for a Gaussian mechanism with ``μ = Δ/σ``.

    Used to state what a coalition's view is worth (``docs/proofs/mul-lda-dp.md``).

    >>> round(gaussian_epsilon(1 / 3.730631, 1e-5), 4)
    1.0
    """
    mu = check_positive("mu", mu)
    if _delta_at(0.0, mu) <= delta:
        return 0.0
    hi = 1.0
    while _delta_at(hi, mu) > delta:
        hi *= 2.0
        if hi > 1e6:
            raise CalibrationError(f"no epsilon below 1e6 reaches delta {delta!r} at mu {mu!r}")
    return float(optimize.brentq(lambda e: _delta_at(e, mu) - delta, 0.0, hi, xtol=1e-12))


@dataclass(frozen=True)
class FederatedPlan:
    """Noise levels of one Mul-LDA-DP round (every party derives the same plan from the config).

    Attributes
    ----------
    plan : LDANoisePlan
        The aggregate noise: class sums get ``sum_sigmas[c]`` (``plan.mean_sigmas[c]·n_c``),
        ``upper(Σxxᵀ)`` gets ``plan.scatter_sigma``; the centralised release at the same
        levels would be this plan's release.
    n_owners : int
    joint_view : bool
        True: σ is calibrated for the joint view of all messages; False: the paper's split,
        private message by message only.
    mask_scale : float
        ``K = Var(e_j)/σ²`` per coordinate.
    joint_factor : float
        ``sqrt((Σ̂⁻¹)_jj)`` for this ``K`` (applied when ``joint_view``).
    sum_sigmas, second_moment_sigma : the aggregate noise std per class sum / per entry.
    owner_sum_sigmas, owner_second_moment_sigma : each owner's own noise, ``σ/√m``.
    pair_sum_sigmas, pair_second_moment_sigma : std of one pairwise mask ``r_jl``,
        ``σ·sqrt(K/(m−1))``.
    sum_grid, second_moment_grid : float
        The power-of-two grids Λ of every partial, mask and noise term; sums are exact.
    """

    plan: LDANoisePlan
    n_owners: int
    joint_view: bool
    mask_scale: float
    joint_factor: float
    sum_sigmas: tuple[float, ...]
    second_moment_sigma: float
    owner_sum_sigmas: tuple[float, ...]
    owner_second_moment_sigma: float
    pair_sum_sigmas: tuple[float, ...]
    pair_second_moment_sigma: float
    sum_grid: float
    second_moment_grid: float
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def budget(self) -> PrivacyBudget:
        """The round's whole ``(ε, δ)`` (means and scatter, basic composition)."""
        return self.plan.budget

    def events(
        self, *, stated: PrivacyBudget, projections: PrivacyBudget | None = None
    ) -> tuple[PrivacyEvent, ...]:
        """The typed events of one round (``docs/proofs/composition.md``, *Mul-LDA-DP*).

        With the joint-view calibration and the Gaussian template: the class sums, then the
        second moments, each the Gaussian mechanism the publisher's joint view is equivalent
        to (§2 of ``docs/proofs/mul-lda-dp.md``): noise σ, the aggregate's (what
        :func:`~ppdp.publish.fisher.class_sum_mechanism` draws centrally at this plan),
        on sensitivity ``Δ·sensitivity_factor`` plus the plan's pad and grid, which covers
        the whitened ``joint_factor·(Δ + pad + √dim·Λ)``; with ``projections``, the owners'
        Laplace noise on disjoint rows as an ε₃-DP event (each owner's dimension is its
        own row count, which the publisher does not hold). Otherwise (the paper's split,
        whose joint view is not (ε, δ)-DP, or the MOD-SULQ template) the ``stated``
        (ε, δ) of the round, as before.
        """
        if not self.joint_view or self.plan.calibration != "gaussian":
            return (EpsilonDelta(epsilon=stated.epsilon, delta=stated.delta),)
        out: list[PrivacyEvent] = [
            class_sum_mechanism(self.plan).event,
            second_moment_mechanism(self.plan).event,
        ]
        if projections is not None:
            out.append(EpsilonDelta(epsilon=projections.epsilon, delta=projections.delta))
        return tuple(out)

    @property
    def n_features(self) -> int:
        return int(self.plan.details["n_features"])

    @property
    def class_counts(self) -> tuple[int, ...]:
        return tuple(int(c) for c in self.plan.details["class_counts"])

    def guarantee(self, *, dealer: str = "trusted") -> Guarantee:
        """What the round's messages promise, with the trust model as assumptions."""
        b = self.budget
        trust = (
            "records scaled to ‖x‖₂ ≤ 1 by a declared bound; neighbours replace one record of "
            "one owner by another of the same class; global class counts public (so are each "
            "owner's record count and local class sizes, which that relation never changes)",
            "honest-but-curious publisher that does not collude with any owner or the dealer",
            (
                "independent honest dealer whose masks reach only their owner (confidential "
                "channels)"
                if dealer == "trusted"
                else "no dealer: pairwise masks from authenticated X25519 agreements expanded "
                "by ChaCha20 (a computational guarantee: masks are pseudorandom)"
            ),
            "owners follow the protocol and add their own noise; a coalition of the publisher "
            f"with t owners sees sensitivity × coalition_factor (→ sqrt(m/(m−t)), m = "
            f"{self.n_owners}; docs/proofs/mul-lda-dp.md)",
        )
        details = {k: v for k, v in self.details.items() if k != "plan"}
        if self.joint_view:
            return Guarantee.approx(
                b.epsilon,
                b.delta,
                relation=Neighbouring.REPLACE_ONE,
                mechanism="Mul-LDA-DP (joint-view calibration)",
                assumptions=(
                    "covers the joint view of every message of the round (publisher, ledger "
                    "readers, an eavesdropper on all links) and everything computed from it",
                    *trust,
                ),
                details=details,
            )
        return Guarantee.none(
            "paper's split: each message alone is (ε, δ)-DP, but the joint view of all "
            f"messages has sensitivity × {self.joint_factor:.4f} (ALGORITHMS-publishing "
            "B.5 item 2), so the publisher's view is not (ε, δ)-DP",
            mechanism="Mul-LDA-DP (paper's per-message calibration)",
            assumptions=trust,
            details={**details, "per_message_epsilon": b.epsilon, "per_message_delta": b.delta},
        )


def _grid(sigmas: Sequence[float]) -> float:
    # One power-of-two grid for every term of a statistic, coarse enough for the largest
    # noise (noise.gaussian refuses grids finer than σ·2**-40); twice the largest scale so a
    # small re-calibration never needs a coarser grid.
    return noise.granularity(2.0 * max(sigmas))


def _levels(plan: LDANoisePlan, m: int, K: float) -> tuple[tuple[float, ...], float, float, float]:
    counts = plan.details["class_counts"]
    sums = tuple(s * c for s, c in zip(plan.mean_sigmas, counts, strict=True))
    pair = math.sqrt(K / (m - 1))
    sum_grid = _grid([s * max(pair, 1.0) for s in sums])
    sm_grid = _grid([plan.scatter_sigma * max(pair, 1.0)])
    return sums, plan.scatter_sigma, sum_grid, sm_grid


def federated_noise_plan(
    *,
    epsilon: float,
    delta: float,
    n_features: int,
    class_counts: Sequence[int],
    n_owners: int,
    calibration: str = "gaussian",
    joint_view: bool = True,
    mask_scale: float | None = None,
    mean_share: float = 0.5,
    allow_large_epsilon: bool = False,
) -> FederatedPlan:
    """Calibrate one Mul-LDA-DP round.

    Guarantee (``joint_view=True``): the joint view of all owners' mean and scatter shares
    is ``(ε, δ)``-DP (means ``(ε₁, δ₁)``, then scatter ``(ε₂, δ₂)``, basic composition) for
    records with ``‖x‖₂ ≤ 1``, replace-one within a class and one owner, public global class
    counts, under the trust model of :meth:`FederatedPlan.guarantee`.

    Parameters
    ----------
    epsilon, delta : float
        The round's budget (means and scatter).
    n_features : int
    class_counts : sequence of int
        Global class sizes (public).
    n_owners : int
        ``m ≥ 2``.
    calibration : {"gaussian", "paper"}
        The noise template of :func:`ppdp.publish.fisher.lda_noise_plan`.
    joint_view : bool, default True
        Calibrate for the joint view (``sensitivity × joint_factor``). False: the paper's
        split (``K = (m−1)/m``, per-message guarantee only); warns
        :class:`~ppdp.exceptions.NotDifferentiallyPrivateWarning`.
    mask_scale : float, optional
        ``K = Var(e_j)/σ²``; default :data:`DEFAULT_MASK_SCALE` with ``joint_view`` and
        :func:`paper_mask_scale` without.
    mean_share : float
        Share of ε and δ spent on the means.

    Notes
    -----
    σ is calibrated for sensitivity ``joint_factor·(Δ + pad + √dim·Λ)`` on each statistic,
    with ``pad`` the float-summation bound and Λ this plan's common grid, by passing
    ``sensitivity_factor = max over the two statistics of joint_factor·(Δ + pad + √dim·Λ)/Δ``
    to :func:`lda_noise_plan` (which adds its own pad and grid term on top: conservative by
    a relative ~1e-7). Messages are exact multiples of Λ and below ``2**52·Λ``, so the
    publisher's sums are exact and the masks cancel to zero exactly.

    Examples
    --------
    >>> fp = federated_noise_plan(epsilon=1.0, delta=1e-5, n_features=4,
    ...                           class_counts=[60, 40], n_owners=3)
    >>> round(fp.joint_factor, 6)
    1.000022
    >>> round(fp.second_moment_sigma / lda_noise_plan(epsilon=1.0, delta=1e-5, n_features=4,
    ...       class_counts=[60, 40]).scatter_sigma, 4)
    1.0
    """
    m = check_int("n_owners", n_owners, minimum=2)
    if not isinstance(joint_view, bool):
        raise ParameterError(f"joint_view ({joint_view!r}) must be True or False")
    if mask_scale is None:
        K = DEFAULT_MASK_SCALE if joint_view else paper_mask_scale(m)
    else:
        K = check_positive("mask_scale", mask_scale)
        if K > _MAX_MASK_SCALE:
            raise ParameterError(
                f"mask_scale ({K!r}) must be at most {_MAX_MASK_SCALE:g}: larger masks leave "
                "too few grid steps below 2**52 for exact sums"
            )
    # the closed form is exact; the numerical inverse guards it (they agree to ~1e-11)
    jf = max(joint_view_factor_closed_form(m, K), joint_view_factor(m, K))
    applied = jf if joint_view else 1.0
    base = lda_noise_plan(
        epsilon=epsilon,
        delta=delta,
        n_features=n_features,
        class_counts=class_counts,
        calibration=calibration,
        mean_share=mean_share,
        sensitivity_factor=applied,
        allow_large_epsilon=allow_large_epsilon,
    )
    p = int(base.details["n_features"])
    n_classes = int(base.details["n_classes"])
    n = int(base.details["n"])
    _, _, sum_grid, sm_grid = _levels(base, m, K)
    dims = (
        (CLASS_SUM_SENSITIVITY, n_classes * p, sum_grid),
        (SECOND_MOMENT_SENSITIVITY, p * (p + 1) // 2, sm_grid),
    )
    # float-summation pad: twice the per-entry bound of a sum of <= n terms in [-1, 1]
    pad = 2.0 * float_sum_error_bound(n, max_term=1.0)
    factor = max(
        applied * (delta_s + pad * math.sqrt(dim) + math.sqrt(dim) * lam) / delta_s
        for delta_s, dim, lam in dims
    )
    factor = math.nextafter(factor, math.inf)
    plan = lda_noise_plan(
        epsilon=epsilon,
        delta=delta,
        n_features=n_features,
        class_counts=class_counts,
        calibration=calibration,
        mean_share=mean_share,
        sensitivity_factor=factor,
        allow_large_epsilon=allow_large_epsilon,
    )
    sums, sm_sigma, _, _ = _levels(plan, m, K)
    pair = math.sqrt(K / (m - 1))
    # The grids were fixed from the first plan (at twice its largest scale); the final σ is
    # larger by a relative ~1e-6 only, so every term's σ·2**-40 stays below its grid.
    top = max(max(sums), sm_sigma) * max(pair, 1.0)
    if top * 2.0**-noise.MAX_GRID_BITS > min(sum_grid, sm_grid):  # pragma: no cover
        raise CalibrationError("federated grid too fine for the calibrated noise; please report")
    root_m = math.sqrt(m)
    if not joint_view:
        warnings.warn(
            "joint_view=False uses the paper's noise split: each message alone is (ε, δ)-DP, "
            f"but whoever sees all {m} messages gets the noise of a release with sensitivity "
            f"× {jf:.4f} (ALGORITHMS-publishing B.5 item 2); the round is not (ε, δ)-DP for "
            "the publisher",
            NotDifferentiallyPrivateWarning,
            stacklevel=user_stacklevel(),
        )
    details: dict[str, Any] = {
        "scheme": "Mul-LDA-DP",
        "n_owners": m,
        "joint_view": joint_view,
        "mask_scale": K,
        "joint_factor": jf,
        "joint_factor_applied": applied,
        "sensitivity_factor": factor,
        "sum_sigmas": list(sums),
        "second_moment_sigma": sm_sigma,
        "owner_noise_variance_share": 1.0 / m,
        "sum_grid": sum_grid,
        "second_moment_grid": sm_grid,
        "plan": plan.details,
    }
    return FederatedPlan(
        plan=plan,
        n_owners=m,
        joint_view=joint_view,
        mask_scale=K,
        joint_factor=jf,
        sum_sigmas=sums,
        second_moment_sigma=sm_sigma,
        owner_sum_sigmas=tuple(s / root_m for s in sums),
        owner_second_moment_sigma=sm_sigma / root_m,
        pair_sum_sigmas=tuple(s * pair for s in sums),
        pair_second_moment_sigma=sm_sigma * pair,
        sum_grid=sum_grid,
        second_moment_grid=sm_grid,
        details=details,
    )


def exact_limit(grid: float) -> float:
    """Largest magnitude for which sums of multiples of ``grid`` stay exact: ``2**52·grid``."""
    return math.ldexp(grid, _EXACT_LIMIT_BITS)
