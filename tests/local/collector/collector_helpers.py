"""Helpers of the collector tests (a module of its own: ``conftest`` names collide)."""

from __future__ import annotations

import json

from ppdp.ledger import encode_public_key


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
