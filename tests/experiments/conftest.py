"""Fixtures for the experiment tests: the real publishers when present, stand-ins otherwise.

The stand-ins keep the experiment framework testable while ``ppdp.publish`` is incomplete:
they have the publishers' interface (``fit``, ``release_`` with ``data``/``encoded``,
``sample``) and add seeded noise in the encoded space. They are not private.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from ppdp.experiments import _methods
from ppdp.random import resolve_random_state

_REAL = {
    "DP-PCA": ("ppdp.publish.pca", "DPPCAPublisher"),
    "LAP": ("ppdp.publish.baselines", "LaplacePublisher"),
    "EXP": ("ppdp.publish.baselines", "ExponentialPublisher"),
    "DP-LDA": ("ppdp.publish.lda_synth", "DPLDASynthesizer"),
}


class StandInRows:
    """Row-aligned stand-in: encoded table + Laplace(0.2/ε) noise, decoded."""

    def __init__(
        self, epsilon: float, schema: Any, k: int | None, random_state: Any, **options: Any
    ) -> None:
        self.epsilon, self.schema, self.k, self.random_state = epsilon, schema, k, random_state

    def _noisy(self, df: Any) -> tuple[Any, Any]:
        resolve_random_state(self.random_state)  # warns like a seeded publisher
        rng = np.random.default_rng(self.random_state)
        X, _ = self.schema.encode(df, include_label=True)
        scale = 0.2 / self.epsilon / (self.k or 1) ** 0.5
        data = self.schema.decode(X + rng.laplace(0.0, scale, X.shape))
        return data, self.schema.encode(data, include_label=True)[0]

    def fit(self, df: Any, accountant: Any = None) -> StandInRows:
        data, enc = self._noisy(df)
        self.release_ = SimpleNamespace(data=data, encoded=enc)
        return self


class StandInSynth(StandInRows):
    """Statistics-only stand-in: ``release_.data`` is None until ``sample``."""

    def fit(self, df: Any, accountant: Any = None) -> StandInSynth:
        self._df = df
        self.release_ = SimpleNamespace(data=None, encoded=None)
        return self

    def sample(self, n: int | None = None, random_state: Any = None) -> Any:
        self.random_state = random_state
        return self._noisy(self._df)[0]


def _available(method: str) -> bool:
    module, name = _REAL[method]
    try:
        return hasattr(importlib.import_module(module), name)
    except ImportError:
        return False


@pytest.fixture
def publishers(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Swap in stand-ins for the publishers not (yet) in the tree; say which are real."""
    table = dict(_methods.PUBLISHERS)
    kinds = {}
    for method in _REAL:
        if _available(method):
            kinds[method] = "real"
        else:
            table[method] = StandInSynth if method == "DP-LDA" else StandInRows
            kinds[method] = "stand-in"
    monkeypatch.setattr(_methods, "PUBLISHERS", table)
    return kinds


@pytest.fixture
def standins(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stand-ins for every method (framework tests independent of the publishers)."""
    table = {m: (StandInSynth if m == "DP-LDA" else StandInRows) for m in _REAL}
    monkeypatch.setattr(_methods, "PUBLISHERS", table)
