"""The contract every basic mechanism meets (STYLE.md S9), run over all three.

Each ``Test*Contract`` class subclasses :class:`MechanismContract` and says how to build a
valid mechanism and a valid input; the base class checks validation of the bad inputs of
RELIABILITY.md (c), immutability, the guarantee, the ledger description, reproducibility
and that the value never appears in an error message.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, ClassVar

import numpy as np
import pytest

from ppdp.budget import Guarantee, GuaranteeKind, Neighbouring, PrivacyBudget
from ppdp.exceptions import DataValidationError, ParameterError, ParameterTypeError
from ppdp.mechanisms import ExponentialMechanism, GaussianMechanism, LaplaceMechanism, Mechanism

BAD_EPSILONS = [0.0, -1.0, math.nan, math.inf, -math.inf, True, "1.0", None, 10.5]
BAD_SENSITIVITIES = [0.0, -1.0, math.nan, math.inf, True, "1", None]
BAD_ERRORS = (ParameterError, ParameterTypeError)


class MechanismContract:
    """Base contract; subclasses set ``cls``, ``kwargs``, ``valid_input`` and ``bad_input``."""

    cls: ClassVar[type]
    kwargs: ClassVar[dict[str, Any]]
    valid_input: ClassVar[Any]
    bad_input: ClassVar[Any]  # holds NaN: must be refused without echoing the value
    kind: ClassVar[GuaranteeKind] = GuaranteeKind.PURE

    def make(self, **overrides: Any) -> Any:
        return self.cls(**{**self.kwargs, **overrides})

    # -- construction ---------------------------------------------------------------------

    def test_valid_construction_is_a_mechanism(self) -> None:
        mech = self.make()
        assert isinstance(mech, Mechanism)
        assert mech.relation is Neighbouring.REPLACE_ONE

    def test_keyword_only(self) -> None:
        with pytest.raises(TypeError):
            self.cls(*self.kwargs.values())

    @pytest.mark.parametrize("epsilon", BAD_EPSILONS)
    def test_bad_epsilon_rejected(self, epsilon: Any) -> None:
        with pytest.raises(BAD_ERRORS, match="epsilon"):
            self.make(epsilon=epsilon)

    def test_large_epsilon_needs_opt_in(self) -> None:
        with pytest.raises(ParameterError, match="allow_large_epsilon"):
            self.make(epsilon=20.0)
        assert self.make(epsilon=20.0, allow_large_epsilon=True).epsilon == 20.0

    def test_allow_large_epsilon_must_be_bool(self) -> None:
        with pytest.raises(ParameterTypeError, match="allow_large_epsilon"):
            self.make(allow_large_epsilon="yes")

    @pytest.mark.parametrize("sensitivity", BAD_SENSITIVITIES)
    def test_bad_sensitivity_rejected(self, sensitivity: Any) -> None:
        with pytest.raises(BAD_ERRORS, match="sensitivity"):
            self.make(sensitivity=sensitivity)

    def test_relation_parsed_and_bad_relation_rejected(self) -> None:
        assert self.make(relation="add/remove").relation is Neighbouring.ADD_REMOVE
        with pytest.raises(ParameterError, match="relation"):
            self.make(relation="neighbours")

    def test_frozen(self) -> None:
        mech = self.make()
        with pytest.raises((dataclasses.FrozenInstanceError, AttributeError)):
            mech.epsilon = 100.0  # type: ignore[misc]
        assert mech.epsilon == self.kwargs["epsilon"]

    def test_equal_parameters_equal_mechanisms(self) -> None:
        assert self.make() == self.make()
        assert hash(self.make()) == hash(self.make())

    # -- what it promises -----------------------------------------------------------------

    def test_budget_and_guarantee(self) -> None:
        mech = self.make(relation="add/remove")
        g = mech.guarantee
        assert isinstance(g, Guarantee)
        assert g.kind is self.kind
        assert g.epsilon == mech.epsilon
        assert g.relation is Neighbouring.ADD_REMOVE
        assert g.mechanism == mech.name
        assert mech.budget == PrivacyBudget(mech.epsilon, getattr(mech, "delta", 0.0))
        assert g.budget == mech.budget
        text = str(g)
        assert f"ε={mech.epsilon:g}" in text and "add/remove" in text
        assert "sensitivity" in text
        assert Guarantee.from_dict(json.loads(json.dumps(g.to_dict()))) == g

    def test_ledger_details_json_safe(self) -> None:
        mech = self.make()
        details = mech.ledger_details()
        assert json.loads(json.dumps(details)) == details
        assert details["sensitivity"] == mech.sensitivity
        assert details["relation"] == "replace-one"

    # -- release --------------------------------------------------------------------------

    def test_seeded_reproducible(self, seed: int) -> None:
        mech = self.make()
        a = mech.randomise(self.valid_input, random_state=seed)
        b = mech.randomise(self.valid_input, random_state=seed)
        assert np.array_equal(a, b)

    def expected_abs_noise(self, mech: Any) -> float:
        """E|noise| of one coordinate (Laplace: b; Gaussian: σ·√(2/π))."""
        raise NotImplementedError

    def test_default_randomness_is_fresh_noise_of_the_right_scale(self) -> None:
        # OS entropy (RELIABILITY.md B6): 20 default releases are 20 independent draws of
        # the calibrated noise: all distinct, and their mean |noise| is that of the noise.
        mech = self.make()
        outs = [float(mech.randomise(self.valid_input)) for _ in range(20)]
        assert _fresh_draws_of_scale(outs, self.valid_input, self.expected_abs_noise(mech))

    def test_bad_input_rejected_without_echo(self) -> None:
        mech = self.make()
        with pytest.raises(DataValidationError) as info:
            mech.randomise(self.bad_input, random_state=0)
        assert "123.456" not in str(info.value)

    @pytest.mark.parametrize("value", [[["a", "b"]], "12", [object()]])
    def test_non_numeric_input_rejected(self, value: Any) -> None:
        with pytest.raises(DataValidationError):
            self.make().randomise(value, random_state=0)


def _fresh_draws_of_scale(outs: list[float], value: float, mean_abs: float) -> bool:
    """All draws distinct and their mean |noise| in [0.2, 3]·E|noise|.

    False-positive rate for 20 draws: two grid-snapped draws coincide with probability
    below 20²·Λ/b ≈ 1e-7; for Laplace, the mean of 20 |noise|/b is Gamma(20)/20, outside
    [0.2, 3] with probability 1.0e-8 + 6.4e-10 (the half-normal's is smaller).
    """
    mean = float(np.mean(np.abs(np.asarray(outs) - value)))
    return len(set(outs)) == len(outs) and 0.2 * mean_abs <= mean <= 3.0 * mean_abs


def test_the_fresh_noise_check_fails_on_broken_variants() -> None:
    mech = LaplaceMechanism(epsilon=1.0, sensitivity=2.0)
    seeded = [float(mech.randomise(1.0, random_state=0)) for _ in range(20)]  # one seed
    assert not _fresh_draws_of_scale(seeded, 1.0, mech.scale)
    wide = LaplaceMechanism(epsilon=0.1, sensitivity=2.0)  # 10x the noise
    outs = [float(wide.randomise(1.0, random_state=s)) for s in range(20)]
    assert not _fresh_draws_of_scale(outs, 1.0, mech.scale)
    assert _fresh_draws_of_scale(outs, 1.0, wide.scale)


class TestLaplaceContract(MechanismContract):
    cls = LaplaceMechanism
    kwargs: ClassVar[dict[str, Any]] = {"epsilon": 1.0, "sensitivity": 2.0}
    valid_input = 123.456
    bad_input: ClassVar[Any] = [123.456, math.nan]

    def expected_abs_noise(self, mech: Any) -> float:
        return float(mech.scale)


class TestGaussianContract(MechanismContract):
    cls = GaussianMechanism
    kwargs: ClassVar[dict[str, Any]] = {"epsilon": 1.0, "delta": 1e-6, "sensitivity": 2.0}
    valid_input = 123.456
    bad_input: ClassVar[Any] = [123.456, math.inf]
    kind = GuaranteeKind.APPROX

    def expected_abs_noise(self, mech: Any) -> float:
        return float(mech.sigma) * math.sqrt(2.0 / math.pi)

    @pytest.mark.parametrize("delta", [0.0, -1e-9, 1.0, 1.5, math.nan, math.inf, "1e-5", True])
    def test_bad_delta_rejected(self, delta: Any) -> None:
        with pytest.raises(BAD_ERRORS, match="delta"):
            self.make(delta=delta)

    def test_bad_calibration_rejected(self) -> None:
        with pytest.raises(ParameterError, match="calibration"):
            self.make(calibration="tight")

    @pytest.mark.parametrize("epsilon", [1.0, 2.0])
    def test_classic_needs_epsilon_below_one(self, epsilon: float) -> None:
        with pytest.raises(ParameterError, match="analytic"):
            self.make(epsilon=epsilon, calibration="classic")


class TestExponentialContract(MechanismContract):
    cls = ExponentialMechanism
    kwargs: ClassVar[dict[str, Any]] = {"epsilon": 1.0, "sensitivity": 1.0}
    valid_input: ClassVar[Any] = [123.456, 0.0, 1.0, 2.0]
    bad_input: ClassVar[Any] = [123.456, math.nan]

    def test_bad_method_and_flags_rejected(self) -> None:
        with pytest.raises(ParameterError, match="method"):
            self.make(method="softmax")
        with pytest.raises(ParameterTypeError, match="monotonic"):
            self.make(monotonic=1)

    def test_default_randomness_is_fresh_noise_of_the_right_scale(self) -> None:
        # Equal utilities: each default draw is uniform over the 8 candidates.
        mech = self.make()
        picks = [mech.randomise([0.0] * 8) for _ in range(800)]
        assert _uniform_over(picks, 8)


def _uniform_over(picks: list[int], k: int) -> bool:
    """Every pick in ``0..k-1`` and Pearson's χ² against uniform below its 1 − 1e-6 quantile
    (7 degrees of freedom: 40.52), so a fair chooser fails with probability 1e-6."""
    if not all(isinstance(p, int) and 0 <= p < k for p in picks):
        return False
    counts = np.bincount(picks, minlength=k)
    expected = len(picks) / k
    return float(np.sum((counts - expected) ** 2 / expected)) < 40.52


def test_the_uniform_choice_check_fails_on_broken_variants() -> None:
    mech = ExponentialMechanism(epsilon=1.0, sensitivity=1.0)
    fixed = [mech.randomise([0.0] * 8, random_state=0) for _ in range(800)]  # one seed
    assert not _uniform_over(fixed, 8)
    assert not _uniform_over([p % 4 for p in range(800)], 8)  # half the candidates
    tilted = [mech.randomise([3.0] + [0.0] * 7, random_state=s) for s in range(800)]
    assert not _uniform_over(tilted, 8)  # e^{3/2} the mass on candidate 0
