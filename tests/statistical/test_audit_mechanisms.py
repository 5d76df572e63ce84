"""Black-box audits of the basic mechanisms and their half-noise positive controls.

Each audit (RELIABILITY.md B3) reports a lower bound on ε that a correct mechanism exceeds
with probability at most α = 1e-6, so the family-wise false-positive rate of this module is
at most 6e-6 (six audits of correct mechanisms per seed). Every mechanism comes with its
positive control, the same mechanism with half the noise still claiming ε: the audit must
FAIL it, otherwise the audit has no power and is broken. Seeded (CI uses seed 0); the
controls fail with overwhelming margin at the default draw counts (docs/audit.md).
"""

from __future__ import annotations

import pytest

from ppdp.audit import MECHANISMS, audit_mechanism, audit_with_control

pytestmark = pytest.mark.statistical


@pytest.mark.parametrize("name", MECHANISMS)
def test_mechanism_passes_and_half_noise_control_fails(name: str, seed: int) -> None:
    outcome = audit_with_control(name, epsilon=1.0, delta=1e-5, random_state=seed)
    assert outcome.control_failed, f"the audit is broken: the half-noise {name} passed"
    assert outcome.result.passed, str(outcome.result)
    assert outcome.ok
    # The bound is informative, not vacuous.
    assert outcome.result.epsilon_lower_bound > 0.5
    assert outcome.control.epsilon_lower_bound > 1.3


def test_gaussian_profile_audit_catches_twenty_percent_less_noise(seed: int) -> None:
    """Auditing the point (ε'=0.25, δ(ε')) of the Gaussian's privacy profile has power.

    The correct mechanism passes (false-positive rate ≤ 1e-6); the same mechanism with
    0.8× its noise fails (measured power 100/100 at these defaults, docs/audit.md), while
    the plain (ε=1, δ=1e-5) audit cannot see a 20 % shortfall.
    """
    ok = audit_mechanism("gaussian", profile_epsilon=0.25, random_state=seed)
    assert ok.passed and ok.claimed_epsilon == 0.25 and 0.01 < ok.delta < 0.05
    short = audit_mechanism(
        "gaussian", profile_epsilon=0.25, noise_multiplier=0.8, random_state=seed
    )
    assert not short.passed, str(short)


def test_laplace_audit_catches_twenty_percent_less_noise(seed: int) -> None:
    """At 10^6 draws per side the Laplace audit fails 0.8× noise (measured 100/100; median
    bound 1.23 against the claim 1, so a miss is far beyond any seed's luck). 0.9× is caught
    299 times in 300 (docs/audit.md), too close to certain for a test that must pass for
    every seed 0-99.
    """
    assert not audit_mechanism("laplace", noise_multiplier=0.8, random_state=seed).passed
