"""Ledger anchoring (issue 12, item 4): the genesis checkpoint exists before the ledger file,
the one-entry waiver is gone, and a signed anchor kept elsewhere catches the two reset
attacks that a checkpoint beside the ledger cannot (entries after genesis deleted with the
checkpoint; an old copy restored with its old checkpoint), a replaced ledger, and a fresh
``budget init`` for a dataset whose ledger is anchored. Forging an anchor needs the key."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading

import pytest

from conftest import execute, vacuum_copy
from ppdp import PrivacyBudget
from ppdp.accounting import Accountant, budget_report
from ppdp.cli import main
from ppdp.exceptions import LedgerIntegrityError, ParameterError
from ppdp.ledger import (
    ANCHOR_DIR_ENV,
    Anchor,
    AnchorRegistry,
    Checkpoint,
    Ledger,
    Signer,
    checkpoint_path_for,
    verify,
)
from ppdp.ledger import _ledger as ledger_module


@pytest.fixture(autouse=True)
def registry(tmp_path, monkeypatch):
    """Every test gets its own anchor registry (never the user's)."""
    folder = tmp_path / "anchors"
    monkeypatch.setenv(ANCHOR_DIR_ENV, str(folder))
    return AnchorRegistry(folder)


def _budget(tmp_path, name="budget.db", dataset="adult", spends=3):
    path = tmp_path / name
    with Accountant.open(path, dataset_id=dataset, total=PrivacyBudget(1.0)) as acct:
        for i in range(spends):
            acct.spend(PrivacyBudget(0.1), mechanism=f"m{i}")
    return path


def _anchor(path):
    with Ledger.open(path, signer=_key(path)) as led:
        return led.anchor()


def _key(path):
    from ppdp.ledger import load_private_key

    return load_private_key(path.with_name(path.name + ".key"))


def _remove(path):
    for suffix in ("", "-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


# --- the anchor itself ---------------------------------------------------------------------


def test_anchor_is_one_short_line_that_round_trips(tmp_path):
    path = _budget(tmp_path, dataset="census: 2021/ü")  # ':' and non-ASCII are encoded
    a = _anchor(path)
    text = str(a)
    assert "\n" not in text and len(text) < 260
    assert text.startswith("ppdp-anchor-v1:census%3A%202021%2F%C3%BC:")
    assert Anchor.from_text(text) == a and Anchor.from_text(f"  {text}\n") == a
    assert (a.dataset_id, a.length) == ("census: 2021/ü", 4)
    assert a.head_hash.hex() == verify(path).head_hash
    assert a.head_hash.hex() in text
    kept = tmp_path / "kept.anchor"
    kept.write_text(f"# kept off the machine\n\n{text}\n")
    assert Anchor.load(kept) == (a, f"anchor {kept}")
    report = verify(path, anchor=kept)
    assert (f"anchor {kept}", 4) in report.checkpoints


@pytest.mark.parametrize(
    "text",
    [
        "ppdp-anchor-v1:adult",
        "ppdp-anchor-v2:adult:" + "0" * 32 + ":1:" + "0" * 64 + ":custodian:" + "A" * 86,
        "ppdp-anchor-v1:adult:" + "0" * 31 + ":1:" + "0" * 64 + ":custodian:" + "A" * 86,
        "ppdp-anchor-v1:adult:" + "0" * 32 + ":0:" + "0" * 64 + ":custodian:" + "A" * 86,
        "ppdp-anchor-v1:adult:" + "0" * 32 + ":1:" + "0" * 64 + ":custodian:" + "A" * 10,
        "ppdp-anchor-v1:" + "x" * 10_000,
    ],
)
def test_malformed_anchor_text_is_a_usage_error_naming_the_parameter(text):
    with pytest.raises(ParameterError, match=r"^anchor \(") as info:
        Anchor.from_text(text)
    assert len(str(info.value)) < 300 and "\n" not in str(info.value)


# --- the genesis checkpoint and the waiver ---------------------------------------------------


def test_the_genesis_checkpoint_exists_before_the_ledger_file(tmp_path, monkeypatch):
    path = tmp_path / "l.db"
    seen = []
    real_link = os.link

    def spy(src, dst, *a, **kw):
        if os.fspath(dst) == os.fspath(path):
            seen.append(Checkpoint.load(checkpoint_path_for(path)).length)
        return real_link(src, dst, *a, **kw)

    monkeypatch.setattr(os, "link", spy)
    Ledger.create(path, signer=Signer.generate("c"), dataset_id="a").close()
    assert seen == [1]  # the checkpoint was in place when the file was linked
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(("-wal", "-shm"))) == [
        "l.db",
        "l.db.checkpoint",
    ]


@pytest.mark.skipif(sys.platform == "win32", reason="fork and SIGKILL")
def test_a_creator_killed_between_checkpoint_and_link_is_finished_not_refused(tmp_path):
    path = tmp_path / "budget.db"
    pid = os.fork()
    if pid == 0:  # the child dies at the moment it links the ledger file into place
        real = ledger_module._link_exclusively

        def die(src, dst):
            if dst == path:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(src, dst)

        ledger_module._link_exclusively = die
        try:
            Accountant.open(path, dataset_id="crash", total=PrivacyBudget(1.0))
        finally:
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status)
    assert not path.exists() and checkpoint_path_for(path).exists()
    assert list(tmp_path.glob(".budget.db.*.creating"))  # the unfinished file
    with Accountant.open(path, dataset_id="crash", total=PrivacyBudget(1.0)) as acct:
        acct.spend(PrivacyBudget(0.5), mechanism="after the crash")
    assert verify(path).length == 2
    assert not list(tmp_path.glob(".*.creating"))


def test_a_checkpoint_without_ledger_or_unfinished_file_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(ledger_module, "_FIRST_CHECKPOINT_GRACE", 0.05)
    path = _budget(tmp_path, spends=0)
    _remove(path)
    with pytest.raises(LedgerIntegrityError, match="deleted or moved"):
        Accountant.open(path, dataset_id="adult", total=PrivacyBudget(1.0))


def test_concurrent_creators_share_one_ledger(tmp_path):
    path = tmp_path / "budget.db"
    ids, errors = [], []
    barrier = threading.Barrier(6)

    def create():
        try:
            barrier.wait()
            with Accountant.open(path, dataset_id="race", total=PrivacyBudget(1.0)) as acct:
                ids.append(acct.ledger.ledger_id)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=create) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(set(ids)) == 1 and len(ids) == 6
    assert verify(path).length == 1


# --- the two reset attacks of the issue ------------------------------------------------------


def test_deleting_every_entry_after_genesis_and_the_checkpoint(tmp_path, registry):
    path = _budget(tmp_path)
    kept = str(_anchor(path))  # 4 entries, kept elsewhere
    execute(path, ('DELETE FROM entries WHERE "index" > 0', ()))
    checkpoint_path_for(path).unlink()
    # without any anchor: the missing checkpoint is refused now (the waiver is gone)
    with pytest.raises(LedgerIntegrityError, match="missing"):
        verify(path)
    with pytest.raises(LedgerIntegrityError, match="missing"):
        Accountant.open(path, dataset_id="adult", total=PrivacyBudget(1.0))
    # with the anchor: the first missing entry is named
    for check in (
        lambda: verify(path, anchor=kept),
        lambda: budget_report(path, anchor=kept),
        lambda: Accountant.open(path, dataset_id="adult", total=PrivacyBudget(1.0), anchor=kept),
    ):
        with pytest.raises(LedgerIntegrityError, match="truncated") as info:
            check()
        assert info.value.index == 1
    registry.record(Anchor.from_text(kept), ledger_path=path)  # the anchor on record too
    with pytest.raises(LedgerIntegrityError, match="anchor on record") as info:
        Accountant.open_existing(path)
    assert info.value.index == 1


def test_restoring_an_old_copy_with_its_old_checkpoint(tmp_path, registry):
    path = _budget(tmp_path, spends=2)  # 3 entries
    old_dir = tmp_path / "backup"
    old_dir.mkdir()
    vacuum_copy(path, old_dir / "budget.db")
    shutil.copyfile(checkpoint_path_for(path), old_dir / "budget.db.checkpoint")
    with Accountant.open(path, dataset_id="adult", total=PrivacyBudget(1.0)) as acct:
        for _ in range(5):
            acct.spend(PrivacyBudget(0.1), mechanism="later")  # 8 entries, ε 0.7 spent
    kept = _anchor(path)
    _remove(path)
    shutil.copyfile(old_dir / "budget.db", path)
    shutil.copyfile(old_dir / "budget.db.checkpoint", checkpoint_path_for(path))
    assert budget_report(path).spent == PrivacyBudget(0.2)  # the rollback verifies alone
    with pytest.raises(LedgerIntegrityError, match="truncated") as info:
        verify(path, anchor=kept)
    assert info.value.index == 3 and "entries 3..7 are missing" in str(info.value)
    with pytest.raises(LedgerIntegrityError) as info:
        Accountant.open(path, dataset_id="adult", total=PrivacyBudget(1.0), anchor=str(kept))
    assert info.value.index == 3
    # and nothing was charged or written by the refused open
    assert verify(path).length == 3


def test_the_first_attack_with_a_restored_genesis_checkpoint(tmp_path):
    """Entries after genesis deleted, and the genesis-time checkpoint put back beside it."""
    path = _budget(tmp_path, spends=0)
    genesis_cp = checkpoint_path_for(path).read_bytes()  # the attacker kept this old copy
    with Accountant.open(path, dataset_id="adult", total=PrivacyBudget(1.0)) as acct:
        acct.spend(PrivacyBudget(1.0), mechanism="all of it")
    kept = _anchor(path)
    execute(path, ('DELETE FROM entries WHERE "index" > 0', ()))
    checkpoint_path_for(path).write_bytes(genesis_cp)
    assert budget_report(path).spent.is_zero  # looks unspent without the anchor
    with pytest.raises(LedgerIntegrityError, match="truncated") as info:
        Accountant.open(path, dataset_id="adult", total=PrivacyBudget(1.0), anchor=kept)
    assert info.value.index == 1


def test_a_replaced_ledger_is_refused(tmp_path):
    path = _budget(tmp_path)
    kept = _anchor(path)
    key = _key(path)
    _remove(path)
    checkpoint_path_for(path).unlink()
    # a fresh ledger for the same dataset, even signed by the custodian's own key
    Ledger.create(path, signer=Signer("custodian", key), dataset_id="adult").close()
    with pytest.raises(LedgerIntegrityError, match="replaced") as info:
        verify(path, anchor=kept)
    assert info.value.index == 0


# --- budget init with an anchor on record ----------------------------------------------------


def test_budget_init_is_refused_when_the_dataset_has_an_anchor_on_record(
    tmp_path, registry, capsys
):
    path = tmp_path / "budget.db"
    assert main(["budget", "init", str(path), "--dataset-id", "adult", "--epsilon", "1"]) == 0
    capsys.readouterr()
    assert main(["ledger", "anchor", str(path)]) == 0
    line = capsys.readouterr().out.strip()
    assert Anchor.from_text(line).length == 1
    assert registry.get("adult").anchor == Anchor.from_text(line)
    # a second ledger for the same dataset elsewhere: a usage error (use the first one)
    other = tmp_path / "other.db"
    assert main(["budget", "init", str(other), "--dataset-id", "adult", "--epsilon", "1"]) == 2
    err = capsys.readouterr().err
    assert "already has a budget ledger" in err and not other.exists()
    assert not other.with_name("other.db.key").exists()
    # the anchored ledger deleted with its checkpoint, then init again: an integrity failure
    _remove(path)
    checkpoint_path_for(path).unlink()
    assert main(["budget", "init", str(path), "--dataset-id", "adult", "--epsilon", "1"]) == 1
    assert "reset the budget" in capsys.readouterr().err and not path.exists()
    # another dataset id is fine
    assert main(["budget", "init", str(other), "--dataset-id", "census", "--epsilon", "1"]) == 0


def test_budget_init_with_an_anchor_argument_is_refused(tmp_path, capsys):
    path = _budget(tmp_path)
    kept = str(_anchor(path))
    fresh = tmp_path / "fresh.db"
    argv = ["budget", "init", str(fresh), "--dataset-id", "adult", "--epsilon", "1"]
    assert main([*argv, "--anchor", kept]) == 1
    assert "does not exist, but the given anchor records" in capsys.readouterr().err
    assert not fresh.exists() and not fresh.with_name("fresh.db.key").exists()
    with pytest.raises(ParameterError, match="not of dataset_id"):
        Accountant.open(fresh, dataset_id="other", total=PrivacyBudget(1.0), anchor=kept)


# --- forgery ----------------------------------------------------------------------------------


def test_an_anchor_forged_without_the_key_is_refused(tmp_path):
    path = _budget(tmp_path)
    real = _anchor(path)
    execute(path, ('DELETE FROM entries WHERE "index" > 1', ()))
    checkpoint_path_for(path).unlink()
    state = _state(path)
    # signed with another key under the custodian's id, for the truncated state
    forged = Anchor.sign(state, Signer.generate("custodian"))
    # the real anchor's fields edited (shorter) but its signature kept
    edited = Anchor(real.dataset_id, real.ledger_id, 2, state.head, real.signer, real.signature)
    for bad in (forged, edited, str(edited)):
        with pytest.raises(LedgerIntegrityError, match="signature does not verify") as info:
            verify(path, anchor=bad)
        assert info.value.index is None


def test_a_checkpoint_signature_is_never_an_anchor_signature(tmp_path):
    path = _budget(tmp_path)
    with Ledger.open(path, signer=_key(path)) as led:
        cp = led.checkpoint()
        a = led.anchor()
        entry_sig = led.entries()[-1].signature
    for sig in (cp.signature, entry_sig):
        fake = Anchor(a.dataset_id, a.ledger_id, a.length, a.head_hash, a.signer, sig)
        with pytest.raises(LedgerIntegrityError, match="signature"):
            verify(path, anchor=fake)
    assert verify(path, anchor=a).length == a.length


def _state(path):
    from ppdp.ledger import _store

    conn = _store.connect(path, busy_timeout=1.0, read_only=True)
    try:
        state, _ = _store.replay(conn, label=path)
    finally:
        conn.close()
    return state


# --- the registry and the command line -------------------------------------------------------


def test_the_registry_never_moves_backwards_or_to_another_ledger(tmp_path, registry):
    path = _budget(tmp_path, spends=1)
    early = _anchor(path)
    with Accountant.open(path, dataset_id="adult", total=PrivacyBudget(1.0)) as acct:
        acct.spend(PrivacyBudget(0.1), mechanism="x")
    late = _anchor(path)
    other = _anchor(_budget(tmp_path / "o", spends=0))  # another ledger, same dataset id
    registry.record(late, ledger_path=path)
    with pytest.raises(LedgerIntegrityError, match="backwards"):
        registry.record(early)
    with pytest.raises(LedgerIntegrityError, match="another ledger"):
        registry.record(other)
    assert registry.get("adult").anchor == late
    assert registry.get("nothing") is None


def test_ledger_anchor_and_verify_on_the_command_line(tmp_path, registry, capsys):
    path = _budget(tmp_path)
    assert main(["ledger", "anchor", str(path), "--no-record"]) == 0
    out = capsys.readouterr()
    assert out.out.count("\n") == 1 and "not recorded" in out.err
    assert registry.get("adult") is None
    kept = tmp_path / "kept.anchor"
    kept.write_text(out.out)
    assert main(["ledger", "verify", str(path), "--anchor", str(kept)]) == 0
    assert f"anchor {kept}: length 4, extended" in capsys.readouterr().out
    execute(path, ('DELETE FROM entries WHERE "index" > 1', ()))
    checkpoint_path_for(path).unlink()
    for argv in (
        ["ledger", "verify", str(path), "--anchor", str(kept)],
        ["budget", "show", str(path), "--anchor", out.out.strip()],
        ["ledger", "anchor", str(path), "--anchor", str(kept)],
    ):
        assert main(argv) == 1
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "entry 2: ledger truncated" in err
        assert "entries 2..3 are missing" in err
    assert main(["ledger", "verify", str(path), "--anchor", "ppdp-anchor-v1:junk"]) == 2
    assert "must be the line 'ppdp ledger anchor' prints" in capsys.readouterr().err
    assert main(["ledger", "verify", str(path), "--anchor", str(tmp_path / "none")]) == 2
    assert main(["ledger", "anchor", str(path), "--key", str(tmp_path / "none.key")]) == 2
    assert "--key" in capsys.readouterr().err
