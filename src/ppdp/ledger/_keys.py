"""Ed25519 keys of ledger signers: generate, save (mode 0600), load, pin.

A signer is a name (the *signer id*, e.g. ``"custodian"`` or ``"party-2"``) plus an
Ed25519 private key. The ledger's genesis entry pins each signer id to its public key;
entries are accepted only from pinned, unrevoked signers.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ppdp.exceptions import ParameterError, ParameterTypeError

__all__ = [
    "PublicKeyLike",
    "Signer",
    "decode_public_key",
    "encode_public_key",
    "generate_key",
    "key_fingerprint",
    "load_private_key",
    "load_public_key",
    "save_private_key",
    "save_public_key",
]

#: A public key: an Ed25519 key object, its 32 raw bytes, their base64 text, or PEM text.
PublicKeyLike = Ed25519PublicKey | bytes | str
_SIGNER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@:+-]{0,63}")


def check_signer_id(signer_id: object) -> str:
    """A signer id: 1-64 characters from letters, digits and ``_.@:+-``."""
    if not isinstance(signer_id, str):
        raise ParameterTypeError(
            f"signer id ({signer_id!r}) must be a str, not {type(signer_id).__name__}"
        )
    if not _SIGNER_ID.fullmatch(signer_id):
        raise ParameterError(
            f"signer id ({signer_id!r}) must be 1-64 characters: letters, digits and _.@:+- "
            "(starting with a letter or digit)"
        )
    return signer_id


def generate_key() -> Ed25519PrivateKey:
    """A fresh Ed25519 private key (from the operating system's CSPRNG)."""
    return Ed25519PrivateKey.generate()


def encode_public_key(key: Ed25519PublicKey) -> str:
    """The raw 32-byte public key in standard base64 (the form pinned in the genesis entry)."""
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode("ascii")


def decode_public_key(value: PublicKeyLike) -> Ed25519PublicKey:
    """Accept a key object, 32 raw bytes, base64 text of them, or PEM text."""
    if isinstance(value, Ed25519PublicKey):
        return value
    if isinstance(value, str) and value.lstrip().startswith("-----BEGIN"):
        key = serialization.load_pem_public_key(value.encode("ascii"))
        if not isinstance(key, Ed25519PublicKey):
            raise ParameterError("public key (PEM) must be an Ed25519 key")
        return key
    if isinstance(value, str):
        try:
            value = base64.b64decode(value.encode("ascii"), validate=True)
        except (ValueError, UnicodeEncodeError):
            raise ParameterError(f"public key ({value!r}) must be base64 of 32 bytes") from None
    if isinstance(value, bytes) and len(value) == 32:
        return Ed25519PublicKey.from_public_bytes(value)
    raise ParameterError(f"public key ({value!r}) must be an Ed25519 public key (32 raw bytes)")


def key_fingerprint(key: Ed25519PublicKey) -> str:
    """First 16 hex digits of SHA-256 of the raw public key, for display."""
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def save_private_key(key: Ed25519PrivateKey, path: str | os.PathLike[str]) -> Path:
    """Write ``key`` as unencrypted PKCS#8 PEM readable by its owner only (mode 0600).

    The file is created exclusively: an existing file is never overwritten, so a key that
    signs a ledger cannot be lost by accident.
    """
    dest = Path(path)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    dest.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(dest, flags, 0o600)
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


def load_private_key(path: str | os.PathLike[str]) -> Ed25519PrivateKey:
    """Read an Ed25519 private key written by :func:`save_private_key`."""
    data = Path(path).read_bytes()
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise ParameterError(
            f"key file ({path}) is not an unencrypted PEM private key: {exc}"
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ParameterError(
            f"key file ({path}) must hold an Ed25519 key, not {type(key).__name__}"
        )
    return key


def save_public_key(key: Ed25519PublicKey, path: str | os.PathLike[str]) -> Path:
    """Write a public key as PEM (SubjectPublicKeyInfo), e.g. to pin it at another party."""
    dest = Path(path)
    dest.write_bytes(
        key.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return dest


def load_public_key(path: str | os.PathLike[str]) -> Ed25519PublicKey:
    """Read a public key file: PEM, or base64 of the 32 raw bytes."""
    return decode_public_key(Path(path).read_text(encoding="ascii").strip())


@dataclass(frozen=True)
class Signer:
    """A signer id and its Ed25519 private key.

    Parameters
    ----------
    id : str
        The name pinned in the ledger's genesis entry.
    private_key : Ed25519PrivateKey
        Never written into the ledger; keep it outside the ledger's backups.

    Examples
    --------
    >>> s = Signer.generate("custodian")
    >>> s.verify(s.sign(b"m"), b"m")
    True
    """

    id: str
    private_key: Ed25519PrivateKey

    def __post_init__(self) -> None:
        check_signer_id(self.id)
        if not isinstance(self.private_key, Ed25519PrivateKey):
            raise ParameterTypeError(
                f"private_key ({type(self.private_key).__name__}) must be an Ed25519PrivateKey"
            )

    def __repr__(self) -> str:
        return f"Signer(id={self.id!r}, public_key={key_fingerprint(self.public_key)})"

    @classmethod
    def generate(cls, signer_id: str) -> Signer:
        """A signer with a fresh key."""
        return cls(signer_id, generate_key())

    @classmethod
    def from_file(cls, signer_id: str, path: str | os.PathLike[str]) -> Signer:
        """A signer whose key is read from a PEM file."""
        return cls(signer_id, load_private_key(path))

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Save the private key (mode 0600, never overwriting); see :func:`save_private_key`."""
        return save_private_key(self.private_key, path)

    @property
    def public_key(self) -> Ed25519PublicKey:
        """The public key to pin."""
        return self.private_key.public_key()

    def sign(self, message: bytes) -> bytes:
        """An Ed25519 signature (64 bytes)."""
        return self.private_key.sign(message)

    def verify(self, signature: bytes, message: bytes) -> bool:
        """True when ``signature`` is this signer's signature of ``message``."""
        return verify_signature(self.public_key, signature, message)


def verify_signature(key: Ed25519PublicKey, signature: bytes, message: bytes) -> bool:
    """True when ``signature`` is valid for ``message`` under ``key``."""
    try:
        key.verify(signature, message)
    except InvalidSignature:
        return False
    return True


def normalise_keys(keys: Mapping[str, PublicKeyLike], *, name: str) -> dict[str, Ed25519PublicKey]:
    """Validate a mapping signer id -> public key."""
    if not isinstance(keys, Mapping) or not keys:
        raise ParameterError(
            f"{name} ({keys!r}) must be a non-empty mapping of signer id to public key"
        )
    return {check_signer_id(k): decode_public_key(v) for k, v in keys.items()}


def same_key(a: Ed25519PublicKey, b: Ed25519PublicKey) -> bool:
    """Whether two public key objects hold the same key."""
    return encode_public_key(a) == encode_public_key(b)
