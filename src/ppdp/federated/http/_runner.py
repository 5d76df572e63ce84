"""Run one party as a process: uvicorn serving the node, until the round ends.

:func:`run_party` binds the listening socket itself (a port in use is a clear error, not
a uvicorn exit), serves :func:`~ppdp.federated.http._app.create_app` with uvicorn in the
same event loop, and then:

- the publisher waits until every peer answers ``GET /health`` (``timeouts.startup``),
  then starts the round; the other parties start at once (their first messages are
  retried until the peer is up);
- everyone waits for the role to reach ``done`` or ``aborted`` (the node's watchdog
  aborts on a phase or round timeout, or a peer that cannot be reached), delivers what is
  still queued, runs the party's ``finish`` hook (the publisher writes the result file,
  an owner brings its replica up to date), lingers ``timeouts.linger`` seconds so slower
  peers can still fetch ledger entries, and shuts the server down.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn

from ppdp._io import atomic_path
from ppdp.exceptions import ParameterError, PPDPError
from ppdp.federated.http._app import create_app
from ppdp.federated.http._client import DeliveryError, wait_healthy
from ppdp.federated.http._config import PartyConfig
from ppdp.federated.http._guard import check_plain_http_bind
from ppdp.federated.http._node import TERMINAL, PartyNode
from ppdp.federated.http._parties import build_parts
from ppdp.federated.http._parts import PartyParts
from ppdp.federated.http._tls import TLSConfig, server_options

__all__ = ["PartyOutcome", "PartyParts", "bind_socket", "run_party", "serve_node"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PartyOutcome:
    """How a party's round ended."""

    party: str
    role: str
    state: str
    reason: str | None
    stats: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when the round completed (state ``done``)."""
        return self.state == "done"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe view (written to ``<workdir>/<party>.outcome.json``)."""
        return {
            "party": self.party,
            "role": self.role,
            "state": self.state,
            "reason": self.reason,
            "stats": self.stats,
            **self.extra,
        }


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``SO_REUSEADDR``)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ParameterError(f"listen ({host}:{port}) cannot be bound: {exc.strerror}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def server_config(node: PartyNode, *, tls: TLSConfig | None = None) -> uvicorn.Config:
    """The uvicorn configuration of one party's server (built, as uvicorn does, eagerly)."""
    app = create_app(node)
    return uvicorn.Config(
        app,
        # No dictConfig: uvicorn's default logging config would shut down every logging
        # handler of the process (the host application's included) when a party starts.
        # Its loggers still get the level and propagate to whatever the host configured.
        log_config=None,
        log_level="warning",
        access_log=False,
        lifespan="off",
        **app.state.limits.uvicorn_options(),
        **(server_options(tls) if tls is not None else {}),  # type: ignore[arg-type]
    )


@contextlib.asynccontextmanager
async def serve_node(  # type: ignore[no-untyped-def]
    node: PartyNode, sock: socket.socket, *, tls: TLSConfig | None = None
):
    """Serve ``node`` on ``sock`` with uvicorn (HTTPS with ``tls``) for the block's duration."""
    server = uvicorn.Server(server_config(node, tls=tls))
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()
            raise PPDPError("the HTTP server stopped during start-up")
        await asyncio.sleep(0.005)
    try:
        yield server
    finally:
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, timeout=5.0)


async def _run(config: PartyConfig, parts: PartyParts) -> PartyOutcome:
    node = parts.node
    sock = bind_socket(config.host, config.port)
    extra: dict[str, Any] = {}
    await node.open()
    try:
        async with serve_node(node, sock, tls=config.tls):
            try:
                if config.role == "publisher":
                    try:
                        await wait_healthy(
                            {p.id: p.url for p in config.peers},
                            deadline=time.monotonic() + config.timeouts.startup,
                            verify=node.ssl_context if node.ssl_context is not None else True,
                            session_id=config.session_id,
                        )
                    except (DeliveryError, ParameterError) as exc:
                        await node.abort(str(exc))
                if node.state not in TERMINAL:
                    node.stats.started_at = time.time()
                    grace = 0.0 if config.role == "publisher" else config.timeouts.startup
                    await node.start(grace=grace)
                hard = config.timeouts.round + config.timeouts.phase + 5.0
                try:
                    await asyncio.wait_for(node.finished.wait(), timeout=hard)
                except TimeoutError:
                    await node.abort(f"timeout: no end after {hard:g} s")
                await node.drained(config.timeouts.request * (config.timeouts.retries + 1))
                if parts.finish is not None:
                    try:
                        extra = await parts.finish(node)
                    except PPDPError as exc:
                        logger.error("%s: finishing failed: %s", config.party, exc)
                        extra = {"finish_error": str(exc)}
                if config.timeouts.linger > 0:
                    await asyncio.sleep(config.timeouts.linger)
            finally:
                await node.close()
    finally:
        sock.close()
        if parts.close is not None:
            parts.close()
    outcome = PartyOutcome(
        party=config.party,
        role=config.role,
        state=node.state,
        reason=node.abort_reason if node.state != "done" else None,
        stats=node.stats.to_dict(),
        extra=extra,
    )
    _write_outcome(config, outcome)
    return outcome


def _write_outcome(config: PartyConfig, outcome: PartyOutcome) -> Path:
    dest = config.workdir / f"{config.party}.outcome.json"
    with atomic_path(dest) as tmp:
        tmp.write_text(json.dumps(outcome.to_dict(), indent=2, allow_nan=False), encoding="utf-8")
    return dest


def run_party(
    config: PartyConfig,
    *,
    build: Callable[[PartyConfig], PartyParts] | None = None,
    insecure_plain_http: bool = False,
) -> PartyOutcome:
    """Run one party until its round ends; return how it ended.

    Parameters
    ----------
    config : PartyConfig
        From :func:`~ppdp.federated.http.load_config`.
    build : callable, optional
        Builds the node (role, validator, codec) from the config; default: the roles of
        :mod:`ppdp.federated.roles` (:func:`ppdp.federated.http._parties.build_parts`).
    insecure_plain_http : bool
        Serve plain HTTP on a non-loopback ``listen.host`` (refused otherwise, before
        anything is built or bound); a warning is logged.
    """
    warning = check_plain_http_bind(
        config.host, tls=config.tls is not None, insecure_plain_http=insecure_plain_http
    )
    if warning is not None:
        logger.warning("%s: %s", config.party, warning)
    if build is None:
        build = build_parts

    async def main() -> PartyOutcome:
        return await _run(config, build(config))

    return asyncio.run(main())
