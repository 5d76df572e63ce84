"""The Markov Quilt Mechanism on Bayesian networks: hand-computed cases, the chain formulas
of B.5, the Markov-chain mechanism (when present), bad CPTs and the release path."""

from __future__ import annotations

import importlib
import math
import sys

import numpy as np
import pytest

from ppdp.accounting import Accountant
from ppdp.budget import GuaranteeKind, PrivacyBudget
from ppdp.exceptions import (
    BudgetExceededError,
    DataValidationError,
    OptionalDependencyError,
    ParameterError,
    ParameterTypeError,
)

nx = pytest.importorskip("networkx")

from ppdp.correlated.bayesnet import (  # noqa: E402
    BayesianNetworkClass,
    BayesNetQuiltMechanism,
    max_influence_of,
)


def chain_dag(T: int):
    G = nx.DiGraph()
    G.add_nodes_from(range(T))
    G.add_edges_from((t, t + 1) for t in range(T - 1))
    return G


def chain_class(T: int, Ps, q) -> BayesianNetworkClass:
    if isinstance(Ps, np.ndarray):
        Ps = [Ps]
    cpts = [{0: np.asarray(q), **{t: np.asarray(P) for t in range(1, T)}} for P in Ps]
    return BayesianNetworkClass(chain_dag(T), cpts, states=list(range(len(q))))


def chain_sigma_reference(T: int, Ps, q, eps: float) -> float:
    """σ_max of MQMExact for a chain with a known initial law, straight from B.5 (1-based)."""
    k = len(q)
    worst = 0.0
    for i in range(1, T + 1):
        best = T / eps
        cands = [(a, b) for a in range(0, i) for b in range(0, T - i + 1) if a or b]
        for a, b in cands:  # a = 0: right-only; b = 0: left-only
            e = 0.0
            for P in Ps:
                pw = [np.linalg.matrix_power(P, m) for m in range(T + 1)]
                marg = q @ pw[i - 1]
                for s in range(k):
                    for t in range(k):
                        if s == t:
                            continue
                        val = 1.0
                        if b:
                            val *= max(pw[b][s, z] / pw[b][t, z] for z in range(k))
                        if a:
                            val *= max(pw[a][y, s] / pw[a][y, t] for y in range(k))
                            val *= marg[t] / marg[s]
                        e = max(e, math.log(val))
            if e >= eps:
                continue
            if a and b:
                card = a + b - 1
            elif a:
                card = T - i + a
            else:
                card = i + b - 1
            best = min(best, card / (eps - e))
        worst = max(worst, best)
    return worst


def test_two_nodes_by_hand():
    # X -> Y; P(X) = (0.5, 0.5), P(Y | X) = [[0.8, 0.2], [0.3, 0.7]].
    G = nx.DiGraph([("X", "Y")])
    cpt = {"X": [0.5, 0.5], "Y": [[0.8, 0.2], [0.3, 0.7]]}
    theta = BayesianNetworkClass(G, cpt, states=["a", "b"])
    eps = 3.0
    m = BayesNetQuiltMechanism(eps, theta)
    # Node X, quilt {Y}: N = {X}, e = log max(0.8/0.3, 0.7/0.2) = log 3.5.
    ex = math.log(3.5)
    # Node Y, quilt {X}: P(X | Y=a) = (0.8, 0.3)/1.1, P(X | Y=b) = (0.2, 0.7)/0.9.
    ey = max(
        math.log((0.8 / 1.1) / (0.2 / 0.9)),
        math.log((0.7 / 0.9) / (0.3 / 1.1)),
    )
    sx, sy = min(2 / eps, 1 / (eps - ex)), min(2 / eps, 1 / (eps - ey))
    assert [c.node for c in m.quilts] == ["X", "Y"]
    assert m.quilts[0].quilt == ("Y",) and m.quilts[0].nearby == 1
    assert m.quilts[0].influence == pytest.approx(ex, abs=1e-9)
    assert m.quilts[1].influence == pytest.approx(ey, abs=1e-9)
    assert m.sigma_max == pytest.approx(max(sx, sy), rel=1e-9)
    # At ε = 2 the quilts are feasible but the trivial quilt (2/ε = 1) scores better.
    assert BayesNetQuiltMechanism(2.0, theta).sigma_max == 1.0
    # At ε = 1 both influences exceed ε: only the trivial quilt is left (GroupDP, n/ε).
    assert BayesNetQuiltMechanism(1.0, theta).sigma_max == 2.0


def test_independent_nodes_give_the_dp_noise():
    G = nx.DiGraph()
    G.add_nodes_from("abcd")
    theta = BayesianNetworkClass(G, {v: [0.3, 0.7] for v in "abcd"}, states=[0, 1])
    m = BayesNetQuiltMechanism(0.5, theta)
    assert m.sigma_max == pytest.approx(1 / 0.5)
    assert all(c.nearby == 1 and c.influence == 0.0 for c in m.quilts)


@pytest.mark.parametrize(
    ("P", "q", "eps"),
    [
        ([[0.9, 0.1], [0.2, 0.8]], [0.5, 0.5], 1.0),
        ([[0.6, 0.4], [0.3, 0.7]], [0.2, 0.8], 1.0),
        ([[0.5, 0.3, 0.2], [0.2, 0.5, 0.3], [0.3, 0.3, 0.4]], [0.2, 0.3, 0.5], 0.7),
    ],
)
def test_chain_agrees_with_the_b5_formulas(P, q, eps):
    T = 9
    P, q = np.asarray(P), np.asarray(q)
    m = BayesNetQuiltMechanism(eps, chain_class(T, P, q))
    assert m.sigma_max == pytest.approx(chain_sigma_reference(T, [P], q, eps), rel=1e-8)
    assert m.sigma_max <= T / eps


def test_a_class_of_two_chains_takes_the_worst_case():
    T = 8
    P1 = np.array([[0.7, 0.3], [0.3, 0.7]])
    P2 = np.array([[0.6, 0.4], [0.2, 0.8]])
    q = np.array([0.4, 0.6])
    both = BayesNetQuiltMechanism(1.0, chain_class(T, [P1, P2], q)).sigma_max
    assert both == pytest.approx(chain_sigma_reference(T, [P1, P2], q, 1.0), rel=1e-8)
    for P in (P1, P2):
        assert both >= BayesNetQuiltMechanism(1.0, chain_class(T, P, q)).sigma_max


def test_chain_agrees_with_the_markov_chain_mechanism():
    """The strong cross-check: a chain-shaped network against MarkovQuiltMechanism(exact)."""
    try:
        correlated = importlib.import_module("ppdp.correlated")
        MQM, MCC = correlated.MarkovQuiltMechanism, correlated.MarkovChainClass
    except (ImportError, AttributeError):
        pytest.skip("ppdp.correlated.MarkovQuiltMechanism is not in the tree")
    T, eps = 10, 1.0
    for P, q in (
        (np.array([[0.9, 0.1], [0.2, 0.8]]), np.array([0.5, 0.5])),
        (np.array([[0.6, 0.4], [0.3, 0.7]]), np.array([0.3, 0.7])),
    ):
        bn = BayesNetQuiltMechanism(eps, chain_class(T, P, q), lipschitz=2.0)
        mc = MQM(eps, MCC(transitions=[P], initials=[q]), method="exact", lipschitz=2.0)
        assert bn.noise_scale() == pytest.approx(mc.noise_scale(T), rel=1e-8)
        seq = [0, 1] * (T // 2)
        a = bn.release(seq, random_state=5)
        b = mc.release(seq, random_state=5)
        assert a.noise_scale == pytest.approx(b.noise_scale, rel=1e-8)


def test_a_collider_is_not_a_quilt_boundary():
    # A -> C <- B: given C, A and B are dependent (explaining away); given nothing, not.
    G = nx.DiGraph([("A", "C"), ("B", "C")])
    theta = BayesianNetworkClass(
        G,
        {
            "A": [0.5, 0.5],
            "B": [0.5, 0.5],
            "C": [[[0.9, 0.1], [0.5, 0.5]], [[0.5, 0.5], [0.1, 0.9]]],
        },
        states=[0, 1],
    )
    assert theta.remote("A", ()) == frozenset({"B"})
    assert theta.remote("A", ("C",)) == frozenset()
    m = BayesNetQuiltMechanism(1.0, theta)
    # A's best quilt is the empty one (B is remote, N = {A, C}); {C} would pull B into N.
    assert m.quilts[0].quilt == () and m.quilts[0].nearby == 2
    assert m.sigma_max == 3.0  # no quilt of C beats the trivial one


def test_max_influence_edge_cases():
    assert max_influence_of(np.array([[0.5, 0.0], [0.0, 0.5]])) == math.inf
    assert max_influence_of(np.array([[0.3, 0.2], [0.0, 0.0]])) == 0.0  # one possible secret
    assert max_influence_of(np.array([[0.1, 0.1], [0.4, 0.4]])) == pytest.approx(0.0, abs=1e-15)


def test_noise_scale_is_lipschitz_times_sigma(seed):
    theta = chain_class(6, np.array([[0.9, 0.1], [0.2, 0.8]]), np.array([0.5, 0.5]))
    m = BayesNetQuiltMechanism(1.0, theta, lipschitz=3.0)
    assert m.noise_scale() == 3.0 * m.sigma_max
    rel = m.release([0, 1, 1, 0, 0, 0], query=lambda c: float(c.sum()), random_state=seed)
    assert rel.noise_scale >= 3.0 * m.sigma_max  # plus the grid slack d·Λ·σ_max
    assert rel.noise_scale == pytest.approx(3.0 * m.sigma_max, rel=1e-8)


# -- bad input ----------------------------------------------------------------------------


def _two():
    return nx.DiGraph([(0, 1)])


@pytest.mark.parametrize(
    ("cpts", "match"),
    [
        ({0: [0.5, 0.6], 1: [[0.5, 0.5], [0.5, 0.5]]}, r"cpts\[0\]\[0\] row .* sums to 1\.1"),
        ({0: [0.5, 0.5], 1: [[0.5, 0.5], [0.5, 0.4]]}, r"row \(1,\) sums to 0\.9"),
        ({0: [1.5, -0.5], 1: [[0.5, 0.5], [0.5, 0.5]]}, "finite probabilities >= 0"),
        ({0: [0.5, 0.5], 1: [0.5, 0.5]}, r"shape \(2,\); a node with 1 parent"),
        ({0: [0.5, 0.5]}, "missing \\[1\\]"),
        ({0: [0.5, 0.5], 1: [[0.5, 0.5], [0.5, 0.5]], 2: [0.5, 0.5]}, "unknown \\[2\\]"),
        ({0: [0.5, np.nan], 1: [[0.5, 0.5], [0.5, 0.5]]}, "finite"),
    ],
)
def test_bad_cpts_are_refused(cpts, match):
    with pytest.raises(ParameterError, match=match):
        BayesianNetworkClass(_two(), cpts, states=[0, 1])


def test_bad_graphs_and_sizes_are_refused():
    cpt = {0: [0.5, 0.5], 1: [[0.5, 0.5], [0.5, 0.5]]}
    with pytest.raises(ParameterError, match="acyclic"):
        BayesianNetworkClass(nx.DiGraph([(0, 1), (1, 0)]), cpt, states=[0, 1])
    with pytest.raises(ParameterTypeError, match=r"networkx\.DiGraph"):
        BayesianNetworkClass(nx.Graph([(0, 1)]), cpt, states=[0, 1])
    with pytest.raises(ParameterError, match="at least 2 distinct"):
        BayesianNetworkClass(_two(), cpt, states=[0, 0])
    with pytest.raises(ParameterError, match=r"at most 4194304 = 2\^22"):
        big = chain_dag(23)
        BayesianNetworkClass(big, {}, states=[0, 1])
    with pytest.raises(ParameterError, match="parents\\[1\\]"):
        BayesianNetworkClass(_two(), cpt, states=[0, 1], parents={1: [5]})
    theta = BayesianNetworkClass(_two(), cpt, states=[0, 1])
    with pytest.raises(ParameterError, match="epsilon"):
        BayesNetQuiltMechanism(0.0, theta)
    with pytest.raises(ParameterError, match="max_quilt_size"):
        BayesNetQuiltMechanism(1.0, theta, max_quilt_size=4)
    with pytest.raises(ParameterTypeError, match="BayesianNetworkClass"):
        BayesNetQuiltMechanism(1.0, {"not": "a class"})


def test_explicit_parent_order_transposes_the_cpt():
    G = nx.DiGraph([("A", "C"), ("B", "C")])
    rng = np.random.default_rng(0)
    cpt = rng.dirichlet([1, 1], size=(2, 2))  # axes (A, B, C)
    base = {"A": [0.3, 0.7], "B": [0.6, 0.4]}
    t1 = BayesianNetworkClass(G, {**base, "C": cpt}, states=[0, 1], parents={"C": ["A", "B"]})
    t2 = BayesianNetworkClass(
        G, {**base, "C": cpt.transpose(1, 0, 2)}, states=[0, 1], parents={"C": ["B", "A"]}
    )
    np.testing.assert_allclose(t1.joint(), t2.joint())
    assert t1.joint().sum() == pytest.approx(1.0)


def test_without_networkx_the_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "networkx", None)
    with pytest.raises(OptionalDependencyError, match="pip install networkx"):
        BayesianNetworkClass(object(), {}, states=[0, 1])


# -- release ------------------------------------------------------------------------------


def test_release_histogram_and_guarantee(seed):
    theta = chain_class(6, np.array([[0.9, 0.1], [0.2, 0.8]]), np.array([0.5, 0.5]))
    m = BayesNetQuiltMechanism(1.0, theta)
    rel = m.release([0, 1, 1, 0, 0, 0], random_state=seed)
    assert rel.value.shape == (2,)
    # relative frequencies over n = 6 nodes: L = 2/6
    assert rel.details["lipschitz"] == pytest.approx(2 / 6)
    assert rel.noise_scale == pytest.approx(2 / 6 * m.sigma_max, rel=1e-8)
    g = rel.guarantee
    assert g.kind is GuaranteeKind.PUFFERFISH and g.epsilon == 1.0
    assert any("true data-generating model is in Θ" in a for a in g.assumptions)
    assert any("X_i = a" in a for a in g.assumptions)
    assert rel.details["worst_node"] in {repr(c.node) for c in m.quilts}


def test_release_mean_of_many_is_the_histogram():
    """Unbiased noise: the mean of 4000 releases is within 5 standard errors (fails ~1e-6)."""
    theta = chain_class(4, np.array([[0.9, 0.1], [0.2, 0.8]]), np.array([0.5, 0.5]))
    m = BayesNetQuiltMechanism(1.0, theta)
    rels = [m.release([0, 0, 1, 0], random_state=s) for s in range(4000)]
    vals = np.array([r.value for r in rels])
    se = math.sqrt(2) * rels[0].noise_scale / math.sqrt(len(vals))
    np.testing.assert_array_less(np.abs(vals.mean(0) - [0.75, 0.25]), 5 * se)


def test_release_callable_query_and_mapping_values(seed):
    theta = chain_class(3, np.array([[0.9, 0.1], [0.2, 0.8]]), np.array([0.5, 0.5]))
    m = BayesNetQuiltMechanism(1.0, theta)
    rel = m.release({0: 1, 1: 1, 2: 0}, query=lambda c: float(c.sum()), random_state=seed)
    assert np.shape(rel.value) == ()


def test_bad_values_spend_nothing():
    theta = chain_class(3, np.array([[0.9, 0.1], [0.2, 0.8]]), np.array([0.5, 0.5]))
    m = BayesNetQuiltMechanism(1.0, theta)
    acct = Accountant.in_memory(total=PrivacyBudget(1.5))
    for bad in ([0, 1, 7], [0, 1], {0: 1, 1: 0}, [0, 1, None]):
        with pytest.raises(DataValidationError):
            m.release(bad, accountant=acct)
    with pytest.raises(ParameterTypeError):
        m.release("ab1", accountant=acct)
    assert acct.spent.epsilon == 0.0
    m.release([0, 1, 1], accountant=acct, random_state=0, allow_seeded=True)
    assert acct.spent.epsilon == 1.0
    with pytest.raises(BudgetExceededError):
        m.release([9, 9, 9], accountant=acct)  # refused before the data are read
    with pytest.raises(ParameterError, match="query"):
        m.release([0, 1, 1], query="mean")


def test_remote_set_is_exactly_the_d_separated_nodes():
    """On random DAGs, remote(i, Q) equals the nodes networkx finds d-separated one by one."""
    rng = np.random.default_rng(7)
    for trial in range(15):
        n = 7
        G = nx.DiGraph()
        G.add_nodes_from(range(n))
        G.add_edges_from((a, b) for a in range(n) for b in range(a + 1, n) if rng.random() < 0.3)
        cpts = {}
        for v in range(n):
            shape = (2,) * (len(list(G.predecessors(v))) + 1)
            cpts[v] = np.full(shape, 0.5)
        theta = BayesianNetworkClass(G, cpts, states=[0, 1])
        for i in range(n):
            others = [u for u in range(n) if u != i]
            for size in (0, 1, 2):
                for _ in range(3):
                    Q = tuple(rng.choice(others, size=size, replace=False).tolist())
                    expect = {
                        v
                        for v in range(n)
                        if v != i and v not in Q and nx.is_d_separator(G, {i}, {v}, set(Q))
                    }
                    assert theta.remote(i, Q) == expect, (trial, i, Q)


def test_zero_transitions_make_every_quilt_infinite_and_impossible_secrets_are_skipped():
    T = 5
    # State 0 is absorbing: P^b has a zero in every column-1 ratio, so e = inf for every quilt.
    m = BayesNetQuiltMechanism(1.0, chain_class(T, np.array([[1.0, 0.0], [0.5, 0.5]]), [0.5, 0.5]))
    assert m.sigma_max == T / 1.0
    # X_1 = 1 has probability 0: node 1 has no secret pair, its influence on anything is 0.
    G = nx.DiGraph([(0, 1)])
    theta = BayesianNetworkClass(G, {0: [1.0, 0.0], 1: [[0.9, 0.1], [0.1, 0.9]]}, states=[0, 1])
    m2 = BayesNetQuiltMechanism(1.0, theta)
    assert m2.quilts[0].influence == 0.0 and m2.quilts[0].nearby == 1
