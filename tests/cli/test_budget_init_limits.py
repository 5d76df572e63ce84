"""``ppdp budget init`` holds a total to the limit every release has, a
wrong flag points at the sub-command's help, and budgets print for people."""

from __future__ import annotations

import re

import pytest

from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget, budget_number
from ppdp.cli import main


def _error(capsys):
    err = capsys.readouterr().err
    assert "Traceback" not in err
    (line,) = err.strip().splitlines()
    return line


def test_a_total_above_10_needs_allow_large_epsilon(tmp_path, capsys):
    ledger = tmp_path / "b.db"
    argv = ["budget", "init", str(ledger), "--dataset-id", "d", "--epsilon", "20"]
    assert main(argv) == 2
    err = _error(capsys)
    assert "epsilon (20)" in err and "at most 10" in err and "add --allow-large-epsilon" in err
    assert not ledger.exists()
    assert main([*argv, "--allow-large-epsilon"]) == 0
    assert "total ε=20" in capsys.readouterr().out
    assert (
        main(["budget", "init", str(tmp_path / "c.db"), "--dataset-id", "d", "--epsilon", "10"])
        == 0
    )


def test_an_unknown_flag_points_at_the_sub_commands_help(tmp_path, capsys):
    argv = ["budget", "init", str(tmp_path / "b.db"), "--dataset-id", "d", "--epsilon", "1"]
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--bogus"])
    assert exc.value.code == 2
    err = _error(capsys)
    assert err == "ppdp: error: unrecognized arguments: --bogus (see 'ppdp budget init --help')"
    with pytest.raises(SystemExit):
        main(["budget", "show", str(tmp_path / "b.db"), "--nope"])
    assert "(see 'ppdp budget show --help')" in _error(capsys)


@pytest.mark.parametrize("composition", ["pld", "rdp"])
def test_tight_composition_without_delta_is_said_in_flags(tmp_path, capsys, composition):
    """The library's refusal (Accountant.open), in the CLI's words; nothing is written."""
    argv = ["budget", "init", str(tmp_path / "b.db"), "--dataset-id", "d", "--epsilon", "2"]
    assert main([*argv, "--composition", composition]) == 2
    err = _error(capsys)
    assert err.startswith("ppdp: error: total (ε=2) has no δ")
    assert f"--composition {composition} the total" in err and "give a delta > 0 (--delta)" in err
    assert "PrivacyBudget" not in err
    assert list(tmp_path.iterdir()) == []


def test_budget_show_prints_ten_significant_digits(tmp_path, capsys):
    path = tmp_path / "b.db"
    with Accountant.open(path, dataset_id="d", total=PrivacyBudget(1.0, 1e-6)) as acct:
        acct.spend(PrivacyBudget(1 / 3, 1e-9), mechanism="LaplaceMechanism", sensitivity=1.0)
    assert main(["budget", "show", str(path)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^remaining: ε=0\.6666666667, δ=9\.99e-07$", out, re.M), out
    assert re.search(r"^spent: +ε=0\.3333333333, δ=1e-09$", out, re.M), out
    assert "0.33333333333" not in out and "0.66666666666" not in out
    assert budget_number(16.999999998994998) == "17"
    assert str(PrivacyBudget(16.999999998994998, 1e-9)) == "ε=17, δ=1e-09"
