"""The FastAPI application each party serves.

``POST /messages``
    One signed protocol message (canonical JSON; a dealer share sealed with
    ``application/vnd.ppdp.sealed``), in a request authenticated by its headers
    (``X-PPDP-Sender``, ``X-PPDP-Body-Signature``; :mod:`ppdp.federated.http._guard`).
    ``200`` when accepted; ``401`` no or unknown sender, or a transport signature that is
    malformed or does not verify (decided before the body is read or parsed; the round is
    not touched); ``413`` a body over the cap (with or without ``Content-Length``);
    ``408`` a body not complete within the whole-body deadline; ``503`` as many bodies
    being read at once as the party allows (the client retries); ``400`` malformed;
    ``409`` replayed copy or round over; ``415`` sealed body without a box key; ``422``
    refused by the validator or the role. The body of a refusal is ``{"reason": ...}``,
    quoting what the request carried cut to a few dozen characters.
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
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from ppdp._http_guard import BodyGate, BodyTimeoutError, ServerBusyError, ServerLimits
from ppdp.exceptions import PPDPError
from ppdp.federated.http._client import DUPLICATE_HEADER
from ppdp.federated.http._guard import (
    BODY_SIGNATURE_HEADER,
    SENDER_HEADER,
    BodyTooLargeError,
    ClientGoneError,
    bounded,
    read_spooled,
)
from ppdp.federated.http._node import MAX_BODY_BYTES, MessageRefusedError, PartyNode
from ppdp.federated.http._wire import entry_to_wire

__all__ = ["MAX_BODY_BYTES", "create_app", "party_limits"]


def party_limits(node: PartyNode) -> ServerLimits:
    """A party's :class:`~ppdp._http_guard.ServerLimits`: two bodies at once per peer (at
    least four, so at most that many times ``node.max_body`` spooled), 60 s per body,
    connections enough for every peer's pool, kept alive 30 s between a round's messages."""
    peers = len(node.peers)
    return ServerLimits(
        body_seconds=60.0,
        header_seconds=10.0,
        bodies=max(4, 2 * peers),
        connections=max(64, 8 * peers),
        keep_alive_seconds=30.0,
    )


def _refusal(
    status: int, reason: str, *, close: bool = False, duplicate: bool = False
) -> JSONResponse:
    """A refusal; ``close`` when the body was not read to its end (the connection cannot
    be reused and the rest of the body is not wanted)."""
    headers = {}
    if close:
        headers["connection"] = "close"
    if duplicate:
        headers[DUPLICATE_HEADER] = "1"
    return JSONResponse({"reason": reason}, status_code=status, headers=headers or None)


def create_app(node: PartyNode, *, limits: ServerLimits | None = None) -> FastAPI:
    """The HTTP face of ``node``; ``limits`` (default :func:`party_limits`) bounds the
    bodies it reads, ``**app.state.limits.uvicorn_options()`` the rest."""
    limits = party_limits(node) if limits is None else limits
    gate = BodyGate(limits)
    app = FastAPI(
        title=f"ppdp federated {node.role_name} {node.party_id}",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.limits = limits

    @app.exception_handler(RequestValidationError)
    async def bad_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        where = ".".join(str(p) for p in errors[0].get("loc", ())) if errors else "request"
        return _refusal(400, f"the request is malformed ({bounded(where)})")

    @app.post("/messages")
    async def messages(request: Request) -> JSONResponse:
        sender = request.headers.get(SENDER_HEADER)
        try:
            key, signature = node.authenticate_request(
                sender, request.headers.get(BODY_SIGNATURE_HEADER)
            )
            spool, digest = await gate.read(lambda: read_spooled(request, node.max_body))
        except MessageRefusedError as exc:
            return _refusal(exc.status, exc.reason, close=True)
        except ServerBusyError:
            reply = _refusal(
                503, f"this party reads {limits.bodies} messages at once already", close=True
            )
            reply.headers["retry-after"] = "1"
            return reply
        except BodyTimeoutError:
            return _refusal(
                408, f"the message was not complete within {limits.body_seconds:g} s", close=True
            )
        except BodyTooLargeError:
            return _refusal(413, f"message too large (over {node.max_body} bytes)", close=True)
        except ValueError as exc:  # a malformed Content-Length
            return _refusal(400, str(exc), close=True)
        except ClientGoneError:
            return _refusal(400, "the client went away before the body was complete", close=True)
        assert sender is not None
        with spool:
            try:
                node.check_transport(sender, key, signature, digest)
            except MessageRefusedError as exc:
                return _refusal(exc.status, exc.reason)
            body = spool.read()
        try:
            result = await node.receive(
                body, request.headers.get("content-type", ""), sender=sender
            )
        except MessageRefusedError as exc:
            return _refusal(exc.status, exc.reason, duplicate=exc.duplicate)
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
