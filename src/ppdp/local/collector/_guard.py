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

The pieces both servers use live in :mod:`ppdp._http_guard`; the federated parties'
body reader (:mod:`ppdp.federated.http._guard`) spools to disk instead.
"""

from __future__ import annotations

from typing import Any

from ppdp._http_guard import (
    BodyTooLargeError,
    ClientGoneError,
    bind_is_loopback,
    bounded,
    content_length,
    json_too_deep,
)
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
