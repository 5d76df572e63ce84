"""A remaining budget that is float residue (an ε split across steps whose shares sum a few
units in the last place under it) is printed 0, in a dry run, in ``budget show`` and in a
refusal, while the accountant keeps the exact value."""

from __future__ import annotations

import json
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest

from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget, remaining_number, remaining_text
from ppdp.cli import main

#: DP-LDA splits ε = 0.2 into counts and sums whose shortest reprs sum to
#: 0.19999999999999998: a ledger of ε = 0.2 keeps 2e-17 after it.
TOTAL = 0.2


def test_residue_within_a_share_of_the_budget_is_zero_a_small_declared_delta_is_not():
    residue = float(Decimal("0.2") - Decimal("0.19999999999999998"))
    assert residue == pytest.approx(2e-17) and residue > 0
    assert remaining_number(residue, of=0.2) == "0"
    assert remaining_number(0.1 + 0.2, of=1) == "0.3"  # 10 significant digits
    assert remaining_number(1e-14, of=1e-14) == "1e-14"  # a real δ, not residue
    assert remaining_number(1e-11, of=1.0) == "1e-11"  # above 1e-12 of the total: shown
    assert remaining_text(PrivacyBudget(residue, 1e-5), PrivacyBudget(0.2, 1e-5)) == (
        "ε=0, δ=1e-05"
    )
    assert remaining_text(PrivacyBudget(residue), PrivacyBudget(0.2)) == "ε=0"


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(5)
    n = 200
    df = pd.DataFrame(
        {"x": np.round(rng.uniform(0, 10, n), 2), "cls": np.array(["no", "yes"] * (n // 2))}
    )
    df.to_csv(tmp_path / "data.csv", index=False)
    schema = {
        "columns": [{"name": "x", "type": "numeric", "lower": 0, "upper": 10}],
        "label": {"name": "cls", "classes": ["no", "yes"]},
    }
    (tmp_path / "s.json").write_text(json.dumps(schema))
    argv = ["budget", "init", str(tmp_path / "b.db"), "--dataset-id", "t"]
    assert main([*argv, "--epsilon", str(TOTAL), "--delta", "1e-5"]) == 0
    return tmp_path


def _publish(root, *extra):
    argv = ["publish", "lda-synth", str(root / "data.csv"), "--schema", str(root / "s.json")]
    argv += ["--epsilon", str(TOTAL), "--ledger", str(root / "b.db"), "-o", str(root / "o.csv")]
    return main([*argv, "-q", *extra])


def test_a_split_epsilon_leaves_residue_that_is_printed_zero(files, capsys):
    capsys.readouterr()
    assert _publish(files, "--dry-run") == 0
    out = capsys.readouterr().out
    assert "the ledger has ε=0.2, δ=1e-05 left; after this release: ε=0, δ=1e-05" in out
    assert "e-17" not in out and "e-16" not in out
    assert _publish(files) == 0
    with Accountant.open_existing(files / "b.db") as acct:
        left = acct.remaining.epsilon
    # The accounting is untouched: the exact residue stays (what it would be without the
    # display rule, and what a broken display would print).
    assert 0 < left < 1e-15
    capsys.readouterr()
    assert main(["budget", "show", str(files / "b.db")]) == 0
    out = capsys.readouterr().out
    assert "remaining: ε=0, δ=1e-05" in out and "e-17" not in out
    argv = ["publish", "laplace", str(files / "data.csv"), "--schema", str(files / "s.json")]
    argv += ["--epsilon", "0.1", "--ledger", str(files / "b.db"), "-o", str(files / "l.csv")]
    assert main([*argv, "-q"]) != 0
    err = capsys.readouterr().err
    assert "remaining ε=0, δ=1e-05" in err and "e-17" not in err
