"""Bounds on what an unauthenticated HTTP client can make the collector do.

* :func:`read_capped` streams a request body into memory and stops at a byte cap, whether
  the body comes with ``Content-Length`` or chunked; a declared length over the cap is
  refused before a byte of the body is read.
* :func:`json_too_deep` finds JSON nested deeper than a limit from the raw bytes, before
  the parser recurses into it.
* :func:`bounded` is the ``repr`` that error messages use for client-supplied values: a
  100 KB client id comes back as its first characters and its length.
* :func:`bind_is_loopback` / :func:`check_plain_http_bind`: the refusal to serve plain
  HTTP beyond loopback unless the operator says so.

The federated parties have their own copy of the body and JSON guards
(:mod:`ppdp.federated.http._guard`), which also spools to disk.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

import numpy as np

from ppdp.exceptions import ParameterError

__all__ = [
    "BodyTooLargeError",
    "ClientGoneError",
    "bind_is_loopback",
    "bounded",
    "check_plain_http_bind",
    "json_too_deep",
    "read_capped",
]


class BodyTooLargeError(Exception):
    """The request body exceeds the cap (declared or while streaming)."""


class ClientGoneError(Exception):
    """The client disconnected before the body was complete."""


def bounded(value: Any, limit: int = 40) -> str:
    """``repr(value)`` cut to ``limit`` characters, saying how long the value was when cut."""
    if isinstance(value, str | bytes) and len(value) > limit:
        return f"{value[:limit]!r}… ({len(value)} characters)"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"<an integer of {value.bit_length()} bits>"
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({type(value).__name__})"


def content_length(headers: Any) -> int | None:
    """The declared ``Content-Length`` (None when absent); ValueError when malformed."""
    raw = headers.get("content-length")
    if raw is None:
        return None
    raw = raw.strip()
    if not raw.isascii() or not raw.isdigit() or len(raw) > 18:
        raise ValueError("Content-Length must be a non-negative integer")
    return int(raw)


async def read_capped(request: Any, cap: int, *, prefix: bytes = b"") -> bytearray:
    """``prefix`` followed by the request body, read chunk by chunk into one buffer;
    :class:`BodyTooLargeError` past ``cap`` bytes of body.

    A declared ``Content-Length`` above ``cap`` is refused before reading; without one
    (chunked transfer), reading stops at the first chunk that would pass the cap, so at
    most ``cap`` bytes of body are ever held. The buffer is returned as it is (no copy):
    with the signature's domain tag as ``prefix`` it is the signed message itself.
    """
    from starlette.requests import ClientDisconnect

    length = content_length(request.headers)
    if length is not None and length > cap:
        raise BodyTooLargeError
    buf = bytearray(prefix)
    limit = cap + len(prefix)
    try:
        async for chunk in request.stream():
            if len(buf) + len(chunk) > limit:
                raise BodyTooLargeError
            buf += chunk
    except ClientDisconnect:
        raise ClientGoneError from None
    return buf


_ESCAPED_BACKSLASH = b"\\\\"
_ESCAPED_QUOTE = b'\\"'
_KEEP = b'"[]{}'
_DROP = bytes(b for b in range(256) if b not in _KEEP)
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


def check_plain_http_bind(host: str, *, tls: bool, insecure_plain_http: bool) -> str | None:
    """Refuse plain HTTP on a non-loopback address unless ``insecure_plain_http``.

    Returns the warning to log when the operator allowed it, None when nothing is wrong.
    """
    if tls or bind_is_loopback(host):
        return None
    if not insecure_plain_http:
        raise ParameterError(
            f"host ({bounded(host)}) is not a loopback address and no TLS certificate is "
            "given: serve TLS (--tls-cert/--tls-key), bind 127.0.0.1 behind a TLS proxy, "
            "or pass --insecure-plain-http"
        )
    return (
        f"serving plain HTTP on {host}: client ids, batch sizes, timing and the reports "
        "themselves travel unencrypted (--insecure-plain-http)"
    )
