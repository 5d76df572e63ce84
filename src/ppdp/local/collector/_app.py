"""The collector's HTTP service (FastAPI): signed batches in, running totals out.

Endpoints (all JSON):

``GET /v1/info``
    The survey id, the randomizer's ``to_dict()``, its formal guarantee, the layout of the
    running totals and the batch limit: what a client needs to perturb correctly.
``GET /v1/clients/{id}``
    The client's last accepted ``seq`` (so a client continues its numbering).
``POST /v1/batches``
    A signed batch (see :mod:`ppdp.local.collector._wire`). The collector verifies the
    signature over the raw body, checks the envelope, validates every report with the
    randomizer (shape, lattice, range), reduces the batch to its aggregates and adds them
    in one transaction. Any failure rejects the whole batch and leaves the totals as they
    were. Status: 200 accepted (or an identical retry of the last batch), 400 malformed,
    401 unknown client or bad signature, 409 replayed or stale ``seq`` or wrong survey,
    413 too many reports, 422 invalid reports.
``GET /v1/totals``
    The running totals and counts. They are post-processing of locally private reports,
    so publishing them costs no privacy beyond each report's own guarantee.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from ppdp.exceptions import DataValidationError, ParameterError, ProtocolError
from ppdp.ledger import decode_public_key
from ppdp.local.collector._aggregate import Aggregator
from ppdp.local.collector._config import CollectorConfig
from ppdp.local.collector._estimate import stated_guarantee
from ppdp.local.collector._store import AddResult, CollectorStore
from ppdp.local.collector._wire import SIGNATURE_HEADER, decode_batch, peek_client, verify_body

__all__ = ["Collector", "create_app"]

logger = logging.getLogger(__name__)

_MAX_BODY_PER_REPORT = 4096  # bytes; generous for k-vectors of lattice numbers


class RejectedBatchError(Exception):
    """A batch the collector refuses: an HTTP status and a one-line reason."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Collector:
    """The service logic without HTTP: verify, validate, aggregate, store.

    Parameters
    ----------
    config : CollectorConfig
        Needs ``store`` and ``clients``.
    store : CollectorStore, optional
        An open store (default: opened from ``config.store``).
    """

    def __init__(self, config: CollectorConfig, *, store: CollectorStore | None = None) -> None:
        path, clients = config.require_server()
        self.config = config
        self.aggregator = Aggregator.from_config(config)
        self.keys = {cid: decode_public_key(key) for cid, key in clients.items()}
        self.store = store or CollectorStore.open(
            path, survey=config.survey, spec=self.aggregator.spec, layout=self.aggregator.layout
        )
        self.max_body = config.max_batch * _MAX_BODY_PER_REPORT + 4096
        # the same statement `ppdp local estimate` prints (pure ε, else at δ = 1e-6)
        self.guarantee = stated_guarantee(self.aggregator.randomizer, None)

    def info(self) -> dict[str, Any]:
        return {
            "survey": self.config.survey,
            "spec": self.aggregator.spec,
            "guarantee": self.guarantee.to_dict(),
            "layout": {k: list(v) for k, v in self.aggregator.layout.items()},
            "max_batch": self.config.max_batch,
        }

    def ingest(self, body: bytes, signature: str | None) -> AddResult:
        """Process one posted body; raise :class:`RejectedBatchError` when it is refused."""
        if len(body) > self.max_body:
            raise RejectedBatchError(413, f"the batch body exceeds {self.max_body} bytes")
        try:
            obj, client = peek_client(body)
        except DataValidationError as exc:
            raise RejectedBatchError(400, str(exc)) from None
        key = self.keys.get(client)
        if key is None:
            raise RejectedBatchError(401, f"client {client!r} is not registered")
        try:
            verify_body(body, signature, key)
        except ProtocolError as exc:
            raise RejectedBatchError(401, str(exc)) from None
        try:
            batch = decode_batch(obj, body)
        except DataValidationError as exc:
            raise RejectedBatchError(400, str(exc)) from None
        if batch.survey != self.config.survey:
            raise RejectedBatchError(
                409, f"survey ({batch.survey!r}) is not this collector's ({self.config.survey!r})"
            )
        if batch.size > self.config.max_batch:
            raise RejectedBatchError(
                413, f"the batch has {batch.size} reports; at most {self.config.max_batch}"
            )
        try:
            aggregates = self.aggregator.aggregate(batch.reports)
            return self.store.add_batch(
                client=client,
                seq=batch.seq,
                digest=batch.digest,
                count=batch.size,
                aggregates=aggregates,
            )
        except ProtocolError as exc:
            raise RejectedBatchError(409, str(exc)) from None
        except (DataValidationError, ParameterError, ValueError, TypeError) as exc:
            raise RejectedBatchError(422, str(exc)) from None
        except OverflowError:
            raise RejectedBatchError(422, "the batch would overflow a running total") from None

    def close(self) -> None:
        self.store.close()


def create_app(config: CollectorConfig, *, store: CollectorStore | None = None) -> FastAPI:
    """The FastAPI application of one collector (see the module docstring)."""
    collector = Collector(config, store=store)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        yield
        collector.close()

    app = FastAPI(
        title=f"ppdp local collector: {config.survey}",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan,
    )
    app.state.collector = collector

    @app.get("/v1/info")
    def info() -> dict[str, Any]:
        return collector.info()

    @app.get("/v1/clients/{client_id}")
    def client_state(client_id: str) -> dict[str, Any]:
        return {"client": client_id, "last_seq": collector.store.last_seq(client_id)}

    @app.get("/v1/totals")
    def totals() -> dict[str, Any]:
        return collector.store.snapshot().to_dict()

    @app.post("/v1/batches")
    async def post_batch(request: Request) -> JSONResponse:
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > collector.max_body:
            return JSONResponse({"error": "the batch body is too large"}, status_code=413)
        body = await request.body()
        signature = request.headers.get(SIGNATURE_HEADER)
        try:
            result = await run_in_threadpool(collector.ingest, body, signature)
        except RejectedBatchError as exc:
            logger.info("rejected a batch (%d): %s", exc.status, exc)
            return JSONResponse({"error": str(exc)}, status_code=exc.status)
        return JSONResponse(
            {"accepted": result.accepted, "count": result.count, "duplicate": result.duplicate}
        )

    return app
