"""The local-perturbation collector: signed batches in, running totals out.

Respondents perturb their own values (``ppdp local report``); the collector
(``ppdp local serve``) authenticates each batch's *client* (Ed25519), validates every
report against the public randomizer, and keeps only running totals and counts in SQLite;
``ppdp local estimate`` reconstructs the distribution from those totals and states the
randomizer's local-DP guarantee. See ``docs/local-collector.md``.

The HTTP application is :func:`create_app` (needs the ``server`` extra: FastAPI, uvicorn,
httpx); it is imported on first use.
"""

from __future__ import annotations

from typing import Any

from ppdp.local.collector._aggregate import Aggregator, randomizer_from_dict
from ppdp.local.collector._client import CollectorClient, fetch_totals
from ppdp.local.collector._config import ClientIdentity, CollectorConfig
from ppdp.local.collector._estimate import CollectorEstimate, estimate_totals
from ppdp.local.collector._journal import ReportInterruptedError, ReportJournal
from ppdp.local.collector._service import (
    ReportResult,
    estimate,
    generate_client_key,
    generate_operator_token,
    read_values,
    report,
    serve,
    startup_lines,
    value_column,
)
from ppdp.local.collector._state import ReportState, default_state_path
from ppdp.local.collector._store import AddResult, CollectorStore, StoreTotals

__all__ = [
    "AddResult",
    "Aggregator",
    "ClientIdentity",
    "CollectorClient",
    "CollectorConfig",
    "CollectorEstimate",
    "CollectorStore",
    "ReportInterruptedError",
    "ReportJournal",
    "ReportResult",
    "ReportState",
    "StoreTotals",
    "create_app",
    "default_state_path",
    "estimate",
    "estimate_totals",
    "fetch_totals",
    "generate_client_key",
    "generate_operator_token",
    "randomizer_from_dict",
    "read_values",
    "report",
    "serve",
    "startup_lines",
    "value_column",
]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from ppdp.local.collector._app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
