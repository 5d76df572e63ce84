"""A refused spend says which part of the budget does not fit, in one line."""

from __future__ import annotations

import pytest

from ppdp import PrivacyBudget
from ppdp.accounting import Accountant
from ppdp.exceptions import BudgetExceededError


def test_a_delta_spend_on_a_pure_budget_names_the_delta_and_the_fix():
    with Accountant.in_memory(total=PrivacyBudget(5.0)) as acct:
        with pytest.raises(BudgetExceededError) as info:
            acct.spend(PrivacyBudget(1.0, 1e-9), mechanism="synth")
        text = str(info.value)
        assert "\n" not in text
        assert "the ε fits, the δ does not" in text and "--delta" in text
        assert acct.spent.is_zero


def test_an_epsilon_overrun_does_not_blame_the_delta():
    with Accountant.in_memory(total=PrivacyBudget(1.0, 1e-6)) as acct:
        with pytest.raises(BudgetExceededError) as info:
            acct.spend(PrivacyBudget(2.0, 1e-9), mechanism="synth")
        assert "the δ does not" not in str(info.value)
        assert "Accountant.remaining" in str(info.value)
