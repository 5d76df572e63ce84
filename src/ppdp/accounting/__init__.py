"""Privacy accounting: a dataset's budget, enforced before release, persisted in a ledger.

:class:`Accountant` checks each spend against the dataset's remaining budget (basic
composition, exact decimal totals) and records it durably in a signed, hash-chained
ledger (:mod:`ppdp.ledger`) before the caller releases anything. The ledger is shared
safely between processes; an overrun raises
:class:`~ppdp.exceptions.BudgetExceededError` and records nothing. See
``docs/proofs/ledger.md``.
"""

from ppdp.accounting._accountant import Accountant, key_path_for
from ppdp.accounting._report import BudgetReport, budget_report
from ppdp.accounting._tally import SpendRecord

__all__ = ["Accountant", "BudgetReport", "SpendRecord", "budget_report", "key_path_for"]
