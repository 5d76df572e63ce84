"""``ppdp.accounting.files.release_history``: a ledger's history one row per release (the
entries of a release charged in parts together), with what was left after each, as the
ledger's own replay computes it; and the dry run's ε and δ in plain words on request."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ppdp.accounting import Accountant, budget_report, release_groups
from ppdp.accounting.files import format_budget_report, release_history
from ppdp.accounting.plan import dry_run_lines
from ppdp.budget import PrivacyBudget
from ppdp.mechanisms import GaussianMechanism, LaplaceMechanism


def _ledger(path, composition="basic"):
    total = PrivacyBudget(4.0, 1e-5)
    lap = LaplaceMechanism(epsilon=0.5, sensitivity=1.0).event
    gauss = GaussianMechanism(epsilon=0.5, delta=1e-6, sensitivity=1.0).event
    with Accountant.open(path, dataset_id="d", total=total, composition=composition) as acct:
        acct.spend(lap, mechanism="G: counts", release_part="1/2")
        acct.spend(lap, mechanism="G: sums of age", release_part="2/2")
        acct.spend(gauss, mechanism="S")
        acct.spend(lap, mechanism="H", release_part="2/2")  # a part without its first: alone
    return budget_report(path)


def test_rows_group_a_release_charged_in_parts_and_state_what_was_left(tmp_path):
    report = _ledger(tmp_path / "b.db")
    rows = release_history(report)
    assert [r.entries for r in rows] == [(1, 2), (3,), (4,)]
    groups, synth, lone = rows
    assert groups.method == "G: counts; sums of age" and synth.method == "S"
    assert groups.spent == PrivacyBudget(1.0) and synth.spent == PrivacyBudget(0.5, 1e-6)
    assert groups.left == PrivacyBudget(3.0, 1e-5)
    assert synth.left.epsilon == pytest.approx(2.5) and synth.left.delta == pytest.approx(9e-6)
    assert lone.left == report.remaining  # the last row: what the ledger has now
    assert groups.unit == "per row" and synth.relation == "replace-one"
    assert "event: Laplace(" in " ".join(groups.facts) and groups.facts[0] == "entry 1: G: counts"
    # each spend's facts are the lines `ppdp budget show -v` prints under it
    text = format_budget_report(report, verbose=True)
    for fact in synth.facts[1:]:
        assert fact in text
    assert sum((r.spent for r in rows), PrivacyBudget(0.0)) == report.spent


def test_a_person_unit_is_named_from_the_first_part(tmp_path):
    path = tmp_path / "p.db"
    unit = {"column": "pid", "max_rows": 3}
    event = LaplaceMechanism(epsilon=0.5, sensitivity=1.0).event
    with Accountant.open(path, dataset_id="d", total=PrivacyBudget(2.0)) as acct:
        acct.spend(event, mechanism="G: counts", release_part="1/2", privacy_unit=unit)
        acct.spend(event, mechanism="G: sums", release_part="2/2", privacy_unit=unit)
    (row,) = release_history(budget_report(path))
    assert row.unit == "per person (pid, ≤ 3 rows each)" and row.entries == (1, 2)
    assert [len(g) for g in release_groups(budget_report(path).spends)] == [2]


@pytest.mark.parametrize("composition", ["pld", "rdp"])
def test_under_a_tight_composition_left_is_the_headroom_at_the_total_delta(tmp_path, composition):
    pytest.importorskip("dp_accounting")
    report = _ledger(tmp_path / "b.db", composition)
    rows = release_history(report)
    eps = [r.left.epsilon for r in rows]
    assert eps == sorted(eps, reverse=True) and rows[-1].left == report.remaining
    assert all(r.left.delta == 1e-5 for r in rows)


def test_the_dry_run_lines_say_epsilon_and_delta_plainly_only_when_asked(monkeypatch):
    charge = SimpleNamespace(budget=PrivacyBudget(1.0, 1e-9), mechanism="M", details={})
    report = SimpleNamespace(n_rows=10)
    common = {"what": "publish m", "charges": [charge], "schema": None, "report": report,
              "remaining": PrivacyBudget(3.0, 1e-6), "per_value": False}  # fmt: skip
    monkeypatch.setattr("ppdp.data.schema_files.clipping_lines", lambda schema, report: [])
    cli, plain = dry_run_lines(**common), dry_run_lines(**common, plain=True)
    assert cli[1] == "would charge ε=1, δ=1e-09 in 1 ledger entry:"
    assert "  1. M: epsilon = 1, delta = 1e-09" in cli
    assert cli[-2] == "the ledger has ε=3, δ=1e-06 left; after this release: ε=2, δ=9.99e-07"
    assert plain[1] == "would charge ε = 1 and δ = 10⁻⁹ in 1 ledger entry:"
    assert "  1. M: ε = 1 and δ = 10⁻⁹" in plain
    assert plain[-2] == (
        "the ledger has ε = 3 and δ = 10⁻⁶ left; after this release: ε = 2 and δ = 9.99 × 10⁻⁷"
    )
