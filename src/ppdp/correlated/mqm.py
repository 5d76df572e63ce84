"""The Markov Quilt Mechanism for Markov chains (Song, Wang & Chaudhuri, SIGMOD 2017).

Privacy argument, the quilt theorem, the max-influence computations and the pruning:
``docs/proofs/pufferfish-mqm.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ppdp._validation import check_epsilon, check_int, check_option, check_positive
from ppdp.accounting import Accountant
from ppdp.accounting.events import Pufferfish
from ppdp.budget import Guarantee, PrivacyBudget
from ppdp.correlated._quilt import ApproxTables, ExactTables, QuiltResult, Tables, search
from ppdp.correlated._release import CorrelatedRelease, Query, release_sequence
from ppdp.correlated._spec import pufferfish_guarantee
from ppdp.correlated.markov import MarkovChainClass
from ppdp.exceptions import ParameterTypeError
from ppdp.random import RandomState

__all__ = ["MarkovQuiltMechanism"]

#: Largest quilt half-width ``a, b`` searched (a wider quilt is never needed for chains
#: that mix; beyond it the result is an upper bound, flagged ``exact=False``).
DEFAULT_MAX_RANGE = 100_000


def _check_theta(theta: Any) -> MarkovChainClass:
    if not isinstance(theta, MarkovChainClass):
        raise ParameterTypeError(f"theta ({type(theta).__name__}) must be a MarkovChainClass")
    return theta


@dataclass(frozen=True, eq=False)
class MarkovQuiltMechanism:
    """MQM for Markov chains: ``F(X) + L·σ_max·Lap(1)`` per coordinate, ε-Pufferfish private.

    Guarantee: ε-Pufferfish privacy in ``(S, Q, Θ)`` with secrets ``X_i = a`` and pairs
    ``(X_i = a, X_i = b)`` for every node ``i`` and states ``a ≠ b``, Θ = ``theta`` — valid
    only if the true chain is in Θ. Sensitivity assumption: the query is ``L``-Lipschitz in
    L1 per changed node (changing one ``X_i`` moves ``F`` by at most ``L`` in L1). For the
    built-in ``"histogram"`` (relative frequencies) ``L = 2/T``: one changed node moves one
    count from one bin to another.

    ``σ_max = max_i min_Q card(X_N)/(ε − e_Θ(X_Q | X_i))`` over every node (ends included)
    and every quilt of the node (two-sided, one-sided and the trivial one), with the
    max-influence ``e_Θ`` computed

    * ``method="exact"``: from matrix powers with the joint maximum over the ordered state
      pair (ALGORITHMS B.5); an unconstrained initial law is handled by its worst case;
    * ``method="approx"``: from ``π_Θ`` and the eigengap ``g_Θ`` (B.6), for irreducible
      aperiodic chains with ``π_min > 0`` (reversiblised gap for non-reversible chains).

    Parameters
    ----------
    epsilon : float
        ε > 0 (at most 10 unless ``allow_large_epsilon``).
    theta : MarkovChainClass
        The class Θ.
    method : {"exact", "approx"}, default "exact"
    lipschitz : float, default 1.0
        L of a callable query (the histogram query uses its own ``2/T``).
    allow_large_epsilon : bool, default False
    max_range : int, default 100000
        Widest quilt half-width searched (a safety cap on the work, never on privacy).

    Notes
    -----
    Numerical caveats: influences are computed in floating point from matrix powers (or
    the closed-form bound), so ``σ_max`` carries a relative error of a few ulps times the
    condition of the log ratios; noise is drawn by :func:`ppdp.noise.laplace` on a
    power-of-two grid with the grid slack added to the scale (``docs/proofs/noise.md``).
    Pufferfish does not compose in general: every release is charged its full ε.
    With a declared initial law, the nodes of the shared interior range use the
    worst case over initial laws (an upper bound); ``details["exact"]`` is False when the
    range cap made ``σ_max`` an upper bound.

    References
    ----------
    .. [SWC17] S. Song, Y. Wang, K. Chaudhuri, "Pufferfish privacy mechanisms for
       correlated data", SIGMOD 2017 (arXiv:1603.03977).
    .. [KM14] D. Kifer, A. Machanavajjhala, "Pufferfish: a framework for mathematical
       privacy definitions", ACM TODS 39(1), 2014.

    Examples
    --------
    Independent data (identical rows): the noise is that of ε-DP, ``L/ε``.

    >>> theta = MarkovChainClass(transitions=[[[0.3, 0.7], [0.3, 0.7]]])
    >>> round(MarkovQuiltMechanism(1.0, theta).noise_scale(1000), 6)
    1.0
    """

    epsilon: float
    theta: MarkovChainClass
    method: Literal["exact", "approx"] = field(default="exact", kw_only=True)
    lipschitz: float = field(default=1.0, kw_only=True)
    allow_large_epsilon: bool = field(default=False, kw_only=True)
    max_range: int = field(default=DEFAULT_MAX_RANGE, kw_only=True)
    _tables: Tables = field(init=False, repr=False)
    _results: dict[int, QuiltResult] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.allow_large_epsilon, bool):
            raise ParameterTypeError(
                f"allow_large_epsilon ({self.allow_large_epsilon!r}) must be True or False"
            )
        object.__setattr__(
            self,
            "epsilon",
            check_epsilon("epsilon", self.epsilon, allow_large=self.allow_large_epsilon),
        )
        _check_theta(self.theta)
        object.__setattr__(self, "method", check_option("method", self.method, ("exact", "approx")))
        object.__setattr__(self, "lipschitz", check_positive("lipschitz", self.lipschitz))
        object.__setattr__(self, "max_range", check_int("max_range", self.max_range, minimum=1))
        if self.method == "approx":
            tables: Tables = ApproxTables(*self.theta.approx_constants())
        else:
            tables = ExactTables(self.theta)
        object.__setattr__(self, "_tables", tables)

    @property
    def name(self) -> str:
        """``MQMExact`` or ``MQMApprox``."""
        return "MQMExact" if self.method == "exact" else "MQMApprox"

    def privacy_events(self) -> tuple[Pufferfish, ...]:
        """The accounting event of one release: ε-Pufferfish (only a basic ledger takes it)."""
        return (Pufferfish(epsilon=self.epsilon, mechanism=self.name),)

    @property
    def budget(self) -> PrivacyBudget:
        """What one release costs: ``PrivacyBudget(epsilon)``."""
        return PrivacyBudget(self.epsilon)

    def search(self, T: int) -> QuiltResult:
        """The quilt search for a chain of length ``T``: σ_max, worst node and its quilt."""
        T = check_int("T", T, minimum=1)
        if T not in self._results:
            self._results[T] = search(self._tables, T, self.epsilon, max_range=self.max_range)
        return self._results[T]

    def sigma_max(self, T: int) -> float:
        """``σ_max`` (the noise scale for ``L = 1``)."""
        return self.search(T).sigma

    def noise_scale(self, T: int) -> float:
        """The Laplace scale ``L·σ_max`` for a chain of length ``T`` (without grid slack)."""
        return self.lipschitz * self.sigma_max(T)

    def _facts(self, T: int) -> dict[str, Any]:
        r = self.search(T)
        return {
            "method": self.method,
            "worst_node": r.node,
            "quilt": list(r.quilt),
            "exact": r.exact,
            "theta_size": len(self.theta),
            "states": self.theta.k,
            "secret_pairs": "(X_i = a, X_i = b), every node i, states a ≠ b",
        }

    def guarantee(self, T: int | None = None, details: dict[str, Any] | None = None) -> Guarantee:
        """ε-Pufferfish in ``(S, Q, Θ)``; holds only if the true model is in Θ."""
        return pufferfish_guarantee(
            self.epsilon,
            self.theta.spec(),
            mechanism=self.name,
            extra=(
                "the query is L-Lipschitz in L1 per changed node (histogram: L = 2/T)",
                "every release is charged in full (Pufferfish does not compose in general)",
            ),
            details=details,
        )

    def release(
        self,
        sequence: Any,
        query: str | Query = "histogram",
        *,
        random_state: RandomState = None,
        accountant: Accountant | None = None,
        allow_seeded: bool = False,
    ) -> CorrelatedRelease:
        """Release ``query(sequence)`` with Laplace noise of scale ``L·σ_max`` (+ grid slack).

        Parameters
        ----------
        sequence : 1-D sequence of states
            The private trace ``X_1..X_T``; every value must be a declared state. Its length
            ``T`` is public.
        query : "histogram" or callable, default "histogram"
            ``"histogram"``: relative frequency of each state (``L = 2/T``). A callable
            receives the state indices (int array, ``0..k-1``) and returns a real vector;
            it must be ``lipschitz``-Lipschitz in L1 per changed node.
        random_state : None, int, SeedSequence, Generator or RandomSource, optional
            ``None`` uses the OS CSPRNG (the only choice for a real release).
        accountant : Accountant, optional
            Checked before the data are read and charged ε before noise is drawn.
        allow_seeded : bool, default False
            With an accountant, a seeded ``random_state`` is refused unless True (the
            ledger records it; see :func:`ppdp.random.refuse_seeded`).

        Returns
        -------
        CorrelatedRelease

        Raises
        ------
        DataValidationError
            A trace value is not a declared state (the count is named, not the values).
        BudgetExceededError
            The accountant cannot afford ε; nothing is read or charged.
        """
        return release_sequence(
            name=self.name,
            epsilon=self.epsilon,
            sigma_of=self.sigma_max,
            encode=self.theta.encode,
            k=self.theta.k,
            lipschitz=self.lipschitz,
            guarantee_of=lambda facts: self.guarantee(details=facts),
            facts_of=self._facts,
            sequence=sequence,
            query=query,
            random_state=random_state,
            accountant=accountant,
            allow_seeded=allow_seeded,
        )
