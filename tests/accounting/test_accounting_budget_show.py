"""``ppdp budget init --composition`` and ``ppdp budget show`` (issue 17 step 5).

``show`` prints each spend's event and the running composed (ε, δ), and how many more
releases like the last one fit under the ledger's composition.
"""

from __future__ import annotations

import json

import pytest

from ppdp.accounting import Accountant, budget_report
from ppdp.budget import PrivacyBudget
from ppdp.cli import main
from ppdp.mechanisms import GaussianMechanism, LaplaceMechanism

pytest.importorskip("dp_accounting")


@pytest.mark.parametrize("composition", ["basic", "pld", "rdp"])
def test_show_prints_events_running_totals_and_what_still_fits(tmp_path, capsys, composition):
    path = tmp_path / "b.db"
    argv = ["budget", "init", str(path), "--dataset-id", "d", "--epsilon", "4", "--delta", "1e-5"]
    assert main([*argv, "--composition", composition]) == 0
    total = PrivacyBudget(4.0, 1e-5)
    lap = LaplaceMechanism(epsilon=0.5, sensitivity=1.0).event
    gauss = GaussianMechanism(epsilon=0.5, delta=1e-6, sensitivity=1.0).event
    with Accountant.open(path, dataset_id="d", total=total, composition=composition) as acct:
        acct.spend(lap, mechanism="hist")
        acct.spend(gauss, mechanism="lda")
        acct.spend(gauss, mechanism="lda")
        expected_more = acct.fits_count(gauss)
        spent = acct.spent
    capsys.readouterr()
    assert main(["budget", "show", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"({composition} composition)" in out
    assert out.count("event: Gaussian(") == 2 and out.count("event: Laplace(") == 1
    last = f"more like the last release (entry 3: lda) under {composition} composition"
    assert f"what you could still release: {expected_more} {last}" in out
    report = budget_report(path)
    assert report.running[-1] == spent and len(report.running) == 3
    # The running totals never decrease and end at the total spent.
    eps = [r.epsilon for r in report.running]
    assert eps == sorted(eps) and eps[-1] <= 4.0
    if composition == "basic":
        assert eps == [0.5, 1.0, 1.5] and expected_more == 5  # 9 × 1e-6 of δ left
    else:
        assert eps[-1] < 1.5 and expected_more > 5
    assert main(["budget", "show", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["composition"] == composition
    assert data["could_still_release"] == expected_more
    assert data["spends"][1]["event"]["kind"] == "gaussian"


def test_init_refuses_a_tight_composition_without_delta_in_one_line(tmp_path, capsys):
    path = tmp_path / "b.db"
    argv = ["budget", "init", str(path), "--dataset-id", "d", "--epsilon", "4"]
    assert main([*argv, "--composition", "pld"]) == 2
    err = capsys.readouterr().err
    assert "--delta" in err and "--composition pld" in err and len(err.strip().splitlines()) == 1
    assert not path.exists()


def test_missing_dp_accounting_is_one_line_naming_the_extra(tmp_path, monkeypatch):
    import sys

    from ppdp.exceptions import OptionalDependencyError

    monkeypatch.setitem(sys.modules, "dp_accounting", None)  # import fails
    path = tmp_path / "b.db"
    with pytest.raises(OptionalDependencyError) as info:
        Accountant.open(path, dataset_id="d", total=PrivacyBudget(4.0, 1e-5), composition="rdp")
    assert "pip install 'ppdp[tight]'" in str(info.value) and "\n" not in str(info.value)
    assert not path.exists()


@pytest.mark.parametrize("composition", ["basic", "pld"])
def test_what_still_fits_counts_the_whole_last_release(tmp_path, capsys, composition):
    """A release charged as two entries (one ``charge`` call) is counted whole: the count is
    that of the two events together, not of its last entry alone (which would double it)."""
    from ppdp.accounting import Charge, charge
    from ppdp.accounting.events import Composed

    path = tmp_path / "b.db"
    total = PrivacyBudget(4.0, 1e-5)
    gauss = GaussianMechanism(epsilon=0.25, delta=5e-7, sensitivity=1.0).event
    with Accountant.open(path, dataset_id="d", total=total, composition=composition) as acct:
        for _ in range(2):
            parts = [Charge(gauss, "sums", {}), Charge(gauss, "scatter", {})]
            charge(acct, parts, seeded=False)
        whole = acct.fits_count(Composed(events=(gauss, gauss)))
        half = acct.fits_count(gauss)
    assert half > whole
    assert budget_report(path).could_still_release == whole
    assert main(["budget", "show", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"{whole} more like the last release (entries 3-4)" in out


def test_show_names_the_entry_recording_a_keyed_release(tmp_path, capsys):
    # A keyed release records a ``release`` entry, so the spend indices skip it: show says
    # which spend it belongs to instead of leaving a silent gap (new-user trial).
    import numpy as np
    import pandas as pd

    from ppdp.data import Schema
    from ppdp.publish import TableSynthesizer

    path = tmp_path / "b.db"
    total = PrivacyBudget(4.0, 1e-5)
    schema = Schema.from_dict(
        {"columns": [{"name": "a", "type": "categorical", "categories": ["x", "y"]}]}
    )
    df = pd.DataFrame({"a": np.array(["x", "y"] * 20)})
    lap = LaplaceMechanism(epsilon=0.5, sensitivity=1.0).event
    with Accountant.open(path, dataset_id="d", total=total) as acct:
        acct.spend(lap, mechanism="hist")
        TableSynthesizer(1.0, schema).fit(df, accountant=acct, idempotency_key="k1")
        acct.spend(lap, mechanism="hist")
    report = budget_report(path)
    assert [s.index for s in report.spends] == [1, 2, 4] and dict(report.releases) == {2: 3}
    capsys.readouterr()
    assert main(["budget", "show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "released: entry 3 records this release (idempotency key 'k1')" in out
    assert out.count("released:") == 1 and "3 spends" in out
