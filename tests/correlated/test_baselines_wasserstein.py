"""The Wasserstein mechanism on small chains: W_∞ by hand, known answers, release flow."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from ppdp.accounting import Accountant
from ppdp.budget import GuaranteeKind, PrivacyBudget
from ppdp.correlated import MarkovChainClass, WassersteinMechanism
from ppdp.correlated.wasserstein import w_infinity
from ppdp.exceptions import DataValidationError, ParameterError


def count0(codes: np.ndarray) -> float:
    return float(np.count_nonzero(codes == 0))


def test_w_infinity_by_hand() -> None:
    assert (
        w_infinity(
            {0.0: Fraction(1, 2), 1.0: Fraction(1, 2)}, {1.0: Fraction(1, 2), 2.0: Fraction(1, 2)}
        )
        == 1.0
    )
    assert w_infinity({0.0: Fraction(1)}, {0.0: Fraction(1, 2), 3.0: Fraction(1, 2)}) == 3.0
    # quantiles: mu = 0 on (0, 1/3], 5 after; nu = 0 on (0, 2/3], 5 after -> differ on (1/3, 2/3]
    assert (
        w_infinity({0.0: Fraction(1), 5.0: Fraction(2)}, {0.0: Fraction(2), 5.0: Fraction(1)})
        == 5.0
    )
    assert w_infinity({1.0: Fraction(3)}, {1.0: Fraction(1)}) == 0.0


def test_independent_chain_count_query_has_w_one() -> None:
    """Identical rows: given X_i = a the count is 1 + Bin(T-1, π_0), else Bin: a shift by 1."""
    theta = MarkovChainClass(transitions=[[[0.3, 0.7], [0.3, 0.7]]], initials=[[0.3, 0.7]])
    mech = WassersteinMechanism(0.5, theta, query=count0)
    assert mech.wasserstein(7) == 1.0
    assert mech.noise_scale(7) == 2.0


def test_two_node_chain_by_hand() -> None:
    """T = 2, F = count of 0: X_1 = 0 gives F ∈ {2 (p00), 1}; X_1 = 1 gives F ∈ {1 (p10), 0}."""
    P = [[0.75, 0.25], [0.5, 0.5]]
    theta = MarkovChainClass(transitions=[P], initials=[[0.5, 0.5]])
    # node 1: laws {1: .25, 2: .75} vs {0: .5, 1: .5}: quantiles differ by 2 on (.25, .5]
    assert WassersteinMechanism(1.0, theta, query=count0).wasserstein(2) == 2.0


def test_release_and_bad_input(seed: int) -> None:
    theta = MarkovChainClass(
        transitions=[[[0.8, 0.2], [0.3, 0.7]]], initials=[[0.5, 0.5]], states=["a", "b"]
    )
    mech = WassersteinMechanism(1.0, theta, query=count0)
    acct = Accountant.in_memory(total=PrivacyBudget(3.0))
    rel = mech.release(
        ["a", "b", "b", "a", "a"], random_state=seed, accountant=acct, allow_seeded=True
    )
    assert rel.guarantee.kind is GuaranteeKind.PUFFERFISH
    assert rel.noise_scale == pytest.approx(mech.noise_scale(5), rel=1e-6)
    with pytest.raises(DataValidationError, match="1 of 5 entries"):
        mech.release(
            ["a", "b", "c", "a", "a"], random_state=seed, accountant=acct, allow_seeded=True
        )
    assert len(acct.history()) == 1
    with pytest.raises(ParameterError, match="too long"):
        mech.noise_scale(13)
    with pytest.raises(ParameterError, match="declared initial law"):
        WassersteinMechanism(
            1.0, MarkovChainClass(transitions=[[[0.8, 0.2], [0.3, 0.7]]]), query=count0
        )
