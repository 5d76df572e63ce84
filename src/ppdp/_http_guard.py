"""The HTTP guards the local collector and the federated parties share.

What an unauthenticated client can make a ppdp server do is bounded by these pieces:

* :func:`content_length` reads a declared ``Content-Length`` strictly (so a length over the
  cap is refused before a byte of the body is read);
* :func:`json_too_deep` finds JSON nested deeper than a limit from the raw bytes, before
  the parser recurses into it;
* :func:`bounded` is the ``repr`` that error messages use for client-supplied values: a
  100 KB client id comes back as its first characters and its length;
* :func:`bind_is_loopback` tells whether a listen address stays on this machine.

Each server keeps its own body reader (the collector buffers up to its small cap, the
federated parties spool to disk and hash as they read) and its own plain-HTTP refusal,
whose message names its own configuration.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

import numpy as np

from ppdp._validation import bounded

__all__ = [
    "BodyTooLargeError",
    "ClientGoneError",
    "bind_is_loopback",
    "bounded",
    "content_length",
    "json_too_deep",
]


class BodyTooLargeError(Exception):
    """The request body exceeds the cap (declared or while streaming)."""


class ClientGoneError(Exception):
    """The client disconnected before the body was complete."""


def content_length(headers: Any) -> int | None:
    """The declared ``Content-Length`` (None when absent); ValueError when malformed."""
    raw = headers.get("content-length")
    if raw is None:
        return None
    raw = raw.strip()
    if not raw.isascii() or not raw.isdigit() or len(raw) > 18:
        raise ValueError("Content-Length must be a non-negative integer")
    return int(raw)


_ESCAPED_BACKSLASH = b"\\\\"
_ESCAPED_QUOTE = b'\\"'
_DROP = bytes(b for b in range(256) if b not in b'"[]{}')
_STRING = re.compile(rb'"[^"]*"')
_CHUNK = 1 << 18


def json_too_deep(body: bytes | bytearray, limit: int) -> bool:
    """Whether the JSON text ``body`` nests arrays/objects more than ``limit`` deep.

    Works on the raw bytes at C speed: escaped backslashes and quotes are dropped, then
    every byte but quotes and brackets, then the strings; the brackets left give the
    depth. Only meaningful for valid JSON (the parser rejects the rest anyway).
    """
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    if b"\\" in body:
        body = body.replace(_ESCAPED_BACKSLASH, b"").replace(_ESCAPED_QUOTE, b"")
    structure = _STRING.sub(b"", body.translate(None, _DROP))
    if len(structure) <= limit:
        return False
    codes = np.frombuffer(structure, dtype=np.uint8)
    depth = 0
    for start in range(0, codes.size, _CHUNK):  # chunks: a few MB of temporaries at most
        part = codes[start : start + _CHUNK]
        run = np.cumsum(np.where((part == ord("[")) | (part == ord("{")), 1, -1)) + depth
        if int(run.max()) > limit:
            return True
        depth = int(run[-1])
    return False


def bind_is_loopback(host: str) -> bool:
    """Whether ``host`` is ``localhost`` or a loopback address (127.0.0.0/8, ::1)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
