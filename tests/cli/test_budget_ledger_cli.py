"""``ppdp budget show`` and ``ppdp ledger verify``, run in-process through ``main``."""

from __future__ import annotations

import json
import sqlite3

import pytest

from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget
from ppdp.cli import main
from ppdp.ledger import Signer, save_public_key


@pytest.fixture
def ledger(tmp_path):
    path = tmp_path / "adult.db"
    with Accountant.open(path, dataset_id="adult", total=PrivacyBudget(1.0, 1e-6)) as acct:
        acct.spend(PrivacyBudget(0.25), mechanism="LaplaceMechanism", sensitivity=1.0)
        acct.spend(
            PrivacyBudget(0.5, 1e-7), mechanism="GaussianMechanism", seeded=True, allow_seeded=True
        )
    return path


def test_budget_show(ledger, capsys):
    assert main(["budget", "show", str(ledger)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert "dataset:   adult" in out and "relation:  replace-one" in out
    assert "total:     ε=1, δ=1e-06" in out
    assert "spent:     ε=0.75, δ=1e-07" in out
    assert "remaining: ε=0.25, δ=9e-07" in out
    rows = [r for r in map(str.split, out.splitlines()) if len(r) == 6 and r[0].isdigit()]
    assert [(r[0], r[2], r[3], r[4], r[5]) for r in rows] == [
        ("1", "LaplaceMechanism", "0.25", "0", "no"),
        ("2", "GaussianMechanism", "0.5", "1e-07", "yes"),
    ]
    assert "sensitivity: 1" not in out


def test_budget_show_verbose_prints_what_each_spend_recorded(ledger, capsys):
    assert main(["budget", "show", str(ledger), "-v"]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if "LaplaceMechanism" in line)
    assert lines[at + 1].strip() == "sensitivity: 1"


def test_budget_show_json(ledger, capsys):
    assert main(["budget", "show", str(ledger), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["remaining"] == {"epsilon": 0.25, "delta": 9e-07}
    assert [s["seeded"] for s in data["spends"]] == [False, True]
    assert data["spends"][0]["details"] == {"sensitivity": 1.0}
    assert data["ledger"]["length"] == 3


def test_ledger_verify_ok(ledger, capsys, tmp_path):
    assert main(["ledger", "verify", str(ledger)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ledger OK: 3 entries, head ")
    key = Signer.from_file("custodian", ledger.with_name("adult.db.key")).public_key
    pub = save_public_key(key, tmp_path / "custodian.pub")
    assert (
        main(["ledger", "verify", str(ledger), "--trusted-key", f"custodian={pub}", "--json"]) == 0
    )
    assert json.loads(capsys.readouterr().out)["ok"] is True


def test_ledger_verify_tampered_exits_1_naming_the_index(ledger, capsys):
    conn = sqlite3.connect(ledger)
    conn.execute('UPDATE entries SET signature = zeroblob(64) WHERE "index" = 2')
    conn.commit()
    conn.close()
    assert main(["ledger", "verify", str(ledger)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "entry 2" in err and "signature" in err
    assert main(["budget", "show", str(ledger)]) == 1  # never reads an unverified ledger
    assert "entry 2" in capsys.readouterr().err


def test_missing_file_exits_2_with_one_line(tmp_path, capsys):
    for argv in (
        ["ledger", "verify", str(tmp_path / "nope.db")],
        ["budget", "show", str(tmp_path / "nope.db")],
        ["ledger", "verify", str(tmp_path), "--checkpoint", str(tmp_path / "x")],
    ):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err
        assert err.startswith("ppdp: error:")


def test_verify_with_a_foreign_checkpoint_exits_1(ledger, tmp_path, capsys):
    other = tmp_path / "other.db"
    Accountant.open(other, dataset_id="adult", total=PrivacyBudget(1.0, 1e-6)).close()
    assert (
        main(
            [
                "ledger",
                "verify",
                str(ledger),
                "--checkpoint",
                str(other.with_name("other.db.checkpoint")),
            ]
        )
        == 1
    )
    assert "entry 0" in capsys.readouterr().err


def test_bad_trusted_key_argument_exits_2(ledger, capsys):
    assert main(["ledger", "verify", str(ledger), "--trusted-key", "custodian"]) == 2
    assert "ID=FILE" in capsys.readouterr().err
