"""Privacy accounting: a dataset's budget, enforced before release, persisted in a ledger.

:class:`Accountant` checks each spend (a typed event, :mod:`ppdp.accounting.events`)
against the dataset's budget under the ledger's composition (``basic``: exact decimal
totals; ``pld`` / ``rdp``: tight, with ``dp-accounting``) and records it durably in a
signed, hash-chained ledger (:mod:`ppdp.ledger`) before the caller releases anything.
The ledger is shared safely between processes; an overrun raises
:class:`~ppdp.exceptions.BudgetExceededError` and records nothing. See
``docs/proofs/ledger.md``.

Shared with other packages: :func:`accountant_metadata` (what a budget ledger's genesis
pins), :func:`tally_for` / :class:`Tally` (replaying a budget ledger's entries into
totals, as the federated publisher does) and :func:`refuse_released_retry` (the
idempotency check the CLI runs before a retried release).
"""

from ppdp.accounting import events
from ppdp.accounting._accountant import Accountant, key_path_for
from ppdp.accounting._charge import (
    Charge,
    charge,
    check_charges,
    claim_key,
    record_keyed_release,
    refuse_recorded_release,
    refuse_released_retry,
)
from ppdp.accounting._report import (
    BudgetReport,
    budget_report,
    last_release_records,
    release_groups,
)
from ppdp.accounting._tally import SpendRecord, Tally, accountant_metadata, tally_for

__all__ = [
    "Accountant",
    "BudgetReport",
    "Charge",
    "SpendRecord",
    "Tally",
    "accountant_metadata",
    "budget_report",
    "charge",
    "check_charges",
    "claim_key",
    "events",
    "key_path_for",
    "last_release_records",
    "record_keyed_release",
    "refuse_recorded_release",
    "refuse_released_retry",
    "release_groups",
    "tally_for",
]
