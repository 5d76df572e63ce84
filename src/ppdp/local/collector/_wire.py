"""The wire format of a batch of reports, its Ed25519 signature, and signed reads.

A batch is one JSON object, sent as the exact bytes that were signed::

    {"v": 1, "survey": "<id>", "client": "<id>", "seq": <int >= 1>, "reports": [...]}

with two headers: ``X-PPDP-Client`` (the client id, equal to the body's ``client``) and
``X-PPDP-Signature`` (base64 of the Ed25519 signature of ``BATCH_DOMAIN + body``). The
collector looks the client up and checks the signature's form from the headers alone,
reads the body up to its byte cap, verifies the signature over the raw bytes, and only
then parses JSON. It authenticates the client (a registered device or survey app), never
the answer: a client holding a valid key can still send any report that passes
validation. ``seq`` increases strictly per client; the collector refuses a replayed or
stale one.

Reads that reveal participation (``GET /v1/clients/{id}``, ``GET /v1/totals``) carry
either ``Authorization: Bearer <operator token>`` or a client's signature:
``X-PPDP-Client``, ``X-PPDP-Timestamp`` (Unix seconds) and ``X-PPDP-Signature`` over
``READ_DOMAIN + "GET <path>\n<timestamp>"``, accepted within :data:`READ_WINDOW` seconds
of the collector's clock (:func:`read_headers`).

Compatibility: the body and its signature are unchanged from the first wire version; the
``X-PPDP-Client`` header is new. Current clients work with older collectors (which ignore
the header); older clients are refused by current collectors (401, naming the header).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ppdp.exceptions import DataValidationError, ProtocolError
from ppdp.local.collector._guard import bounded, json_too_deep

__all__ = [
    "BATCH_DOMAIN",
    "CLIENT_HEADER",
    "MAX_DEPTH",
    "READ_DOMAIN",
    "READ_WINDOW",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "WIRE_VERSION",
    "Batch",
    "check_client_id",
    "decode_batch",
    "decode_signature",
    "encode_batch",
    "parse_body",
    "read_headers",
    "sign_body",
    "sign_read",
    "verify_body",
    "verify_read",
]

#: Domain separation: a signature over a batch can never be replayed as anything else.
BATCH_DOMAIN = b"ppdp-local-batch-v1\x00"
#: Domain separation of signed reads (never valid as a batch signature, nor the reverse).
READ_DOMAIN = b"ppdp-local-read-v1\x00"
SIGNATURE_HEADER = "X-PPDP-Signature"
CLIENT_HEADER = "X-PPDP-Client"
TIMESTAMP_HEADER = "X-PPDP-Timestamp"
#: Seconds a signed read stays valid either side of the collector's clock.
READ_WINDOW = 300
WIRE_VERSION = 1
#: Deepest JSON nesting a batch may have (a batch needs 3: object, reports, report).
MAX_DEPTH = 8
_MAX_ID = 128


@dataclass(frozen=True)
class Batch:
    """A parsed batch (reports still unvalidated: the randomizer checks them)."""

    survey: str
    client: str
    seq: int
    reports: list[Any]
    digest: str

    @property
    def size(self) -> int:
        return len(self.reports)


def encode_batch(*, survey: str, client: str, seq: int, reports: Any) -> bytes:
    """The body bytes of a batch (compact JSON; ``reports`` a list or a numpy array)."""
    if hasattr(reports, "tolist"):
        reports = reports.tolist()
    body = {"v": WIRE_VERSION, "survey": survey, "client": client, "seq": int(seq)}
    body["reports"] = reports
    return json.dumps(body, separators=(",", ":"), allow_nan=False).encode("utf-8")


def sign_body(body: bytes, key: Ed25519PrivateKey) -> str:
    """Base64 of the Ed25519 signature of ``BATCH_DOMAIN + body``."""
    return base64.b64encode(key.sign(BATCH_DOMAIN + body)).decode("ascii")


def check_client_id(client: Any) -> str:
    """A client id as the wire allows it: 1 to 128 printable characters."""
    if not isinstance(client, str) or not 0 < len(client) <= _MAX_ID or not client.isprintable():
        raise DataValidationError(
            f"client ({bounded(client)}) must be 1 to {_MAX_ID} printable characters"
        )
    return client


def decode_signature(signature: str | None) -> bytes:
    """The 64 signature bytes of a ``X-PPDP-Signature`` header, or :class:`ProtocolError`."""
    if not signature:
        raise ProtocolError(f"the request has no {SIGNATURE_HEADER} header")
    try:
        raw = base64.b64decode(signature.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise ProtocolError(f"{SIGNATURE_HEADER} must be base64 of a signature") from None
    if len(raw) != 64:
        raise ProtocolError(f"{SIGNATURE_HEADER} must be base64 of 64 bytes, got {len(raw)}")
    return raw


def verify_body(body: bytes, signature: str | bytes | None, key: Ed25519PublicKey) -> None:
    """Raise :class:`ProtocolError` unless ``signature`` signs ``body`` under ``key``."""
    raw = signature if isinstance(signature, bytes) else decode_signature(signature)
    try:
        key.verify(raw, BATCH_DOMAIN + body)
    except InvalidSignature:
        raise ProtocolError("the batch signature does not verify for its client") from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_body(body: bytes | bytearray) -> dict[str, Any]:
    """Parse a batch body (after its signature verified): a JSON object nested at most
    :data:`MAX_DEPTH` deep, without ``NaN``/``Infinity``; :class:`DataValidationError`
    otherwise."""
    if json_too_deep(body, MAX_DEPTH):
        raise DataValidationError(f"the batch body nests JSON deeper than {MAX_DEPTH} levels")
    try:
        obj = json.loads(body, parse_constant=_reject_constant)
    except RecursionError:
        raise DataValidationError(
            f"the batch body nests JSON deeper than {MAX_DEPTH} levels"
        ) from None
    except (ValueError, UnicodeDecodeError):
        raise DataValidationError("the batch body is not valid JSON") from None
    if not isinstance(obj, dict):
        raise DataValidationError("the batch body must be a JSON object")
    return obj


def peek_client(body: bytes) -> tuple[dict[str, Any], str]:
    """Parse the body and return it with its (claimed) client id.

    For in-process callers that already hold a body without headers; the HTTP service
    never parses before it has verified the signature of the header's client.
    """
    obj = parse_body(body)
    return obj, check_client_id(obj.get("client"))


def _has_bool(reports: list[Any]) -> bool:
    for r in reports:
        if r is True or r is False:
            return True
        if isinstance(r, list) and any(x is True or x is False for x in r):
            return True
    return False


def decode_batch(
    obj: dict[str, Any], body: bytes | bytearray, *, client: str | None = None
) -> Batch:
    """Check the envelope fields of a parsed body (after its signature verified).

    ``client`` is the id the signature was verified for; the body must name the same.
    """
    if obj.get("v") != WIRE_VERSION or isinstance(obj.get("v"), bool):
        raise DataValidationError(f"v ({bounded(obj.get('v'))}) must be {WIRE_VERSION}")
    extra = set(obj) - {"v", "survey", "client", "seq", "reports"}
    if extra:
        names = ", ".join(bounded(k, 20) for k in sorted(extra)[:5])
        more = f" and {len(extra) - 5} more" if len(extra) > 5 else ""
        raise DataValidationError(
            f"the batch has unknown fields ({names}{more}); allowed: v, survey, client, seq, "
            "reports"
        )
    survey, seq, reports = obj.get("survey"), obj.get("seq"), obj.get("reports")
    body_client = check_client_id(obj.get("client"))
    if client is not None and body_client != client:
        raise DataValidationError(
            f"client ({bounded(body_client)}) in the body differs from the {CLIENT_HEADER} "
            f"header ({bounded(client)})"
        )
    if not isinstance(survey, str):
        raise DataValidationError(f"survey ({bounded(survey)}) must be a string")
    if isinstance(seq, bool) or not isinstance(seq, int) or not 1 <= seq < 2**62:
        raise DataValidationError(f"seq ({bounded(seq)}) must be an integer in [1, 2^62)")
    if not isinstance(reports, list) or not reports:
        raise DataValidationError("reports must be a non-empty JSON array")
    if (b"true" in body or b"false" in body) and _has_bool(reports):
        raise DataValidationError(
            "reports must be numbers (or arrays of numbers); JSON true/false are not reports"
        )
    digest = hashlib.sha256(body).hexdigest()
    return Batch(survey, body_client, seq, reports, digest)


# ------------------------------------------------------------------------- signed reads


def _read_message(path: str, timestamp: str) -> bytes:
    return READ_DOMAIN + f"GET {path}\n{timestamp}".encode()


def sign_read(key: Ed25519PrivateKey, path: str, timestamp: int) -> str:
    """Base64 of the signature of a read of ``path`` at ``timestamp`` (Unix seconds)."""
    return base64.b64encode(key.sign(_read_message(path, str(int(timestamp))))).decode("ascii")


def read_headers(client: str, key: Ed25519PrivateKey, path: str) -> dict[str, str]:
    """The headers that authenticate a ``GET path`` as ``client`` now."""
    now = int(time.time())
    return {
        CLIENT_HEADER: client,
        TIMESTAMP_HEADER: str(now),
        SIGNATURE_HEADER: sign_read(key, path, now),
    }


def verify_read(
    path: str,
    timestamp: str | None,
    signature: str | None,
    key: Ed25519PublicKey,
    *,
    now: float | None = None,
) -> None:
    """Raise :class:`ProtocolError` unless the headers sign a read of ``path``, recently."""
    if not timestamp or not timestamp.isascii() or not timestamp.isdigit() or len(timestamp) > 12:
        raise ProtocolError(f"a signed read needs {TIMESTAMP_HEADER}: Unix seconds")
    now = time.time() if now is None else now
    if abs(int(timestamp) - now) > READ_WINDOW:
        raise ProtocolError(
            f"{TIMESTAMP_HEADER} is more than {READ_WINDOW} s from the collector's clock"
        )
    raw = decode_signature(signature)
    try:
        key.verify(raw, _read_message(path, timestamp))
    except InvalidSignature:
        raise ProtocolError("the read signature does not verify for its client") from None
