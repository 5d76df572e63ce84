"""ppdp: privacy-preserving data publishing and analysis.

Every release goes through a declared schema, secure noise and a per-dataset budget
ledger, and states its guarantee. See the README for a tour and ``docs/`` for the privacy
argument of each mechanism.

The names below are the curated public API; the heavier ones (``Accountant``, the
mechanisms, ``Schema``, ``SufficientStats``) are imported on first use so that
``import ppdp`` stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ppdp._version import __version__
from ppdp.budget import Guarantee, GuaranteeKind, Neighbouring, PrivacyBudget
from ppdp.exceptions import (
    BudgetExceededError,
    InsecureRandomnessWarning,
    LedgerIntegrityError,
    LowUtilityWarning,
    NotDifferentiallyPrivateWarning,
    PPDPError,
    PrivacyLeakWarning,
)

if TYPE_CHECKING:
    from ppdp.accounting import Accountant
    from ppdp.data import Schema
    from ppdp.data.stats import SufficientStats
    from ppdp.mechanisms import ExponentialMechanism, GaussianMechanism, LaplaceMechanism

_LAZY = {
    "Accountant": "ppdp.accounting",
    "ExponentialMechanism": "ppdp.mechanisms",
    "GaussianMechanism": "ppdp.mechanisms",
    "LaplaceMechanism": "ppdp.mechanisms",
    "Schema": "ppdp.data",
    "SufficientStats": "ppdp.data.stats",
}

__all__ = [
    "Accountant",
    "BudgetExceededError",
    "ExponentialMechanism",
    "GaussianMechanism",
    "Guarantee",
    "GuaranteeKind",
    "InsecureRandomnessWarning",
    "LaplaceMechanism",
    "LedgerIntegrityError",
    "LowUtilityWarning",
    "Neighbouring",
    "NotDifferentiallyPrivateWarning",
    "PPDPError",
    "PrivacyBudget",
    "PrivacyLeakWarning",
    "Schema",
    "SufficientStats",
    "__version__",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ppdp' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
