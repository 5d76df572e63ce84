"""``ppdp.accounting.plan`` and ``ppdp.accounting.files``: dry-run text, ledger init and anchor."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ppdp.accounting import Accountant, budget_report
from ppdp.accounting.files import anchor_ledger, format_budget_report, init_budget_ledger
from ppdp.accounting.plan import charge_lines, dry_run_lines
from ppdp.budget import PrivacyBudget
from ppdp.data import Schema
from ppdp.exceptions import ParameterError

SCHEMA = Schema.from_dict(
    {"columns": [{"name": "age", "type": "numeric", "lower": 0, "upper": 10}]}
)


def _charge(eps, details, delta=0.0):
    return SimpleNamespace(budget=PrivacyBudget(eps, delta), mechanism="M", details=details)


def test_charge_lines_state_the_noise_per_value() -> None:
    lines = charge_lines([_charge(1.0, {"noise_scale": 0.5})], schema=SCHEMA, per_value=True)
    assert lines[0] == "  1. M: epsilon = 1, delta = 0"
    assert "Laplace noise, scale b = 0.5" in lines[1]
    assert lines[2].strip().startswith("age: b x declared range 10 = 5 expected")
    gauss = charge_lines([_charge(1.0, {"noise_scale": 2.0, "norm": "l2"}, 1e-6)])
    assert "sigma = 2" in gauss[1] and "1.596" in gauss[1]
    inside = charge_lines([_charge(1.0, {})])
    assert "no per-value noise scale" in inside[1]
    listed = charge_lines([_charge(1.0, {"scatter_sigma": 3.0, "mean_sigmas": [1.0, 2.0]})])
    assert listed[1:] == [
        "     Gaussian sigma on each entry of the second-moment matrix: 3 (encoded units)",
        "     Gaussian sigma on each class mean (the class-sum sigma divided by the public "
        "class size), per class: 1, 2 (encoded units)",
    ]


def test_dry_run_lines_subtract_from_what_remains_or_say_there_is_no_ledger() -> None:
    report = SimpleNamespace(n_rows=1000, clipped={"age": 10})
    plan = {"what": "publish x", "charges": [_charge(0.5, {"noise_scale": 1.0})] * 2}
    plan |= {"schema": SCHEMA, "report": report, "per_value": False}
    lines = dry_run_lines(remaining=PrivacyBudget(2.0), **plan)
    assert lines[0] == "dry run of publish x on 1,000 rows: nothing was spent or written"
    assert "in 2 ledger entries:" in lines[1]
    assert any(line.startswith("the ledger has ") and "ε=1" in line for line in lines)
    assert lines[-1].split()[-1] == "1.0%"
    refused = dry_run_lines(remaining=PrivacyBudget(2.0), after=None, **plan)
    assert any("it does not fit" in line for line in refused)
    none = dry_run_lines(remaining=None, **plan)
    assert "no --ledger given: the real run would record the spend nowhere" in none


def test_init_budget_ledger_creates_once(tmp_path) -> None:
    path = tmp_path / "l.db"
    line = init_budget_ledger(path, dataset_id="d", epsilon=2.0, delta=1e-6)
    assert line.startswith(f"created budget ledger {path} for dataset 'd': total ")
    with pytest.raises(ParameterError, match="already exists"):
        init_budget_ledger(path, dataset_id="d", epsilon=2.0)
    text = format_budget_report(budget_report(path))
    assert "dataset:   d" in text and text.endswith("no spends yet")


def test_format_budget_report_lists_spends(tmp_path) -> None:
    path = tmp_path / "l.db"
    with Accountant.open(path, dataset_id="d", total=PrivacyBudget(1.0)) as acct:
        acct.spend(PrivacyBudget(0.25), mechanism="LaplaceMechanism", sensitivity=1.0)
    text = format_budget_report(budget_report(path), verbose=True)
    assert "spent:     ε=0.25, δ=0" in text and "sensitivity: 1" in text
    assert "1 spends" in text and "3 more like the last release" in text


def test_anchor_ledger(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PPDP_ANCHOR_DIR", str(tmp_path / "anchors"))
    path = tmp_path / "l.db"
    init_budget_ledger(path, dataset_id="d", epsilon=1.0)
    anchor, where = anchor_ledger(path, record=False)
    assert anchor.dataset_id == "d" and where == "not recorded (--no-record)"
    anchor, where = anchor_ledger(path)
    assert where.startswith("recorded in ")
    with pytest.raises(ParameterError, match="--key"):
        anchor_ledger(path, key=tmp_path / "missing.pem")
    with pytest.raises(FileNotFoundError):
        anchor_ledger(tmp_path / "none.db")
