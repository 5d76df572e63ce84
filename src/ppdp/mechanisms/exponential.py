"""The exponential mechanism: Gumbel-max or permute-and-flip (``docs/proofs/exponential.md``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import softmax

from ppdp import noise
from ppdp._validation import check_epsilon, check_option, check_positive
from ppdp.accounting.events import Exponential, PermuteAndFlip
from ppdp.budget import Guarantee, Neighbouring, PrivacyBudget
from ppdp.exceptions import DataValidationError, ParameterTypeError
from ppdp.random import RandomSource, RandomState, noise_factor, resolve_random_state

__all__ = ["ExponentialMechanism"]

_METHODS = ("gumbel", "permute-and-flip")

# Rows of candidates handled at once by the batched samplers (bounds the working memory).
_BATCH_CELLS = 1 << 21


@dataclass(frozen=True, slots=True, kw_only=True)
class ExponentialMechanism:
    """Select one of ``k`` public candidates with probability ∝ ``exp(ε u / (2Δ))``.

    Guarantee: ε-differential privacy under ``relation``, provided every candidate's
    utility changes by at most ``sensitivity`` between neighbouring datasets
    (``|u(D, r) − u(D', r)| ≤ Δ`` for all ``r``) and the candidate set is public (does not
    depend on the data). With ``monotonic=True`` the utilities must in addition all move in
    the same direction between any two neighbours, and the exponent is ``ε u / Δ``.

    Methods:

    - ``"gumbel"`` (default): ``argmax_r (c·u_r + G_r)`` with independent standard Gumbel
      ``G_r`` from :func:`ppdp.noise.gumbel` and ``c = ε/(2Δ)`` (``ε/Δ`` if monotonic);
      this samples exactly the exponential mechanism's distribution (the Gumbel-max trick).
    - ``"permute-and-flip"`` ([MS20]_): visit the candidates in a uniformly random order and
      return the first ``r`` whose coin with bias ``exp(c·(u_r − max u))`` comes up heads.
      Also ε-DP, never worse in expected utility than the exponential mechanism; its output
      distribution is *not* the softmax (see :meth:`probabilities`).

    Parameters
    ----------
    epsilon : float
        ε > 0, at most 10 unless ``allow_large_epsilon``.
    sensitivity : float
        Δ, the utility sensitivity; finite, > 0.
    monotonic : bool, default False
        Utilities are monotone in the dataset (e.g. counts under add/remove).
    method : {"gumbel", "permute-and-flip"}, default "gumbel"
    relation : Neighbouring or str, default "replace-one"
    allow_large_epsilon : bool, default False

    Notes
    -----
    Numerical caveat (idealised numerics): scores and coin biases are float64, and the
    Gumbel and uniform variates have 53-bit resolution, so candidates whose score trails the
    best by more than about 36 nats (``c·(max u − u_r) > 36``) are chosen with a probability
    that is only approximately ``exp(−c·gap)`` relative to the best (both are below 1e-15).
    The output is an index, so it has no low-bit leakage. Not constant-time.

    References
    ----------
    .. [MT07] F. McSherry and K. Talwar, "Mechanism design via differential privacy",
       FOCS 2007.
    .. [MS20] R. McKenna and D. Sheldon, "Permute-and-Flip: A new mechanism for
       differentially private selection", NeurIPS 2020.

    Examples
    --------
    >>> mech = ExponentialMechanism(epsilon=2.0, sensitivity=1.0)
    >>> mech.probabilities([0.0, 1.0]).round(4).tolist()
    [0.2689, 0.7311]
    """

    epsilon: float
    sensitivity: float
    monotonic: bool = False
    method: Literal["gumbel", "permute-and-flip"] = "gumbel"
    relation: Neighbouring | str = Neighbouring.REPLACE_ONE
    allow_large_epsilon: bool = False

    def __post_init__(self) -> None:
        for flag in ("monotonic", "allow_large_epsilon"):
            if not isinstance(getattr(self, flag), bool):
                raise ParameterTypeError(f"{flag} ({getattr(self, flag)!r}) must be True or False")
        eps = check_epsilon("epsilon", self.epsilon, allow_large=self.allow_large_epsilon)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        check_option("method", self.method, _METHODS)
        object.__setattr__(self, "relation", Neighbouring.parse(self.relation))

    @property
    def name(self) -> str:
        """``"Exponential"`` or ``"Exponential (permute-and-flip)"``."""
        return "Exponential" if self.method == "gumbel" else "Exponential (permute-and-flip)"

    @property
    def coefficient(self) -> float:
        """c in the exponent ``c·u``: ε/(2Δ), or ε/Δ when monotonic."""
        return self.epsilon / (self.sensitivity if self.monotonic else 2.0 * self.sensitivity)

    @property
    def budget(self) -> PrivacyBudget:
        """What one selection costs: ``PrivacyBudget(epsilon)``."""
        return PrivacyBudget(self.epsilon)

    @property
    def event(self) -> Exponential | PermuteAndFlip:
        """The accounting event (ε-DP selection)."""
        if self.method == "gumbel":
            return Exponential(epsilon=self.epsilon)
        return PermuteAndFlip(epsilon=self.epsilon)

    def privacy_events(self) -> tuple[Exponential | PermuteAndFlip, ...]:
        """``(self.event,)``."""
        return (self.event,)

    @property
    def guarantee(self) -> Guarantee:
        """ε-DP under ``relation``, with the utility assumptions."""
        assert isinstance(self.relation, Neighbouring)
        assumptions = [
            f"utility sensitivity ≤ {self.sensitivity:g} for every candidate under "
            f"{self.relation.value}",
            "the candidate set is public",
        ]
        if self.monotonic:
            assumptions.append("utilities are monotone between neighbours")
        return Guarantee.pure(
            self.epsilon,
            relation=self.relation,
            mechanism=self.name,
            assumptions=tuple(assumptions),
            details=self.ledger_details(),
        )

    def ledger_details(self) -> dict[str, Any]:
        """JSON-safe facts for ``Accountant.spend(m.budget, mechanism=m.name, **details)``."""
        assert isinstance(self.relation, Neighbouring)
        return {
            "sensitivity": self.sensitivity,
            "norm": "utility",
            "monotonic": self.monotonic,
            "method": self.method,
            "relation": self.relation.value,
        }

    # -- distribution and release ---------------------------------------------------------

    def probabilities(self, utilities: ArrayLike) -> NDArray[np.float64]:
        """The exact output distribution for ``utilities`` (for testing and analysis).

        ``"gumbel"``: the softmax of ``c·u``. ``"permute-and-flip"``: with ``p_r =
        exp(c(u_r − max u))``, ``P(r) = p_r ∫₀¹ Π_{s≠r} (1 − t p_s) dt`` (each candidate
        arrives at an independent uniform time; ``r`` wins if its coin is heads and every
        earlier candidate's is tails), computed exactly by Gauss–Legendre quadrature of the
        degree-(k−1) polynomial.
        """
        scores = _scores(self.coefficient, _as_utilities(utilities))
        if self.method == "gumbel":
            return np.asarray(softmax(scores), dtype=np.float64)
        p = np.exp(scores - scores.max())
        k = p.size
        nodes, weights = np.polynomial.legendre.leggauss(k // 2 + 1)
        t = 0.5 * (nodes + 1.0)  # on (0, 1)
        w = 0.5 * weights
        log_fail = np.log1p(-np.outer(t, p))  # (nodes, k); p ≤ 1 and t < 1
        log_all = log_fail.sum(axis=1, keepdims=True)
        integral = (w[:, None] * np.exp(log_all - log_fail)).sum(axis=0)
        probs = p * integral
        return probs / probs.sum()

    def randomise(self, utilities: ArrayLike, random_state: RandomState = None) -> int:
        """Select a candidate index.

        Parameters
        ----------
        utilities : array_like of float, shape (k,)
            The utility of each public candidate on the private data; finite, k ≥ 1.
        random_state : None, int, SeedSequence, Generator or RandomSource, optional
            ``None`` (the default) uses the OS CSPRNG; anything else is for tests only.

        Returns
        -------
        int
            The index of the chosen candidate.

        Raises
        ------
        DataValidationError
            If ``utilities`` is not a non-empty 1-D array of finite numbers (values are
            never printed).
        """
        u = _as_utilities(utilities)
        source = resolve_random_state(random_state)
        return int(self._select(u, 1, source)[0])

    def _sample(self, utilities: ArrayLike, n: int, source: RandomSource) -> NDArray[np.int64]:
        """``n`` independent selections (for the audit: its rescaled source scales the
        Gumbel noise, :class:`ppdp.audit.ScaledNoise`)."""
        return self._select(_as_utilities(utilities), n, source)

    def _select(self, u: NDArray[np.float64], n: int, source: RandomSource) -> NDArray[np.int64]:
        # Scaling the Gumbel noise by the source's factor m (1 but in an audit) is the same
        # as scaling the scores by 1/m.
        scores = _scores(self.coefficient / noise_factor(source), u)
        # Shift so the best score is 0: the argmax is unchanged, and large scores can no
        # longer swallow the low bits of the Gumbel noise; the gaps are what matter.
        gaps = scores - scores.max()
        k = u.size
        out = np.empty(n, dtype=np.int64)
        rows = max(1, _BATCH_CELLS // k)
        for start in range(0, n, rows):
            m = min(rows, n - start)
            if self.method == "gumbel":
                g = np.asarray(noise.gumbel((m, k), random_state=source))
                out[start : start + m] = np.argmax(gaps + g, axis=1)
            else:
                # Coin with P(heads) = exp(gap), drawn as E >= -gap for an exponential E:
                # exact in the tails, unlike a 53-bit uniform compared with a tiny p.
                e = np.asarray(noise.exponential(1.0, (m, k), random_state=source))
                heads = e >= -gaps
                order = np.asarray(noise.uniform((m, k), random_state=source))
                # The first candidate in the random order whose coin is heads; the best
                # candidate has p = 1, so every row has a head.
                out[start : start + m] = np.argmin(np.where(heads, order, np.inf), axis=1)
        return out


def _as_utilities(utilities: ArrayLike) -> NDArray[np.float64]:
    try:
        arr = np.asarray(utilities)
    except (ValueError, TypeError) as exc:
        raise DataValidationError("utilities must be a 1-D array of real numbers") from exc
    if arr.dtype.kind not in "iuf":
        raise DataValidationError(f"utilities must hold real numbers, not dtype {arr.dtype}")
    if arr.ndim != 1 or arr.size == 0:
        raise DataValidationError(
            f"utilities must be a non-empty 1-D array (one utility per candidate), "
            f"got shape {arr.shape}"
        )
    u = arr.astype(np.float64, copy=False)
    if not np.isfinite(u).all():
        raise DataValidationError("utilities contain NaN or infinite entries")
    return u


def _scores(coefficient: float, u: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(over="ignore"):
        scores = coefficient * u
    spread = float(scores.max() - scores.min()) if np.isfinite(scores).all() else math.inf
    if not math.isfinite(spread):
        raise DataValidationError(
            "utilities times epsilon/(2*sensitivity) overflow float64; rescale the utilities"
        )
    return scores
