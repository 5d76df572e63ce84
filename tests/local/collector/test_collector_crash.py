"""Fault catalogue (d) for the collector: concurrent clients and a SIGKILLed server leave a
store whose totals, counts and client sequence numbers agree exactly."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import socket
import sqlite3
import sys
import threading
import time
import warnings

import httpx
import numpy as np
import pytest
from collector_helpers import keys_fixture, write_config  # noqa: F401 (the `keys` fixture)

from ppdp.local import AdditiveRandomizer
from ppdp.local.collector import CollectorConfig, CollectorStore
from ppdp.local.collector._wire import CLIENT_HEADER, SIGNATURE_HEADER, encode_batch, sign_body

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="fork and SIGKILL")

BATCH = 200


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(path, port):  # runs in the forked child
    import logging

    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)
    from ppdp.local.collector import serve

    serve(config=path, port=port)


def test_concurrent_clients_then_sigkill(tmp_path, keys):
    r = AdditiveRandomizer(noise="gaussian", scale=0.2, domain=(0.0, 1.0))
    path = write_config(tmp_path, keys, r, histogram={"bins_per_domain": 50})
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    # a forked child starts in a fraction of a second (the modules are already imported)
    proc = multiprocessing.get_context("fork").Process(target=_serve, args=(path, port))
    with warnings.catch_warnings():  # Python >= 3.12 warns about fork in a threaded process
        warnings.simplefilter("ignore", DeprecationWarning)
        proc.start()
    acked = {"app-1": 0, "app-2": 0}
    stop = threading.Event()

    def client(cid: str, seed: int) -> None:
        reports = r.randomise(np.random.default_rng(seed).random(BATCH), random_state=seed)
        with httpx.Client(base_url=url, timeout=5) as http:
            seq = 0
            while not stop.is_set():
                seq += 1
                body = encode_batch(survey="test-survey", client=cid, seq=seq, reports=reports)
                try:
                    headers = {CLIENT_HEADER: cid, SIGNATURE_HEADER: sign_body(body, keys[cid])}
                    resp = http.post("/v1/batches", content=body, headers=headers)
                except httpx.HTTPError:
                    return  # the server died
                assert resp.status_code == 200, resp.text
                acked[cid] = seq

    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/v1/info", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.is_alive() and time.monotonic() < deadline
            time.sleep(0.1)
        threads = [threading.Thread(target=client, args=(c, i)) for i, c in enumerate(acked)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while min(acked.values()) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)  # let more batches be in flight
        os.kill(proc.pid, signal.SIGKILL)  # mid-ingest, no shutdown hook runs
        proc.join(timeout=10)
    finally:
        stop.set()
        if proc.is_alive():
            proc.kill()
        proc.join(timeout=10)
    for t in threads:
        t.join(timeout=10)
    assert min(acked.values()) >= 1, "the clients never got a batch in"
    config = CollectorConfig.from_file(path)
    with CollectorStore.open(config.store, create=False) as store:
        snap = store.snapshot()
        seqs = {c: store.last_seq(c) for c in acked}
    # every acknowledged batch is durable; an unacknowledged one is there whole or not at all
    for c in acked:
        assert acked[c] <= seqs[c] <= acked[c] + 1
    batches = sum(seqs.values())
    assert snap.batches == batches and snap.count == BATCH * batches
    assert int(snap.totals["hist"].sum()) == snap.count
    conn = sqlite3.connect(config.store)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    json.dumps(snap.to_dict())  # still a valid snapshot
