"""``ppdp demo``: the main job runs end to end through the ledger and states its guarantees."""

from __future__ import annotations

import pytest

from ppdp import PrivacyBudget
from ppdp.budget import GuaranteeKind
from ppdp.cli import main
from ppdp.demo import DEMO_TOTAL, run_demo
from ppdp.ledger import verify


def test_run_demo_spends_exactly_its_budget_and_refuses_more(tmp_path):
    report = run_demo(output_dir=tmp_path, random_state=3)
    assert report.seeded
    assert report.n_rows == 45_222
    kinds = [r.guarantee.kind for r in report.releases]
    assert kinds == [GuaranteeKind.PURE, GuaranteeKind.PURE, GuaranteeKind.APPROX]
    total = PrivacyBudget(0.0)
    for release in report.releases:
        total = total + release.guarantee.budget
    assert total == DEMO_TOTAL == report.total
    assert report.remaining.is_zero
    assert "would exceed the budget" in report.refused
    verify(report.ledger_path)  # raises on any integrity problem


def test_demo_noise_is_small_relative_to_the_statistics(tmp_path):
    report = run_demo(output_dir=tmp_path, random_state=0)
    counts = report.releases[0]
    for _, private, exact in counts.rows:
        # Laplace scale 2/0.25 = 8: |noise| > 8 * 20 has probability e^-20.
        assert abs(private - exact) < 160
    means = dict((name, (p, e)) for name, p, e in report.releases[1].rows)
    private_age, exact_age = means["age"]
    assert abs(private_age - exact_age) < 1.0


def test_demo_cli_prints_guarantees_and_ledger(tmp_path, capsys):
    assert main(["demo", "--output-dir", str(tmp_path), "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "ε-differential privacy with ε=0.25, neighbouring: replace-one" in out
    assert "(ε, δ)-differential privacy with ε=0.25, δ=1e-06" in out
    assert "ledger: " in out and "adult-budget.db" in out
    assert "NOT fit for a real release" in out


def test_demo_secure_runs_differ(tmp_path):
    a = run_demo(output_dir=tmp_path / "a")
    b = run_demo(output_dir=tmp_path / "b")
    assert not a.seeded
    assert a.releases[0].rows != b.releases[0].rows


@pytest.mark.parametrize("argv", [["demo", "--seed", "x"], ["nonsense"]])
def test_cli_usage_errors_exit_2_with_one_line(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ppdp: error:")
    assert "Traceback" not in err
