"""Grid-membership audits (issue 11): can the noise be read back from the output and its grid?

Objective perturbation was broken because an attacker who holds a candidate dataset D can
solve the released model for the noise and check whether it lies on the power-of-two grid the
sampler rounds to: on the true dataset it does, on a neighbour it does not. Every release
below is an *affine* function of grid noise given the data, ``out = A(snap(f(D), Λ) + Z)``
with ``Z`` on the grid Λ and ``A`` public post-processing (a division by a public count, the
subtraction of a public vector). For each, the attacker's statistic, computed for the fixed
candidate D on outputs drawn from D and from its neighbour D′, is

    s(out) = −dist(A⁻¹(out) − f(D), Λℤᵏ) / Λ

(minus the Euclidean distance of the recovered noise to the grid, in grid steps; ``A⁻¹`` is
the public inverse, e.g. ``n_c · mean``). The real mechanisms snap the value to the noise's
grid, so ``A⁻¹(out) − f(D)`` sits at the distance ``dist(f(D), Λℤᵏ)`` whichever dataset
produced ``out``: the statistic is the same constant on both sides (up to the rounding of
``A``, which depends on the output only), and the audit must PASS (ε lower bound ≤ the claim).
The deliberately broken variant is the very same code with
:func:`ppdp.noise.snap` replaced by the identity, i.e. grid noise added to an *unsnapped*
value: then the recovered noise lies on the grid under D only, the statistic separates D from
D′ almost surely, and the audit must FAIL. Measured over seeds 0–99: real mechanisms 0 in every
case; broken variants 4.2–5.6, against claims of at most 2. Each neighbouring pair is chosen so
that ``f(D′) − f(D)`` is at least a hundredth of a grid step away from the grid (checked), so
the broken variant is detectable.

Draws go through each mechanism's own release path (the functions ``fit`` / ``randomise`` /
``release`` call; where a path is batched, another test in this module or in the mechanism's
audit module checks it against the public API). The Mul-LDA-DP shares are built from the
masks' vectorised law (:func:`~ppdp.federated.masks.sample_joint_noise`) and the owner's
formula; :func:`test_federated_protocol_shares_are_on_the_grid` checks that formula against
shares captured from real simulated rounds, with the trusted dealer and with pairwise masks,
and :func:`test_federated_protocol_without_snapping_is_caught` that owners who do not snap
send shares whose recovered noise lies on the grid.

False-positive rate: each audit of a correct mechanism fails with probability at most
α = 10⁻⁶ (``ppdp.audit.audit``, ``docs/audit.md``); this module runs one audit per case on the
real mechanisms (12 cases), so its family-wise false-positive rate is at most 1.2·10⁻⁵. The
broken-variant audits are controls: they must fail. Seeded (CI uses seed 0).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

from ppdp import noise
from ppdp.audit import audit
from ppdp.correlated import MarkovChainClass, MarkovQuiltMechanism
from ppdp.correlated._release import add_noise, grid_scale, histogram
from ppdp.data import Schema
from ppdp.federated.calibration import federated_noise_plan
from ppdp.federated.masks import sample_joint_noise
from ppdp.learn.rbf_svm import output_mechanism, solve_svm
from ppdp.learn.rff import draw_frequencies, feature_map
from ppdp.mechanisms import GaussianMechanism, LaplaceMechanism
from ppdp.publish.baselines import LaplacePublisher
from ppdp.publish.fisher import (
    class_sum_mechanism,
    lda_noise_plan,
    second_moment_mechanism,
    upper,
)
from ppdp.publish.lda_projection import LDAProjectionPublisher, _add_noise, noisy_statistics
from ppdp.publish.lda_synth import DPLDASynthesizer, _sums_vector
from ppdp.publish.pca import DPPCAPublisher, _add_laplace, _pack
from ppdp.random import RandomSource, SeededRandom

pytestmark = pytest.mark.statistical

ALPHA = 1e-6
#: Draws per side. The real mechanisms give a constant statistic (bound 0 at any size); the
#: broken ones separate (almost) perfectly: 4,000 hits against 0 gives ≈ 5.6.
DRAWS = {"n_select": 1_000, "n_measure": 4_000, "alpha": ALPHA}
#: The broken variants must exceed the largest claim below by a wide margin.
BROKEN_MIN_BOUND = 3.0

Sampler = Callable[[int, RandomSource], np.ndarray]


def grid_statistic(recovered: np.ndarray, candidate: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """``−dist(recovered − candidate, Λℤᵏ)/Λ`` per row (Euclidean, in grid steps).

    ``recovered`` has shape (m, k); ``candidate`` (k,) is f(D) for the fixed candidate D;
    ``grid`` is Λ per coordinate (broadcast to (k,)).
    """
    r = (np.asarray(recovered, dtype=np.float64) - candidate) / grid
    frac = r - np.rint(r)
    return -np.sqrt(np.sum(frac * frac, axis=-1))


def _offset_in_steps(delta: np.ndarray, grid: np.ndarray) -> float:
    """Distance of f(D′) − f(D) to the grid, in grid steps (the broken variant's signal)."""
    r = np.asarray(delta, dtype=np.float64) / grid
    return float(np.sqrt(np.sum((r - np.rint(r)) ** 2)))


def _identity_snap(value, granularity, *, name="value"):
    """The broken variant: no snapping (the value keeps its low bits, off the noise grid)."""
    arr = np.asarray(value, dtype=np.float64)
    return float(arr) if arr.ndim == 0 else arr.copy()


@dataclass(frozen=True)
class Case:
    """One release: samplers on D and D′ (both scored against the candidate D), and its claim."""

    name: str
    epsilon: float
    delta: float
    build: Callable[[], tuple[Sampler, Sampler, float]]  # (on D, on D′, offset in steps)


# --------------------------------------------------------------------------- the cases


def _laplace() -> tuple[Sampler, Sampler, float]:
    mech = LaplaceMechanism(epsilon=1.0, sensitivity=1.0, dimension=3)
    f_d = np.array([0.3, 1.0 / 3.0, -0.1])
    f_p = f_d + np.array([0.7, 0.0, 0.0])  # L1 change 0.7 ≤ Δ
    grid = np.full(3, mech.granularity)

    def on(value):
        def sample(n, src):
            out = mech._release(np.tile(value, n), src).reshape(n, 3)
            return grid_statistic(out, f_d, grid)

        return sample

    return on(f_d), on(f_p), _offset_in_steps(f_p - f_d, grid)


def _gaussian() -> tuple[Sampler, Sampler, float]:
    mech = GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=1.0, dimension=3)
    f_d = np.array([0.3, 1.0 / 3.0, -0.1])
    f_p = f_d + np.array([0.0, 0.6, -0.8])  # L2 change 1 = Δ
    grid = np.full(3, mech.granularity)

    def on(value):
        def sample(n, src):
            out = mech._release(np.tile(value, n), src).reshape(n, 3)
            return grid_statistic(out, f_d, grid)

        return sample

    return on(f_d), on(f_p), _offset_in_steps(f_p - f_d, grid)


# LDA-DP: records in ℝ² with ‖x‖₂ ≤ 1, public class counts (2, 1); D′ replaces a class-0
# record by another class-0 record.
_LDA_D = (np.array([[0.3, 0.4], [0.1, -0.2], [-0.5, 0.1 / 3.0]]), np.array([0, 0, 1]))
_LDA_P = (np.array([[-0.2, 0.7], [0.1, -0.2], [-0.5, 0.1 / 3.0]]), np.array([0, 0, 1]))
_LDA_COUNTS = (2, 1)


def _lda_stats(data):
    X, y = data
    sums = np.stack([X[y == c].sum(axis=0) for c in range(2)])
    return sums, upper(X.T @ X)


def _lda(calibration: str) -> Callable[[], tuple[Sampler, Sampler, float]]:
    def build():
        plan = lda_noise_plan(
            epsilon=1.0,
            delta=1e-5,
            n_features=2,
            class_counts=_LDA_COUNTS,
            calibration=calibration,
        )
        counts = np.asarray(_LDA_COUNTS, dtype=np.float64)
        sums_d, q_d = _lda_stats(_LDA_D)
        sums_p, q_p = _lda_stats(_LDA_P)
        if calibration == "gaussian":
            # the noise is added to the class sums (grid of the sum mechanism), the released
            # means are those sums divided by the public counts: recover n_c·μ̃_c
            sum_grid = class_sum_mechanism(plan).granularity
            mean_grid = np.full((2, 2), sum_grid)
            scale = counts[:, None]
            cand_means = sums_d
            delta_means = sums_p - sums_d
        else:
            # the template adds the noise to the means themselves, on each class's own grid
            mean_grid = np.repeat([[noise.granularity(s)] for s in plan.mean_sigmas], 2, axis=1)
            scale = np.ones((2, 1))
            cand_means = sums_d / counts[:, None]
            delta_means = sums_p / counts[:, None] - cand_means
        q_grid = np.full(
            3,
            second_moment_mechanism(plan).granularity
            if calibration == "gaussian"
            else noise.granularity(plan.scatter_sigma),
        )
        grid = np.concatenate([mean_grid.reshape(-1), q_grid])
        candidate = np.concatenate([cand_means.reshape(-1), q_d])

        def on(sums, q):
            def sample(n, src):
                means, noisy_q = noisy_statistics(
                    plan, np.broadcast_to(sums, (n, 2, 2)), np.broadcast_to(q, (n, 3)), src
                )
                recovered = np.concatenate([(means * scale).reshape(n, 4), noisy_q], axis=1)
                return grid_statistic(recovered, candidate, grid)

            return sample

        offset = _offset_in_steps(np.concatenate([delta_means.reshape(-1), q_p - q_d]), grid)
        return on(sums_d, q_d), on(sums_p, q_p), offset

    return build


def _lda_projections() -> tuple[Sampler, Sampler, float]:
    schema = Schema.from_dict(
        {
            "columns": [
                {"name": "a", "type": "numeric", "lower": 0, "upper": 1},
                {"name": "b", "type": "numeric", "lower": 0, "upper": 1},
            ],
            "label": {"name": "t", "classes": ["u", "v"], "public_counts": [1, 1]},
        }
    )
    pub = LDAProjectionPublisher(2.0, 1e-5, schema)
    mech = pub._projection_mechanism(pub._params().e3, 1, 2)
    W = np.array([[0.6], [0.8]])  # a released unit direction (public, fixed)
    x_d, x_p = np.array([0.3, 0.4]), np.array([-0.2, 0.7])
    f_d, f_p = x_d @ W, x_p @ W
    grid = np.full(1, mech.granularity)

    def on(f):
        def sample(n, src):
            out = _add_noise(mech, np.broadcast_to(f, (n, 1)), src)
            return grid_statistic(out, f_d, grid)

        return sample

    return on(f_d), on(f_p), _offset_in_steps(f_p - f_d, grid)


# Mul-LDA-DP: 2 owners; owner 0 holds 2 records, the neighbour replaces one of them (same
# class). The publisher (or an eavesdropper) sees owner 0's mean share and scatter share.
_FED_OWNER_D = (np.array([[0.3, 0.4], [-0.5, 0.1 / 3.0]]), np.array([0, 1]))
_FED_OWNER_P = (np.array([[-0.2, 0.7], [-0.5, 0.1 / 3.0]]), np.array([0, 1]))
_FED_OTHER = (np.array([[0.1, -0.2], [0.25, 0.5]]), np.array([0, 1]))


def _federated_plan():
    return federated_noise_plan(
        epsilon=1.0, delta=1e-5, n_features=2, class_counts=[2, 2], n_owners=2
    )


def _owner_partials(data) -> tuple[np.ndarray, np.ndarray]:
    """What ``DataOwner`` computes before masking: per-class row sums and upper(XᵀX)."""
    X, y = data
    sums = np.zeros((2, 2))
    for c in range(2):
        rows = X[y == c]
        if rows.shape[0]:
            sums[c] = rows.sum(axis=0)
    return sums, upper(X.T @ X)


def _federated() -> tuple[Sampler, Sampler, float]:
    """Owner 0's shares ``snap(p_j, Λ) + e_j + g_j`` (``DataOwner``'s formula), batched.

    ``e_j + g_j`` per coordinate comes from :func:`sample_joint_noise`, the vectorised law of
    the pairwise masks plus the owner's own noise, on the plan's grids; the protocol tests at
    the end of this module check shares captured from real rounds against this formula.
    """
    plan = _federated_plan()
    sums_d, q_d = _owner_partials(_FED_OWNER_D)
    sums_p, q_p = _owner_partials(_FED_OWNER_P)
    grid = np.concatenate([np.full(4, plan.sum_grid), np.full(3, plan.second_moment_grid)])
    candidate = np.concatenate([sums_d.reshape(-1), q_d])

    def on(sums, q):
        def sample(n, src):
            out = np.empty((n, 7))
            for c in range(2):
                for k in range(2):
                    e = sample_joint_noise(
                        plan, n, random_state=src, statistic="class-sum", class_index=c
                    )[0]
                    out[:, 2 * c + k] = noise.snap(sums[c, k], plan.sum_grid) + e
            for k in range(3):
                e = sample_joint_noise(plan, n, random_state=src, statistic="second-moment")[0]
                out[:, 4 + k] = noise.snap(q[k], plan.second_moment_grid) + e
            return grid_statistic(out, candidate, grid)

        return sample

    offset = _offset_in_steps(np.concatenate([(sums_p - sums_d).reshape(-1), q_p - q_d]), grid)
    return on(sums_d, q_d), on(sums_p, q_p), offset


# DP-PCA and LAP: one numeric column in [0, 1] and one 2-level categorical column; the
# numeric values are not dyadic, so the moments of D and D′ differ off the grid.
_PCA_SCHEMA = {
    "columns": [
        {"name": "a", "type": "numeric", "lower": 0, "upper": 1},
        {"name": "c", "type": "categorical", "categories": ["A", "B"]},
    ]
}
_PCA_N = 50
_ROW_D = np.array([0.3, 1.0, 0.0])
_ROW_P = np.array([0.7, 0.0, 1.0])


def _pca_tables() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    a = rng.random(_PCA_N - 1)
    b = rng.integers(0, 2, _PCA_N - 1)
    background = np.column_stack([a, b == 0, b == 1]).astype(np.float64)
    return np.vstack([background, _ROW_D]), np.vstack([background, _ROW_P])


def _pca_moments(X: np.ndarray) -> np.ndarray:
    return _pack(X.sum(axis=0), X.T @ X)


def _pca_stage1() -> tuple[Sampler, Sampler, float]:
    """Stage 1: the released mean μ̃ = S̃₁/n and second moment M̃ = S̃₂/n (n public)."""
    pub = DPPCAPublisher(1.0, 1, Schema.from_dict(_PCA_SCHEMA))
    mech = pub._stage1_mechanism(_PCA_N)
    D, P = _pca_tables()
    v_d, v_p = _pca_moments(D), _pca_moments(P)
    grid = np.full(v_d.size, mech.granularity)

    def on(v):
        def sample(n, src):
            noisy = _add_laplace(mech, np.broadcast_to(v, (n, v.size)), src)
            released = noisy / _PCA_N  # what _moments releases (mean, upper(M))
            return grid_statistic(released * _PCA_N, v_d, grid)

        return sample

    return on(v_d), on(v_p), _offset_in_steps(v_p - v_d, grid)


def _pca_stage2() -> tuple[Sampler, Sampler, float]:
    """Stage 2: a row's released projection Ỹ = (xŪ + Z) − μ̃ᵀŪ, Ū and μ̃ public (stage 1)."""
    pub = DPPCAPublisher(1.0, 1, Schema.from_dict(_PCA_SCHEMA))
    mech = pub._stage2_mechanism()
    U = np.array([[0.48], [0.6], [-0.64]])  # a released unit component (fixed)
    mu = np.array([0.45, 0.55, 0.45])  # the released noisy mean (fixed)
    f_d, f_p = _ROW_D @ U, _ROW_P @ U
    grid = np.full(1, mech.granularity)
    centre = mu @ U

    def on(f):
        def sample(n, src):
            released = _add_laplace(mech, np.broadcast_to(f, (n, 1)), src) - centre
            return grid_statistic(released + centre, f_d, grid)

        return sample

    return on(f_d), on(f_p), _offset_in_steps(f_p - f_d, grid)


def _lap_baseline() -> tuple[Sampler, Sampler, float]:
    pub = LaplacePublisher(1.0, Schema.from_dict(_PCA_SCHEMA))
    grid = np.full(3, pub._mechanism().granularity)

    def on(row):
        def sample(n, src):
            return grid_statistic(pub._noisy(np.broadcast_to(row, (n, 3)), src), _ROW_D, grid)

        return sample

    return on(_ROW_D), on(_ROW_P), _offset_in_steps(_ROW_P - _ROW_D, grid)


def _dp_lda_synth() -> tuple[Sampler, Sampler, float]:
    """The noisy class sums and upper(Σxxᵀ) (released as ``class_sums``, ``second_moment_sum``)."""
    schema = Schema.from_dict({**_PCA_SCHEMA, "label": {"name": "y", "classes": ["n", "p"]}})
    synth = DPLDASynthesizer(1.0, schema, class_sizes="noisy")
    D, P = _pca_tables()
    y = (np.arange(_PCA_N) % 2).astype(np.int64)
    f_d, f_p = _sums_vector(D, y, 2), _sums_vector(P, y, 2)
    _, eps_sums = synth._budget_split()
    assert eps_sums == pytest.approx(0.9)  # the claim of this case
    grid = np.full(f_d.size, synth._sums_mechanism(eps_sums, _PCA_N).granularity)

    def on(X):
        def sample(n, src):
            return grid_statistic(synth._draw_noisy_sums(X, y, n, src), f_d, grid)

        return sample

    return on(D), on(P), _offset_in_steps(f_p - f_d, grid)


def _mqm() -> tuple[Sampler, Sampler, float]:
    """The relative-frequency histogram of a chain (L1 constant 2/T), one node changed."""
    mech, T = _mqm_mechanism()
    trace_d = np.array([0, 1, 1, 0, 1, 0, 0, 1, 1, 0])
    trace_p = trace_d.copy()
    trace_p[4] = 0
    f_d, f_p = histogram(trace_d, 2), histogram(trace_p, 2)
    scale, lam = grid_scale(2.0 / T, mech.sigma_max(T), 2)
    grid = np.full(2, lam)

    def on(f):
        def sample(n, src):
            out = add_noise(np.tile(f, n), scale, lam, src).reshape(n, 2)
            return grid_statistic(out, f_d, grid)

        return sample

    return on(f_d), on(f_p), _offset_in_steps(f_p - f_d, grid)


def _mqm_mechanism():
    chains = [np.array([[0.55, 0.45], [0.45, 0.55]]), np.array([[0.5, 0.5], [0.4, 0.6]])]
    q0 = np.array([0.5, 0.5])
    theta = MarkovChainClass(transitions=chains, initials=[q0, q0])
    return MarkovQuiltMechanism(2.0, theta), 10


def _rbf_svm() -> tuple[Sampler, Sampler, float]:
    """Output perturbation ŵ = snap(w*, Λ) + Lap: the attacker solves w*_D for the candidate."""
    C = 0.3
    rho = float(draw_frequencies(1, 1, 1.0, 4)[0, 0])
    X = np.array([[1.3 / rho], [-0.4 / rho], [1.0 / rho]])
    y_d, y_p = np.array([-1.0, 1.0, 1.0]), np.array([-1.0, 1.0, -1.0])
    Z = feature_map(X, np.array([[rho]]))
    w_d, ok_d, _ = solve_svm(Z, y_d, C=C, huber_h=0.5)
    w_p, ok_p, _ = solve_svm(Z, y_p, C=C, huber_h=0.5)
    assert ok_d and ok_p
    mech = output_mechanism(epsilon=1.0, C=C, n_components=1, n=3)
    grid = np.full(2, mech.granularity)

    def on(w):
        def sample(n, src):
            out = mech._release(np.tile(w, n), src).reshape(n, 2)
            return grid_statistic(out, w_d, grid)

        return sample

    return on(w_d), on(w_p), _offset_in_steps(w_p - w_d, grid)


CASES = [
    Case("laplace", 1.0, 0.0, _laplace),
    Case("gaussian", 1.0, 1e-5, _gaussian),
    Case("lda-dp statistics (gaussian)", 1.0, 1e-5, _lda("gaussian")),
    Case("lda-dp statistics (paper)", 1.0, 1e-5, _lda("paper")),
    Case("lda-dp noisy projections", 1.0, 0.0, _lda_projections),
    Case("mul-lda-dp owner shares", 1.0, 1e-5, _federated),
    Case("dp-pca stage 1", 0.5, 0.0, _pca_stage1),
    Case("dp-pca stage 2", 0.5, 0.0, _pca_stage2),
    Case("lap baseline", 1.0, 0.0, _lap_baseline),
    Case("dp-lda noisy sums", 0.9, 0.0, _dp_lda_synth),
    Case("mqm histogram", 2.0, 0.0, _mqm),
    Case("rbf-svm", 1.0, 0.0, _rbf_svm),
]
IDS = [c.name for c in CASES]


def _run(case: Case, seed: int):
    sample_d, sample_p, offset = case.build()
    # the broken variant is detectable on this pair: f(D′) − f(D) is off the grid
    assert offset >= 0.01, f"{case.name}: f(D') - f(D) is on the grid; choose another pair"
    return audit(
        sample_d,
        sample_p,
        claimed_epsilon=case.epsilon,
        delta=case.delta,
        random_state=SeededRandom(seed),
        **DRAWS,
    )


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_real_release_passes_the_grid_audit(case: Case, seed: int) -> None:
    result = _run(case, seed)
    assert result.passed, f"{case.name}: {result}"
    assert result.epsilon_lower_bound == 0.0, f"{case.name}: {result}"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_unsnapped_variant_fails_the_grid_audit(
    case: Case, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same code with ``noise.snap`` disabled: grid noise on an unsnapped value."""
    monkeypatch.setattr(noise, "snap", _identity_snap)
    result = _run(case, seed)
    assert not result.passed, f"{case.name}: the grid audit has no power: {result}"
    assert result.epsilon_lower_bound > BROKEN_MIN_BOUND, f"{case.name}: {result}"


# --------------------------------------------------------------------------- release paths


def test_dp_lda_synth_fit_uses_the_audited_path(seed: int) -> None:
    """``fit`` releases exactly ``mech.randomise`` of the audited vector (same draws)."""
    import pandas as pd

    schema = Schema.from_dict({**_PCA_SCHEMA, "label": {"name": "y", "classes": ["n", "p"]}})
    D, _ = _pca_tables()
    y = (np.arange(_PCA_N) % 2).astype(np.int64)
    df = schema.decode(D, y)
    assert isinstance(df, pd.DataFrame)
    synth = DPLDASynthesizer(1.0, schema, class_sizes="noisy", random_state=SeededRandom(seed))
    release = synth.fit(df).release_
    X, yy = schema.encode(df)
    value = _sums_vector(X, yy, 2)
    _, eps_sums = synth._budget_split()
    grid = synth._sums_mechanism(eps_sums, _PCA_N).granularity
    sums = np.concatenate(
        [
            release.statistics["class_sums"].reshape(-1),
            upper(release.statistics["second_moment_sum"]),
        ]
    )
    # the released sums minus the snapped true sums are on the grid exactly
    np.testing.assert_array_equal(np.remainder(sums - noise.snap(value, grid), grid), 0.0)


def test_mqm_release_is_the_audited_path(seed: int) -> None:
    mech, T = _mqm_mechanism()
    trace = np.array([0, 1, 1, 0, 1, 0, 0, 1, 1, 0])
    rel = mech.release(trace, random_state=SeededRandom(seed))
    scale, lam = grid_scale(2.0 / T, mech.sigma_max(T), 2)
    expect = add_noise(histogram(trace, 2), scale, lam, SeededRandom(seed))
    np.testing.assert_array_equal(rel.value, expect)
    assert rel.noise_scale == scale


def test_laplace_randomise_is_the_audited_path(seed: int) -> None:
    mech = LaplaceMechanism(epsilon=1.0, sensitivity=1.0, dimension=3)
    value = np.array([0.3, 1.0 / 3.0, -0.1])
    out = mech.randomise(value, random_state=SeededRandom(seed))
    expect = mech._release(value, SeededRandom(seed))
    np.testing.assert_array_equal(out, expect)


def _captured_shares(monkeypatch=None, *, seed: int, broken: bool, dealer: str = "trusted"):
    """Run real simulated rounds and capture owner 0's mean and scatter shares in flight."""
    from ppdp.federated.messages import Kind, decode_array
    from ppdp.federated.simulate import build_round, run_round

    if broken:
        monkeypatch.setattr(noise, "snap", _identity_snap)
    parts = [_FED_OWNER_D, _FED_OTHER]
    captured: list[tuple[str, np.ndarray]] = []
    states = []

    def hook(message):
        if message.sender == "owner-1" and message.kind == Kind.MEAN_SHARE:
            captured.append(("sums", decode_array(message.payload["sums"])))
        if message.sender == "owner-1" and message.kind == Kind.SCATTER_SHARE:
            captured.append(("second_moment", decode_array(message.payload["second_moment"])))
        return [message]

    for r in range(3):
        rnd = build_round(
            parts,
            epsilon=1.0,
            delta=1e-5,
            class_counts=[2, 2],
            dealer=dealer,
            random_state=1000 * seed + r,
        )
        assert rnd.config.owners[0] == "owner-1"
        run_round(rnd, hook=hook)
        states.append(rnd.publisher.state)
    return captured, states


@pytest.mark.parametrize("dealer", ["trusted", "none"])
def test_federated_protocol_shares_are_on_the_grid(seed: int, dealer: str) -> None:
    """Shares captured from real rounds are ``snap(p_j) + (grid terms)``: the audited formula."""
    plan = _federated_plan()
    sums, second = _owner_partials(_FED_OWNER_D)
    captured, states = _captured_shares(seed=seed, broken=False, dealer=dealer)
    assert states == ["done"] * 3
    kinds = [k for k, _ in captured]
    assert kinds.count("sums") == 3 and kinds.count("second_moment") == 3
    for kind, share in captured:
        value, grid = (sums, plan.sum_grid) if kind == "sums" else (second, plan.second_moment_grid)
        residual = share - noise.snap(value, grid)
        np.testing.assert_array_equal(np.remainder(residual, grid), 0.0)


def test_federated_protocol_without_snapping_is_caught(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Owners that do not snap send shares off the grid; the publisher refuses the round."""
    plan = _federated_plan()
    sums, _ = _owner_partials(_FED_OWNER_D)
    captured, states = _captured_shares(monkeypatch, seed=seed, broken=True)
    mean_shares = [s for k, s in captured if k == "sums"]
    assert mean_shares, "no mean share was sent"
    for share in mean_shares:
        # the recovered noise share − p_j lies on the grid up to float rounding (the
        # attacker's signal; p_j is off the grid by a sizeable fraction of a step) ...
        assert grid_statistic(share.reshape(1, -1), sums.reshape(-1), plan.sum_grid)[0] > -1e-3
        assert _offset_in_steps(sums, plan.sum_grid) > 0.01
        # ... and the share itself does not lie on the grid (the publisher's check)
        assert np.any(np.remainder(share, plan.sum_grid) != 0.0)
    assert all(s != "done" for s in states)
