"""ppdp: privacy-preserving data publishing and analysis.

Every release goes through a declared schema, secure noise and a per-dataset budget
ledger, and states its guarantee. See the README for a tour and ``docs/`` for the privacy
argument of each mechanism.
"""

from ppdp._version import __version__
from ppdp.budget import Guarantee, GuaranteeKind, Neighbouring, PrivacyBudget
from ppdp.exceptions import (
    BudgetExceededError,
    InsecureRandomnessWarning,
    LedgerIntegrityError,
    NotDifferentiallyPrivateWarning,
    PPDPError,
    PrivacyLeakWarning,
)

__all__ = [
    "BudgetExceededError",
    "Guarantee",
    "GuaranteeKind",
    "InsecureRandomnessWarning",
    "LedgerIntegrityError",
    "Neighbouring",
    "NotDifferentiallyPrivateWarning",
    "PPDPError",
    "PrivacyBudget",
    "PrivacyLeakWarning",
    "__version__",
]
