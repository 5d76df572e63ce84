"""Sealed boxes for dealer shares: X25519 key agreement, HKDF-SHA256, ChaCha20-Poly1305.

The Ed25519 signature on a message gives integrity and authenticity, not
confidentiality: anyone on the path reads a signed message. A dealer share must stay
secret from everyone but its owner (with it, the publisher could cancel the zero-sum
noise and see the owner's partial with far less noise, ALGORITHMS-publishing B.5 item 3).
So the dealer seals each share to its owner's X25519 public key:

``blob = b"PPDPSEAL1" ‖ ephemeral_public (32) ‖ nonce (12) ‖ AEAD(key, nonce, message, aad)``

with ``key = HKDF-SHA256(X25519(ephemeral, recipient), info = label ‖ ephemeral_public ‖
recipient_public)``. A fresh ephemeral key per message makes every key single-use; the
AEAD tag detects any change. ``aad`` binds the blob to the session and the recipient id.
This is the ECIES/HPKE "base mode" construction; it hides content, not size or timing.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ppdp.exceptions import ParameterError, ProtocolError

__all__ = [
    "SEALED_CONTENT_TYPE",
    "decode_box_public_key",
    "encode_box_public_key",
    "generate_box_key",
    "load_box_key",
    "open_sealed",
    "save_box_key",
    "seal",
]

SEALED_CONTENT_TYPE = "application/vnd.ppdp.sealed"
_MAGIC = b"PPDPSEAL1"
_INFO = b"ppdp-federated-seal-v1"


def generate_box_key() -> X25519PrivateKey:
    """A fresh X25519 private key (OS CSPRNG)."""
    return X25519PrivateKey.generate()


def _raw_public(key: X25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def encode_box_public_key(key: X25519PublicKey) -> str:
    """Base64 of the raw 32-byte X25519 public key (the form written in configs)."""
    return base64.b64encode(_raw_public(key)).decode("ascii")


def decode_box_public_key(value: str | bytes | X25519PublicKey) -> X25519PublicKey:
    """Accept a key object, 32 raw bytes, or their base64."""
    if isinstance(value, X25519PublicKey):
        return value
    raw = value
    if isinstance(value, str):
        try:
            raw = base64.b64decode(value.encode("ascii"), validate=True)
        except (ValueError, UnicodeEncodeError):
            raw = b""
    if not isinstance(raw, bytes) or len(raw) != 32:
        raise ParameterError(f"box public key ({value!r}) must be base64 of 32 bytes (X25519)")
    return X25519PublicKey.from_public_bytes(raw)


def save_box_key(key: X25519PrivateKey, path: str | os.PathLike[str]) -> Path:
    """Write an X25519 private key as PKCS#8 PEM, mode 0600, never overwriting."""
    dest = Path(path)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise ParameterError(
            f"key file ({dest}) already exists; refusing to overwrite a key"
        ) from None
    try:
        os.write(fd, pem)
        os.fsync(fd)
    finally:
        os.close(fd)
    return dest


def load_box_key(path: str | os.PathLike[str]) -> X25519PrivateKey:
    """Read an X25519 private key written by :func:`save_box_key`."""
    try:
        key = serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
    except (ValueError, TypeError) as exc:
        raise ParameterError(f"box key file ({path}) is not a PEM private key: {exc}") from None
    if not isinstance(key, X25519PrivateKey):
        raise ParameterError(f"box key file ({path}) must hold an X25519 key")
    return key


def _key(shared: bytes, eph: bytes, recipient: bytes) -> bytes:
    return HKDF(
        algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO + eph + recipient
    ).derive(shared)


def seal(plaintext: bytes, recipient: X25519PublicKey, *, aad: bytes = b"") -> bytes:
    """Encrypt ``plaintext`` so that only the holder of ``recipient``'s private key reads it.

    Examples
    --------
    >>> k = generate_box_key()
    >>> open_sealed(seal(b"share", k.public_key(), aad=b"s1"), k, aad=b"s1")
    b'share'
    """
    eph = X25519PrivateKey.generate()
    eph_pub = _raw_public(eph.public_key())
    key = _key(eph.exchange(recipient), eph_pub, _raw_public(recipient))
    nonce = os.urandom(12)
    return _MAGIC + eph_pub + nonce + ChaCha20Poly1305(key).encrypt(nonce, plaintext, aad)


def open_sealed(blob: bytes, private_key: X25519PrivateKey, *, aad: bytes = b"") -> bytes:
    """Decrypt a :func:`seal` blob; raise ProtocolError if it was altered or not for us."""
    head = len(_MAGIC)
    if len(blob) < head + 32 + 12 + 16 or not blob.startswith(_MAGIC):
        raise ProtocolError("sealed message is malformed (too short or wrong header)")
    eph_pub = blob[head : head + 32]
    nonce = blob[head + 32 : head + 44]
    try:
        eph = X25519PublicKey.from_public_bytes(eph_pub)
        key = _key(private_key.exchange(eph), eph_pub, _raw_public(private_key.public_key()))
        return ChaCha20Poly1305(key).decrypt(nonce, blob[head + 44 :], aad)
    except (InvalidTag, ValueError):
        raise ProtocolError(
            "sealed message does not open: altered, or sealed for another key or session"
        ) from None
