"""The wire format of a batch of reports, and its Ed25519 signature.

A batch is one JSON object, sent as the exact bytes that were signed::

    {"v": 1, "survey": "<id>", "client": "<id>", "seq": <int >= 1>, "reports": [...]}

and the header ``X-PPDP-Signature`` carries base64 of the Ed25519 signature of
``BATCH_DOMAIN + body``. The collector verifies the signature over the raw body *before*
parsing it, so it authenticates the client (a registered device or survey app), never the
answer: a client holding a valid key can still send any report that passes validation.
``seq`` increases strictly per client; the collector refuses a replayed or stale one.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ppdp.exceptions import DataValidationError, ProtocolError

__all__ = [
    "BATCH_DOMAIN",
    "SIGNATURE_HEADER",
    "WIRE_VERSION",
    "Batch",
    "decode_batch",
    "encode_batch",
    "sign_body",
    "verify_body",
]

#: Domain separation: a signature over a batch can never be replayed as anything else.
BATCH_DOMAIN = b"ppdp-local-batch-v1\x00"
SIGNATURE_HEADER = "X-PPDP-Signature"
WIRE_VERSION = 1
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


def verify_body(body: bytes, signature: str | None, key: Ed25519PublicKey) -> None:
    """Raise :class:`ProtocolError` unless ``signature`` signs ``body`` under ``key``."""
    if not signature:
        raise ProtocolError(f"the batch has no {SIGNATURE_HEADER} header")
    try:
        raw = base64.b64decode(signature.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise ProtocolError(f"{SIGNATURE_HEADER} must be base64 of a signature") from None
    try:
        key.verify(raw, BATCH_DOMAIN + body)
    except InvalidSignature:
        raise ProtocolError("the batch signature does not verify for its client") from None


def peek_client(body: bytes) -> tuple[dict[str, Any], str]:
    """Parse the body as JSON and return it with its (claimed) client id."""
    try:
        obj = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise DataValidationError("the batch body is not valid JSON") from None
    if not isinstance(obj, dict):
        raise DataValidationError("the batch body must be a JSON object")
    client = obj.get("client")
    if not isinstance(client, str) or not 0 < len(client) <= _MAX_ID:
        raise DataValidationError(
            f"client ({client!r}) must be a non-empty string of at most {_MAX_ID} characters"
        )
    return obj, client


def decode_batch(obj: dict[str, Any], body: bytes) -> Batch:
    """Check the envelope fields of a parsed body (after its signature verified)."""
    if obj.get("v") != WIRE_VERSION:
        raise DataValidationError(f"v ({obj.get('v')!r}) must be {WIRE_VERSION}")
    extra = set(obj) - {"v", "survey", "client", "seq", "reports"}
    if extra:
        raise DataValidationError(f"the batch has unknown fields: {', '.join(sorted(extra))}")
    survey, seq, reports = obj.get("survey"), obj.get("seq"), obj.get("reports")
    if not isinstance(survey, str):
        raise DataValidationError(f"survey ({survey!r}) must be a string")
    if isinstance(seq, bool) or not isinstance(seq, int) or not 1 <= seq < 2**62:
        raise DataValidationError(f"seq ({seq!r}) must be an integer in [1, 2^62)")
    if not isinstance(reports, list) or not reports:
        raise DataValidationError("reports must be a non-empty JSON array")
    digest = hashlib.sha256(body).hexdigest()
    return Batch(survey, obj["client"], seq, reports, digest)
