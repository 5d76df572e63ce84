"""``ppdp audit``: a thin wrapper over ``ppdp.audit.audit_with_control``."""

from __future__ import annotations

import json

import pytest

import ppdp.audit.builtin as builtin
from ppdp.cli import main


def test_audit_laplace_passes_and_control_fails(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["audit", "laplace", "--seed", "1", "--draws", "200000"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "ppdp audit laplace: 200,000 fresh draws per side" in out
    lines = out.splitlines()
    mech = next(line for line in lines if line.strip().startswith("mechanism"))
    control = next(line for line in lines if "control" in line)
    assert mech.split()[-1] == "pass"
    assert "fail (as it must)" in control


def test_audit_json(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(
        ["audit", "exponential", "--seed", "2", "--draws", "50000", "--epsilon", "0.5", "--json"]
    )
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["ok"] is True
    assert data["result"]["claimed_epsilon"] == 0.5
    assert data["result"]["passed"] is True and data["control"]["passed"] is False
    assert data["result"]["n_measure"] == 50_000 and data["result"]["n_select"] == 5_000


def test_bad_mechanism_name_exits_2_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["audit", "cauchy"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "cauchy" in err


def test_bad_epsilon_exits_2_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "gaussian", "--epsilon", "-1"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "epsilon (-1.0)" in err


def test_control_that_passes_means_broken_audit(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the "control" has full noise it passes: the command must exit 1 and say so."""
    monkeypatch.setattr(builtin, "CONTROL_NOISE_MULTIPLIER", 1.0)
    rc = main(["audit", "laplace", "--seed", "3", "--draws", "20000"])
    captured = capsys.readouterr()
    assert rc == 1
    assert "broken" in captured.err


def test_failing_mechanism_exits_1(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mechanism with too little noise (simulated by claiming less ε) fails: exit 1."""
    original = builtin.audit_mechanism

    def weak(name: str, *, noise_multiplier: float = 1.0, **kwargs):
        return original(name, noise_multiplier=noise_multiplier * 0.5, **kwargs)

    monkeypatch.setattr(builtin, "audit_mechanism", weak)
    monkeypatch.setattr(builtin, "CONTROL_NOISE_MULTIPLIER", 0.5)
    rc = main(["audit", "laplace", "--seed", "4", "--draws", "100000"])
    assert rc == 1
    assert "FAILED its audit" in capsys.readouterr().err


def test_every_builtin_audit_is_a_choice() -> None:
    from ppdp.audit import MECHANISMS
    from ppdp.cli._audit import _CHOICES

    assert tuple(MECHANISMS) == _CHOICES


def test_audit_discrete_laplace(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["audit", "discrete-laplace", "--seed", "3", "--draws", "200000"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "ppdp audit discrete-laplace" in out and "fail (as it must)" in out
