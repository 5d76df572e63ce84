"""``claim_key``: the exclusive lease a keyed release holds from its checks to its record.

The processes racing for a key (and a holder SIGKILLed after its charge) are in
``test_accounting_concurrent_keys.py``; here: threads, re-entry, release on error, the lock
files beside the ledger, and the one-line refusals when a claim cannot be had.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import numpy as np
import pytest

from ppdp.accounting import (
    Accountant,
    Charge,
    _claim,
    charge,
    check_charges,
    claim_key,
    record_keyed_release,
)
from ppdp.budget import Guarantee, PrivacyBudget
from ppdp.correlated._release import release_sequence
from ppdp.exceptions import KeyInUseError, LedgerIOError, ParameterError

PLAN = Charge(PrivacyBudget(0.25), "job")


def _file_accountant(tmp_path: Path) -> Accountant:
    return Accountant.open(tmp_path / "budget.db", dataset_id="d", total=PrivacyBudget(1.0))


def _claims(tmp_path: Path) -> Path:
    return tmp_path / ".budget.db.claims"


class _Holder(threading.Thread):
    """A thread that holds ``key`` until told to let go."""

    def __init__(self, acct: Accountant, key: str) -> None:
        super().__init__(daemon=True)
        self.acct, self.key = acct, key
        self.holding, self.let_go = threading.Event(), threading.Event()

    def run(self) -> None:
        with claim_key(self.acct, self.key):
            self.holding.set()
            self.let_go.wait(timeout=30)

    def __enter__(self) -> _Holder:
        self.start()
        assert self.holding.wait(timeout=30)
        return self

    def __exit__(self, *exc: object) -> None:
        self.let_go.set()
        self.join(timeout=30)


@pytest.mark.parametrize("where", ["memory", "file"])
def test_another_thread_is_refused_in_one_line_while_a_key_is_held(tmp_path, where):
    acct = Accountant.in_memory(total=PrivacyBudget(1.0)) if where == "memory" else None
    acct = acct or _file_accountant(tmp_path)
    with _Holder(acct, "k"):
        with pytest.raises(KeyInUseError) as err, claim_key(acct, "k"):
            pass
        message = str(err.value)
        assert message.startswith("idempotency_key ('k') is held by a run in progress (pid ")
        assert f"pid {os.getpid()} on host " in message and "\n" not in message
        assert message.endswith("nothing charged, nothing released; retry when it ends")
        with claim_key(acct, "other"):  # other keys are free
            pass
    with claim_key(acct, "k"):  # given up when the holder's block ended
        pass
    assert acct.spent == PrivacyBudget(0.0)


def test_a_claim_is_reentrant_in_its_thread_and_given_up_by_the_outermost_block(tmp_path):
    acct = _file_accountant(tmp_path)
    refused = []

    def other() -> None:
        try:
            with claim_key(acct, "k"):
                refused.append(False)
        except KeyInUseError:
            refused.append(True)

    with claim_key(acct, "k"):
        with claim_key(acct, "k"):  # a CLI flow around the publisher's own fit
            check_charges(acct, PLAN, mechanism="job", idempotency_key="k")
        t = threading.Thread(target=other)
        t.start()
        t.join()
        check_charges(acct, PLAN, mechanism="job", idempotency_key="k")  # still held
    assert refused == [True]
    assert list(_claims(tmp_path).iterdir()) == []  # the lock file went with the claim


def test_a_failing_run_gives_its_claim_up_and_its_retry_releases(tmp_path):
    acct = _file_accountant(tmp_path)
    with pytest.raises(RuntimeError), claim_key(acct, "k"):
        check_charges(acct, PLAN, mechanism="job", idempotency_key="k")
        charge(acct, PLAN, seeded=False, idempotency_key="k")
        raise RuntimeError("the release failed after the charge")
    with claim_key(acct, "k"):  # charged, not recorded: the retry may release
        check_charges(acct, PLAN, mechanism="job", idempotency_key="k")
        records = charge(acct, PLAN, seeded=False, idempotency_key="k")
        assert records[0].replayed
        record_keyed_release(acct, records, Guarantee.pure(0.25, relation="replace-one"), "k")
    with pytest.raises(ParameterError, match="its release is recorded"), claim_key(acct, "k"):
        pass
    assert acct.spent == PrivacyBudget(0.25)
    assert list(_claims(tmp_path).iterdir()) == []


def test_a_dead_holders_lock_file_is_taken_over_with_a_fresh_note(tmp_path):
    acct = _file_accountant(tmp_path)
    with claim_key(acct, "k"):
        (lock,) = _claims(tmp_path).iterdir()
        assert json.loads(lock.read_text())["pid"] == os.getpid()
    # What a SIGKILLed holder leaves: its file and a longer note, no lock.
    stale = {"pid": 99999999, "host": "gone" * 30, "since": "2000-01-01 00:00:00 UTC"}
    lock.write_text(json.dumps(stale))
    with claim_key(acct, "k"):
        note = json.loads(lock.read_text())
        assert note["pid"] == os.getpid() and note["host"] != stale["host"]
    assert not lock.exists()


def test_keyed_checks_and_records_outside_a_claim_are_refused():
    acct = Accountant.in_memory(total=PrivacyBudget(1.0))
    with pytest.raises(ParameterError, match=r"'k'\) is not claimed"):
        check_charges(acct, PLAN, mechanism="job", idempotency_key="k")
    records = charge(acct, PLAN, seeded=False, idempotency_key="k")
    with pytest.raises(ParameterError, match="is not claimed"):
        record_keyed_release(acct, records, Guarantee.pure(0.25, relation="replace-one"), "k")
    check_charges(acct, PLAN, mechanism="job")  # without a key nothing is claimed
    with claim_key(None, "k"), claim_key(acct, None):
        pass
    with (
        pytest.raises(ParameterError, match=r"idempotency_key \(''\) must be"),
        claim_key(acct, ""),
    ):
        pass


def test_without_fcntl_a_keyed_release_on_a_file_ledger_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(_claim, "_fcntl", lambda: None)
    acct = _file_accountant(tmp_path)
    refusal = pytest.raises(ParameterError, match=r"needs an OS file lock \(fcntl\)")
    with refusal as err, claim_key(acct, "k"):
        pass
    assert "\n" not in str(err.value) and acct.spent == PrivacyBudget(0.0)
    memory = Accountant.in_memory(total=PrivacyBudget(1.0))
    with claim_key(memory, "k"):  # a lock within the process is all an in-memory ledger needs
        pass


def test_a_claims_folder_that_cannot_be_made_is_one_line_and_nothing_charged(tmp_path):
    acct = _file_accountant(tmp_path)
    _claims(tmp_path).write_text("not a folder")
    with pytest.raises(LedgerIOError, match="needs the folder") as err, claim_key(acct, "k"):
        pass
    assert "\n" not in str(err.value) and acct.spent == PrivacyBudget(0.0)


def test_a_registry_entry_copied_by_fork_is_not_taken_for_a_holder(tmp_path):
    acct = Accountant.in_memory(total=PrivacyBudget(1.0))
    slot, _ = _claim._slot(acct.ledger, "k")
    _claim._HELD[slot] = _claim._Held(os.getpid() + 1, 0, 1, {})  # the parent's, say
    try:
        with claim_key(acct, "k"):
            assert _claim._HELD[slot].pid == os.getpid()
    finally:
        _claim._HELD.pop(slot, None)


def test_a_keyed_correlated_release_holds_the_claim(tmp_path):
    acct = _file_accountant(tmp_path)

    def release() -> object:
        return release_sequence(
            name="group",
            epsilon=0.5,
            sigma_of=float,
            encode=lambda s: np.asarray(s, dtype=np.int64),
            k=3,
            lipschitz=1.0,
            guarantee_of=lambda facts: Guarantee.pure(0.5, relation="replace-one"),
            facts_of=lambda T: {},
            sequence=[0, 1, 2, 1],
            query="histogram",
            random_state=None,
            accountant=acct,
            pufferfish=False,
            idempotency_key="c",
        )

    with _Holder(acct, "c"), pytest.raises(KeyInUseError):
        release()
    release()
    with pytest.raises(ParameterError, match="its release is recorded"):
        release()
    assert acct.spent == PrivacyBudget(0.5) and len(acct.events("release")) == 1


@pytest.mark.parametrize("command", ["publish", "train"])
def test_keyed_releases_of_a_parquet_dataset_hold_the_claim(tmp_path, command):
    pytest.importorskip("dask.dataframe")
    pytest.importorskip("pyarrow")
    from ppdp.datasets import load_adult
    from ppdp.learn.files import train_model_file
    from ppdp.publish.files import publish_table_file

    df, schema = load_adult()
    (tmp_path / "ds").mkdir()
    df.iloc[:300].to_parquet(tmp_path / "ds" / "part-0.parquet", index=False)
    schema.to_file(tmp_path / "adult.json")
    ledger = tmp_path / "budget.db"
    Accountant.open(ledger, dataset_id="adult", total=PrivacyBudget(5.0)).close()
    common = {"schema": tmp_path / "adult.json", "epsilon": 1.0, "scheduler": "sync"}

    def release(out: str) -> object:
        if command == "publish":
            run, what = publish_table_file, "laplace"
        else:
            run, what = train_model_file, "logreg"
        key = {"ledger": ledger, "idempotency_key": "k"}
        return run(what, tmp_path / "ds", output=tmp_path / out, **common, **key)

    with Accountant.open_existing(ledger) as acct:
        with _Holder(acct, "k"), pytest.raises(KeyInUseError):
            release("a" if command == "publish" else "a.json")
        assert acct.spent == PrivacyBudget(0.0)
    release("b" if command == "publish" else "b.json")
    with pytest.raises(ParameterError, match="its release is recorded"):
        release("c" if command == "publish" else "c.json")
    with Accountant.open_existing(ledger) as acct:
        assert acct.spent == PrivacyBudget(1.0) and len(acct.events("release")) == 1
    assert not (tmp_path / "a").exists() and not (tmp_path / "c").exists()
