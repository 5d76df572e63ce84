"""The audit harness on synthetic samplers whose privacy is known exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import beta

from ppdp import noise
from ppdp.audit import AuditResult, audit, clopper_pearson, epsilon_lower_bound
from ppdp.exceptions import DataValidationError, ParameterError


def randomized_response(truth: int, epsilon: float):
    """Report ``truth`` with probability e^ε/(1+e^ε), else the other bit: exactly ε-DP."""
    keep = math.exp(epsilon) / (1.0 + math.exp(epsilon))

    def sample(n: int, source) -> np.ndarray:
        u = noise.uniform(n, random_state=source)
        return np.where(u < keep, truth, 1 - truth)

    return sample


def constant(value: float):
    return lambda n, source: np.full(n, value)


def test_clopper_pearson_known_values() -> None:
    n, a = 1000, 1e-3
    lo, up = clopper_pearson([0, 1000, 300], n, a)
    assert lo[0] == 0.0 and up[1] == 1.0
    assert up[0] == pytest.approx(1 - a ** (1 / n), rel=1e-9)  # k = 0: 1 − a^(1/n)
    assert lo[1] == pytest.approx(a ** (1 / n), rel=1e-9)  # k = n: a^(1/n)
    assert lo[2] == pytest.approx(beta.ppf(a, 300, 701))
    assert up[2] == pytest.approx(beta.ppf(1 - a, 301, 700))
    assert lo[2] < 0.3 < up[2]


def test_epsilon_lower_bound_formula() -> None:
    n, alpha, delta = 10_000, 1e-6, 0.01
    lo, _ = clopper_pearson(6000, n, alpha / 2)
    _, up = clopper_pearson(2000, n, alpha / 2)
    expected = math.log((lo[()] - delta) / up[()])
    got = epsilon_lower_bound(6000, 2000, n, alpha=alpha, delta=delta)
    assert float(got) == pytest.approx(expected)
    assert float(epsilon_lower_bound(50, 10, n, alpha=alpha, delta=0.5)) == -math.inf


@pytest.mark.parametrize("epsilon", [0.5, math.log(3), 2.0])
def test_randomized_response_bound_close_and_below(epsilon: float, seed: int) -> None:
    """For exactly ε-DP randomised response the bound is below ε but within 0.1 of it.

    A bound above ε has probability ≤ α = 1e-6; the 0.1 closeness at 200,000 draws per side
    has a margin of > 6 standard errors of the log ratio.
    """
    result = audit(
        randomized_response(0, epsilon),
        randomized_response(1, epsilon),
        claimed_epsilon=epsilon,
        n_select=5_000,
        n_measure=200_000,
        random_state=seed,
    )
    assert result.passed
    assert epsilon - 0.1 < result.epsilon_lower_bound <= epsilon
    # A claim 15 % too small is refuted: the harness has power.
    broken = audit(
        randomized_response(0, epsilon),
        randomized_response(1, epsilon),
        claimed_epsilon=0.85 * epsilon,
        n_select=5_000,
        n_measure=200_000,
        random_state=seed,
    )
    assert not broken.passed


def test_identical_samplers_give_zero(seed: int) -> None:
    """An ε = 0 mechanism (both sides the same distribution) passes even a claim of ε = 0."""
    sampler = randomized_response(0, 1.0)
    result = audit(sampler, sampler, claimed_epsilon=0.0, random_state=seed)
    assert result.passed and result.epsilon_lower_bound == 0.0


def test_zero_counts_and_delta() -> None:
    """D' reveals itself with probability 0.01 (a (0, 0.01)-DP mechanism).

    With δ = 0 claimed the event has k_lo = 0 and the audit must fail with a finite bound;
    claiming the true δ = 0.01 it passes.
    """

    def leaky(reveal: bool):
        def sample(n: int, source) -> np.ndarray:
            u = noise.uniform(n, random_state=source)
            return np.where(u < 0.01, 2.0, 0.0) if reveal else np.zeros(n)

        return sample

    strict = audit(
        leaky(False), leaky(True), claimed_epsilon=1.0, n_measure=200_000, random_state=5
    )
    assert not strict.passed and math.isfinite(strict.epsilon_lower_bound)
    assert strict.k_lo == 0 and strict.hi_side == "D'"
    honest = audit(
        leaky(False),
        leaky(True),
        claimed_epsilon=0.0,
        delta=0.01,
        n_measure=200_000,
        random_state=5,
    )
    assert honest.passed


def test_deterministic_mechanism_fails() -> None:
    result = audit(constant(0.0), constant(1.0), claimed_epsilon=5.0, random_state=0)
    assert not result.passed
    assert result.k_hi == result.n_measure and result.k_lo == 0


def test_result_is_frozen_printable_and_serialisable() -> None:
    result = audit(
        randomized_response(0, 1.0),
        randomized_response(1, 1.0),
        claimed_epsilon=1.0,
        random_state=0,
    )
    assert isinstance(result, AuditResult)
    with pytest.raises(AttributeError):
        result.passed = False  # type: ignore[misc]
    text = str(result)
    assert text.startswith("PASS") and "claimed ε=1" in text and "α=1e-06" in text
    d = result.to_dict()
    assert d["passed"] is True and d["k_hi"] == result.counts[0]
    assert result.n_select == 5_000 and result.n_measure == 20_000 and result.alpha == 1e-6


def test_seeded_audit_reproducible() -> None:
    def run() -> AuditResult:
        return audit(
            randomized_response(0, 1.0),
            randomized_response(1, 1.0),
            claimed_epsilon=1.0,
            random_state=7,
        )

    assert run() == run()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"claimed_epsilon": -1.0}, "claimed_epsilon"),
        ({"claimed_epsilon": math.nan}, "claimed_epsilon"),
        ({"claimed_epsilon": 1.0, "delta": 1.0}, "delta"),
        ({"claimed_epsilon": 1.0, "alpha": 0.0}, "alpha"),
        ({"claimed_epsilon": 1.0, "selection_alpha": 1.0}, "selection_alpha"),
        ({"claimed_epsilon": 1.0, "n_select": 10}, "n_select"),
        ({"claimed_epsilon": 1.0, "n_measure": 2.5}, "n_measure"),
    ],
)
def test_bad_parameters_rejected(kwargs: dict, match: str) -> None:
    with pytest.raises((ParameterError, TypeError), match=match):
        audit(constant(0.0), constant(1.0), **kwargs)


@pytest.mark.parametrize(
    "bad",
    [
        lambda n, s: np.zeros(n - 1),
        lambda n, s: np.zeros((n, 2)),
        lambda n, s: np.full(n, math.nan),
        lambda n, s: np.array(["a"] * n),
    ],
)
def test_bad_sampler_output_rejected(bad) -> None:
    with pytest.raises(DataValidationError, match="sampler"):
        audit(bad, constant(0.0), claimed_epsilon=1.0, random_state=0)
