"""MQM release: order check → validate → spend → noise, guarantees, and the bad-input catalogue."""

from __future__ import annotations

import numpy as np
import pytest

from ppdp.accounting import Accountant
from ppdp.budget import GuaranteeKind, PrivacyBudget
from ppdp.correlated import MODEL_IN_THETA, MarkovChainClass, MarkovQuiltMechanism, PufferfishSpec
from ppdp.exceptions import BudgetExceededError, DataValidationError, ParameterError

P = [[0.9, 0.1], [0.2, 0.8]]


def _theta(**kw) -> MarkovChainClass:
    return MarkovChainClass(transitions=[P], states=["a", "b"], **kw)


def test_release_histogram_charges_and_states_guarantee(seed: int) -> None:
    acct = Accountant.in_memory(total=PrivacyBudget(2.0))
    mech = MarkovQuiltMechanism(1.0, _theta())
    trace = ["a"] * 30 + ["b"] * 70
    rel = mech.release(trace, random_state=seed, accountant=acct, allow_seeded=True)
    assert rel.value.shape == (2,)
    assert rel.noise_scale >= (2 / 100) * mech.sigma_max(100)
    assert rel.noise_scale <= (2 / 100) * mech.sigma_max(100) * (1 + 1e-6)
    g = rel.guarantee
    assert g.kind is GuaranteeKind.PUFFERFISH and g.epsilon == 1.0
    assert MODEL_IN_THETA in g.assumptions
    assert any(a.startswith("Θ:") for a in g.assumptions)
    assert any(a.startswith("secret pairs:") for a in g.assumptions)
    [rec] = acct.history()
    assert rec.mechanism == "MQMExact"
    assert rel.ledger_index == rec.index and rel.seeded
    assert acct.spent == PrivacyBudget(1.0)
    d = acct.events("spend")[-1].payload["details"]
    assert d["T"] == 100 and d["method"] == "exact" and d["noise_scale"] == rel.noise_scale


def test_release_is_unbiased_around_the_histogram() -> None:
    theta = MarkovChainClass(transitions=[[[0.5, 0.5], [0.5, 0.5]]])
    mech = MarkovQuiltMechanism(1.0, theta)
    trace = np.array([0] * 250 + [1] * 750)
    vals = np.array([mech.release(trace, random_state=i).value for i in range(300)])
    assert mech.noise_scale(1000) == pytest.approx(1.0)
    # scale 2/T·σ = 0.002: the mean of 300 draws is within 6 standard errors of the truth
    assert np.abs(vals.mean(axis=0) - [0.25, 0.75]).max() < 6 * 0.002 * np.sqrt(2 / 300)


def test_callable_query_uses_lipschitz(seed: int) -> None:
    mech = MarkovQuiltMechanism(1.0, _theta(), lipschitz=1.0)

    def count_a(codes: np.ndarray) -> float:
        return float(np.count_nonzero(codes == 0))

    rel = mech.release(["a", "b", "a"] * 10, count_a, random_state=seed)
    assert rel.details["lipschitz"] == 1.0 and rel.details["query"] == "count_a"
    assert rel.noise_scale == pytest.approx(mech.noise_scale(30), rel=1e-6)


def test_pufferfish_spec_text() -> None:
    spec = _theta().spec()
    assert isinstance(spec, PufferfishSpec)
    lines = spec.guarantee_assumptions()
    assert lines[-1] == MODEL_IN_THETA and "1 Markov chain" in lines[2]
    with pytest.raises(ParameterError, match="secrets"):
        PufferfishSpec(secrets=" ", secret_pairs="x", theta="y")


# -- bad input: one clear error, nothing released, nothing charged ---------------------------


def test_trace_outside_states_names_the_count_not_the_values() -> None:
    acct = Accountant.in_memory(total=PrivacyBudget(2.0))
    mech = MarkovQuiltMechanism(1.0, _theta())
    with pytest.raises(DataValidationError, match=r"2 of 5 entries outside the 2 declared") as e:
        mech.release(
            ["a", "b", "secret-x", "a", "secret-y"],
            accountant=acct,
            random_state=0,
            allow_seeded=True,
        )
    assert "secret" not in str(e.value)
    assert acct.history() == []


def test_budget_refused_before_the_data_are_read() -> None:
    acct = Accountant.in_memory(total=PrivacyBudget(0.5))
    mech = MarkovQuiltMechanism(1.0, _theta())
    with pytest.raises(BudgetExceededError):
        mech.release(
            ["zz"], accountant=acct, random_state=0, allow_seeded=True
        )  # invalid data never read
    assert acct.history() == []


@pytest.mark.parametrize("eps", [0.0, -1.0, float("nan"), 11.0])
def test_bad_epsilon(eps: float) -> None:
    with pytest.raises(ParameterError, match="epsilon"):
        MarkovQuiltMechanism(eps, _theta())


@pytest.mark.parametrize(
    ("mats", "match"),
    [
        ([[[0.9, 0.2], [0.2, 0.8]]], r"transitions\[0\] row 0 sums to"),
        ([P, [[1.1, -0.1], [0.5, 0.5]]], r"transitions\[1\] has a negative entry"),
        ([[[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]]], "square"),
        ([P, [[1.0]]], "1×1 but the other"),
        ([], "non-empty"),
    ],
)
def test_bad_transition_matrices(mats, match: str) -> None:
    with pytest.raises(ParameterError, match=match):
        MarkovChainClass(transitions=mats)


def test_bad_initials_and_states() -> None:
    with pytest.raises(ParameterError, match=r"initials\[0\] sums to"):
        MarkovChainClass(transitions=[P], initials=[[0.5, 0.6]])
    with pytest.raises(ParameterError, match="initials has 2 entries"):
        MarkovChainClass(transitions=[P], initials=[None, None])
    with pytest.raises(ParameterError, match="distinct"):
        MarkovChainClass(transitions=[P], states=["a", "a"])


@pytest.mark.parametrize(
    ("mat", "match"),
    [
        ([[1.0, 0.0], [0.5, 0.5]], "reducible"),
        ([[0.0, 1.0], [1.0, 0.0]], "periodic"),
        ([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]], "reducible"),
    ],
)
def test_approx_rejects_chains_it_cannot_bound(mat, match: str) -> None:
    theta = MarkovChainClass(transitions=[mat])
    with pytest.raises(ParameterError, match=match):
        MarkovQuiltMechanism(1.0, theta, method="approx")
    MarkovQuiltMechanism(1.0, theta).noise_scale(20)  # exact handles them


def test_exact_on_periodic_chain_falls_back_to_group_noise() -> None:
    theta = MarkovChainClass(transitions=[[[0.0, 1.0], [1.0, 0.0]]])
    assert MarkovQuiltMechanism(1.0, theta).noise_scale(50) == pytest.approx(50.0)


def test_non_reversible_chain_uses_reversiblised_gap() -> None:
    cyc = np.array([[0.1, 0.8, 0.1], [0.1, 0.1, 0.8], [0.8, 0.1, 0.1]])
    theta = MarkovChainClass(transitions=[cyc])
    d = theta.diagnostics(0)
    assert not d.reversible and d.aperiodic and 0 < d.gap < 1
    ex = MarkovQuiltMechanism(1.0, theta).noise_scale(500)
    ap = MarkovQuiltMechanism(1.0, theta, method="approx").noise_scale(500)
    assert ex <= ap <= 500


def test_from_box_is_a_sampled_theta() -> None:
    lo = np.array([[0.7, 0.05], [0.1, 0.6]])
    hi = np.array([[0.95, 0.3], [0.4, 0.9]])
    theta = MarkovChainClass.from_box(lo, hi, samples=20)
    assert len(theta) == 21
    assert (theta.matrices >= lo - 1e-12).all() and (theta.matrices <= hi + 1e-12).all()
    assert np.allclose(theta.matrices.sum(axis=2), 1.0)
    assert "covers these matrices only" in " ".join(theta.spec().guarantee_assumptions())
    with pytest.raises(ParameterError, match="admits no probability"):
        MarkovChainClass.from_box([[0.6, 0.6], [0, 0]], [[0.9, 0.9], [1, 1]])


def test_a_rescaled_source_is_refused_with_a_ledger_and_halves_the_noise_without() -> None:
    """The release goes through the one run: an audit's rescaled source (half the noise) is
    refused with a ledger, nothing spent; without one it draws exactly half the noise."""
    from ppdp.audit import ScaledNoise
    from ppdp.random import SeededRandom

    acct = Accountant.in_memory(total=PrivacyBudget(2.0))
    mech = MarkovQuiltMechanism(1.0, _theta())
    trace = ["a"] * 30 + ["b"] * 70
    with pytest.raises(ParameterError, match=r"^random_state \(ScaledNoise\(.*draws 0.5 ×"):
        mech.release(trace, random_state=ScaledNoise(3, 0.5), accountant=acct, allow_seeded=True)
    assert acct.history() == []
    full = mech.release(trace, random_state=SeededRandom(3))
    half = mech.release(trace, random_state=ScaledNoise(SeededRandom(3), 0.5))
    exact = np.array([0.3, 0.7])
    np.testing.assert_allclose(half.value - exact, (full.value - exact) / 2, atol=1e-6)
