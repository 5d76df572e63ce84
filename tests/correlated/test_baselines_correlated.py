"""GroupDP and GK16 baselines: known answers, applicability, same release interface."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppdp.accounting import Accountant
from ppdp.budget import GuaranteeKind, PrivacyBudget
from ppdp.correlated import GK16Mechanism, GroupDPMechanism, MarkovChainClass, gk16_gamma
from ppdp.exceptions import ParameterError


def _binary(p: float, q: float) -> MarkovChainClass:
    """The authors' parametrisation: P = [[p, 1-p], [q, 1-q]]."""
    return MarkovChainClass(transitions=[[[p, 1 - p], [q, 1 - q]]])


def _authors_gamma(p: float, q: float) -> float:
    """gamma of GK16 for a binary chain as in the authors' code (their four ratios)."""
    f = [
        (p**2 + p * (1 - q)) / (p**2 + q * (1 - p)),
        (p / q) * ((1 - q) ** 2 + q * (1 - p)) / ((1 - p) * (1 - q) + p * (1 - p)),
        (1 - p) / (1 - q) * ((1 - q) * q + q * p) / ((1 - p) * q + p**2),
        ((1 - q) ** 2 + p * (1 - q)) / ((1 - q) ** 2 + q * (1 - p)),
    ]
    return math.log(max(f + [1 / x for x in f])) / 2


@pytest.mark.parametrize(("p", "q"), [(0.3, 0.6), (0.5, 0.4), (0.9, 0.2), (0.45, 0.55)])
def test_gk16_gamma_matches_the_binary_closed_form(p: float, q: float) -> None:
    assert gk16_gamma(_binary(p, q)) == pytest.approx(_authors_gamma(p, q), rel=1e-12)


def test_gk16_applicability_and_scale() -> None:
    weak = GK16Mechanism(1.0, _binary(0.5, 0.45))
    assert weak.applicable(100)
    g = weak.gamma
    Gamma = np.diag(np.full(99, g), 1) + np.diag(np.full(99, g), -1)
    phi = np.linalg.inv(np.eye(100) - Gamma)
    assert weak.noise_scale(100) == pytest.approx(2 * phi.sum(axis=1).max(), rel=1e-9)
    strong = GK16Mechanism(1.0, _binary(0.9, 0.1))
    assert not strong.applicable(100)
    assert strong.noise_scale(100) == math.inf
    with pytest.raises(ParameterError, match="not applicable"):
        acct = Accountant.in_memory(total=PrivacyBudget(5.0))
        try:
            strong._release_unverified([0, 1] * 50, random_state=0, accountant=acct)
        finally:
            assert acct.history() == []


def test_group_dp_release(seed: int) -> None:
    theta = _binary(0.9, 0.1)
    mech = GroupDPMechanism(1.0, theta=theta)
    rel = mech.release(np.array([0, 1] * 50), random_state=seed)
    assert rel.guarantee.kind is GuaranteeKind.PURE
    assert rel.noise_scale == pytest.approx(2.0, rel=1e-6)  # L·T/ε with L = 2/T
    idx = GroupDPMechanism(1.0, states=2).release([0, 1, 1], random_state=seed)
    assert idx.value.shape == (2,)


def test_gk16_release_is_refused_until_its_end_nodes_are_bounded() -> None:
    mech = GK16Mechanism(1.0, _binary(0.5, 0.45))
    acct = Accountant.in_memory(total=PrivacyBudget(5.0))
    with pytest.raises(ParameterError, match="end-node influence"):
        mech.release([0, 1] * 50, accountant=acct)
    assert acct.spent.is_zero


def test_gk16_release_states_pufferfish(seed: int) -> None:
    mech = GK16Mechanism(1.0, _binary(0.5, 0.45))
    rel = mech._release_unverified([0, 1] * 50, random_state=seed)
    assert rel.guarantee.kind is GuaranteeKind.PUFFERFISH
    assert rel.details["epsilon_dp"] == pytest.approx(1.0 / mech.sigma_max(100))
