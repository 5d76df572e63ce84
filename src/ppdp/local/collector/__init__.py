"""The local-perturbation collector: signed batches in, running totals out.

Respondents perturb their own values (``ppdp local report``); the collector
(``ppdp local serve``) authenticates each batch's *client* (Ed25519), validates every
report against the public randomizer, and keeps only running totals and counts in SQLite;
``ppdp local estimate`` reconstructs the distribution from those totals and states the
randomizer's local-DP guarantee. See ``docs/local-collector.md``.
"""

from __future__ import annotations

from ppdp.local.collector._config import ClientIdentity, CollectorConfig
from ppdp.local.collector._store import AddResult, CollectorStore, StoreTotals

__all__ = [
    "AddResult",
    "ClientIdentity",
    "CollectorConfig",
    "CollectorStore",
    "StoreTotals",
]
