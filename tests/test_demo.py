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
    assert [t.method for t in report.tables] == ["DP-PCA", "DP-LDA", "LAP", "EXP"]
    total = PrivacyBudget(0.0)
    assert [m.method for m in report.models] == [
        "LDA-DP",
        "private logistic regression",
    ]
    guarantees = [r.guarantee for r in report.releases] + [t.guarantee for t in report.tables]
    for guarantee in guarantees + [m.guarantee for m in report.models]:
        total = total + guarantee.budget
    assert total == DEMO_TOTAL == report.total
    assert report.remaining.is_zero
    assert "would exceed the budget" in report.refused
    verify(report.ledger_path)  # raises on any integrity problem
    for table in report.tables:
        assert table.path.exists() and table.n_rows == (2 * 45_222) // 3
    # Utility ordering the paper reports (Jiang et al. 2013): DP-PCA's reconstruction error
    # is below the per-record baselines'; DP-LDA's accuracy lies between the majority-class
    # and the original-data lines.
    utility = {t.method: t.utility for t in report.tables}
    assert utility["DP-PCA"]["mse"] < min(utility["LAP"]["mse"], utility["EXP"]["mse"])
    low = report.reference["majority class"]["accuracy"]
    high = report.reference["original data (no privacy)"]["accuracy"]
    assert low - 0.02 < utility["DP-LDA"]["accuracy"] <= high + 0.01
    # Part 3: both private models rank held-out rows far better than chance (AUC 0.5) and
    # no better than their non-private counterparts (a small tolerance for split noise).
    models = {m.method: m.utility for m in report.models}
    ref = report.model_reference
    lda_ref = ref["Fisher LDA projections (no privacy)"]["auc"]
    logistic_ref = ref["logistic regression (no privacy)"]["auc"]
    assert 0.75 < models["LDA-DP"]["auc"] <= lda_ref + 0.01
    assert 0.75 < models["private logistic regression"]["auc"] <= logistic_ref + 0.01
    projections = report.models[0].other_uses["classifier on the noisy projections"]
    # Held-out rows are ranked by the same released direction, hence the same AUC; the
    # threshold learned from noisy projections is no better than the rule's.
    assert projections["auc"] == pytest.approx(models["LDA-DP"]["auc"], abs=1e-9)
    assert projections["accuracy"] <= models["LDA-DP"]["accuracy"] + 0.01


def test_demo_noise_is_small_relative_to_the_statistics(tmp_path):
    report = run_demo(output_dir=tmp_path, random_state=0, tables=False)
    assert report.tables == ()
    assert "would exceed the budget" in report.refused
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
    assert "DP-PCA" in out and "majority class" in out and "accuracy" in out
    assert "LDA-DP" in out and "private logistic regression" in out


def test_demo_secure_runs_differ(tmp_path):
    a = run_demo(output_dir=tmp_path / "a", tables=False)
    b = run_demo(output_dir=tmp_path / "b", tables=False)
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
