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
    is parsed: the ``X-PPDP-Client`` header must name a registered client and
    ``X-PPDP-Signature`` be well formed (else 401, without reading the body); the body is
    streamed up to :attr:`Collector.max_body` bytes (else 413 and the connection is
    closed: with or without ``Content-Length``, no more than the cap is ever held); the
    signature is verified over the raw bytes (401). Only then is the JSON parsed (at most
    :data:`~ppdp.local.collector._wire.MAX_DEPTH` deep), the envelope checked, every
    report validated with the randomizer, the batch reduced to its aggregates and added
    in one transaction. Any failure rejects the whole batch and leaves the totals as they
    were. Status: 200 accepted (or an identical retry of the last batch), 400 malformed,
    401 unknown client or bad signature, 409 replayed or stale ``seq`` or wrong survey,
    413 too many reports or too large a body, 422 invalid reports.
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
import hashlib
import hmac
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

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
        """The registered key of ``client`` and the decoded signature, or 401."""
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
        key = self.keys.get(client)
        if key is None:
            raise RejectedBatchError(401, f"client ({bounded(client)}) is not registered")
        try:
            raw = decode_signature(signature)
        except ProtocolError as exc:
            raise RejectedBatchError(401, str(exc)) from None
        return key, raw

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


def _refusal(status: int, message: str, *, close: bool = False) -> JSONResponse:
    """The reply to a refused request; ``close`` when the body was not read to its end
    (the connection cannot be reused, and the rest of the body is not wanted)."""
    headers = {"connection": "close"} if close else None
    return JSONResponse({"error": message}, status_code=status, headers=headers)


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
            message = await read_capped(request, collector.max_body, prefix=BATCH_DOMAIN)
        except RejectedBatchError as exc:
            logger.info("refused a batch before its body (%d): %s", exc.status, exc)
            return _refusal(exc.status, str(exc), close=True)
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
