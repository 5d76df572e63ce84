"""Bounded, authenticated input for ``POST /messages``: what a stranger can cost a party.

Every request to ``POST /messages`` carries two headers that authenticate it *before* its
body is read into memory or parsed:

``X-PPDP-Sender``
    The sending party's id; it must be one of this party's pinned peers.
``X-PPDP-Body-Signature``
    Base64 of the sender's Ed25519 signature of
    ``TRANSPORT_DOMAIN ‖ session_id ‖ 0x00 ‖ recipient ‖ 0x00 ‖ SHA-256(body)``,
    over the raw body bytes as sent (sealed or not).

The receiver checks the sender and the signature's form from the headers (else ``401``
at once, the body unread), then streams the body through SHA-256 into a spooled
temporary file (memory up to :data:`SPOOL_IN_MEMORY` bytes, the rest on disk) up to the
body cap (``413`` past it, chunked or not), and verifies the signature against the
digest. Only an authenticated body is read back, opened and parsed. So a stranger costs
a party about a megabyte of memory per connection and no parsing, however large the body
it sends, and cannot reach the round's validator or its abort policy at all. The app
reads at most ``bodies`` of them at once (``503`` beyond), each within a whole-body
deadline (``408``), so the spool never holds more than ``bodies`` times the cap
(:class:`ppdp._http_guard.ServerLimits`, :func:`ppdp.federated.http._app.party_limits`).

The message inside keeps its own signature (:mod:`ppdp.federated.messages`): the
transport signature authenticates the request, the message signature what the ledger
records. Signing the body's digest rather than the body lets the receiver verify without
holding the body in memory.

Also here: :func:`json_too_deep` (nesting checked on the raw bytes before the parser
recurses), :func:`bounded` (how errors quote what a client sent) and the refusal to serve
plain HTTP beyond loopback. The local collector has its own copy of the body and JSON
guards (:mod:`ppdp.local.collector._guard`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import tempfile
from typing import IO, Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ppdp._http_guard import (
    BodyTooLargeError,
    ClientGoneError,
    bind_is_loopback,
    bounded,
    content_length,
)
from ppdp._http_guard import json_too_deep as _json_too_deep
from ppdp.exceptions import ParameterError

__all__ = [
    "BODY_SIGNATURE_HEADER",
    "MAX_DEPTH",
    "SENDER_HEADER",
    "SPOOL_IN_MEMORY",
    "TRANSPORT_DOMAIN",
    "BodyTooLargeError",
    "ClientGoneError",
    "bind_is_loopback",
    "bounded",
    "check_plain_http_bind",
    "decode_transport_signature",
    "json_too_deep",
    "read_spooled",
    "transport_headers",
    "verify_transport",
]

#: Domain separation: never valid as a message, ledger or collector signature.
TRANSPORT_DOMAIN = b"ppdp-federated-http-v1\x00"
SENDER_HEADER = "X-PPDP-Sender"
BODY_SIGNATURE_HEADER = "X-PPDP-Body-Signature"
#: Bytes of a body kept in memory while it is read; the rest is spooled to a temporary file.
SPOOL_IN_MEMORY = 1 << 20
#: Deepest JSON nesting a message may have (the deepest payload needs fewer than 10).
MAX_DEPTH = 32


# --------------------------------------------------------------------------- signatures


def _signing_bytes(session_id: str, recipient: str, digest: bytes) -> bytes:
    return b"".join(
        (TRANSPORT_DOMAIN, session_id.encode(), b"\x00", recipient.encode(), b"\x00", digest)
    )


def transport_headers(
    body: bytes, *, sender: str, key: Ed25519PrivateKey, session_id: str, recipient: str
) -> dict[str, str]:
    """The headers that authenticate ``body`` as ``sender``'s request to ``recipient``."""
    sig = key.sign(_signing_bytes(session_id, recipient, hashlib.sha256(body).digest()))
    return {SENDER_HEADER: sender, BODY_SIGNATURE_HEADER: base64.b64encode(sig).decode("ascii")}


def decode_transport_signature(value: str | None) -> bytes:
    """The 64 bytes of an ``X-PPDP-Body-Signature`` header; ValueError with the reason."""
    if not value:
        raise ValueError(f"the request has no {BODY_SIGNATURE_HEADER} header")
    try:
        raw = base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise ValueError(f"{BODY_SIGNATURE_HEADER} must be base64 of a signature") from None
    if len(raw) != 64:
        raise ValueError(f"{BODY_SIGNATURE_HEADER} must be base64 of 64 bytes, got {len(raw)}")
    return raw


def verify_transport(
    key: Ed25519PublicKey, signature: bytes, *, session_id: str, recipient: str, digest: bytes
) -> bool:
    """Whether ``signature`` signs a body of SHA-256 ``digest`` for this session and party."""
    try:
        key.verify(signature, _signing_bytes(session_id, recipient, digest))
    except InvalidSignature:
        return False
    return True


# --------------------------------------------------------------------------- the body


async def read_spooled(request: Any, cap: int) -> tuple[IO[bytes], bytes]:
    """Stream the body into a spooled temporary file and SHA-256; return both.

    A declared ``Content-Length`` above ``cap`` raises :class:`BodyTooLargeError` before
    reading; a chunked body raises it at the first chunk that would pass the cap. At most
    :data:`SPOOL_IN_MEMORY` bytes (plus one chunk) are in memory at any time. The caller
    closes the file.
    """
    from starlette.requests import ClientDisconnect

    length = content_length(request.headers)
    if length is not None and length > cap:
        raise BodyTooLargeError
    spool: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # noqa: SIM115
    digest = hashlib.sha256()
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > cap:
                raise BodyTooLargeError
            digest.update(chunk)
            spool.write(chunk)
    except ClientDisconnect:
        spool.close()
        raise ClientGoneError from None
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool, digest.digest()


# --------------------------------------------------------------------------- JSON depth


def json_too_deep(body: bytes, limit: int = MAX_DEPTH) -> bool:
    """:func:`ppdp._http_guard.json_too_deep` with the parties' default limit."""
    return _json_too_deep(body, limit)


# --------------------------------------------------------------------------- binding


def check_plain_http_bind(host: str, *, tls: bool, insecure_plain_http: bool) -> str | None:
    """Refuse plain HTTP on a non-loopback address unless ``insecure_plain_http``.

    Returns the warning to log when the operator allowed it, None when nothing is wrong.
    """
    if tls or bind_is_loopback(host):
        return None
    if not insecure_plain_http:
        raise ParameterError(
            f"listen.host ({bounded(host)}) is not a loopback address and the config has no "
            "tls section: add tls (mutual TLS), bind 127.0.0.1 behind a TLS proxy, or pass "
            "--insecure-plain-http"
        )
    return (
        f"serving plain HTTP on {host}: the round's messages and metadata travel "
        "unencrypted, readable by anyone on the path (--insecure-plain-http)"
    )
