"""Fixtures of the learner tests."""

from __future__ import annotations

import pytest

import ppdp.learn._base as _base


@pytest.fixture(autouse=True)
def _unaccounted_warning_already_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    """The once-per-process UnaccountedFitWarning counts as shown, so that no test depends
    on the order in which tests fit without an accountant; the tests of the warning reset it."""
    monkeypatch.setattr(_base, "_warned_unaccounted", True)
