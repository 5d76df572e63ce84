"""MQM for Markov chains: known answers, brute force over the joint law, the pruned search.

The brute force enumerates all k^T traces, conditions on X_i = s and computes every
quilt's max-influence from the joint law itself (no formula of ALGORITHMS B.5 is reused),
then takes the min score per node and the max over nodes.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ppdp.correlated import GroupDPMechanism, MarkovChainClass, MarkovQuiltMechanism
from ppdp.correlated._quilt import ExactTables, _Search, search


def _joint(P: np.ndarray, q: np.ndarray, T: int) -> tuple[np.ndarray, np.ndarray]:
    k = P.shape[0]
    seqs = np.array(list(itertools.product(range(k), repeat=T)))
    prob = q[seqs[:, 0]].copy()
    for j in range(1, T):
        prob *= P[seqs[:, j - 1], seqs[:, j]]
    return seqs, prob


def _influence(seqs, prob, i, quilt_nodes, k) -> float:
    """max over s≠t, x_Q of log P(X_Q=x | X_i=s)/P(X_Q=x | X_i=t) (0-based nodes)."""
    worst = -math.inf
    if not quilt_nodes:
        return 0.0 if any(prob[seqs[:, i] == s].sum() > 0 for s in range(k)) else -math.inf
    keys = [tuple(r) for r in seqs[:, quilt_nodes]]
    for s, t in itertools.permutations(range(k), 2):
        ps, pt = prob[seqs[:, i] == s].sum(), prob[seqs[:, i] == t].sum()
        if ps == 0 or pt == 0:
            continue
        law_s: dict = {}
        law_t: dict = {}
        for key, p, x in zip(keys, prob, seqs[:, i], strict=True):
            if x == s:
                law_s[key] = law_s.get(key, 0.0) + p / ps
            elif x == t:
                law_t[key] = law_t.get(key, 0.0) + p / pt
        for key, a in law_s.items():
            b = law_t.get(key, 0.0)
            if a > 0:
                worst = max(worst, math.inf if b == 0 else math.log(a / b))
    return worst


def brute_sigma_max(Ps, qs, T: int, eps: float) -> float:
    k = Ps[0].shape[0]
    joints = [_joint(P, q, T) for P, q in zip(Ps, qs, strict=True)]
    sig_max = 0.0
    for i in range(T):  # 0-based node
        quilts = [((), T)]  # (quilt nodes, card N)
        for a in range(1, i + 1):
            quilts.append(((i - a,), T - i - 1 + a))  # left-only
        for b in range(1, T - i):
            quilts.append(((i + b,), i + b))  # right-only
        for a in range(1, i + 1):
            for b in range(1, T - i):
                quilts.append(((i - a, i + b), a + b - 1))
        best = math.inf
        for nodes, card in quilts:
            e = max(_influence(s, p, i, list(nodes), k) for s, p in joints)
            if e < eps:
                best = min(best, card / (eps - e))
        sig_max = max(sig_max, best)
    return sig_max


CHAINS = [
    np.array([[0.8, 0.2], [0.3, 0.7]]),
    np.array([[0.6, 0.4], [0.45, 0.55]]),
    np.array([[0.5, 0.3, 0.2], [0.2, 0.6, 0.2], [0.25, 0.25, 0.5]]),
]


@pytest.mark.parametrize("T", [1, 2, 3, 5, 7])
@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
def test_exact_matches_brute_force_binary(T: int, eps: float) -> None:
    Ps = CHAINS[:2]
    qs = [np.array([0.5, 0.5]), np.array([0.3, 0.7])]
    theta = MarkovChainClass(transitions=Ps, initials=qs)
    got = MarkovQuiltMechanism(eps, theta).sigma_max(T)
    assert got == pytest.approx(brute_sigma_max(Ps, qs, T, eps), rel=1e-9)


@pytest.mark.parametrize("T", [2, 4, 6])
def test_exact_matches_brute_force_three_states(T: int) -> None:
    Ps = [CHAINS[2]]
    qs = [np.array([0.2, 0.5, 0.3])]
    theta = MarkovChainClass(transitions=Ps, initials=qs)
    got = MarkovQuiltMechanism(2.0, theta).sigma_max(T)
    assert got == pytest.approx(brute_sigma_max(Ps, qs, T, 2.0), rel=1e-9)


@pytest.mark.parametrize("T", [3, 6])
def test_unconstrained_initial_law_is_the_worst_case(T: int) -> None:
    """Unconstrained q: at least every fixed q (brute force over q, vertices included)."""
    P = CHAINS[0]
    got = MarkovQuiltMechanism(1.0, MarkovChainClass(transitions=[P])).sigma_max(T)
    worst = 0.0
    for w in [1e-6, 0.1, 0.5, 0.9, 1 - 1e-6]:
        q = np.array([w, 1 - w])
        worst = max(worst, brute_sigma_max([P], [q], T, 1.0))
        fixed = MarkovChainClass(transitions=[P], initials=[q])
        assert MarkovQuiltMechanism(1.0, fixed).sigma_max(T) <= got * (1 + 1e-12)
    assert worst <= got * (1 + 1e-12)
    assert worst == pytest.approx(got, rel=1e-3)  # the sup is approached at a vertex


def test_joint_maximum_not_separate_maxima() -> None:
    """Pitfall B.9.6: the influence uses the joint max over (s, t), which is smaller here."""
    P = CHAINS[2]
    tab = ExactTables(MarkovChainClass(transitions=[P]))
    lr, _ = tab.node(5)
    joint = (tab.up(2)[1] + tab.down(2)[1] + lr).max()
    separate = tab.up(2)[1].max() + tab.down(2)[1].max() + lr[np.isfinite(lr)].max()
    assert joint < separate


@pytest.mark.parametrize("eps", [0.2, 1.0, 4.0])
@pytest.mark.parametrize("theta_id", [0, 1, 2])
def test_shared_interior_range_equals_node_by_node_search(eps: float, theta_id: int) -> None:
    """The pruned search (shared interior range, early stops) equals σ computed at every node."""
    Ps = [[CHAINS[0]], [CHAINS[0], CHAINS[1]], [CHAINS[2]]][theta_id]
    theta = MarkovChainClass(transitions=Ps)
    T = 300
    tables = ExactTables(theta)
    fast = search(tables, T, eps, max_range=10_000)
    S = _Search(tables, T, eps, 10_000)
    full = max(S.explicit(i, 0.0)[0] for i in range(1, T + 1))
    assert fast.sigma == pytest.approx(full, rel=1e-12)
    assert fast.exact


def test_independent_rows_give_dp_noise() -> None:
    """Identical rows = independent nodes: σ_max = 1/ε for every T ≥ 1 (quilt = neighbours)."""
    theta = MarkovChainClass(transitions=[[[0.2, 0.5, 0.3]] * 3])
    for T in [1, 2, 10, 10**6]:
        assert MarkovQuiltMechanism(0.5, theta).sigma_max(T) == pytest.approx(2.0)
        # the approximate bound is looser (e^{-g b} < π_min needs b ≥ 2 here) but never smaller
        assert MarkovQuiltMechanism(0.5, theta, method="approx").sigma_max(T) >= 2.0


def test_lipschitz_multiplies_the_scale() -> None:
    theta = MarkovChainClass(transitions=[CHAINS[0]])
    m1 = MarkovQuiltMechanism(1.0, theta)
    m3 = MarkovQuiltMechanism(1.0, theta, lipschitz=3.0)
    assert m3.noise_scale(50) == pytest.approx(3.0 * m1.noise_scale(50))


GRID = [round(0.1 * j, 1) for j in range(1, 10)]


@pytest.mark.parametrize("p0", GRID)
def test_exact_le_approx_le_groupdp_on_the_binary_grid(p0: float) -> None:
    """The issue's target at T = 100, ε = 1: MQMExact ≤ MQMApprox ≤ GroupDP everywhere."""
    T, eps = 100, 1.0
    group = GroupDPMechanism(eps).noise_scale(T)
    for p1 in GRID:
        theta = MarkovChainClass(transitions=[[[p0, 1 - p0], [1 - p1, p1]]])
        ex = MarkovQuiltMechanism(eps, theta).noise_scale(T)
        ap = MarkovQuiltMechanism(eps, theta, method="approx").noise_scale(T)
        assert ex <= ap * (1 + 1e-12) <= group * (1 + 1e-12), (p0, p1, ex, ap)


def test_weak_correlation_is_orders_of_magnitude_below_group_dp() -> None:
    theta = MarkovChainClass(transitions=[[[0.5, 0.5], [0.4, 0.6]]])
    assert (
        MarkovQuiltMechanism(1.0, theta).noise_scale(100)
        < GroupDPMechanism(1.0).noise_scale(100) / 10
    )


def test_large_t_interior_is_shared() -> None:
    rng = np.random.default_rng(0)
    theta = MarkovChainClass(
        transitions=[rng.dirichlet(np.full(4, 2.0), size=4) for _ in range(10)]
    )
    for method in ("exact", "approx"):
        r = MarkovQuiltMechanism(1.0, theta, method=method).search(10**6)
        assert r.exact and r.nodes_searched < 200 and r.sigma < 100
