"""Helpers of the collector tests (a module of its own: ``conftest`` names collide)."""

from __future__ import annotations

import json
import socket

import pytest

from ppdp.ledger import encode_public_key, generate_key, save_private_key


@pytest.fixture(name="keys")
def keys_fixture(tmp_path):
    """Two registered clients' keys (written to files) and an unregistered key.

    Import it into a test module (``from collector_helpers import keys_fixture``): a conftest.py
    here would collide with the other test folders' under --doctest-modules.
    """
    out = {}
    for cid in ("app-1", "app-2", "intruder"):
        key = generate_key()
        save_private_key(key, tmp_path / f"{cid}.key")
        out[cid] = key
    return out


def free_port(host: str = "127.0.0.1") -> int:
    """A port no process listens on at ``host`` now (the OS picks it): never a fixed one,
    which fails whenever another process holds it."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def write_config(tmp_path, keys, randomizer, *, client="app-1", name="collector.json", **extra):
    cfg = {
        "survey": "test-survey",
        "randomizer": randomizer.to_dict(),
        "store": "store.sqlite",
        "clients": {c: encode_public_key(keys[c].public_key()) for c in ("app-1", "app-2")},
        "client": {"id": client, "key": f"{client}.key"},
        **extra,
    }
    path = tmp_path / name
    path.write_text(json.dumps(cfg))
    return path


def totals(http, key, client="app-1"):
    """``GET /v1/totals`` as a registered client (a signed read)."""
    from ppdp.local.collector._wire import read_headers

    r = http.get("/v1/totals", headers=read_headers(client, key, "/v1/totals"))
    assert r.status_code == 200, r.text
    return r.json()


def last_seq(http, key, client="app-1"):
    """``GET /v1/clients/{client}`` as that client."""
    from ppdp.local.collector._wire import read_headers

    path = f"/v1/clients/{client}"
    r = http.get(path, headers=read_headers(client, key, path))
    assert r.status_code == 200, r.text
    return r.json()["last_seq"]
