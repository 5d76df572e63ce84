"""The Markov Quilt Mechanism on discrete Bayesian networks (Song, Wang & Chaudhuri 2017).

Privacy argument: ``docs/proofs/pufferfish-bayesnet.md``. A class Θ is a finite set of
parameterisations (CPTs) of one known DAG over nodes that share one finite state space.
For every node ``X_i`` the mechanism searches the candidate Markov quilts ``X_Q`` (every
set of at most ``max_quilt_size`` other nodes, plus the trivial quilt ``∅``); the remote
set ``X_R`` of a quilt is every node d-separated from ``X_i`` by ``X_Q`` (checked with
networkx), the nearby set is the rest. The max-influence ``e_Θ(X_Q | X_i)`` is computed
exactly from the joint distribution, enumerated over all ``k^n`` states: this module is
for *small* networks, ``k^n ≤ 2^22`` (e.g. 22 binary nodes, 11 four-state nodes).

networkx is an optional dependency: it is imported on first use.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ppdp._validation import check_epsilon, check_int, check_positive
from ppdp.accounting import Accountant
from ppdp.accounting.events import Pufferfish
from ppdp.budget import Guarantee, PrivacyBudget
from ppdp.correlated._release import CorrelatedRelease, release_sequence
from ppdp.correlated._spec import PufferfishSpec, pufferfish_guarantee
from ppdp.exceptions import (
    DataValidationError,
    OptionalDependencyError,
    ParameterError,
    ParameterTypeError,
)
from ppdp.random import RandomState

__all__ = [
    "MAX_JOINT_STATES",
    "BayesNetQuiltMechanism",
    "BayesianNetworkClass",
    "QuiltChoice",
]

#: The largest joint state space ``k^n`` that exact enumeration accepts (32 MiB of float64).
MAX_JOINT_STATES = 2**22
#: Tolerance of a CPT row sum.
ROW_SUM_TOL = 1e-9
#: Upward margin added to every computed max-influence (covers float rounding of the logs).
INFLUENCE_MARGIN = 1e-10


def import_networkx() -> Any:
    """networkx, or an :class:`OptionalDependencyError` with the install hint."""
    try:
        import networkx
    except ImportError as exc:
        raise OptionalDependencyError(
            "Bayesian-network classes need networkx, which is not installed: pip install networkx"
        ) from exc
    return networkx


def _check_states(states: Any) -> tuple[Hashable, ...]:
    if isinstance(states, str) or not isinstance(states, Sequence):
        raise ParameterTypeError(f"states ({states!r}) must be a sequence of state labels")
    out = tuple(states)
    if len(out) < 2 or len(set(out)) != len(out):
        raise ParameterError(f"states ({states!r}) must hold at least 2 distinct labels")
    return out


@dataclass(frozen=True, eq=False)
class BayesianNetworkClass:
    """A class Θ of discrete Bayesian networks on one DAG (a Pufferfish distribution class).

    Parameters
    ----------
    dag : networkx.DiGraph
        The known DAG; a copy is frozen. Its node order (``tuple(dag.nodes)``) is the order
        of the values a release reads.
    cpts : mapping, or sequence of mappings
        One parameterisation θ (a mapping node → CPT) or a finite set of them. The CPT of a
        node with parents ``p_1..p_m`` is an array of shape ``(k,)*m + (k,)``:
        ``cpt[x_1, ..., x_m, x] = P(X = x | parents = x_1..x_m)``; non-negative, each row
        (last axis) sums to 1 within 1e-9. A root node's CPT is its marginal, shape ``(k,)``.
    states : sequence of hashable
        The state labels shared by every node (``k = len(states) ≥ 2``).
    parents : mapping node → sequence of nodes, optional
        The order of a node's parents along its CPT axes; by default
        ``tuple(dag.predecessors(node))`` (the order the edges were added).

    Raises
    ------
    OptionalDependencyError
        Without networkx.
    ParameterError, ParameterTypeError
        A graph with a cycle, a CPT missing or of the wrong shape, a negative entry, a row
        that does not sum to 1, or a joint state space larger than ``MAX_JOINT_STATES``
        (exact inference enumerates every state) or one whose probabilities could
        underflow.
    """

    dag: Any
    cpts: Any
    states: Sequence[Hashable]
    parents: Mapping[Hashable, Sequence[Hashable]] | None = None
    nodes: tuple[Hashable, ...] = field(init=False)
    thetas: tuple[dict[Hashable, NDArray[np.float64]], ...] = field(init=False, repr=False)
    _parents: dict[Hashable, tuple[Hashable, ...]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        nx = import_networkx()
        if not isinstance(self.dag, nx.DiGraph) or self.dag.is_multigraph():
            raise ParameterTypeError(f"dag ({type(self.dag).__name__}) must be a networkx.DiGraph")
        if self.dag.number_of_nodes() == 0:
            raise ParameterError("dag (empty) must have at least one node")
        if not nx.is_directed_acyclic_graph(self.dag):
            raise ParameterError("dag (has a directed cycle) must be acyclic")
        states = _check_states(self.states)
        k = len(states)
        dag = nx.freeze(nx.DiGraph(self.dag))
        nodes = tuple(dag.nodes)
        n = len(nodes)
        if k**n > MAX_JOINT_STATES:
            raise ParameterError(
                f"dag ({n} nodes with {k} states: {k}^{n} joint states) is too large: exact "
                f"inference by enumeration handles at most {MAX_JOINT_STATES} = 2^22 joint "
                "states"
            )
        parents = self._resolve_parents(dag, nodes)
        raw = [self.cpts] if isinstance(self.cpts, Mapping) else self.cpts
        if isinstance(raw, str) or not isinstance(raw, Sequence) or len(raw) == 0:
            raise ParameterTypeError(
                f"cpts ({type(self.cpts).__name__}) must be a mapping node -> CPT or a "
                "non-empty sequence of such mappings"
            )
        thetas = tuple(self._check_theta(j, t, nodes, parents, k, n) for j, t in enumerate(raw))
        object.__setattr__(self, "dag", dag)
        object.__setattr__(self, "states", states)
        object.__setattr__(self, "nodes", nodes)
        object.__setattr__(self, "thetas", thetas)
        object.__setattr__(self, "_parents", parents)

    def _resolve_parents(
        self, dag: Any, nodes: tuple[Hashable, ...]
    ) -> dict[Hashable, tuple[Hashable, ...]]:
        given = dict(self.parents or {})
        extra = set(given) - set(nodes)
        if extra:
            raise ParameterError(f"parents ({sorted(map(repr, extra))}) names nodes not in dag")
        out = {}
        for v in nodes:
            order = tuple(given.get(v, tuple(dag.predecessors(v))))
            if sorted(map(repr, order)) != sorted(map(repr, dag.predecessors(v))) or len(
                set(order)
            ) != len(order):
                raise ParameterError(
                    f"parents[{v!r}] ({order!r}) must list exactly the parents of {v!r} in dag"
                )
            out[v] = order
        return out

    @staticmethod
    def _check_theta(
        j: int,
        theta: Any,
        nodes: tuple[Hashable, ...],
        parents: dict[Hashable, tuple[Hashable, ...]],
        k: int,
        n: int,
    ) -> dict[Hashable, NDArray[np.float64]]:
        if not isinstance(theta, Mapping):
            raise ParameterTypeError(f"cpts[{j}] ({type(theta).__name__}) must be a mapping")
        missing = [v for v in nodes if v not in theta]
        extra = [v for v in theta if v not in parents]
        if missing or extra:
            raise ParameterError(
                f"cpts[{j}] must have one CPT per node of dag: missing {missing!r}, "
                f"unknown {extra!r}"
            )
        out: dict[Hashable, NDArray[np.float64]] = {}
        smallest = 1.0
        for v in nodes:
            try:
                arr = np.array(theta[v], dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise ParameterError(f"cpts[{j}][{v!r}] must be an array of numbers") from exc
            shape = (k,) * (len(parents[v]) + 1)
            if arr.shape != shape:
                raise ParameterError(
                    f"cpts[{j}][{v!r}] has shape {arr.shape}; a node with "
                    f"{len(parents[v])} parent(s) and {k} states needs shape {shape}"
                )
            if not np.isfinite(arr).all() or (arr < 0).any():
                raise ParameterError(f"cpts[{j}][{v!r}] must hold finite probabilities >= 0")
            sums = arr.sum(axis=-1)
            bad = np.abs(sums - 1.0) > ROW_SUM_TOL
            if bad.any():
                idx = tuple(int(x) for x in np.argwhere(np.atleast_1d(bad))[0])
                s = float(np.atleast_1d(sums)[idx] if arr.ndim > 1 else sums)
                raise ParameterError(
                    f"cpts[{j}][{v!r}] row {idx} sums to {float(s)!r}; each CPT row must sum to 1 "
                    f"(within {ROW_SUM_TOL:g})"
                )
            arr.setflags(write=False)
            out[v] = arr
            if (arr > 0).any():
                smallest = min(smallest, float(arr[arr > 0].min()))
        if n * math.log2(smallest) < -1000:
            raise ParameterError(
                f"cpts[{j}] has a smallest positive entry {smallest!r}: products over "
                f"{n} nodes could underflow in exact enumeration"
            )
        return out

    @property
    def k(self) -> int:
        """The number of states."""
        return len(self.states)

    def joint(self, j: int = 0) -> NDArray[np.float64]:
        """The joint distribution of θ_j as an array of shape ``(k,)*n`` (node order)."""
        n, k = len(self.nodes), self.k
        pos = {v: i for i, v in enumerate(self.nodes)}
        joint = np.ones((k,) * n)
        for v in self.nodes:
            axes = [pos[p] for p in self._parents[v]] + [pos[v]]
            table = self.thetas[j][v]
            order = np.argsort(axes)
            shape = [1] * n
            for ax in axes:
                shape[ax] = k
            joint = joint * np.transpose(table, order).reshape(shape)
        return joint

    def remote(self, node: Hashable, quilt: Sequence[Hashable]) -> frozenset[Hashable]:
        """The nodes d-separated from ``node`` by ``quilt`` (its remote set ``X_R``).

        Found with a reachability pass (Bayes ball) and confirmed with networkx's
        d-separation test, which is the authority: a mismatch raises ``RuntimeError``.
        """
        given = set(quilt)
        reach = _d_connected(self.dag, node, given)
        rest = frozenset(v for v in self.nodes if v not in given and v not in reach)
        nx = import_networkx()
        if rest and not nx.is_d_separator(self.dag, {node}, set(rest), given):
            raise RuntimeError(f"d-separation mismatch for node {node!r} and quilt {quilt!r}")
        return rest


def _d_connected(dag: Any, source: Hashable, given: set[Hashable]) -> set[Hashable]:
    """Nodes with an active trail from ``source`` given ``given`` (Koller & Friedman 3.1)."""
    ancestors: set[Hashable] = set()
    stack = list(given)
    while stack:
        v = stack.pop()
        if v not in ancestors:
            ancestors.add(v)
            stack.extend(dag.predecessors(v))
    seen: set[tuple[Hashable, bool]] = set()
    reach: set[Hashable] = set()
    todo: list[tuple[Hashable, bool]] = [(source, True)]  # True: leaving v upwards
    while todo:
        v, up = todo.pop()
        if (v, up) in seen:
            continue
        seen.add((v, up))
        if v not in given:
            reach.add(v)
        if up and v not in given:
            todo.extend((p, True) for p in dag.predecessors(v))
            todo.extend((c, False) for c in dag.successors(v))
        elif not up:
            if v not in given:
                todo.extend((c, False) for c in dag.successors(v))
            if v in ancestors:
                todo.extend((p, True) for p in dag.predecessors(v))
    return reach


def max_influence_of(marginal: NDArray[np.float64]) -> float:
    """``max_{a≠b} max_x log P(x | a)/P(x | b)`` of a joint ``P(X_i = a, X_Q = x)`` (k × m).

    States ``a`` with ``P(X_i = a) = 0`` are no secret (Pufferfish needs both secrets
    possible); ``x`` with ``P(x | b) = 0 < P(x | a)`` gives ``inf``; 0/0 is skipped.
    """
    p_i = marginal.sum(axis=1)
    ok = p_i > 0
    if ok.sum() < 2:
        return 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        logc = np.log(marginal[ok]) - np.log(p_i[ok])[:, None]
        diff = logc[:, None, :] - logc[None, :, :]
    diff = np.where(np.isnan(diff), -np.inf, diff)
    return float(max(diff.max(), 0.0))


@dataclass(frozen=True)
class QuiltChoice:
    """The best quilt found for one node: the quilt, the nearby set's size, e and σ_i."""

    node: Hashable
    quilt: tuple[Hashable, ...]
    nearby: int
    influence: float
    score: float


@dataclass(frozen=True, eq=False)
class BayesNetQuiltMechanism:
    """The Markov Quilt Mechanism for a class Θ of discrete Bayesian networks.

    Guarantee: ε-Pufferfish privacy in the framework ``(S, Q, Θ)`` with secrets
    ``{X_i = a}`` and pairs ``(X_i = a, X_i = b)``, ``a ≠ b``, for every node (each single
    value is protected, not membership), provided the data were drawn from a network in
    Θ and the query changes by at most ``lipschitz`` in L1 when one node's value changes.
    The noise is Laplace with scale ``b = σ_max · (L + d·Λ)`` per coordinate (``d``
    coordinates, Λ the power-of-two grid of value and noise), where
    ``σ_max = max_i min_{X_Q} card(X_N)/(ε − e_Θ(X_Q | X_i))`` over the candidate quilts
    (B.3–B.4 of the algorithms reference). The trivial quilt keeps ``σ_max ≤ n/ε``
    (GroupDP's noise).

    Parameters
    ----------
    epsilon : float
        ε > 0 (at most 10).
    theta : BayesianNetworkClass
        The class Θ.
    lipschitz : float, default 1.0
        L: the L1 change of a callable query when one node's value changes (a single
        count: 1); the "histogram" query sets ``L = 2/n`` itself. It must come from the
        query's definition, never from data.
    max_quilt_size : int, default 2
        Candidate quilts are all sets of at most this many nodes (0 to 3). Size 2 holds
        every quilt of a chain; larger sizes cost ``O(n^size)`` quilts per node.

    Notes
    -----
    Cost: ``O(n · C(n-1, ≤s))`` quilts, each a marginal of the ``k^n`` joint per θ; quilts
    whose nearby set alone gives a score above the best so far are skipped. Exact
    influences are computed in float64 and raised by 1e-10 to cover rounding. Pufferfish
    privacy does not compose in general: budget every release.

    References
    ----------
    .. [SWC17] S. Song, Y. Wang, K. Chaudhuri, "Pufferfish privacy mechanisms for
       correlated data", SIGMOD 2017.
    .. [KM14] D. Kifer, A. Machanavajjhala, "Pufferfish: a framework for mathematical
       privacy definitions", ACM TODS 2014.
    """

    epsilon: float
    theta: BayesianNetworkClass
    lipschitz: float = 1.0
    max_quilt_size: int = 2
    _choices: tuple[QuiltChoice, ...] = field(init=False, repr=False)

    name = "MQM-BayesNet"

    def __post_init__(self) -> None:
        eps = check_epsilon("epsilon", self.epsilon)
        if not isinstance(self.theta, BayesianNetworkClass):
            raise ParameterTypeError(
                f"theta ({type(self.theta).__name__}) must be a BayesianNetworkClass"
            )
        lip = check_positive("lipschitz", self.lipschitz)
        size = check_int("max_quilt_size", self.max_quilt_size, minimum=0)
        if size > 3:
            raise ParameterError(f"max_quilt_size ({size}) must be between 0 and 3")
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "lipschitz", lip)
        object.__setattr__(self, "max_quilt_size", size)
        object.__setattr__(self, "_choices", self._search())

    def _search(self) -> tuple[QuiltChoice, ...]:
        th, eps = self.theta, self.epsilon
        n = len(th.nodes)
        pos = {v: i for i, v in enumerate(th.nodes)}
        joints = [th.joint(j) for j in range(len(th.thetas))]
        cache: dict[tuple[int, ...], float] = {}
        margs: dict[tuple[int, tuple[int, ...]], NDArray[np.float64]] = {}

        def marginal(j: int, keep: tuple[int, ...]) -> NDArray[np.float64]:
            # Shared by every node of ``keep`` (as X_i or as part of a quilt).
            if (j, keep) not in margs:
                margs[(j, keep)] = joints[j].sum(axis=tuple(a for a in range(n) if a not in keep))
            return margs[(j, keep)]

        def influence(i: int, q: tuple[int, ...]) -> float:
            key = (i, *q)
            if key not in cache:
                worst = 0.0
                keep = tuple(sorted((i, *q)))
                for j in range(len(joints)):
                    marg = np.moveaxis(marginal(j, keep), keep.index(i), 0).reshape(th.k, -1)
                    worst = max(worst, max_influence_of(marg))
                    if math.isinf(worst):
                        break
                cache[key] = worst + INFLUENCE_MARGIN if worst > 0 else 0.0
            return cache[key]

        choices = []
        for v in th.nodes:
            i = pos[v]
            # The empty quilt: X_R is every node d-separated from X_i outright (other
            # connected components), so card(X_N) <= n and e = 0.
            alone = n - len(th.remote(v, ()))
            best = QuiltChoice(v, (), alone, 0.0, alone / eps)
            others = [u for u in th.nodes if u != v]
            for size in range(1, self.max_quilt_size + 1):
                for quilt in itertools.combinations(others, size):
                    nearby = n - size - len(th.remote(v, quilt))
                    if nearby / eps >= best.score:
                        continue
                    e = influence(i, tuple(sorted(pos[u] for u in quilt)))
                    if e >= eps:
                        continue
                    score = nearby / (eps - e)
                    if score < best.score:
                        best = QuiltChoice(v, quilt, nearby, e, score)
            choices.append(best)
        return tuple(choices)

    @property
    def quilts(self) -> tuple[QuiltChoice, ...]:
        """The best quilt of every node (node order)."""
        return self._choices

    @property
    def sigma_max(self) -> float:
        """``max_i σ_i`` (in units of L: the Laplace scale is about ``L · σ_max``)."""
        return max(c.score for c in self._choices)

    def privacy_events(self) -> tuple[Pufferfish, ...]:
        """The accounting event of one release: ε-Pufferfish (only a basic ledger takes it)."""
        return (Pufferfish(epsilon=self.epsilon, mechanism=self.name),)

    @property
    def budget(self) -> PrivacyBudget:
        """What one release costs in the ledger: ε (of Pufferfish privacy)."""
        return PrivacyBudget(self.epsilon)

    def noise_scale(self) -> float:
        """The Laplace scale ``L·σ_max`` (a release adds the grid slack ``d·Λ·σ_max``)."""
        return self.lipschitz * self.sigma_max

    def spec(self) -> PufferfishSpec:
        """The Pufferfish framework ``(S, Q, Θ)`` of this mechanism, in words."""
        th = self.theta
        return PufferfishSpec(
            secrets="X_i = a for every node i and state a",
            secret_pairs="(X_i = a, X_i = b), every node i, states a ≠ b (each node's value, "
            "not membership)",
            theta=f"{len(th.thetas)} parameterisation(s) (CPTs) of a known DAG with "
            f"{len(th.nodes)} nodes and {th.k} states each",
        )

    def guarantee(self, details: dict[str, Any] | None = None) -> Guarantee:
        """ε-Pufferfish in ``(S, Q, Θ)``; holds only if the true model is in Θ."""
        return pufferfish_guarantee(
            self.epsilon,
            self.spec(),
            mechanism=self.name,
            extra=(
                "the query is L-Lipschitz in L1 per changed node (histogram: L = 2/n)",
                "every release is charged in full (Pufferfish does not compose in general)",
            ),
            details=details,
        )

    def _encode(self, values: Any) -> NDArray[np.int64]:
        th = self.theta
        if isinstance(values, Mapping):
            missing = [v for v in th.nodes if v not in values]
            if missing or len(values) != len(th.nodes):
                raise DataValidationError(
                    f"values must give a state for each of the {len(th.nodes)} nodes of Θ "
                    f"and for no other node ({len(missing)} missing)"
                )
            seq = [values[v] for v in th.nodes]
        elif isinstance(values, str | bytes) or not isinstance(values, Sequence | np.ndarray):
            raise DataValidationError(
                f"values ({type(values).__name__}) must be a sequence in node order or a "
                "mapping node -> state"
            )
        else:
            seq = list(values)
        if len(seq) != len(th.nodes):
            raise DataValidationError(f"values has {len(seq)} entries; Θ has {len(th.nodes)} nodes")
        index = {s: a for a, s in enumerate(th.states)}
        out = []
        for s in seq:
            try:
                out.append(index[s.item() if isinstance(s, np.generic) else s])
            except (KeyError, TypeError):
                raise DataValidationError(
                    f"values holds a state outside the {th.k} declared states"
                ) from None
        return np.asarray(out, dtype=np.int64)

    def _facts(self, n: int) -> dict[str, Any]:
        worst = max(self._choices, key=lambda c: c.score)
        return {
            "method": "bayesnet-exact",
            "worst_node": repr(worst.node),
            "quilt": [repr(u) for u in worst.quilt],
            "nearby": worst.nearby,
            "theta_size": len(self.theta.thetas),
            "states": self.theta.k,
            "max_quilt_size": self.max_quilt_size,
            "secret_pairs": "(X_i = a, X_i = b), every node i, states a ≠ b",
        }

    def release(
        self,
        values: Sequence[Hashable] | Mapping[Hashable, Hashable],
        query: str | Callable[[NDArray[np.int64]], ArrayLike] = "histogram",
        *,
        random_state: RandomState = None,
        accountant: Accountant | None = None,
        allow_seeded: bool = False,
    ) -> CorrelatedRelease:
        """Release ``query(values)`` with Laplace noise of scale ``L·σ_max`` (+ grid slack).

        Same flow as :meth:`ppdp.correlated.MarkovQuiltMechanism.release`: check the budget,
        validate the values, charge, then add noise.

        Parameters
        ----------
        values : sequence (node order) or mapping node -> state
            One draw of the network; every value must be a declared state.
        query : "histogram" or callable, default "histogram"
            "histogram": the relative frequency of each state over the ``n`` nodes
            (``L = 2/n``, set automatically). A callable gets the state *indices* (int
            array, node order) and returns a real vector; ``lipschitz`` must bound its L1
            change when one node's value changes.
        random_state : optional
            ``None`` (default) uses the OS CSPRNG; anything else is for tests only.
        accountant : Accountant, optional
            Checked before the values are read, charged ε before any noise is drawn.
        allow_seeded : bool, default False
            With an accountant, a seeded ``random_state`` is refused unless True (the
            ledger records it; see :func:`ppdp.random.refuse_seeded`).

        Returns
        -------
        CorrelatedRelease

        Raises
        ------
        DataValidationError
            A value outside the declared states, or not one value per node.
        BudgetExceededError
            The accountant cannot afford ε; nothing is read or charged.
        """
        return release_sequence(
            name=self.name,
            epsilon=self.epsilon,
            sigma_of=lambda n: self.sigma_max,
            encode=self._encode,
            k=self.theta.k,
            lipschitz=self.lipschitz,
            guarantee_of=lambda facts: self.guarantee(details=facts),
            facts_of=self._facts,
            sequence=values,
            query=query,
            random_state=random_state,
            accountant=accountant,
            allow_seeded=allow_seeded,
        )
