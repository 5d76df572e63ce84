"""The discrete Laplace PLD built from runs (issue 29): bounded at any Δ, never below exact.

``dp-accounting``'s ``from_discrete_laplace_mechanism`` walks every integer between the two
centres (Δ = 2²⁴: 14.7 s and 1.9 GB, in every process opening the ledger). ppdp groups the
integers whose loss lands in one grid bucket (``accounting/_dlaplace_pld.py``,
``docs/proofs/discrete-laplace.md`` §3). Checked here: the same rounded PLD as the library's,
bucket for bucket; never below the exact (unrounded) privacy profile, composed; a bounded
number of points and evaluations at Δ = 2²⁴ and 2⁴⁰; the ledger equal to ``PLDAccountant``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppdp.accounting import Accountant, _dlaplace_pld
from ppdp.accounting._dlaplace_pld import rounded_pmf
from ppdp.accounting._tight import DISCRETIZATION, _cached_pld
from ppdp.accounting.events import DiscreteLaplace
from ppdp.budget import PrivacyBudget

dpa = pytest.importorskip("dp_accounting")
pld = dpa.pld.privacy_loss_distribution
H = DISCRETIZATION


def _event(sensitivity: int, epsilon: float) -> DiscreteLaplace:
    return DiscreteLaplace(l1_sensitivity=sensitivity, scale=sensitivity / epsilon)


def _library_pmf(event: DiscreteLaplace, *, pessimistic: bool = True) -> dict[int, float]:
    lib = pld.from_discrete_laplace_mechanism(
        parameter=event.noise_parameter,
        sensitivity=event.l1_sensitivity,
        value_discretization_interval=H,
        pessimistic_estimate=pessimistic,
    )
    pmf = lib._pmf_remove
    if hasattr(pmf, "_loss_probs"):
        return {int(k): float(v) for k, v in pmf._loss_probs.items() if v > 0}
    return {pmf._lower_loss + i: float(v) for i, v in enumerate(pmf._probs) if v > 0}


# Round ε (the library's float rounding puts ±ε on a grid point: ties) and odd ones.
CASES = [
    (1, 1.0),
    (2, 0.4),
    (3, 5.0),
    (7, 0.3),
    (100, 2.0),
    (1024, 0.5),
    (3000, 0.1),
    (4096, 1e-3),
    (4253, 1.0864),
    (879, 2.1704),
    (5, 9.7),
]


@pytest.mark.parametrize(("sensitivity", "epsilon"), CASES)
def test_the_runs_give_the_librarys_rounded_pld_bucket_for_bucket(sensitivity, epsilon):
    event = _event(sensitivity, epsilon)
    ours = rounded_pmf(event.noise_parameter, sensitivity, H)
    lib = _library_pmf(event)
    assert set(ours) == set(lib)  # every loss in the bucket the library rounds it up to
    keys = sorted(lib)
    # The library's masses are differences of CDF values (cancellation, up to ~1e-11
    # relative here); ours are closed-form geometric sums.
    np.testing.assert_allclose([ours[k] for k in keys], [lib[k] for k in keys], rtol=1e-9)
    assert sum(ours.values()) == pytest.approx(1.0, abs=1e-12)


def _exact_loss_law(event: DiscreteLaplace) -> tuple[np.ndarray, np.ndarray]:
    """The unrounded PLD of (DL + Δ, DL), enumerated over the integers (mass < 1e-300 cut)."""
    a, d = event.noise_parameter, event.l1_sensitivity
    ys = np.arange(-2000, 2000 + d)
    p = math.tanh(a / 2) * np.exp(-a * np.abs(ys))  # DL centred at 0: the upper law
    loss = a * (np.abs(ys - d) - np.abs(ys))  # log p(y) / p(y − Δ)
    return loss, p


def _exact_delta(event: DiscreteLaplace, k: int, eps: np.ndarray) -> np.ndarray:
    """δ(ε) of the k-fold composition, exactly: E[(1 − e^{ε − L})₊] over the summed losses."""
    loss, p = _exact_loss_law(event)
    values, inverse = np.unique(np.round(loss, 12), return_inverse=True)
    mass = np.bincount(inverse, weights=p)
    total_loss, total_mass = values, mass
    for _ in range(k - 1):
        total_loss = np.add.outer(total_loss, values).ravel()
        total_mass = np.multiply.outer(total_mass, mass).ravel()
    gain = np.maximum(0.0, 1.0 - np.exp(eps[:, None] - total_loss[None, :]))
    return gain @ total_mass


def _pld(event: DiscreteLaplace):
    pmf = rounded_pmf(event.noise_parameter, event.l1_sensitivity, H)
    return pld.PrivacyLossDistribution.create_from_rounded_probability(pmf, 0.0, H)


@pytest.mark.parametrize(("sensitivity", "scale"), [(1, 1.3), (2, 0.9), (7, 3.0), (24, 10.0)])
def test_never_below_the_exact_privacy_profile_alone_and_composed(monkeypatch, sensitivity, scale):
    event = DiscreteLaplace(l1_sensitivity=sensitivity, scale=scale)
    eps = np.linspace(0.0, 2.5 * sensitivity / scale, 16)
    exact = {k: _exact_delta(event, k, eps) for k in (1, 3)}
    ours = _pld(event)
    for k in (1, 3):
        composed = ours.self_compose(k) if k > 1 else ours
        assert np.all(np.asarray(composed.get_delta_for_epsilon(eps)) >= exact[k] - 1e-13)
    # The check has teeth: every loss one bucket lower (rounded down) falls below it.
    index = _dlaplace_pld._index
    monkeypatch.setattr(_dlaplace_pld, "_index", lambda a, h, m: index(a, h, m) - 1)
    broken = _pld(event)
    assert np.any(np.asarray(broken.get_delta_for_epsilon(eps)) < exact[1] - 1e-9)


@pytest.mark.parametrize("log_sensitivity", [10, 14])
def test_epsilon_for_delta_never_below_the_librarys_point_by_point_pld(log_sensitivity):
    event = _event(2**log_sensitivity, 0.5)
    exact = pld.from_discrete_laplace_mechanism(
        parameter=event.noise_parameter,
        sensitivity=event.l1_sensitivity,
        value_discretization_interval=H,
    )
    ours = _cached_pld(event)
    for k in (1, 10):
        e_k, o_k = (x.self_compose(k) if k > 1 else x for x in (exact, ours))
        for delta in (1e-3, 1e-6, 1e-9):
            e, o = e_k.get_epsilon_for_delta(delta), o_k.get_epsilon_for_delta(delta)
            # Equal up to the order of float additions (measured: |o − e| <= 1.2e-14).
            assert o >= e * (1 - 1e-12)
            assert o == pytest.approx(e, rel=1e-12)


@pytest.mark.parametrize("sensitivity", [2**24, 2**40])
def test_a_huge_delta_takes_a_bounded_number_of_points_and_evaluations(monkeypatch, sensitivity):
    def point_by_point(**_):  # the O(Δ) construction must not run
        raise AssertionError("from_discrete_laplace_mechanism called")

    monkeypatch.setattr(pld, "from_discrete_laplace_mechanism", point_by_point)
    evaluated = []
    index = _dlaplace_pld._index

    def counting(parameter, interval, m):
        evaluated.append(np.size(m))
        return index(parameter, interval, m)

    monkeypatch.setattr(_dlaplace_pld, "_index", counting)
    event = _event(sensitivity, 0.5)
    bound = 2 * 0.5 / H + 4  # 2ε/h + 4, whatever Δ
    pmf = rounded_pmf(event.noise_parameter, sensitivity, H)
    assert len(pmf) <= bound
    assert sum(evaluated) <= 20 * bound
    assert sum(pmf.values()) == pytest.approx(1.0, abs=1e-12)
    _cached_pld.cache_clear()
    ours = _cached_pld(event).self_compose(10).get_epsilon_for_delta(1e-3)
    # At this Δ the discrete law is the continuous Laplace's at the same ε (to ~1e-4 here),
    # far below the worst ε-DP pair's 4.878.
    laplace = pld.from_laplace_mechanism(parameter=2.0, value_discretization_interval=H)
    assert ours == pytest.approx(laplace.self_compose(10).get_epsilon_for_delta(1e-3), abs=1e-3)
    assert ours < 4.6


def test_the_ledger_equals_pld_accountant_computed_directly(tmp_path, monkeypatch):
    monkeypatch.setenv("PPDP_ANCHOR_DIR", str(tmp_path / "anchors"))
    small = _event(2**12, 0.3)
    path = tmp_path / "ledger"
    total = PrivacyBudget(5.0, 1e-6)
    with Accountant.open(path, dataset_id="d", total=total, composition="pld") as acct:
        for _ in range(12):
            acct.spend(small, mechanism="DiscreteLaplace")
    _cached_pld.cache_clear()  # a fresh process: the PLD is rebuilt from the ledger
    with Accountant.open_existing(path) as acct:
        ours = acct.spent.epsilon
    ref = dpa.pld.PLDAccountant(value_discretization_interval=H)
    ref.compose(dpa.dp_event.DiscreteLaplaceDpEvent(small.noise_parameter, 2**12), 12)
    assert ref.get_epsilon(1e-6) < 12 * 0.3  # the library's bound is the binding one
    assert ours == pytest.approx(ref.get_epsilon(1e-6), rel=1e-9)
