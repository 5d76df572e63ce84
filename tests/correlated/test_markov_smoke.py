"""Smoke tests of the public API (known answers; the full suite is in test_mqm*.py)."""

from __future__ import annotations

import pytest

from ppdp.correlated import GroupDPMechanism, MarkovChainClass, MarkovQuiltMechanism


@pytest.mark.parametrize("method", ["exact", "approx"])
def test_independent_chain_has_dp_noise(method: str) -> None:
    theta = MarkovChainClass(transitions=[[[0.3, 0.7], [0.3, 0.7]]])
    assert MarkovQuiltMechanism(1.0, theta, method=method).noise_scale(10) <= 10.0
    assert MarkovQuiltMechanism(1.0, theta).noise_scale(1000) == pytest.approx(1.0)


def test_group_dp_is_t_over_epsilon() -> None:
    assert GroupDPMechanism(0.5, lipschitz=2.0).noise_scale(100) == 400.0
