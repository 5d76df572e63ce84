"""The one charge path (issue 17 step 3): ``Charge``, ``check_charges``, ``charge``, idempotency.

Every publisher, learner, correlated release, federated round and the demo charges through
``ppdp.accounting.charge``; a retried request with the same idempotency key (library or
``--idempotency-key`` on the CLI) is not charged twice.
"""

from __future__ import annotations

import pytest

from ppdp.accounting import (
    Accountant,
    Charge,
    budget_report,
    charge,
    check_charges,
    claim_key,
)
from ppdp.accounting.events import EpsilonDelta, Exponential, Laplace
from ppdp.budget import PrivacyBudget
from ppdp.cli import main
from ppdp.datasets import load_adult
from ppdp.exceptions import BudgetExceededError, ParameterError, ParameterTypeError
from ppdp.learn import Plan
from ppdp.publish import Charge as PublishCharge
from ppdp.publish.baselines import LaplacePublisher


def test_charge_normalises_its_events_and_keeps_the_old_names():
    assert PublishCharge is Charge and Plan is Charge
    c = Charge(PrivacyBudget(0.5), "m", {"q": 1})
    assert c.events == (EpsilonDelta(epsilon=0.5),) and c.budget == PrivacyBudget(0.5)
    two = Charge([Exponential(epsilon=0.1), Laplace(l1_sensitivity=1.0, scale=5.0)], "m")
    assert two.budget.epsilon >= 0.3 and len(two.event.leaves()) == 2
    with pytest.raises(ParameterTypeError, match="events"):
        Charge("nope", "m")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="mechanism"):
        Charge(PrivacyBudget(0.5), " ")


def test_charge_records_one_entry_per_charge_and_replays_by_key():
    acct = Accountant.in_memory(total=PrivacyBudget(1.0))
    plan = [Charge(Exponential(epsilon=0.2), "a"), Charge(Exponential(epsilon=0.3), "b")]
    with pytest.raises(ParameterError, match="is not claimed"):  # a keyed check needs the claim
        check_charges(acct, plan, mechanism="job", idempotency_key="k")
    with claim_key(acct, "k"):
        check_charges(acct, plan, mechanism="job", idempotency_key="k")
    first = charge(acct, plan, seeded=False, idempotency_key="k")
    assert [r.idempotency_key for r in first] == ["k#1", "k#2"]
    assert [r.event for r in first] == [Exponential(epsilon=0.2), Exponential(epsilon=0.3)]
    again = charge(acct, plan, seeded=False, idempotency_key="k")
    assert all(r.replayed for r in again) and [r.index for r in again] == [1, 2]
    assert acct.spent == PrivacyBudget(0.5)
    # A retry needs no new budget: its charges are not counted by the check.
    charge(acct, Charge(PrivacyBudget(0.5), "fill"), seeded=False)
    with claim_key(acct, "k"):
        check_charges(acct, plan, mechanism="job", idempotency_key="k")
    with claim_key(acct, "other"), pytest.raises(BudgetExceededError):
        check_charges(acct, plan, mechanism="job", idempotency_key="other")
    with pytest.raises(ParameterError, match="different spend"):
        charge(acct, Charge(Exponential(epsilon=0.1), "a"), seeded=False, idempotency_key="k#1")
    assert charge(None, plan, seeded=False) == ()


@pytest.fixture(scope="module")
def adult():
    df, schema = load_adult()
    return df.iloc[:400].reset_index(drop=True), schema


def _died_after_the_charge(acct, planned, key):
    """What a run killed between its charge and its release leaves: the spend, no release."""
    charge(acct, planned, seeded=False, idempotency_key=key)


def test_a_publisher_retried_with_the_same_key_does_not_pay_twice(adult):
    df, schema = adult
    acct = Accountant.in_memory(total=PrivacyBudget(3.0))
    pub = LaplacePublisher(epsilon=1.0, schema=schema)
    assert pub.privacy_events()[0].budget() == PrivacyBudget(1.0)
    # A run that died between the charge and the release released nothing: the retry
    # releases, charged nothing again.
    _died_after_the_charge(acct, pub._validate_params(len(df)), "req-1")
    pub.fit(df, accountant=acct, idempotency_key="req-1")
    assert pub.release_.replayed
    assert acct.spent == PrivacyBudget(1.0) and len(acct.history()) == 1
    pub.fit(df, accountant=acct, idempotency_key="req-2")
    assert not pub.release_.replayed and acct.spent == PrivacyBudget(2.0)


@pytest.mark.parametrize("key", ["req-1", "req-2"])
def test_a_released_key_is_never_released_again_with_fresh_noise(adult, key):
    """The replay hazard: a key whose release left (recorded before ``fit`` returns) is
    refused, nothing charged, nothing released; under the old rule the retry drew fresh
    noise under the one charge (two releases for the price of one)."""
    df, schema = adult
    acct = Accountant.in_memory(total=PrivacyBudget(3.0))
    pub = LaplacePublisher(epsilon=1.0, schema=schema)
    if key == "req-2":  # died after the charge once, then released on the retry
        _died_after_the_charge(acct, pub._validate_params(len(df)), key)
    pub.fit(df, accountant=acct, idempotency_key=key)
    first = pub.release_.data.copy()
    with pytest.raises(ParameterError, match="its release is recorded") as err:
        pub.fit(df, accountant=acct, idempotency_key=key)
    assert "\n" not in str(err.value)
    assert pub.release_.data.equals(first)  # the refused retry left the release as it was
    assert acct.spent == PrivacyBudget(1.0) and len(acct.history()) == 1
    assert len(acct.events("release")) == 1


def test_a_learner_retried_with_the_same_key_does_not_pay_twice(adult, monkeypatch):
    from ppdp.learn import PrivateLogisticRegression

    df, schema = adult
    acct = Accountant.in_memory(total=PrivacyBudget(3.0))
    est = PrivateLogisticRegression(epsilon=1.0, schema=schema)
    assert est.privacy_events()[0].kind == "objective-perturbation"
    with monkeypatch.context() as m:  # the run dies between its charge and its release
        m.setattr(est, "_release", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt))
        with pytest.raises(KeyboardInterrupt):
            est.fit(df, accountant=acct, idempotency_key="t-1")
    assert acct.spent == PrivacyBudget(1.0) and not acct.events("release")
    est.fit(df, accountant=acct, idempotency_key="t-1")
    assert est.replayed_
    coef = est.coef_.copy()
    with pytest.raises(ParameterError, match="its release is recorded"):
        est.fit(df, accountant=acct, idempotency_key="t-1")
    assert (est.coef_ == coef).all()
    assert acct.spent == PrivacyBudget(1.0)
    # the charged event: the objective noise and the residual step's Gamma-norm noise
    kinds = [e.kind for e in acct.history()[0].event.leaves()]
    assert kinds == ["objective-perturbation", "gamma-norm"]


@pytest.fixture()
def files(tmp_path, adult):
    df, schema = adult
    df.to_csv(tmp_path / "adult.csv", index=False)
    schema.to_file(tmp_path / "adult.json")
    ledger = tmp_path / "budget.db"
    argv = ["budget", "init", str(ledger), "--dataset-id", "adult", "--epsilon", "5"]
    assert main(argv) == 0
    return tmp_path, ledger


@pytest.mark.parametrize("command", ["publish", "train"])
def test_cli_retry_with_the_same_idempotency_key_does_not_pay_twice(files, capsys, command):
    root, ledger = files
    out = root / ("release.csv" if command == "publish" else "model.json")
    what = ["laplace"] if command == "publish" else ["logreg"]
    argv = [
        command,
        *what,
        str(root / "adult.csv"),
        "--schema",
        str(root / "adult.json"),
        "--epsilon",
        "1",
        "-o",
        str(out),
        "--ledger",
        str(ledger),
        "--idempotency-key",
        "job-7",
    ]
    assert main(argv) == 0
    assert budget_report(ledger).spent == PrivacyBudget(1.0)
    # The release happened (its output exists): a forced retry is refused, nothing charged.
    capsys.readouterr()
    assert main([*argv, "--force"]) == 2
    err = capsys.readouterr().err
    errors = [ln for ln in err.splitlines() if ln.startswith("ppdp: error")]
    assert len(errors) == 1 and "already happened" in errors[0], err
    assert all("warning:" in ln for ln in err.splitlines() if ln not in errors)  # LAP's utility
    assert len(budget_report(ledger).spends) == 1
    # Moving the output away (or naming another one) does not make it unhappen: the
    # release is recorded, so the retry is refused instead of drawing fresh noise.
    out.rename(root / "moved")
    side = out.with_name(out.name + ".guarantee.json")
    if side.exists():
        side.unlink()
    assert main(argv) == 2 and not out.exists()
    err = capsys.readouterr().err
    errors = [ln for ln in err.splitlines() if ln.startswith("ppdp: error")]
    assert len(errors) == 1 and "its release is recorded" in errors[0], err
    assert "--idempotency-key ('job-7')" in errors[0]
    assert "reading" not in err  # refused before the data are read
    assert "Traceback" not in err and len(budget_report(ledger).spends) == 1
    # A fresh key is a new release.
    assert main([*argv[:-1], "job-8", "--force"]) == 0
    assert budget_report(ledger).spent == PrivacyBudget(2.0)


def test_cli_retry_of_a_run_that_died_before_releasing_says_nothing_was_charged(files, capsys):
    root, ledger = files
    df, schema = load_adult()
    df = df.iloc[:400].reset_index(drop=True)
    planned = LaplacePublisher(epsilon=1.0, schema=schema)._validate_params(len(df))
    with Accountant.open_existing(ledger) as acct:  # the run died after this charge
        _died_after_the_charge(acct, planned, "job-9")
    out = root / "release.csv"
    argv = ["publish", "laplace", str(root / "adult.csv"), "--schema", str(root / "adult.json")]
    argv += ["--epsilon", "1", "-o", str(out), "--ledger", str(ledger)]
    capsys.readouterr()
    assert main([*argv, "--idempotency-key", "job-9"]) == 0 and out.exists()
    printed = capsys.readouterr().out
    assert "NOT charged again" in printed and "entry 1" in printed
    assert budget_report(ledger).spent == PrivacyBudget(1.0)
