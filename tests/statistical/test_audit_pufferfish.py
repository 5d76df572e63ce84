"""Pufferfish audit of MQMExact on Markov chains (docs/audit.md procedure, Pufferfish pairs).

For every θ in a small Θ (two binary chains with a declared initial law), the secret pair is
``X_i = 0`` vs ``X_i = 1`` at the node where the search attains σ_max. Each trial redraws
the whole chain from θ *conditioned on the secret* (exact sampling: X_i fixed, forward with
P, backward with the reversed kernel ``P(X_j = y | X_{j+1} = x) ∝ (q P^{j-1})_y P_yx``), and
releases the count of state 0 with MQM (the query ``F = #{j: X_j = 0}``, L = 1, one
coordinate of the histogram in counts: the tight case of the Lipschitz argument; the
relative-frequency histogram is calibrated for its L1 constant 2/T and would leave a
factor 2 of slack per coordinate). The statistic is the released value.

False-positive rate: a correct ε-Pufferfish mechanism fails each audit with probability at
most α = 1e-6 (Clopper–Pearson, docs/audit.md), so ≤ 2e-6 for the two θ. The control
halves the noise (really ~2ε at the audited pair) and must fail for every θ; the exact
privacy loss of this pair at T = 10, ε = 2 is ≈ 1.82 (full noise) and ≈ 3.45 (half noise),
computed by enumeration when the test was written.
"""

from __future__ import annotations

import numpy as np
import pytest

from ppdp import noise
from ppdp.audit import audit
from ppdp.correlated import MarkovChainClass, MarkovQuiltMechanism
from ppdp.correlated._release import add_noise, grid_scale

pytestmark = pytest.mark.statistical

EPS = 2.0
T = 10
CHAINS = [np.array([[0.55, 0.45], [0.45, 0.55]]), np.array([[0.5, 0.5], [0.4, 0.6]])]
Q0 = np.array([0.5, 0.5])
THETA = MarkovChainClass(transitions=CHAINS, initials=[Q0, Q0])
MECH = MarkovQuiltMechanism(EPS, THETA, lipschitz=1.0)


def conditioned_chains(P: np.ndarray, node: int, state: int, n: int, src) -> np.ndarray:
    """``n`` chains X_1..X_T from (Q0, P) conditioned on X_node = state (node 0-based)."""
    X = np.empty((n, T), dtype=np.int64)
    X[:, node] = state
    for j in range(node + 1, T):
        u = noise.uniform(n, random_state=src)
        X[:, j] = (u >= P[X[:, j - 1], 0]).astype(np.int64)
    marg = [Q0]
    for _ in range(1, T):
        marg.append(marg[-1] @ P)
    for j in range(node - 1, -1, -1):
        nxt = X[:, j + 1]
        w0 = marg[j][0] * P[0, nxt]
        w1 = marg[j][1] * P[1, nxt]
        u = noise.uniform(n, random_state=src)
        X[:, j] = (u * (w0 + w1) >= w0).astype(np.int64)
    return X


def sampler(P: np.ndarray, node: int, state: int, multiplier: float):
    sigma = MECH.sigma_max(T)
    scale, lam = grid_scale(1.0, sigma, 1)

    def sample(n: int, src) -> np.ndarray:
        counts = (conditioned_chains(P, node, state, n, src) == 0).sum(axis=1).astype(np.float64)
        return add_noise(counts, scale * multiplier, lam, src)

    return sample


def _count0(codes: np.ndarray) -> float:
    return float(np.count_nonzero(codes == 0))


def test_sampler_uses_the_release_scale() -> None:
    rel = MECH.release(np.zeros(T, dtype=np.int64), _count0, random_state=0)
    assert rel.noise_scale == grid_scale(1.0, MECH.sigma_max(T), 1)[0]


def test_conditioned_sampler_matches_the_joint_law() -> None:
    """Sanity: the conditional marginal of X_1 matches Bayes' rule (exact value)."""
    P = CHAINS[1]
    node = MECH.search(T).node - 1
    X = conditioned_chains(P, node, 0, 200_000, noise_source(0))
    Pn = np.linalg.matrix_power(P, node)
    exact = Q0[0] * Pn[0, 0] / (Q0 @ Pn[:, 0])
    assert abs((X[:, 0] == 0).mean() - exact) < 5 * np.sqrt(0.25 / 200_000)


def noise_source(seed: int):
    from ppdp.random import resolve_random_state

    return resolve_random_state(seed)


@pytest.mark.parametrize("j", [0, 1])
def test_pufferfish_audit_passes_and_half_noise_fails(j: int, seed: int) -> None:
    node = MECH.search(T).node - 1
    P = CHAINS[j]
    kw = {"claimed_epsilon": EPS, "n_select": 200_000, "n_measure": 1_000_000}
    ok = audit(sampler(P, node, 0, 1.0), sampler(P, node, 1, 1.0), random_state=seed, **kw)
    assert ok.passed, ok
    bad = audit(sampler(P, node, 0, 0.5), sampler(P, node, 1, 0.5), random_state=seed, **kw)
    assert not bad.passed, f"the audit has no power: half-noise control passed: {bad}"
