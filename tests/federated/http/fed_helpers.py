"""Deployments of the real roles for the HTTP tests: small synthetic data, short timeouts."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd

from ppdp.data import Schema
from ppdp.federated.http import (
    PartyParts,
    Timeouts,
    load_config,
    prepare_deployment,
    run_party,
)
from ppdp.federated.http._demo import session_for
from ppdp.federated.http._parties import build_parts
from ppdp.federated.http._runner import bind_socket, serve_node

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "a", "type": "numeric", "lower": 0, "upper": 1},
            {"name": "b", "type": "numeric", "lower": 0, "upper": 1},
            {"name": "c", "type": "categorical", "categories": ["u", "v"]},
        ],
        "label": {"name": "cls", "classes": ["no", "yes"]},
    }
)
FAST = Timeouts(request=2.0, retries=2, startup=30.0, phase=1.5, round=30.0, linger=0.0)
HERE = Path(__file__).parent


def synthetic_parts(n_owners: int, rows: int = 40, seed: int = 0) -> list[pd.DataFrame]:
    rng = np.random.default_rng(seed)
    parts = []
    for _ in range(n_owners):
        y = rng.integers(0, 2, rows)
        parts.append(
            pd.DataFrame(
                {
                    "a": np.clip(0.3 + 0.4 * y + 0.1 * rng.normal(size=rows), 0, 1),
                    "b": rng.uniform(size=rows),
                    "c": rng.choice(["u", "v"], rows),
                    "cls": np.where(y == 1, "yes", "no"),
                }
            )
        )
    return parts


def deploy(
    root: Path,
    *,
    owners: int = 2,
    dealer: str = "trusted",
    release: str = "direction",
    session_id: str = "s-1",
    timeouts: Timeouts = FAST,
    owner_prefix: str = "owner",
):
    parts = synthetic_parts(owners)
    session = session_for(
        parts,
        SCHEMA,
        session_id=session_id,
        epsilon=1.0,
        delta=1e-5,
        dealer=dealer,
        release=release,
        owner_prefix=owner_prefix,
    )
    return prepare_deployment(
        root,
        parts=parts,
        schema=SCHEMA,
        session=session,
        timeouts=timeouts,
        dealer=dealer == "trusted",
        owner_prefix=owner_prefix,
    )


def run_in_threads(dep, parties, build=build_parts):
    """Run parties in threads of this process (each its own event loop); return outcomes."""
    results = {}

    def go(p):
        results[p] = run_party(load_config(dep.configs[p]), build=build)

    threads = {p: threading.Thread(target=go, args=(p,)) for p in parties}
    for t in threads.values():
        t.start()
    return threads, results


def join(threads, timeout=60):
    for t in threads.values():
        t.join(timeout)


def spawn(dep, party, *extra, cli=False):
    """Start one party as a real subprocess (the test script, or the ``ppdp`` CLI)."""
    log = dep.workdir / f"{party}.proc.log"
    if cli:
        cmd = [sys.executable, "-m", "ppdp", "federate", dep.roles[party], "--config"]
        cmd.append(str(dep.configs[party]))
    else:
        cmd = [sys.executable, str(HERE / "party_main.py"), str(dep.configs[party]), *extra]
    with open(log, "wb") as fh:
        return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=fh)


def post_message(url, body, *, key, sender, session, recipient, content_type="application/json"):
    """POST a message body to ``url/messages`` with transport headers signed by ``key`` as
    ``sender`` (a peer of ``recipient`` in ``session``), the way a genuine party sends it."""
    import httpx

    from ppdp.federated.http import transport_headers

    data = body.encode() if isinstance(body, str) else body
    headers = transport_headers(
        data, sender=sender, key=key, session_id=session, recipient=recipient
    )
    headers["content-type"] = content_type
    return httpx.post(f"{url}/messages", content=data, headers=headers, timeout=10)


class Served:
    """One party's node served in a background thread (the test plays the other parties)."""

    def __init__(self, config, parts: PartyParts | None = None):
        self.config = config
        self.parts = parts or build_parts(config)
        self.node = self.parts.node
        self.ready = threading.Event()
        self.thread = threading.Thread(target=asyncio.run, args=(self._main(),), daemon=True)
        self.thread.start()
        assert self.ready.wait(20)
        self.url = config.url

    async def _main(self):
        self.stop = asyncio.Event()
        self.loop = asyncio.get_running_loop()
        sock = bind_socket(self.config.host, self.config.port)
        await self.node.open()
        async with serve_node(self.node, sock, tls=self.config.tls):
            self.ready.set()
            await self.stop.wait()
            await self.node.drained(2.0)
            await self.node.close()
        sock.close()
        if self.parts.close:
            self.parts.close()

    def call(self, coro_fn, timeout=10):
        return asyncio.run_coroutine_threadsafe(coro_fn(), self.loop).result(timeout)

    def close(self):
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(10)
