"""The class Θ of Markov chains: finite sets of transition matrices (and initial laws).

Everything here depends on the declared parameters only, never on private data.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from ppdp._validation import check_int
from ppdp.correlated._spec import PufferfishSpec
from ppdp.exceptions import DataValidationError, ParameterError, ParameterTypeError

__all__ = ["MarkovChainClass", "chain_diagnostics"]

#: Rows of a transition matrix (and initial laws) must sum to 1 within this tolerance.
ROW_TOLERANCE = 1e-9
#: π_x P_xy = π_y P_yx within this tolerance counts as reversible.
REVERSIBLE_TOLERANCE = 1e-10


def _as_stochastic(name: str, value: Any, k: int | None) -> NDArray[np.float64]:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (ValueError, TypeError) as exc:
        raise ParameterError(f"{name} must be a square matrix of real numbers") from exc
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ParameterError(f"{name} (shape {arr.shape}) must be a square k×k matrix")
    if k is not None and arr.shape[0] != k:
        raise ParameterError(
            f"{name} is {arr.shape[0]}×{arr.shape[0]} but the other matrices are {k}×{k}"
        )
    if arr.shape[0] < 2:
        raise ParameterError(f"{name} (shape {arr.shape}) needs at least 2 states")
    if not np.isfinite(arr).all():
        raise ParameterError(f"{name} has NaN or infinite entries")
    neg = np.argwhere(arr < 0)
    if neg.size:
        r, c = neg[0]
        raise ParameterError(
            f"{name} has a negative entry ({arr[r, c]!r} at row {r}, column {c}); "
            "transition probabilities must be >= 0"
        )
    sums = arr.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > ROW_TOLERANCE)
    if bad.size:
        r = int(bad[0])
        raise ParameterError(
            f"{name} row {r} sums to {float(sums[r])!r}; every row must sum to 1 within "
            f"{ROW_TOLERANCE:g}"
        )
    return arr


def _as_distribution(name: str, value: Any, k: int) -> NDArray[np.float64]:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (ValueError, TypeError) as exc:
        raise ParameterError(f"{name} must be a vector of {k} probabilities") from exc
    if arr.shape != (k,):
        raise ParameterError(f"{name} (shape {arr.shape}) must be a vector of {k} probabilities")
    if not np.isfinite(arr).all() or (arr < 0).any():
        raise ParameterError(f"{name} must hold finite probabilities >= 0")
    if abs(arr.sum() - 1.0) > ROW_TOLERANCE:
        raise ParameterError(
            f"{name} sums to {float(arr.sum())!r}; it must sum to 1 within {ROW_TOLERANCE:g}"
        )
    return arr


def _reach(mask: NDArray[np.bool_], steps: int) -> NDArray[np.bool_]:
    """Boolean matrix power ``mask**steps`` (paths of exactly ``steps`` edges)."""
    out = np.eye(mask.shape[0], dtype=bool)
    base = mask.copy()
    while steps:
        if steps & 1:
            out = (out.astype(np.int64) @ base.astype(np.int64)) > 0
        base = (base.astype(np.int64) @ base.astype(np.int64)) > 0
        steps >>= 1
    return out


@dataclass(frozen=True, slots=True)
class ChainDiagnostics:
    """Mixing facts of one transition matrix (used by MQMApprox)."""

    irreducible: bool
    aperiodic: bool
    stationary: NDArray[np.float64] | None
    reversible: bool
    gap: float  # g of ALGORITHMS B.6 (0 when undefined)


def chain_diagnostics(P: NDArray[np.float64]) -> ChainDiagnostics:
    """Irreducibility, aperiodicity, stationary law, reversibility and the gap ``g``.

    ``g = 1 − |λ₂(P)|`` (second-largest eigenvalue modulus) for a reversible chain, else
    ``g = ½(1 − λ₂(P P*))`` with the time reversal ``P*_xy = π_y P_yx / π_x``
    (multiplicative reversiblisation, Fill 1991), as in the authors' code.
    """
    k = P.shape[0]
    mask = P > 0
    reach = _reach(mask | np.eye(k, dtype=bool), k - 1)
    irreducible = bool(reach.all())
    # Wielandt: a primitive (irreducible aperiodic) k-state matrix has P^m > 0 for m = (k-1)²+1.
    aperiodic = irreducible and bool(_reach(mask, (k - 1) ** 2 + 1).all())
    if not irreducible:
        return ChainDiagnostics(False, False, None, False, 0.0)
    w, v = np.linalg.eig(P.T)
    idx = int(np.argmin(np.abs(w - 1.0)))
    pi = np.abs(np.real(v[:, idx]))
    pi = pi / pi.sum()
    flow = pi[:, None] * P
    reversible = bool(np.abs(flow - flow.T).max() <= REVERSIBLE_TOLERANCE)
    if reversible:
        mods = np.sort(np.abs(np.linalg.eigvals(P)))[::-1]
        gap = 1.0 - float(mods[1])
    else:
        p_star = (P.T * pi[None, :]) / pi[:, None]
        mods = np.sort(np.abs(np.linalg.eigvals(P @ p_star)))[::-1]
        gap = 0.5 * (1.0 - float(mods[1]))
    return ChainDiagnostics(True, aperiodic, pi, reversible, max(gap, 0.0))


@dataclass(frozen=True, eq=False)
class MarkovChainClass:
    """Θ: a finite set of Markov chains ``θ = (q_θ, P_θ)`` on ``k`` declared states.

    Parameters
    ----------
    transitions : sequence of k×k array_like
        Row-stochastic transition matrices (entries ≥ 0, rows summing to 1 within 1e-9).
    initials : None or sequence of (None or length-k array_like), optional
        The initial law ``q_θ`` of each matrix. ``None`` (for all, or for one matrix) means
        unconstrained: the worst case over every initial law is protected (ALGORITHMS B.5:
        ``sup_q R_i(s, t) = max_y (P^{i-1})_{yt} / (P^{i-1})_{ys}``).
    states : sequence of hashable, optional
        The state names (default ``0 .. k-1``); a trace may hold only these.
    notes : tuple of str, optional
        Extra lines for the guarantee (how Θ was built).

    Notes
    -----
    The Pufferfish guarantee of every mechanism using this class holds only if the true
    data-generating chain is one of these ``θ`` (ALGORITHMS B.9 pitfall 1): estimating
    ``P`` from the sequence that is released is outside the theorem.

    Examples
    --------
    >>> theta = MarkovChainClass(transitions=[[[0.9, 0.1], [0.2, 0.8]]])
    >>> theta.k, len(theta)
    (2, 1)
    """

    transitions: Sequence[ArrayLike]
    initials: Sequence[ArrayLike | None] | None = None
    states: Sequence[Hashable] | None = None
    notes: tuple[str, ...] = ()
    _P: NDArray[np.float64] = field(init=False, repr=False)
    _q: tuple[NDArray[np.float64] | None, ...] = field(init=False, repr=False)
    _diag: list[ChainDiagnostics | None] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        mats = self.transitions
        if isinstance(mats, np.ndarray) and mats.ndim == 2:
            raise ParameterTypeError(
                "transitions must be a list of matrices; wrap a single matrix: transitions=[P]"
            )
        if not isinstance(mats, Sequence | np.ndarray) or len(mats) == 0:
            raise ParameterError("transitions must be a non-empty list of k×k matrices")
        Ps: list[NDArray[np.float64]] = []
        k: int | None = None
        for j, P in enumerate(mats):
            arr = _as_stochastic(f"transitions[{j}]", P, k)
            k = arr.shape[0]
            Ps.append(arr)
        assert k is not None
        stack = np.stack(Ps)
        stack.setflags(write=False)
        object.__setattr__(self, "_P", stack)
        if self.initials is None:
            qs: tuple[NDArray[np.float64] | None, ...] = (None,) * len(Ps)
        else:
            if isinstance(self.initials, np.ndarray) and self.initials.ndim == 1:
                raise ParameterTypeError("initials must be a list with one entry per matrix")
            if len(self.initials) != len(Ps):
                raise ParameterError(
                    f"initials has {len(self.initials)} entries but there are {len(Ps)} matrices"
                )
            qs = tuple(
                None if q is None else _as_distribution(f"initials[{j}]", q, k)
                for j, q in enumerate(self.initials)
            )
        object.__setattr__(self, "_q", qs)
        if self.states is None:
            names: tuple[Hashable, ...] = tuple(range(k))
        else:
            names = tuple(self.states)
            if len(names) != k:
                raise ParameterError(f"states has {len(names)} names but the matrices are {k}×{k}")
            if len(set(names)) != k:
                raise ParameterError("states must be distinct")
        object.__setattr__(self, "states", names)
        notes = self.notes
        if isinstance(notes, str) or not isinstance(notes, tuple | list):
            raise ParameterTypeError(f"notes ({notes!r}) must be a tuple of strings")
        object.__setattr__(self, "notes", tuple(notes))
        object.__setattr__(self, "_diag", [None] * len(Ps))

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def from_box(
        cls,
        lower: ArrayLike,
        upper: ArrayLike,
        *,
        samples: int = 64,
        seed: int = 0,
        states: Sequence[Hashable] | None = None,
    ) -> MarkovChainClass:
        """A *sampled* Θ from box constraints ``lower ≤ P ≤ upper`` (entrywise).

        This is an approximation of the box class: Θ is the finite set of the ``samples``
        matrices drawn here (each row uniform in the box, then moved onto the simplex
        inside the box) plus the row-wise projection of the box centre. The guarantee
        covers those matrices only, not every matrix in the box, and says so. A bounded
        (worst case over the whole box) version is not implemented.

        Parameters
        ----------
        lower, upper : k×k array_like
            Entrywise bounds in [0, 1]; each row must admit a stochastic vector
            (``Σ lower ≤ 1 ≤ Σ upper``).
        samples : int, default 64
            Matrices to draw (≥ 1).
        seed : int, default 0
            Seed of the sampling of Θ (a model class, not privacy noise; it is public).
        states : sequence of hashable, optional
        """
        lo = np.asarray(lower, dtype=np.float64)
        hi = np.asarray(upper, dtype=np.float64)
        if lo.ndim != 2 or lo.shape[0] != lo.shape[1] or lo.shape != hi.shape:
            raise ParameterError(
                f"lower {lo.shape} and upper {hi.shape} must be square matrices of one shape"
            )
        if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
            raise ParameterError("lower and upper must be finite")
        if (lo < 0).any() or (hi > 1).any() or (lo > hi).any():
            raise ParameterError("box bounds must satisfy 0 <= lower <= upper <= 1 entrywise")
        if (lo.sum(axis=1) > 1 + ROW_TOLERANCE).any() or (hi.sum(axis=1) < 1 - ROW_TOLERANCE).any():
            r = int(np.flatnonzero((lo.sum(axis=1) > 1) | (hi.sum(axis=1) < 1))[0])
            raise ParameterError(f"row {r} of the box admits no probability vector")
        n = check_int("samples", samples, minimum=1)
        rng = np.random.default_rng(check_int("seed", seed, minimum=0))
        mats = [_project_rows(0.5 * (lo + hi), lo, hi)]
        for _ in range(n):
            mats.append(_project_rows(rng.uniform(lo, hi), lo, hi))
        note = (
            f"Θ approximates the box lower ≤ P ≤ upper by {len(mats)} sampled matrices "
            f"(seed {seed}); the guarantee covers these matrices only"
        )
        return cls(transitions=mats, states=states, notes=(note,))

    # -- facts -------------------------------------------------------------------------------

    @property
    def k(self) -> int:
        """Number of states."""
        return int(self._P.shape[1])

    def __len__(self) -> int:
        return int(self._P.shape[0])

    @property
    def matrices(self) -> NDArray[np.float64]:
        """The transition matrices, shape ``(|Θ|, k, k)`` (read-only)."""
        return self._P

    @property
    def initial_laws(self) -> tuple[NDArray[np.float64] | None, ...]:
        """The initial law of each matrix (``None`` = unconstrained)."""
        return self._q

    def diagnostics(self, j: int) -> ChainDiagnostics:
        """Mixing facts of matrix ``j`` (cached)."""
        d = self._diag[j]
        if d is None:
            d = chain_diagnostics(self._P[j])
            self._diag[j] = d
        return d

    def approx_constants(self) -> tuple[float, float]:
        """``(π_Θ, g_Θ)`` of ALGORITHMS B.6, or ParameterError if MQMApprox cannot apply."""
        pis, gaps = [], []
        for j in range(len(self)):
            d = self.diagnostics(j)
            if not d.irreducible:
                raise ParameterError(
                    f"transitions[{j}] is reducible; method='approx' needs irreducible aperiodic "
                    "chains: use method='exact'"
                )
            if not d.aperiodic:
                raise ParameterError(
                    f"transitions[{j}] is periodic; method='approx' needs aperiodic chains: "
                    "use method='exact'"
                )
            assert d.stationary is not None
            pis.append(float(d.stationary.min()))
            gaps.append(d.gap)
        pi_min, g = min(pis), min(gaps)
        if not pi_min > 0:
            raise ParameterError(
                "π_min (0.0) of Θ must be > 0 for method='approx': use method='exact'"
            )
        if not g > 0:
            raise ParameterError(f"the eigengap g ({g!r}) of Θ must be > 0 for method='approx'")
        return pi_min, g

    def spec(self) -> PufferfishSpec:
        """The Pufferfish framework these chains define (ALGORITHMS B.3)."""
        init = (
            "unconstrained initial law"
            if all(q is None for q in self._q)
            else "declared initial laws (unconstrained where none is given)"
        )
        return PufferfishSpec(
            secrets=f"X_i = a for every node i and state a of {list(self.states)!r}",
            secret_pairs="(X_i = a, X_i = b) for every node i and states a ≠ b",
            theta=(
                f"{len(self)} Markov chain(s) on {self.k} states given by their transition "
                f"matrices ({init})"
            ),
            notes=self.notes,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (the THETA.json format of the CLI)."""
        return {
            "states": [s if isinstance(s, int | str) else str(s) for s in self.states],
            "transitions": self._P.tolist(),
            "initials": [None if q is None else q.tolist() for q in self._q],
        }

    @classmethod
    def from_dict(cls, obj: Any) -> MarkovChainClass:
        """Parse the THETA.json format: ``{"states": [...], "transitions": [P, ...],
        "initials": null | [q or null, ...]}``."""
        if not isinstance(obj, dict):
            raise ParameterError("theta must be a JSON object with 'transitions'")
        unknown = set(obj) - {"states", "transitions", "initials", "notes"}
        if unknown:
            raise ParameterError(
                f"theta has unknown keys {sorted(unknown)!r}; allowed: 'states', "
                "'transitions', 'initials', 'notes'"
            )
        if "transitions" not in obj:
            raise ParameterError("theta needs 'transitions': a list of k×k matrices")
        notes = obj.get("notes", ())
        return cls(
            transitions=obj["transitions"],
            initials=obj.get("initials"),
            states=obj.get("states"),
            # one note as a string is one note (tuple() would split it into characters)
            notes=(notes,) if isinstance(notes, str) else tuple(notes),
        )

    # -- data --------------------------------------------------------------------------------

    def encode(self, sequence: Any) -> NDArray[np.int64]:
        """State indices of a trace; DataValidationError if a value is not a declared state.

        The message names how many entries are invalid, never the values (they are private).
        """
        if isinstance(sequence, str | bytes) or not hasattr(sequence, "__len__"):
            raise DataValidationError(
                f"sequence must be a 1-D sequence of states, not {type(sequence).__name__}"
            )
        values = (
            np.asarray(sequence, dtype=object) if not isinstance(sequence, np.ndarray) else sequence
        )
        if values.ndim != 1:
            raise DataValidationError(f"sequence must be 1-D (got {values.ndim} dimensions)")
        if values.size == 0:
            raise DataValidationError("sequence is empty; a trace needs at least one state")
        states = list(self.states)
        if states == list(range(self.k)) and values.dtype.kind in "iu":
            codes = values.astype(np.int64)
            bad = int(np.count_nonzero((codes < 0) | (codes >= self.k)))
        else:
            codes = pd.Index(states, dtype=object).get_indexer(pd.Index(values, dtype=object))
            codes = np.asarray(codes, dtype=np.int64)
            bad = int(np.count_nonzero(codes < 0))
        if bad:
            raise DataValidationError(
                f"sequence has {bad} of {values.size} entries outside the {self.k} declared states"
            )
        return codes


def _project_rows(
    x: NDArray[np.float64], lo: NDArray[np.float64], hi: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Move each row of ``x`` (inside the box) onto the simplex, staying in the box."""
    out = x.copy()
    for r in range(out.shape[0]):
        gap = 1.0 - out[r].sum()
        room = (hi[r] - out[r]) if gap > 0 else (out[r] - lo[r])
        total = room.sum()
        if total > 0:
            out[r] += math.copysign(1.0, gap) * room * min(1.0, abs(gap) / total)
        out[r] = np.clip(out[r], lo[r], hi[r])
        out[r] /= out[r].sum()
    return out
