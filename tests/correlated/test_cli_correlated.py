"""``ppdp correlated release``: output, ledger charge, bad input writes and spends nothing."""

from __future__ import annotations

import json

import pytest

from ppdp import PrivacyBudget
from ppdp.accounting import Accountant
from ppdp.cli import main

THETA = {
    "states": ["active", "still"],
    "transitions": [[[0.9, 0.1], [0.2, 0.8]], [[0.8, 0.2], [0.3, 0.7]]],
    "initials": None,
}


@pytest.fixture
def files(tmp_path):
    th = tmp_path / "theta.json"
    th.write_text(json.dumps(THETA))
    tr = tmp_path / "trace.csv"
    tr.write_text("state\n" + "\n".join(["active"] * 40 + ["still"] * 60) + "\n")
    return th, tr


def _ledger(tmp_path, total=2.0):
    path = tmp_path / "budget.db"
    Accountant.open(path, dataset_id="trace", total=PrivacyBudget(total)).close()
    return path


def test_release_writes_json_and_charges(tmp_path, files, capsys) -> None:
    th, tr = files
    led = _ledger(tmp_path)
    out = tmp_path / "out.json"
    rc = main(
        [
            "correlated",
            "release",
            "--theta",
            str(th),
            "--epsilon",
            "1",
            "--query",
            "histogram",
            str(tr),
            "-o",
            str(out),
            "--ledger",
            str(led),
            "--seed",
            "3",
            "--allow-seeded",
        ]
    )
    assert rc == 0
    doc = json.loads(out.read_text())
    assert set(doc["histogram"]) == {"active", "still"}
    assert doc["guarantee"]["kind"] == "Pufferfish" and doc["seeded"] is True
    assert doc["details"]["T"] == 100 and doc["details"]["method"] == "exact"
    assert any("true data-generating model is in Θ" in a for a in doc["guarantee"]["assumptions"])
    with Accountant.open_existing(led) as acct:
        assert acct.spent == PrivacyBudget(1.0)
    assert "Pufferfish" in capsys.readouterr().out


def test_approx_method(tmp_path, files) -> None:
    th, tr = files
    out = tmp_path / "out.json"
    assert (
        main(
            [
                "correlated",
                "release",
                "--theta",
                str(th),
                "--epsilon",
                "2",
                "--method",
                "approx",
                str(tr),
                "-o",
                str(out),
                "--seed",
                "1",
            ]
        )
        == 0
    )
    assert json.loads(out.read_text())["details"]["method"] == "approx"


@pytest.mark.parametrize(
    ("trace", "theta", "eps", "match"),
    [
        ("state\nactive\nrunning\n", THETA, "1", "1 of 2 entries outside"),
        (
            "state\nactive\n",
            {**THETA, "transitions": [[[0.9, 0.2], [0.2, 0.8]]]},
            "1",
            "row 0 sums",
        ),
        ("state\nactive\n", THETA, "0", "epsilon"),
        ("a,b\nactive,still\n", THETA, "1", "exactly one column"),
    ],
)
def test_bad_input_one_line_nothing_written_nothing_spent(
    tmp_path, capsys, trace, theta, eps, match
) -> None:
    th = tmp_path / "theta.json"
    th.write_text(json.dumps(theta))
    tr = tmp_path / "trace.csv"
    tr.write_text(trace)
    led = _ledger(tmp_path)
    out = tmp_path / "out.json"
    rc = main(
        [
            "correlated",
            "release",
            "--theta",
            str(th),
            "--epsilon",
            eps,
            str(tr),
            "-o",
            str(out),
            "--ledger",
            str(led),
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert match in err[-1] and err[-1].startswith("ppdp: error:")
    assert not out.exists()
    with Accountant.open_existing(led) as acct:
        assert acct.spent == PrivacyBudget(0.0)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("state\nactive\n\nstill\n", "has 1 empty entry (line 3): a trace needs the state"),
        ("state\nactive\n  \nstill\n\nactive\n", "has 2 empty entries (lines 3, 5)"),
        ("day;state\n1;active\n2;still\n", "header 'day;state' looks like several columns"),
    ],
)
def test_a_gap_in_the_trace_is_refused_not_skipped(tmp_path, files, capsys, text, said) -> None:
    # New-user trial: blank lines were dropped, joining steps that are not adjacent and
    # shortening T (which sets the noise); the release said nothing.
    th, _ = files
    tr = tmp_path / "gaps.csv"
    tr.write_text(text)
    led = _ledger(tmp_path)
    argv = ["correlated", "release", "--theta", str(th), "--epsilon", "1", str(tr)]
    assert main([*argv, "-o", str(tmp_path / "o.json"), "--ledger", str(led)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and said in err[0], err
    assert not (tmp_path / "o.json").exists()
    assert Accountant.open_existing(led).spent == PrivacyBudget(0.0)


def test_missing_files_are_named_and_no_ledger_warning_comes_first(tmp_path, files, capsys):
    th, tr = files
    out = str(tmp_path / "o.json")
    base = ["correlated", "release", "--epsilon", "1", "-o", out]
    assert main([*base, "--theta", str(tmp_path / "nope.json"), str(tr)]) == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("theta file ('" + str(tmp_path / "nope.json") + "') does not exist")
    )
    assert main([*base, "--theta", str(th), str(tmp_path / "nope.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"ppdp: error: trace file ('{tmp_path / 'nope.csv'}') does not exist"]
    assert main([*base, "--theta", str(th), str(tr)]) == 0  # the warning follows the release
    assert "this spend was not recorded" in capsys.readouterr().err


def test_theta_errors_read_plainly(tmp_path, capsys) -> None:
    # New-user trial: "sums to np.float64(1.0999999999999999)"; unknown keys without the
    # allowed ones.
    tr = tmp_path / "t.csv"
    tr.write_text("state\nactive\nstill\n")
    bad = {**THETA, "transitions": [[[0.9, 0.2], [0.2, 0.8]]]}
    typo = {**THETA, "transitons": THETA["transitions"]}
    for theta in (bad, typo):
        (tmp_path / "th.json").write_text(json.dumps(theta))
        argv = ["correlated", "release", "--theta", str(tmp_path / "th.json"), str(tr)]
        assert main([*argv, "--epsilon", "1", "-o", str(tmp_path / "o.json")]) == 2
        err = capsys.readouterr().err
        assert "np.float64" not in err and err.count("\n") == 1, err
    assert "allowed: 'states', 'transitions', 'initials', 'notes'" in err


def test_notes_may_be_one_string(tmp_path) -> None:
    # The guide's example: "notes" as one string was split into characters and refused.
    from ppdp.correlated.files import load_theta

    (tmp_path / "th.json").write_text(json.dumps({**THETA, "notes": "from a 2025 survey"}))
    assert load_theta(tmp_path / "th.json").notes == ("from a 2025 survey",)
    (tmp_path / "th.json").write_text(json.dumps({**THETA, "notes": ["a", "b c"]}))
    assert load_theta(tmp_path / "th.json").notes == ("a", "b c")
