"""The Accountant: check, charge durably, refuse overruns, exact totals, fail closed."""

from __future__ import annotations

import math
import sqlite3
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdp.accounting import Accountant, SpendRecord, budget_report, key_path_for
from ppdp.budget import Guarantee, Neighbouring, PrivacyBudget
from ppdp.exceptions import (
    BudgetExceededError,
    LedgerIntegrityError,
    ParameterError,
    ParameterTypeError,
)
from ppdp.ledger import Ledger, Signer, verify

_TOTAL = PrivacyBudget(3.0, 1e-6)


def _open(path, total=_TOTAL, **kw):
    return Accountant.open(path, dataset_id="adult", total=total, **kw)


def test_spend_records_the_whole_event_before_returning(tmp_path):
    path = tmp_path / "b.db"
    with _open(path) as acct:
        rec = acct.spend(
            PrivacyBudget(0.5, 1e-7),
            mechanism="gaussian",
            sensitivity=np.float64(2.0),
            noise_scale=1.5,
            granularity=2.0**-20,
            relation="replace-one",
            shape=np.array([3, 4]),
            seeded=True,
            allow_seeded=True,
        )
        assert isinstance(rec, SpendRecord) and rec.index == 1
        assert rec.budget == PrivacyBudget(0.5, 1e-7) and rec.seeded
        assert rec.details == {
            "sensitivity": 2.0,
            "noise_scale": 1.5,
            "granularity": 2.0**-20,
            "shape": [3, 4],
            "allow_seeded": True,  # a seeded spend records that it was allowed
        }
        # durable: a second, independent reader already sees it
        report = budget_report(path)
        assert report.spends == (rec,)
        assert report.spent == PrivacyBudget(0.5, 1e-7)
    entry = verify(path)
    assert entry.kinds == {"genesis": 1, "spend": 1}
    led = Ledger.open(path)
    payload = led.entries()[1].payload
    led.close()
    assert payload["relation"] == "replace-one" and payload["mechanism"] == "gaussian"
    assert payload["epsilon"] == 0.5 and payload["delta"] == 1e-7 and payload["seeded"] is True


def test_a_seeded_spend_needs_allow_seeded_and_charges_nothing_without_it():
    acct = Accountant.in_memory(total=PrivacyBudget(1.0))
    with pytest.raises(ParameterError, match=r"seeded \(True\) needs allow_seeded=True"):
        acct.spend(PrivacyBudget(0.5), mechanism="laplace", seeded=True)
    with pytest.raises(ParameterTypeError, match="allow_seeded"):
        acct.spend(PrivacyBudget(0.5), mechanism="laplace", seeded=True, allow_seeded="yes")
    assert acct.spent.is_zero and acct.history() == []
    rec = acct.spend(PrivacyBudget(0.5), mechanism="laplace", allow_seeded=True)
    assert not rec.seeded and "allow_seeded" not in rec.details  # unseeded: nothing to allow


def test_three_hundred_spends_of_a_hundredth_fill_three_exactly():
    acct = Accountant.in_memory(total=PrivacyBudget(3.0))
    accepted = 0
    for _ in range(310):
        try:
            acct.spend(PrivacyBudget(0.01), mechanism="m")
            accepted += 1
        except BudgetExceededError:
            pass
    assert accepted == 300
    assert acct.spent == PrivacyBudget(3.0) and acct.remaining == PrivacyBudget(0.0)
    # what summing the floats' exact binary values would have done: refuse the 300th
    assert sum([Fraction(0.01)] * 299) + Fraction(0.01) > 3


def test_decimal_totals_match_what_people_wrote():
    acct = Accountant.in_memory(total=PrivacyBudget(0.3))
    acct.spend(PrivacyBudget(0.1), mechanism="a")
    acct.spend(PrivacyBudget(0.2), mechanism="b")  # 0.1 + 0.2 > 0.3 in binary floats
    assert acct.remaining == PrivacyBudget(0.0)
    with pytest.raises(BudgetExceededError):
        acct.spend(PrivacyBudget(5e-324), mechanism="c")


def test_spending_exactly_what_remains_always_fits():
    acct = Accountant.in_memory(total=PrivacyBudget(1.0, 1e-6))
    acct.spend(PrivacyBudget(1 / 3, 1e-7 / 3), mechanism="a")
    rest = acct.remaining
    acct.spend(rest, mechanism="b")
    assert not acct.would_exceed(PrivacyBudget(0.0))
    assert acct.would_exceed(PrivacyBudget(1e-12))


def test_overrun_is_refused_with_what_remains_and_nothing_is_charged(tmp_path):
    path = tmp_path / "b.db"
    with _open(path, total=PrivacyBudget(1.0)) as acct:
        acct.spend(PrivacyBudget(0.75), mechanism="laplace")
        with pytest.raises(BudgetExceededError) as info:
            acct.spend(PrivacyBudget(0.5), mechanism="laplace")
        msg = str(info.value)
        assert "remaining ε=0.25" in msg and "nothing was charged" in msg
        assert "ppdp budget show" in msg and "Accountant.remaining" in msg
        assert info.value.remaining == PrivacyBudget(0.25)
        assert info.value.requested == PrivacyBudget(0.5)
        with pytest.raises(BudgetExceededError):  # δ > 0 against a pure budget
            acct.spend(PrivacyBudget(0.1, 1e-9), mechanism="gaussian")
        assert acct.spent == PrivacyBudget(0.75)
        assert len(acct.history()) == 1
    assert verify(path).length == 2


def test_check_refuses_an_overrun_and_never_charges(tmp_path):
    path = tmp_path / "c.db"
    with _open(path, total=PrivacyBudget(1.0)) as acct:
        acct.check(PrivacyBudget(1.0))  # fits exactly: no error
        acct.spend(PrivacyBudget(0.75), mechanism="laplace")
        acct.check(PrivacyBudget(0.25))
        with pytest.raises(BudgetExceededError, match=r"remaining ε=0\.25.*nothing was charged"):
            acct.check(PrivacyBudget(0.5), mechanism="plan")
        assert acct.spent == PrivacyBudget(0.75)
    assert verify(path).length == 2


@pytest.mark.parametrize(
    "budget, error",
    [
        (PrivacyBudget(0.0), ParameterError),  # ε ≤ 0
        (0.5, ParameterTypeError),  # a bare float
        ("0.5", ParameterTypeError),
        (True, ParameterTypeError),
        (None, ParameterTypeError),
    ],
)
def test_bad_budgets_are_refused_before_anything_is_recorded(tmp_path, budget, error):
    with _open(tmp_path / "b.db") as acct:
        with pytest.raises(error):
            acct.spend(budget, mechanism="laplace")
        assert acct.history() == [] and len(acct.events()) == 1


@pytest.mark.parametrize("eps", [math.nan, math.inf, -1.0, True, "1"])
def test_bad_epsilon_never_reaches_the_accountant(eps):
    with pytest.raises((ParameterError, ParameterTypeError)):
        PrivacyBudget(eps)


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"mechanism": ""}, ParameterError),
        ({"mechanism": 3}, ParameterError),
        ({"mechanism": "m", "noise_scale": math.nan}, ParameterError),
        ({"mechanism": "m", "noise_scale": np.float64(np.inf)}, ParameterError),
        ({"mechanism": "m", "blob": object()}, ParameterTypeError),
        ({"mechanism": "m", "relation": "add/remove"}, ParameterError),
        ({"mechanism": "m", "relation": "sideways"}, ParameterError),
        ({"mechanism": "m", "seeded": "yes"}, ParameterTypeError),
        ({"mechanism": "m", "idempotency_key": 7}, ParameterError),
        ({"mechanism": "m", "idempotency_key": ""}, ParameterError),
        ({"mechanism": "m", "$f": 1.0}, ParameterError),
    ],
)
def test_bad_details_are_refused_before_anything_is_recorded(kwargs, error):
    acct = Accountant.in_memory(total=PrivacyBudget(3.0))
    with pytest.raises(error):
        acct.spend(PrivacyBudget(0.5), **kwargs)
    assert acct.spent == PrivacyBudget(0.0) and len(acct.events()) == 1


def test_idempotent_retry_charges_once(tmp_path):
    path = tmp_path / "b.db"
    with _open(path) as acct:
        first = acct.spend(PrivacyBudget(0.5), mechanism="laplace", idempotency_key="job-1")
    # the client died before learning the result; a new process retries with the same key
    with _open(path) as acct:
        again = acct.spend(PrivacyBudget(0.5), mechanism="laplace", idempotency_key="job-1")
        assert again == first and again.replayed and not first.replayed
        assert not acct.release_recorded(again)
        acct.record_release(Guarantee.pure(0.5, relation="replace-one"), spend=again)
        assert acct.release_recorded(first)
        assert acct.spent == PrivacyBudget(0.5)
        with pytest.raises(ParameterError, match="different spend"):
            acct.spend(PrivacyBudget(0.25), mechanism="laplace", idempotency_key="job-1")
        acct.spend(PrivacyBudget(0.5), mechanism="laplace", idempotency_key="job-2")
        assert acct.spent == PrivacyBudget(1.0)


def test_reopen_with_other_parameters_is_refused(tmp_path):
    path = tmp_path / "b.db"
    _open(path).close()
    for kwargs in (
        {"dataset_id": "other", "total": PrivacyBudget(3.0, 1e-6)},
        {"dataset_id": "adult", "total": PrivacyBudget(4.0, 1e-6)},
        {"dataset_id": "adult", "total": PrivacyBudget(3.0)},
        {"dataset_id": "adult", "total": PrivacyBudget(3.0, 1e-6), "relation": "add/remove"},
    ):
        with pytest.raises(ParameterError):
            Accountant.open(path, **kwargs)
    assert verify(path).length == 1
    with pytest.raises(ParameterTypeError):
        Accountant.open(tmp_path / "x.db", dataset_id="a", total=3.0)
    assert not (tmp_path / "x.db").exists()


def test_signing_key_is_created_beside_the_ledger_and_required_later(tmp_path):
    path = tmp_path / "b.db"
    _open(path).close()
    key = key_path_for(path)
    assert key.exists() and (key.stat().st_mode & 0o777) == 0o600
    key.rename(tmp_path / "moved.key")
    with pytest.raises(ParameterError, match="missing"):
        _open(path)
    with _open(path, key=tmp_path / "moved.key") as acct:
        acct.spend(PrivacyBudget(0.1), mechanism="m")
    with pytest.raises(ParameterError, match="not pinned"):
        _open(path, key=Signer.generate("intruder").private_key)


def test_two_accountants_on_one_file_see_each_other(tmp_path):
    path = tmp_path / "b.db"
    a, b = _open(path, total=PrivacyBudget(1.0)), _open(path, total=PrivacyBudget(1.0))
    a.spend(PrivacyBudget(0.6), mechanism="a")
    assert b.spent == PrivacyBudget(0.6)
    with pytest.raises(BudgetExceededError):
        b.spend(PrivacyBudget(0.5), mechanism="b")
    b.spend(PrivacyBudget(0.4), mechanism="b")
    assert a.would_exceed(PrivacyBudget(1e-9))
    a.close()
    b.close()


def test_releases_and_events_are_recorded(tmp_path):
    with _open(tmp_path / "b.db") as acct:
        rec = acct.spend(PrivacyBudget(0.5), mechanism="laplace")
        g = Guarantee.pure(0.5, relation="replace-one", mechanism="laplace")
        entry = acct.record_release(g, spend=rec, output=tmp_path / "out.csv")
        assert entry.kind == "release" and entry.payload["spend_index"] == rec.index
        assert Guarantee.from_dict(entry.payload["guarantee"]) == g
        acct.append_event("note", {"text": "done"})
        with pytest.raises(ParameterError, match="reserved"):
            acct.append_event("spend", {"epsilon": 1.0})
        assert [e.kind for e in acct.events()] == ["genesis", "spend", "release", "note"]
        assert acct.spent == PrivacyBudget(0.5)


def test_tampered_ledger_is_never_read(tmp_path):
    path = tmp_path / "b.db"
    with _open(path) as acct:
        acct.spend(PrivacyBudget(2.0), mechanism="laplace")
    conn = sqlite3.connect(path)
    body = conn.execute('SELECT body FROM entries WHERE "index" = 1').fetchone()[0]
    conn.execute(
        'UPDATE entries SET body = ? WHERE "index" = 1',
        (body.replace(b'"mechanism":"laplace"', b'"mechanism":"laplacE"'),),
    )
    conn.commit()
    conn.close()
    with pytest.raises(LedgerIntegrityError) as info:
        _open(path)
    assert info.value.index == 1
    with pytest.raises(LedgerIntegrityError):
        budget_report(path)


def test_an_overspend_written_by_a_rogue_signer_fails_closed(tmp_path):
    path = tmp_path / "b.db"
    _open(path, total=PrivacyBudget(1.0)).close()
    signer = Signer.from_file("custodian", key_path_for(path))
    with Ledger.open(path, signer=signer) as led:
        led.append(
            "spend",
            {
                "mechanism": "rogue",
                "epsilon": 2.0,
                "delta": 0.0,
                "relation": "replace-one",
                "seeded": False,
                "idempotency_key": None,
                "details": {},
                "composition": "basic",
            },
        )
    with pytest.raises(LedgerIntegrityError, match="above the ledger's limit") as info:
        _open(path, total=PrivacyBudget(1.0))
    assert info.value.index == 1


def test_not_a_budget_ledger(tmp_path):
    s = Signer.generate("custodian")
    Ledger.create(tmp_path / "mp.db", signer=s, dataset_id="adult").close()
    with pytest.raises(ParameterError, match="not a privacy-budget ledger"):
        Accountant.open(tmp_path / "mp.db", dataset_id="adult", total=PrivacyBudget(1.0), key=s)


def test_in_memory_accountant_uses_the_same_rules():
    acct = Accountant.in_memory(total=PrivacyBudget(1.0), relation=Neighbouring.ADD_REMOVE)
    assert acct.path is None and acct.relation is Neighbouring.ADD_REMOVE
    acct.spend(PrivacyBudget(0.5), mechanism="m", relation="add/remove")
    with pytest.raises(ParameterError, match="relation"):
        acct.spend(PrivacyBudget(0.1), mechanism="m", relation=Neighbouring.REPLACE_ONE)
    assert [r.epsilon for r in acct.history()] == [0.5]


budgets = st.builds(
    PrivacyBudget,
    st.one_of(
        st.floats(min_value=1e-6, max_value=2.0),
        st.sampled_from([0.01, 0.1, 0.2, 0.25, 0.3, 1 / 3, 0.5, 1.0]),
    ),
    st.one_of(st.just(0.0), st.floats(min_value=1e-12, max_value=1e-6)),
)


@settings(max_examples=60, deadline=None)
@given(
    total=st.builds(
        PrivacyBudget, st.floats(min_value=0.1, max_value=5.0), st.sampled_from([0.0, 1e-6, 1e-5])
    ),
    requests=st.lists(budgets, min_size=1, max_size=40),
)
def test_property_limit_never_exceeded_and_spent_is_monotone(total, requests):
    acct = Accountant.in_memory(total=total)
    exact_eps = exact_delta = Decimal(0)
    previous = acct.spent
    for b in requests:
        would = acct.would_exceed(b)
        try:
            acct.spend(b, mechanism="m")
        except BudgetExceededError:
            assert would
        else:
            assert not would
            exact_eps += Decimal(repr(b.epsilon))
            exact_delta += Decimal(repr(b.delta))
        spent = acct.spent
        assert exact_eps <= Decimal(repr(total.epsilon))
        assert exact_delta <= Decimal(repr(total.delta))
        assert spent <= total
        assert spent >= previous  # monotone
        assert spent.epsilon == float(exact_eps)
        previous = spent
    assert sum(r.epsilon for r in acct.history()) == pytest.approx(float(exact_eps))


def test_a_replayed_spend_entry_copied_into_the_ledger_is_rejected(tmp_path):
    """The same idempotency key twice in a signed ledger is an integrity failure."""
    path = tmp_path / "b.db"
    with _open(path) as acct:
        acct.spend(PrivacyBudget(0.1), mechanism="m", idempotency_key="k")
    signer = Signer.from_file("custodian", key_path_for(path))
    with Ledger.open(path, signer=signer) as led:
        payload = led.entries()[1].payload
        led.append("spend", payload)
    with pytest.raises(LedgerIntegrityError, match="already charged") as info:
        budget_report(path)
    assert info.value.index == 2


def test_open_existing_reads_the_pinned_parameters(tmp_path):
    path = tmp_path / "e.db"
    with _open(path, total=PrivacyBudget(2.0, 1e-6)) as acct:
        acct.spend(PrivacyBudget(0.5), mechanism="laplace")
    with Accountant.open_existing(path) as acct:
        assert acct.total == PrivacyBudget(2.0, 1e-6)
        assert acct.spent == PrivacyBudget(0.5)
        acct.spend(PrivacyBudget(0.5), mechanism="laplace")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        Accountant.open_existing(tmp_path / "missing.db")
    assert not (tmp_path / "missing.db").exists()
