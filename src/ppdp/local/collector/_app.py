"""The collector's HTTP service (FastAPI): signed batches in, running totals out.

Endpoints (all JSON):

``GET /v1/info``
    The survey id, the randomizer's ``to_dict()``, its formal guarantee, the layout of the
    running totals, the batch limit and the body cap: what a client needs to perturb
    correctly. Public: it reveals nothing about who took part.
``GET /v1/clients/{id}``
    The client's last accepted ``seq`` (so a client continues its numbering). Only for
    that client (a signed read) or the operator (bearer token).
``POST /v1/batches``
    A signed batch (see :mod:`ppdp.local.collector._wire`). In order, and before anything
    is parsed: the ``X-PPDP-Client`` header must be a well-formed client id and
    ``X-PPDP-Signature`` a well-formed signature (else 401, without reading the body); the
    body is streamed up to :attr:`Collector.max_body` bytes (else 413 and the connection is
    closed: with or without ``Content-Length``, no more than the cap is ever held) within
    the whole-body deadline (else 408), while at most ``limits.bodies`` bodies are read at
    once (else 503 at once); the signature is verified over the raw bytes (401). An id
    that is not registered is treated exactly like a registered one with a bad signature
    (its body is read and checked against a key nobody holds): the same 401, the same
    reply, the same work, so the answer never tells who is registered. Only then is the
    JSON parsed (at most
    :data:`~ppdp.local.collector._wire.MAX_DEPTH` deep), the envelope checked, every
    report validated with the randomizer, the batch reduced to its aggregates and added
    in one transaction. Any failure rejects the whole batch and leaves the totals as they
    were. Status: 200 accepted (or an identical retry of the last batch), 400 malformed,
    401 unknown client or bad signature, 408 body too slow, 409 replayed or stale ``seq``
    or wrong survey, 413 too many reports or too large a body, 422 invalid reports, 503
    too many bodies at once or the store unavailable, 507 the store's disk is full
    (nothing added in either case: send the batch again later).
``GET /v1/totals``
    The running totals and counts, for any registered client (a signed read) or the
    operator (bearer token). They are post-processing of locally private reports, so
    reading them costs no privacy beyond each report's own guarantee; the counts do
    reveal how many took part, hence the authentication.

Error replies are ``{"error": "<one line>"}``; a value the client sent appears cut to a
few dozen characters, never whole.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import logging
import sqlite3
from collections.abc import AsyncIterator, Mapping
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from ppdp._http_guard import (
    BodyGate,
    BodyTimeoutError,
    ServerBusyError,
    ServerLimits,
)
from ppdp.exceptions import DataValidationError, ParameterError, ProtocolError
from ppdp.ledger import decode_public_key
from ppdp.local.collector._aggregate import Aggregator
from ppdp.local.collector._config import CollectorConfig
from ppdp.local.collector._estimate import stated_guarantee
from ppdp.local.collector._guard import (
    BodyTooLargeError,
    ClientGoneError,
    bounded,
    read_capped,
)
from ppdp.local.collector._store import AddResult, CollectorStore
from ppdp.local.collector._wire import (
    BATCH_DOMAIN,
    CLIENT_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    check_client_id,
    decode_batch,
    decode_signature,
    parse_body,
    peek_client,
    verify_body,
    verify_read,
)

__all__ = ["DEFAULT_MAX_BODY_CEILING", "Collector", "create_app", "default_max_body"]

logger = logging.getLogger(__name__)

#: The default body cap never exceeds this (4 MiB: 20,000 characteristic vectors of
#: k = 30 small lattice integers take about 2 MB); ``max_body_bytes`` in the config sets
#: another. Clients split a batch whose body would not fit.
DEFAULT_MAX_BODY_CEILING = 4 * 1024 * 1024
_ENVELOPE_BYTES = 4096


def default_max_body(aggregator: Aggregator, max_batch: int) -> int:
    """The largest body ``max_batch`` reports can need: 26 bytes per additive report (a
    float's longest JSON form and a comma), 21 per coordinate of a characteristic vector
    (a 64-bit integer and a comma); at most :data:`DEFAULT_MAX_BODY_CEILING`."""
    per = 26 if aggregator.edges is not None else 21 * int(aggregator.randomizer.k) + 3
    return min(max_batch * per + _ENVELOPE_BYTES, DEFAULT_MAX_BODY_CEILING)


#: The collector's default :class:`~ppdp._http_guard.ServerLimits`: 16 bodies of at most
#: :data:`DEFAULT_MAX_BODY_CEILING` each (64 MiB in all), 60 s for a body, 256 connections.
DEFAULT_LIMITS = ServerLimits()


class RejectedBatchError(Exception):
    """A request the collector refuses: an HTTP status and a one-line reason."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Collector:
    """The service logic without HTTP: authenticate, verify, validate, aggregate, store.

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
        self.max_body = config.max_body_bytes or default_max_body(self.aggregator, config.max_batch)
        self._operator = config.operator_token_sha256
        # an unregistered id is checked against this key, whose private half is gone: its
        # refusal is the one a registered id with a bad signature gets
        self._nobody = Ed25519PrivateKey.generate().public_key()
        self._storage_failing = False
        # the same statement `ppdp local estimate` prints (pure ε, else at δ = 1e-6)
        self.guarantee = stated_guarantee(self.aggregator.randomizer, None)

    def info(self) -> dict[str, Any]:
        return {
            "survey": self.config.survey,
            "spec": self.aggregator.spec,
            "guarantee": self.guarantee.to_dict(),
            "layout": {k: list(v) for k, v in self.aggregator.layout.items()},
            "max_batch": self.config.max_batch,
            "max_body": self.max_body,
        }

    # -- authentication (headers only: nothing of the body is read) -----------------------

    def authenticate(
        self, client: str | None, signature: str | None
    ) -> tuple[Ed25519PublicKey, bytes]:
        """The key to check ``client``'s signature with and the decoded signature, or 401
        for a missing or malformed header.

        An id that is not registered gets a key no signature verifies under, so its request
        fails where a registered id's forged signature fails, with the same reply.
        """
        if client is None:
            raise RejectedBatchError(
                401,
                f"the request has no {CLIENT_HEADER} header (the client id; clients that "
                "send it only in the body are too old for this collector)",
            )
        try:
            check_client_id(client)
        except DataValidationError as exc:
            raise RejectedBatchError(401, f"{CLIENT_HEADER}: {exc}") from None
        try:
            raw = decode_signature(signature)
        except ProtocolError as exc:
            raise RejectedBatchError(401, str(exc)) from None
        return self.keys.get(client, self._nobody), raw

    def authorize_read(
        self, headers: Mapping[str, str], path: str, *, client: str | None = None
    ) -> str:
        """Allow a read of ``path`` by the operator (bearer token) or a registered client
        (signed read; with ``client``, only that one). Returns who it was; 401 otherwise."""
        auth = headers.get("authorization")
        if auth is not None:
            scheme, _, token = auth.partition(" ")
            if scheme.lower() != "bearer" or not token.strip() or self._operator is None:
                raise RejectedBatchError(401, "the operator token is not valid here")
            digest = hashlib.sha256(token.strip().encode("utf-8", "replace")).hexdigest()
            if not hmac.compare_digest(digest, self._operator):
                raise RejectedBatchError(401, "the operator token is not valid here")
            return "operator"
        who = headers.get(CLIENT_HEADER)
        if who is None:
            what = "/v1/clients/{id}" if client is not None else path
            raise RejectedBatchError(
                401,
                f"GET {what} needs a client's signed read ({CLIENT_HEADER}, "
                f"{TIMESTAMP_HEADER}, {SIGNATURE_HEADER}) or the operator token "
                "(Authorization: Bearer)",
            )
        key, _ = self.authenticate(who, headers.get(SIGNATURE_HEADER))
        if client is not None and who != client:
            raise RejectedBatchError(401, "a client may read only its own state")
        try:
            verify_read(path, headers.get(TIMESTAMP_HEADER), headers.get(SIGNATURE_HEADER), key)
        except ProtocolError as exc:
            raise RejectedBatchError(401, str(exc)) from None
        return who

    # -- ingest ---------------------------------------------------------------------------

    def ingest(self, body: bytes, signature: str | None, client: str | None = None) -> AddResult:
        """Process one posted body; raise :class:`RejectedBatchError` when it is refused.

        ``client`` is the ``X-PPDP-Client`` header: the signature is verified for that
        client's key before the body is parsed. Without it (in-process callers holding a
        bare body) the claimed id is read from the body first.
        """
        if len(body) > self.max_body:
            raise RejectedBatchError(413, f"the batch body exceeds {self.max_body} bytes")
        obj = None
        if client is None:
            try:
                obj, client = peek_client(body)
            except DataValidationError as exc:
                raise RejectedBatchError(400, str(exc)) from None
        key, raw = self.authenticate(client, signature)
        return self.ingest_authenticated(body, key, raw, client, parsed=obj)

    def ingest_authenticated(
        self,
        body: bytes,
        key: Ed25519PublicKey,
        signature: bytes,
        client: str,
        *,
        parsed: dict[str, Any] | None = None,
    ) -> AddResult:
        """Verify ``signature`` over ``body`` for ``client``'s ``key``, then parse, validate
        and store the batch."""
        try:
            verify_body(body, signature, key)
        except ProtocolError as exc:
            raise RejectedBatchError(401, str(exc)) from None
        return self._ingest_verified(body, client, parsed)

    def ingest_signed_message(
        self, message: bytearray, key: Ed25519PublicKey, signature: bytes, client: str
    ) -> AddResult:
        """Like :meth:`ingest_authenticated`, for ``BATCH_DOMAIN + body`` as read from the
        wire into one buffer: verified as it is (no copy of an unauthenticated body), then
        the domain tag is dropped in place."""
        try:
            key.verify(signature, message)
        except InvalidSignature:
            raise RejectedBatchError(
                401, "the batch signature does not verify for its client"
            ) from None
        del message[: len(BATCH_DOMAIN)]
        return self._ingest_verified(message, client, None)

    def _ingest_verified(
        self, body: bytes | bytearray, client: str, parsed: dict[str, Any] | None
    ) -> AddResult:
        try:
            obj = parsed if parsed is not None else parse_body(body)
            batch = decode_batch(obj, body, client=client)
        except DataValidationError as exc:
            raise RejectedBatchError(400, str(exc)) from None
        if batch.survey != self.config.survey:
            raise RejectedBatchError(
                409,
                f"survey ({bounded(batch.survey)}) is not this collector's "
                f"({self.config.survey!r})",
            )
        if batch.size > self.config.max_batch:
            raise RejectedBatchError(
                413, f"the batch has {batch.size} reports; at most {self.config.max_batch}"
            )
        try:
            aggregates = self.aggregator.aggregate(batch.reports)
            result = self.store.add_batch(
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
        except (OSError, sqlite3.Error) as exc:
            raise self._storage_error(exc) from None
        if self._storage_failing:
            self._storage_failing = False
            logger.warning("the collector stores batches again")
        return result

    def _storage_error(self, exc: BaseException) -> RejectedBatchError:
        """The refusal of a batch the store could not write (nothing was added): 507 when
        the disk is full, 503 otherwise. Logged once when the store starts failing, not
        with a traceback per request."""
        full = (
            getattr(exc, "errno", None) == errno.ENOSPC
            or getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
            or "disk is full" in str(exc)
        )
        what = "its disk is full" if full else "its store failed"
        if not self._storage_failing:  # the cause for the operator, not for the client
            self._storage_failing = True
            logger.error(
                "the collector cannot store batches: %s (%s: %s); refusing them until it can",
                what,
                type(exc).__name__,
                bounded(str(exc), 120),
            )
        return RejectedBatchError(
            507 if full else 503,
            f"the collector cannot store the batch now: {what}; nothing was added, "
            "send it again later",
        )

    def close(self) -> None:
        self.store.close()


def _refusal(status: int, message: str, *, close: bool = False) -> JSONResponse:
    """The reply to a refused request; ``close`` when the body was not read to its end
    (the connection cannot be reused, and the rest of the body is not wanted)."""
    headers = {"connection": "close"} if close else None
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _busy(limits: ServerLimits) -> JSONResponse:
    reply = _refusal(
        503,
        f"the collector is reading {limits.bodies} batches at once already; "
        "send this one again shortly",
        close=True,
    )
    reply.headers["retry-after"] = "1"
    return reply


def create_app(
    config: CollectorConfig,
    *,
    store: CollectorStore | None = None,
    limits: ServerLimits = DEFAULT_LIMITS,
) -> FastAPI:
    """The FastAPI application of one collector (see the module docstring).

    ``limits`` bounds the bodies the app reads (how many at once, how long each); serve it
    with ``**app.state.limits.uvicorn_options()`` for the rest (connections, headers).
    """
    collector = Collector(config, store=store)
    gate = BodyGate(limits)

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
    app.state.limits = limits

    @app.exception_handler(RequestValidationError)
    async def bad_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        where = ".".join(str(p) for p in errors[0].get("loc", ())) if errors else "request"
        return _refusal(400, f"the request is malformed ({bounded(where)})")

    @app.get("/v1/info")
    def info() -> dict[str, Any]:
        return collector.info()

    @app.get("/v1/clients/{client_id}")
    def client_state(client_id: str, request: Request) -> JSONResponse:
        try:
            collector.authorize_read(request.headers, f"/v1/clients/{client_id}", client=client_id)
        except RejectedBatchError as exc:
            return _refusal(exc.status, str(exc))
        return JSONResponse({"client": client_id, "last_seq": collector.store.last_seq(client_id)})

    @app.get("/v1/totals")
    def totals(request: Request) -> JSONResponse:
        try:
            collector.authorize_read(request.headers, "/v1/totals")
        except RejectedBatchError as exc:
            return _refusal(exc.status, str(exc))
        return JSONResponse(collector.store.snapshot().to_dict())

    @app.post("/v1/batches")
    async def post_batch(request: Request) -> JSONResponse:
        client = request.headers.get(CLIENT_HEADER)
        try:
            key, signature = collector.authenticate(client, request.headers.get(SIGNATURE_HEADER))
            message = await gate.read(
                lambda: read_capped(request, collector.max_body, prefix=BATCH_DOMAIN)
            )
        except RejectedBatchError as exc:
            logger.info("refused a batch before its body (%d): %s", exc.status, exc)
            return _refusal(exc.status, str(exc), close=True)
        except ServerBusyError:
            return _busy(limits)
        except BodyTimeoutError:
            return _refusal(
                408, f"the batch body was not complete within {limits.body_seconds:g} s", close=True
            )
        except BodyTooLargeError:
            return _refusal(413, f"the batch body exceeds {collector.max_body} bytes", close=True)
        except ValueError as exc:  # a malformed Content-Length
            return _refusal(400, str(exc), close=True)
        except ClientGoneError:
            return _refusal(400, "the client went away before the body was complete", close=True)
        assert client is not None
        try:
            result = await run_in_threadpool(
                collector.ingest_signed_message, message, key, signature, client
            )
        except RejectedBatchError as exc:
            logger.info("rejected a batch (%d): %s", exc.status, exc)
            return _refusal(exc.status, str(exc))
        return JSONResponse(
            {"accepted": result.accepted, "count": result.count, "duplicate": result.duplicate}
        )

    return app
