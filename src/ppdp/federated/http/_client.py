"""httpx clients: deliver messages to peers with timeouts and bounded retries.

Delivery is at-least-once with an idempotent receiver: a request that timed out may have
been processed, so it is retried; the receiver answers a byte-identical copy of a message
it already accepted with ``409`` and the header ``X-PPDP-Duplicate: 1``, which the sender
counts as delivered. Any other 4xx is final (the peer rejected the message and said why);
connection errors, timeouts and 5xx are retried ``retries`` times with a short backoff.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass

import httpx

from ppdp.exceptions import ParameterError, ProtocolError

__all__ = [
    "DUPLICATE_HEADER",
    "DeliveryError",
    "PeerClient",
    "RejectedError",
    "wait_healthy",
]

logger = logging.getLogger(__name__)

DUPLICATE_HEADER = "X-PPDP-Duplicate"


class DeliveryError(ProtocolError):
    """A peer could not be reached (or kept failing) within the retries: it dropped out."""


class RejectedError(ProtocolError):
    """A peer refused a message with a 4xx answer (its reason is in the text)."""

    def __init__(self, message: str, *, status: int):
        super().__init__(message)
        self.status = status


@dataclass
class SendStats:
    """Counters of one client (for the benchmark's transport figure)."""

    requests: int = 0
    retries: int = 0
    bytes_out: int = 0
    seconds: float = 0.0


class PeerClient:
    """Posts message bodies to peers' ``/messages`` with timeouts and retries.

    Parameters
    ----------
    timeout : float
        Seconds for one request (connect, write, read).
    retries : int
        Extra attempts after a connection error, timeout or 5xx answer.
    backoff : float
        First pause between attempts; doubles each time.
    verify : SSLContext or bool
        For ``https://`` peers: the TLS context (trusted CA, our client certificate).
    transport : httpx.AsyncBaseTransport, optional
        Replaces the network (tests).
    """

    def __init__(
        self,
        *,
        timeout: float = 5.0,
        retries: int = 3,
        backoff: float = 0.05,
        verify: ssl.SSLContext | bool = True,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._verify = verify
        self._transport = transport
        self._timeout = timeout
        self._retries = retries
        self._backoff = backoff
        self._client: httpx.AsyncClient | None = None
        self.stats = SendStats()

    async def __aenter__(self) -> PeerClient:
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(self._timeout),
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=32),
            trust_env=False,
            verify=self._verify,
            transport=self._transport,
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def post(
        self,
        url: str,
        body: bytes,
        *,
        content_type: str = "application/json",
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """POST ``body`` to ``url``; return the 2xx response (or a duplicate acknowledgement).

        ``headers`` (the transport signature, :func:`~ppdp.federated.http._guard.
        transport_headers`) go with every attempt; a ``content-type`` among them wins.

        Raises
        ------
        RejectedError
            The peer answered 4xx (not a duplicate acknowledgement of a retry).
        DeliveryError
            No 2xx after ``retries`` extra attempts (peer down, timing out, or failing).
        """
        if self._client is None:
            raise RuntimeError("PeerClient must be used inside 'async with'")
        delay = self._backoff
        last = ""
        for attempt in range(self._retries + 1):
            if attempt:
                self.stats.retries += 1
                await asyncio.sleep(delay)
                delay *= 2
            t0 = time.perf_counter()
            try:
                self.stats.requests += 1
                self.stats.bytes_out += len(body)
                resp = await self._client.post(
                    url, content=body, headers={"content-type": content_type, **(headers or {})}
                )
            except httpx.TransportError as exc:  # connect refused, reset, timeout
                last = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                logger.info("POST %s failed (attempt %d): %s", url, attempt + 1, last)
                continue
            finally:
                self.stats.seconds += time.perf_counter() - t0
            if resp.status_code < 300:
                return resp
            if resp.status_code == 409 and resp.headers.get(DUPLICATE_HEADER) == "1" and attempt:
                return resp  # an earlier attempt got through; the copy was recognised
            if 400 <= resp.status_code < 500:
                raise RejectedError(
                    f"{url} rejected the message ({resp.status_code}): {_reason(resp)}",
                    status=resp.status_code,
                )
            last = f"HTTP {resp.status_code}: {_reason(resp)}"
        raise DeliveryError(f"{url} unreachable after {self._retries + 1} attempts ({last})")

    async def get_json(self, url: str, *, params: dict[str, object] | None = None) -> object:
        """GET ``url`` and decode JSON (retried like :meth:`post`)."""
        if self._client is None:
            raise RuntimeError("PeerClient must be used inside 'async with'")
        delay = self._backoff
        last = ""
        for attempt in range(self._retries + 1):
            if attempt:
                await asyncio.sleep(delay)
                delay *= 2
            try:
                resp = await self._client.get(url, params=params)  # type: ignore[arg-type]
            except httpx.TransportError as exc:
                last = type(exc).__name__
                continue
            if resp.status_code == 200:
                return resp.json()
            if 400 <= resp.status_code < 500:
                raise RejectedError(
                    f"GET {url} ({resp.status_code}): {_reason(resp)}", status=resp.status_code
                )
            last = f"HTTP {resp.status_code}"
        raise DeliveryError(f"GET {url} failed after {self._retries + 1} attempts ({last})")


def _reason(resp: httpx.Response) -> str:
    try:
        data = resp.json()
    except ValueError:
        return resp.text[:200]
    if isinstance(data, dict):
        return str(data.get("reason", data.get("detail", data)))[:500]
    return str(data)[:500]


async def wait_healthy(
    urls: Mapping[str, str],
    *,
    deadline: float,
    interval: float = 0.05,
    verify: ssl.SSLContext | bool = True,
    session_id: str | None = None,
) -> None:
    """Poll each party's ``URL/health`` until it answers 200, or raise DeliveryError.

    ``urls`` maps party id to base URL; ``deadline`` is a :func:`time.monotonic` value.
    A peer that answers as another party, or for another session, is a configuration
    error: :class:`~ppdp.exceptions.ParameterError` at once.
    """
    names = {u: p for p, u in urls.items()}
    pending = list(urls.values())
    async with httpx.AsyncClient(
        timeout=httpx.Timeout(1.0), trust_env=False, verify=verify
    ) as client:
        while pending:
            still = []
            for url in pending:
                try:
                    resp = await client.get(f"{url}/health")
                except httpx.TransportError:
                    still.append(url)
                    continue
                if resp.status_code != 200:
                    still.append(url)
                    continue
                _check_identity(resp, names[url], url, session_id)
            pending = still
            if not pending:
                return
            if time.monotonic() > deadline:
                down = ", ".join(f"{names[u]} ({u})" for u in pending)
                raise DeliveryError(f"peers not up before the start-up timeout: {down}")
            await asyncio.sleep(interval)


def _check_identity(resp: httpx.Response, party: str, url: str, session_id: str | None) -> None:
    try:
        info = resp.json()
    except ValueError:
        info = None
    if not isinstance(info, dict) or info.get("party") != party:
        got = info.get("party") if isinstance(info, dict) else None
        raise ParameterError(f"peer {party!r} at {url} answers as {got!r}: check the peers' URLs")
    if session_id is not None and info.get("session") != session_id:
        raise ParameterError(
            f"peer {party!r} at {url} runs session {info.get('session')!r}, not "
            f"{session_id!r}: the parties' configs differ"
        )
