"""Third new-user trial of the CLI: abbreviated flags, a file that is not a ledger, the
checkpoint's mode, the EXP dry run, ``train --delta``, and what an add/remove ε is worth."""

from __future__ import annotations

import argparse
import json
import math
import os
import sqlite3
import stat

import numpy as np
import pandas as pd
import pytest

from ppdp.accounting import Accountant
from ppdp.accounting.receipt import guarantee_lines, replace_one_equivalent
from ppdp.budget import Guarantee, PrivacyBudget
from ppdp.cli import build_parser, main
from ppdp.data.schema import Schema
from ppdp.exceptions import LedgerIntegrityError, ParameterError
from ppdp.ledger import NotALedgerError, checkpoint_path_for, verify

SCHEMA = {
    "schema_version": 1,
    "columns": [
        {"name": "age", "type": "numeric", "lower": 18, "upper": 90, "integer": True},
        {"name": "job", "type": "categorical", "categories": ["a", "b", "c"]},
    ],
    "label": {"name": "y", "classes": ["no", "yes"]},
}


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "age": rng.integers(18, 91, 200),
            "job": rng.choice(["a", "b", "c"], 200),
            "y": rng.choice(["no", "yes"], 200),
        }
    )
    data, schema = tmp_path / "bank.csv", tmp_path / "schema.json"
    df.to_csv(data, index=False)
    schema.write_text(json.dumps(SCHEMA), encoding="utf-8")
    return data, schema


def one_error_line(capsys) -> str:
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


# -- 1. no abbreviated flags ----------------------------------------------------------------


def test_an_abbreviated_flag_is_refused(tmp_path, capsys):
    ledger = tmp_path / "L.db"
    argv = ["budget", "init", str(ledger), "--dataset-id", "d"]
    with pytest.raises(SystemExit) as info:
        main([*argv, "--eps", "1"])
    assert info.value.code == 2
    assert one_error_line(capsys).startswith("ppdp: error: ")
    assert not ledger.exists()
    with pytest.raises(SystemExit) as info:  # an optional flag's prefix is not taken either
        main([*argv, "--epsilon", "1", "--rel", "add/remove"])
    assert info.value.code == 2
    assert "unrecognized arguments: --rel add/remove" in one_error_line(capsys)
    assert not ledger.exists()
    assert main([*argv, "--epsilon", "1", "--relation", "add/remove"]) == 0  # full names work


def test_no_parser_of_the_cli_takes_abbreviations():
    def walk(parser):
        yield parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from walk(sub)

    parsers = list(walk(build_parser()))
    assert len(parsers) > 20  # the walk reached the (sub-)sub-commands
    assert all(p.allow_abbrev is False for p in parsers)


# -- 2. a file that is not a ledger ---------------------------------------------------------


def _other_database(path):
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x)")
    return path


@pytest.mark.parametrize("kind", ["csv", "empty", "database"])
@pytest.mark.parametrize("command", [["budget", "show"], ["ledger", "verify"]])
def test_a_file_that_is_not_a_ledger_is_a_usage_error(tmp_path, capsys, kind, command):
    path = tmp_path / "bank.csv"
    if kind == "csv":
        path.write_text("age,job\n30,a\n", encoding="utf-8")
    elif kind == "empty":
        path.write_bytes(b"")
    else:
        _other_database(path)
    before = path.read_bytes()
    assert main([*command, str(path)]) == 2
    line = one_error_line(capsys)
    assert line.startswith(f"ppdp: error: {path} is not a ppdp ledger (")
    assert path.read_bytes() == before  # someone else's file is not touched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bank.csv"]


def test_a_damaged_ledger_is_still_an_integrity_failure(tmp_path, capsys):
    path = tmp_path / "L.db"
    Accountant.open(path, dataset_id="d", total=PrivacyBudget(1.0)).close()
    path.write_bytes(b"garbage" * 100)  # its checkpoint is still beside it: tampering
    assert main(["budget", "show", str(path)]) == 1
    assert one_error_line(capsys).startswith("ppdp: ledger integrity failure: ")


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


# -- 3. the checkpoint's mode ---------------------------------------------------------------


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


# -- 4. the EXP dry run ---------------------------------------------------------------------


def test_the_exponential_dry_run_describes_the_exponential_mechanism(table, tmp_path, capsys):
    data, schema = table
    argv = ["publish", "exponential", str(data), "-o", str(tmp_path / "out.csv")]
    assert main([*argv, "--schema", str(schema), "--epsilon", "1", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "Laplace noise" not in out
    # Δu = p1 + 2·p2 = 1 + 2·2 = 5 (label included); the sampler's Laplace is at ε/2.
    line = next(x for x in out.splitlines() if "exponential mechanism" in x)
    assert "sensitivity 5" in line and "truncated to [0, 1]" in line
    b = float(line.split("scale b = ")[1].split()[0])
    assert b == pytest.approx(10.0, rel=0.01)
    worst = float(line.split("at most ")[1].split(",")[0])
    assert worst == pytest.approx(b - 1 / math.expm1(1 / b), rel=1e-3)
    # The stated worst case is an exponential of mean b cut at 1 (a value at a bound).
    rng = np.random.default_rng(1)
    t = rng.exponential(b, 400_000)
    assert t[t <= 1].mean() == pytest.approx(worst, abs=0.005)
    assert not (tmp_path / "out.csv").exists()


def test_the_laplace_dry_run_still_says_laplace(table, tmp_path, capsys):
    data, schema = table
    argv = ["publish", "laplace", str(data), "-o", str(tmp_path / "out.csv")]
    assert main([*argv, "--schema", str(schema), "--epsilon", "1", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "Laplace noise, scale b = 5 per released value" in out
    assert "exponential mechanism" not in out


# -- 5. train has no --delta -----------------------------------------------------------------------


def test_train_has_no_delta_flag(table, tmp_path, capsys):
    # No learner takes δ (every guarantee is ε-DP), so ``ppdp train`` has no --delta: it
    # is refused by argparse in one line pointing at the help, nothing written.
    data, schema = table
    argv = ["train", "logreg", str(data), "--schema", str(schema), "--epsilon", "1"]
    with pytest.raises(SystemExit) as info:
        main([*argv, "--delta", "1e-5", "-o", str(tmp_path / "m.json")])
    assert info.value.code == 2
    line = one_error_line(capsys)
    assert "unrecognized arguments: --delta 1e-5" in line and "ppdp train logreg --help" in line
    assert not (tmp_path / "m.json").exists()
    from ppdp.registry import LEARNERS

    for name in LEARNERS.names():
        assert "delta" not in LEARNERS.load(name)._get_param_names()


def test_train_without_a_ledger_warns_once_in_cli_words(table, tmp_path, capsys):
    # The library's UnaccountedFitWarning gives Python advice (fit(..., accountant=acct));
    # the CLI says the same in its own words once.
    data, schema = table
    argv = ["train", "logreg", str(data), "--schema", str(schema), "--epsilon", "1"]
    assert main([*argv, "-o", str(tmp_path / "m.json")]) == 0
    err = capsys.readouterr().err
    assert "warning: no --ledger given; the spend of ε=1 is not recorded anywhere" in err
    assert "UnaccountedFitWarning" not in err and "accountant=acct" not in err


def test_train_with_a_bad_parameter_gives_only_the_error(table, tmp_path, capsys):
    """The no-ledger warning follows the parameter checks: a refused --gamma spent nothing,
    and the warning about an unrecorded spend came first and read as if it had."""
    data, schema = table
    argv = ["train", "rbf-svm", str(data), "--schema", str(schema), "--epsilon", "1"]
    assert main([*argv, "--gamma", "-1", "-o", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == ["ppdp: error: --gamma (-1.0) must be a finite number > 0"]


# -- 6. what an add/remove ε is worth -------------------------------------------------------


def test_replace_one_equivalent_is_group_privacy_of_two():
    g = Guarantee.approx(1.0, 1e-9, relation="add/remove", mechanism="M")
    text = replace_one_equivalent(g)
    assert text is not None and text.startswith("≈ (2ε, (1+e^ε)δ) = (2, ")
    delta = float(text.split("(2, ")[1].split(")")[0])
    assert delta == pytest.approx((1 + math.e) * 1e-9, rel=1e-3)
    assert replace_one_equivalent(Guarantee.pure(0.75, relation="add/remove")) == (
        "≈ 2ε = 1.5 under replace-one"
    )
    assert "4ρ = 0.2 " in replace_one_equivalent(Guarantee.zcdp(0.05, relation="add/remove"))
    for same in (
        Guarantee.approx(1.0, 1e-9, relation="replace-one"),
        Guarantee.pure(1.0, relation="replace-one"),
        Guarantee.none("raw rows", mechanism="M"),
    ):
        assert replace_one_equivalent(same) is None


def test_the_guarantee_line_states_the_replace_one_equivalent():
    add_remove = Guarantee.approx(1.0, 1e-9, relation="add/remove", mechanism="M")
    first = guarantee_lines(add_remove)[0]
    assert first.startswith("guarantee: (ε, δ)-DP, ε = 1, δ = 1e-09, add/remove — M; ≈ (2ε")
    assert first.endswith("under replace-one")
    replace = Guarantee.approx(1.0, 1e-9, relation="replace-one", mechanism="M")
    assert guarantee_lines(replace)[0] == f"guarantee: {replace.summary()}"


def test_the_report_compares_an_add_remove_release_at_its_replace_one_budget():
    pytest.importorskip("sklearn")
    from ppdp.evaluate import quality_report

    schema = Schema.from_dict(SCHEMA)
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "age": rng.integers(18, 91, 300),
            "job": rng.choice(["a", "b", "c"], 300),
            "y": rng.choice(["no", "yes"], 300),
        }
    )
    lines = {}
    for relation in ("add/remove", "replace-one"):
        g = Guarantee.approx(1.0, 1e-9, relation=relation, mechanism="M")
        report = quality_report(df, df.sample(frac=1.0, random_state=1), schema, guarantee=g)
        lines[relation] = report.summary()
        data = report.to_dict()
        assert data["guarantee_replace_one"] == replace_one_equivalent(g)
    assert lines["replace-one"].startswith("verdict: ")
    assert "replace-one" not in lines["replace-one"]
    assert lines["add/remove"].startswith(lines["replace-one"])
    assert "the release is add/remove, ≈ (2ε, (1+e^ε)δ) = (2, " in lines["add/remove"]


def test_hybrid_parameters_are_checked_before_the_public_sample_is_read(table, tmp_path, capsys):
    """A refused --gamma used to be said only after the whole public sample was read (17 s
    for 1,000 rows in a trial); now the public file is not even opened: here it does not
    exist, and the parameter error is what the user hears."""
    data, schema = table
    argv = ["train", "hybrid-svm", str(data), "--schema", str(schema), "--epsilon", "1"]
    argv += ["--public", str(tmp_path / "nowhere.csv"), "--gamma", "-1"]
    assert main([*argv, "-o", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == ["ppdp: error: --gamma (-1.0) must be a finite number > 0"]
