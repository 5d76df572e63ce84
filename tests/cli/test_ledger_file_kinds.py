"""Files given where a ledger is expected: someone else's file (CSV, empty, another SQLite
database) is a usage error and is not touched, a damaged ledger an integrity failure; the
ledger's checkpoint is a plain data file."""

from __future__ import annotations

import os
import sqlite3
import stat

import pytest

from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget
from ppdp.cli import main
from ppdp.exceptions import LedgerIntegrityError, ParameterError
from ppdp.ledger import NotALedgerError, checkpoint_path_for, verify


def _other_database(path):
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x)")
    return path


@pytest.mark.parametrize("kind", ["csv", "empty", "database"])
@pytest.mark.parametrize("command", [["budget", "show"], ["ledger", "verify"]])
def test_a_file_that_is_not_a_ledger_is_a_usage_error(tmp_path, one_error_line, kind, command):
    path = tmp_path / "bank.csv"
    if kind == "csv":
        path.write_text("age,job\n30,a\n", encoding="utf-8")
    elif kind == "empty":
        path.write_bytes(b"")
    else:
        _other_database(path)
    before = path.read_bytes()
    assert main([*command, str(path)]) == 2
    line = one_error_line()
    assert line.startswith(f"ppdp: error: {path} is not a ppdp ledger (")
    assert path.read_bytes() == before  # someone else's file is not touched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bank.csv"]


def test_a_damaged_ledger_is_still_an_integrity_failure(tmp_path, one_error_line):
    path = tmp_path / "L.db"
    Accountant.open(path, dataset_id="d", total=PrivacyBudget(1.0)).close()
    path.write_bytes(b"garbage" * 100)  # its checkpoint is still beside it: tampering
    assert main(["budget", "show", str(path)]) == 1
    assert one_error_line().startswith("ppdp: ledger integrity failure: ")


def test_not_a_ledger_error_is_both_integrity_and_parameter_error(tmp_path):
    path = tmp_path / "x.db"
    path.write_bytes(b"not a database at all")
    with pytest.raises(NotALedgerError) as info:
        verify(path)
    assert isinstance(info.value, LedgerIntegrityError) and info.value.index is None
    assert isinstance(info.value, ParameterError)
    # With a checkpoint given, the caller says it is a ledger: verification judges it.
    checkpoint = tmp_path / "kept.checkpoint"
    checkpoint.write_bytes(b"{}")
    with pytest.raises(LedgerIntegrityError) as info:
        verify(path, checkpoint=checkpoint)
    assert not isinstance(info.value, NotALedgerError)


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_the_checkpoint_is_not_executable(tmp_path):
    old = os.umask(0o022)
    try:
        path = tmp_path / "L.db"
        assert main(["budget", "init", str(path), "--dataset-id", "d", "--epsilon", "1"]) == 0
        mode = stat.S_IMODE(checkpoint_path_for(path).stat().st_mode)
        assert mode == 0o644
        # Rewritten after a spend: still a plain data file.
        with Accountant.open(path, dataset_id="d", total=PrivacyBudget(1.0)) as acct:
            acct.spend(PrivacyBudget(0.1), mechanism="m")
        assert stat.S_IMODE(checkpoint_path_for(path).stat().st_mode) == 0o644
    finally:
        os.umask(old)
