"""Fixtures of the collector tests: keys, configs, an in-process app."""

from __future__ import annotations

import pytest

from ppdp.ledger import generate_key, save_private_key


@pytest.fixture
def keys(tmp_path):
    """Two registered clients' keys (written to files) and an unregistered key."""
    out = {}
    for cid in ("app-1", "app-2", "intruder"):
        key = generate_key()
        save_private_key(key, tmp_path / f"{cid}.key")
        out[cid] = key
    return out
