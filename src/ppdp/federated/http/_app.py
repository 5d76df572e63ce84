"""The FastAPI application each party serves.

``POST /messages``
    One signed protocol message (canonical JSON; a dealer share sealed with
    ``application/vnd.ppdp.sealed``). ``200`` when accepted; ``400`` malformed, ``409``
    replayed copy or round over, ``415`` sealed body without a box key, ``422`` refused by
    the validator or the role. The body of a refusal is ``{"reason": ...}``.
``GET /health``
    ``{"party", "role", "session", "state"}``: the process is up.
``GET /status``
    ``/health`` plus the timing counters and the abort reason, if any.
``GET /ledger/entries?since=N``
    Entries ``N..`` of the ledger this party serves (the publisher's ledger, an owner's
    replica) as stored rows; readers verify them (:func:`~ppdp.federated.http._wire.sync_replica`).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import JSONResponse

from ppdp.exceptions import PPDPError
from ppdp.federated.http._client import DUPLICATE_HEADER
from ppdp.federated.http._node import MessageRefusedError, PartyNode
from ppdp.federated.http._wire import entry_to_wire

__all__ = ["MAX_BODY_BYTES", "create_app"]

#: Largest accepted request body (a 10,000-row projection message is ~0.3 MB).
MAX_BODY_BYTES = 64 * 1024 * 1024


def create_app(node: PartyNode) -> FastAPI:
    """The HTTP face of ``node``."""
    app = FastAPI(
        title=f"ppdp federated {node.role_name} {node.party_id}",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )

    @app.post("/messages")
    async def messages(request: Request) -> JSONResponse:
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > MAX_BODY_BYTES:
            return JSONResponse({"reason": "message too large"}, status_code=413)
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            return JSONResponse({"reason": "message too large"}, status_code=413)
        try:
            result = await node.receive(body, request.headers.get("content-type", ""))
        except MessageRefusedError as exc:
            headers = {DUPLICATE_HEADER: "1"} if exc.duplicate else None
            return JSONResponse({"reason": exc.reason}, status_code=exc.status, headers=headers)
        return JSONResponse(result)

    def _health() -> dict[str, Any]:
        return {
            "party": node.party_id,
            "role": node.role_name,
            "session": node.session_id,
            "state": node.state,
        }

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return _health()

    @app.get("/status")
    async def status() -> dict[str, Any]:
        return {**_health(), "abort_reason": node.abort_reason, "stats": node.stats.to_dict()}

    @app.get("/ledger/entries")
    async def ledger_entries(since: int = Query(0, ge=0)) -> JSONResponse:
        if node.ledger is None:
            return JSONResponse({"reason": "this party serves no ledger"}, status_code=404)
        try:
            entries = node.ledger.entries(since)
        except PPDPError as exc:
            return JSONResponse({"reason": f"ledger unreadable: {exc}"}, status_code=503)
        return JSONResponse(
            {"length": since + len(entries), "entries": [entry_to_wire(e) for e in entries]}
        )

    return app
