"""The HTTP guards the local collector and the federated parties share.

What an unauthenticated client can make a ppdp server do is bounded by these pieces:

* :class:`ServerLimits`: how long a client may take to send its request headers
  (:func:`guarded_h11`) and its body (a whole-body deadline, however the bytes trickle),
  how many bodies are read at once (:class:`BodyGate`: one more gets ``503`` at once) and
  how many connections are served (uvicorn's ``limit_concurrency``; more get ``503``);
* :func:`content_length` reads a declared ``Content-Length`` strictly (so a length over the
  cap is refused before a byte of the body is read);
* :func:`json_too_deep` finds JSON nested deeper than a limit from the raw bytes, before
  the parser recurses into it;
* :func:`bounded` is the ``repr`` that error messages use for client-supplied values: a
  100 KB client id comes back as its first characters and its length;
* :func:`bind_is_loopback` tells whether a listen address stays on this machine.

Each server keeps its own body reader (the collector buffers up to its small cap, the
federated parties spool to disk and hash as they read) and its own plain-HTTP refusal,
whose message names its own configuration. With the gate, a server holds at most
``bodies × cap`` bytes of unfinished bodies, for at most ``body_seconds`` each.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from ppdp._validation import bounded

__all__ = [
    "BodyGate",
    "BodyTimeoutError",
    "BodyTooLargeError",
    "ClientGoneError",
    "ServerBusyError",
    "ServerLimits",
    "bind_is_loopback",
    "bounded",
    "content_length",
    "guarded_h11",
    "json_too_deep",
]

_T = TypeVar("_T")


class BodyTooLargeError(Exception):
    """The request body exceeds the cap (declared or while streaming)."""


class ClientGoneError(Exception):
    """The client disconnected before the body was complete."""


class BodyTimeoutError(Exception):
    """The body was not complete within the whole-body deadline."""


class ServerBusyError(Exception):
    """As many bodies as the server reads at once are being read already."""


@dataclass(frozen=True)
class ServerLimits:
    """What one ppdp server grants its clients at most.

    Parameters
    ----------
    body_seconds : float
        A request body must be complete this many seconds after the app starts reading
        it (a whole-body deadline: trickling bytes does not extend it); else ``408``.
    header_seconds : float
        A connection must complete its request headers this many seconds after it opens
        (or after data for a next request arrives); else it is closed.
    bodies : int
        Request bodies read at once; one more is answered ``503`` without being read.
    connections : int
        Open connections served (uvicorn's ``limit_concurrency``); requests beyond get
        ``503``.
    keep_alive_seconds : float
        An idle kept-alive connection is closed after this many seconds.
    """

    body_seconds: float = 60.0
    header_seconds: float = 10.0
    bodies: int = 16
    connections: int = 256
    keep_alive_seconds: float = 5.0

    def uvicorn_options(self) -> dict[str, Any]:
        """Keyword arguments for ``uvicorn.Config``/``uvicorn.run`` that enforce the limits
        uvicorn sees: connections, keep-alive, request headers (size and time)."""
        return {
            "http": guarded_h11(self.header_seconds),
            "limit_concurrency": self.connections,
            "timeout_keep_alive": self.keep_alive_seconds,
            "h11_max_incomplete_event_size": _MAX_HEADER_BYTES,
        }


#: Request line and headers together may not exceed this (h11's default, said explicitly).
_MAX_HEADER_BYTES = 16 * 1024


class BodyGate:
    """Admission of request bodies under :class:`ServerLimits`: at most ``limits.bodies``
    read at once, each finished within ``limits.body_seconds``.

    The event loop runs one coroutine at a time, so a plain counter is exact.
    """

    def __init__(self, limits: ServerLimits) -> None:
        self.limits = limits
        self.reading = 0

    async def read(self, reader: Callable[[], Awaitable[_T]]) -> _T:
        """``await reader()`` within the deadline; :class:`ServerBusyError` (nothing read)
        when every slot is taken, :class:`BodyTimeoutError` past the deadline."""
        if self.reading >= self.limits.bodies:
            raise ServerBusyError
        self.reading += 1
        try:
            async with asyncio.timeout(self.limits.body_seconds):
                return await reader()
        except TimeoutError:
            raise BodyTimeoutError from None
        finally:
            self.reading -= 1


def guarded_h11(header_seconds: float) -> type:
    """uvicorn's h11 protocol, closing a connection whose request headers are not complete
    ``header_seconds`` after it opened (or after the first bytes of a next request).

    uvicorn times out only idle kept-alive connections: a client that sends half a header
    line and stalls would otherwise hold its connection (and a ``limit_concurrency`` slot)
    for ever.
    """
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11Protocol(H11Protocol):  # type: ignore[misc]
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._watch_headers()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._watch_headers()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_header_timer()
            super().connection_lost(exc)

        def _awaiting_headers(self) -> bool:
            return self.cycle is None or bool(self.cycle.response_complete)

        def _watch_headers(self) -> None:
            if not self._awaiting_headers():
                self._stop_header_timer()
            elif self._header_timer is None:
                self._header_timer = self.loop.call_later(header_seconds, self._headers_late)

        def _stop_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_late(self) -> None:
            self._header_timer = None
            if self._awaiting_headers() and not self.transport.is_closing():
                self.transport.close()

    return GuardedH11Protocol


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
