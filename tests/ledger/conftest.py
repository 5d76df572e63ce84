"""Fixtures for the ledger tests: a small ledger with several signers and entry kinds."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest

from ppdp.ledger import Checkpoint, Entry, Ledger, Signer


@dataclass
class SmallLedger:
    path: Path
    custodian: Signer
    party: Signer
    entries: list[Entry]
    checkpoint: Checkpoint


def build_small_ledger(folder: Path, name: str = "ledger.db") -> SmallLedger:
    """Genesis plus five entries of different kinds, by two signers (a few KB)."""
    custodian = Signer.generate("custodian")
    party = Signer.generate("party-1")
    path = folder / name
    with Ledger.create(
        path,
        signer=custodian,
        dataset_id="adult",
        purpose="test",
        signers={"custodian": custodian.public_key, "party-1": party.public_key},
        metadata={"note": "small"},
    ) as led:
        led.append("spend", {"epsilon": 0.1, "delta": 0.0, "mechanism": "laplace"})
        led.append("release", {"path": "out.csv", "rows": 3})
        led.append("round", {"share": [0.25, -1.5e-7]}, signer=party)
        led.append("spend", {"epsilon": 0.2, "delta": 1e-9, "mechanism": "gaussian"})
        led.append("note", {"text": "ünïcode ok"})
        entries = led.entries()
        checkpoint = led.checkpoint()
    return SmallLedger(path, custodian, party, entries, checkpoint)


@pytest.fixture
def small_ledger(tmp_path: Path) -> SmallLedger:
    return build_small_ledger(tmp_path)


def vacuum_copy(src: Path, dest: Path) -> bytes:
    """A compact copy (no free pages, no WAL) in rollback-journal mode; return its bytes."""
    with sqlite3.connect(src) as conn:
        conn.execute("VACUUM INTO ?", (str(dest),))
    conn.close()
    conn = sqlite3.connect(dest)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    return dest.read_bytes()


def execute(path: Path, *statements: tuple[str, tuple]) -> None:
    """Run raw SQL against a ledger file (the attacker's view: no ppdp involved)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for sql, params in statements:
            conn.execute(sql, params)
    finally:
        conn.close()
