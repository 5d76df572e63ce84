"""Ledger events persist forever (issue 31): an event kind and its parameters never change.

``data/events_v1.json`` holds one canonical entry per event kind as ledgers store it, with
its basic (ε, δ) and the compositions that took it when it was written; ``data/old_*.ledger``
are budget ledgers written by commit 2584510, before the ``zcdp`` event existed, whose
``TableSynthesizer`` charged a bare ``epsilon-delta`` event (``data/make_old_ledgers.py``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ppdp.accounting import Accountant, budget_report
from ppdp.accounting.events import _REGISTRY, ZCDP, EpsilonDelta, Gaussian, event_from_dict
from ppdp.budget import PrivacyBudget
from ppdp.exceptions import UnsupportedEventError
from ppdp.ledger._anchor import ANCHOR_DIR_ENV

DATA = Path(__file__).parent / "data"
STORED = json.loads((DATA / "events_v1.json").read_text(encoding="utf-8"))["events"]


@pytest.mark.parametrize("entry", STORED, ids=lambda e: e["event"]["kind"])
def test_a_stored_event_still_reads_as_the_same_event_at_the_same_cost(entry):
    event = event_from_dict(entry["event"])
    assert event.to_dict() == entry["event"]  # no parameter renamed, dropped or added
    if entry["basic"] is None:
        with pytest.raises(UnsupportedEventError):
            event.budget()
    else:
        assert [event.budget().epsilon, event.budget().delta] == entry["basic"]
    # A composition that took the event still does (accounting may only get tighter).
    assert set(entry["compositions"]) <= set(event.compositions)


def test_every_event_kind_has_a_stored_entry():
    assert {e["event"]["kind"] for e in STORED} == set(_REGISTRY)


def _copy(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(ANCHOR_DIR_ENV, str(tmp_path / "anchors"))
    for suffix in ("", ".key", ".checkpoint"):
        shutil.copy(DATA / f"{name}{suffix}", tmp_path / f"{name}{suffix}")
    (tmp_path / f"{name}.key").chmod(0o600)
    return tmp_path / name


@pytest.mark.parametrize("composition", ["basic", "pld"])
def test_an_old_ledger_opens_replays_and_takes_the_new_event(tmp_path, monkeypatch, composition):
    if composition == "pld":
        pytest.importorskip("dp_accounting")
    path = _copy(f"old_{composition}.ledger", tmp_path, monkeypatch)
    before = budget_report(path)
    assert [s.mechanism for s in before.spends] == ["hist", "TableSynthesizer", "gauss"]
    old_synth = before.spends[1].event
    assert old_synth == EpsilonDelta(epsilon=1.0, delta=1e-9)  # the old synth charge
    assert isinstance(before.spends[2].event, Gaussian)
    total = PrivacyBudget(4.0, 1e-5)
    with Accountant.open(path, dataset_id="old", total=total) as acct:
        assert acct.composition == composition and acct.spent == before.spent
        acct.spend(ZCDP(rho=0.01497, epsilon=1.0, delta=1e-9), mechanism="TableSynthesizer")
    after = budget_report(path)
    assert [s.event for s in after.spends[:3]] == [s.event for s in before.spends]
    assert after.spends[3].event.kind == "zcdp"
    assert after.spent.epsilon > before.spent.epsilon
