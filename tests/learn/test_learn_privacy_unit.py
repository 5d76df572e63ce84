"""The linear learners per person (output perturbation on per-person averaged losses):
the guarantee and the ledger say "per person", n counts persons, each person's rows weigh
one record in all, and what cannot honour a unit is refused in one line, nothing spent."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ppdp.accounting import Accountant
from ppdp.audit import noise_variant
from ppdp.budget import PrivacyBudget
from ppdp.data import Schema
from ppdp.data.contribution import person_weights
from ppdp.exceptions import ParameterError, SchemaError
from ppdp.learn import PrivateLinearSVM, PrivateLogisticRegression
from ppdp.learn._erm import DEFAULT_TOL, output_perturbation_constants

COLUMNS = [
    {"name": "x1", "type": "numeric", "lower": 0, "upper": 1},
    {"name": "x2", "type": "numeric", "lower": 0, "upper": 1},
]
LABEL = {"name": "y", "classes": ["no", "yes"]}


def schema(max_rows=4) -> Schema:
    unit = {"column": "pid", "max_rows": max_rows}
    return Schema.from_dict({"columns": COLUMNS, "label": LABEL, "privacy_unit": unit})


def persons(n: int = 600, seed: int = 0) -> pd.DataFrame:
    """One row per person."""
    rng = np.random.default_rng(seed)
    x1, x2 = rng.uniform(0, 1, n), rng.uniform(0, 1, n)
    y = np.where(x1 + x2 + rng.normal(0, 0.3, n) > 1, "yes", "no")
    return pd.DataFrame({"pid": np.arange(n), "x1": x1, "x2": x2, "y": y})


def _acct(tmp_path) -> Accountant:
    return Accountant.open(tmp_path / "l.db", dataset_id="d", total=PrivacyBudget(3.0))


# Test only: noise scaled by 1e-12 (the audit's rescaled source), so that two fits compare
# their minimisers.
Noiseless = noise_variant(PrivateLogisticRegression, 1e-12)


def test_person_weights_give_each_person_one_unit() -> None:
    w, p = person_weights(pd.Series(["a", "b", "a", "c", "a"]))
    assert p == 3 and np.allclose(w, [1 / 3, 1, 1 / 3, 1, 1 / 3])


def test_fit_per_person_says_so_and_records_persons(tmp_path) -> None:
    acct = _acct(tmp_path)
    rng = np.random.default_rng(1)
    df = persons(500).loc[lambda d: d.index.repeat(rng.integers(1, 7, len(d)))]
    model = PrivateLogisticRegression(
        epsilon=1.0, schema=schema(3), perturbation="output", random_state=0
    )
    with pytest.warns(Warning):
        model.fit(df.drop(columns="y"), df["y"], accountant=acct, allow_seeded=True)
    g = model.guarantee
    assert "per person (pid, ≤ 3 rows each)" in g.summary() and g.epsilon == 1.0
    assert any("n is the number of persons" in a for a in g.assumptions)
    details = acct.history()[-1].details
    assert details["n"] == 500 and details["units"] == "persons"
    assert details["privacy_unit"] == {"column": "pid", "max_rows": 3}
    assert acct.privacy_unit == "pid"
    # the noise is calibrated for n = 500 persons (2/(nΛ) + 2τ/Λ), not for the rows
    k = output_perturbation_constants(1.0, 500, model.regularization_, 3, tol=DEFAULT_TOL)
    assert g.details["sensitivity"] == pytest.approx(k.sensitivity)
    assert "_unit_weights" not in model.__dict__  # rows per person are never kept
    assert "(custodian only, not released)" in model._custodian_bounding_line


def test_a_person_weighs_one_record_whatever_their_rows() -> None:
    """Each person's row repeated 1 to 4 times (max_rows 4): the per-person minimiser is the
    row-level minimiser of one row per person (no noise, test-only subclass)."""
    base = persons(400, seed=2)
    rng = np.random.default_rng(3)
    repeated = base.loc[base.index.repeat(rng.integers(1, 5, len(base)))]
    per_person = Noiseless(epsilon=1.0, schema=schema(4), perturbation="output", random_state=0)
    row_schema = Schema.from_dict({"columns": COLUMNS, "label": LABEL})
    per_row = Noiseless(epsilon=1.0, schema=row_schema, perturbation="output", random_state=0)
    with pytest.warns(Warning):
        per_person.fit(repeated.drop(columns="y"), repeated["y"])
        per_row.fit(base.drop(columns=["y", "pid"]), base["y"])
        counted = Noiseless(epsilon=1.0, schema=row_schema, perturbation="output", random_state=0)
        counted.fit(repeated.drop(columns=["y", "pid"]), repeated["y"])
    assert np.allclose(per_person.coef_, per_row.coef_, atol=1e-6)
    assert not np.allclose(counted.coef_, per_row.coef_, atol=1e-3)  # rows counted: differs


@pytest.mark.parametrize(
    ("kw", "error", "words"),
    [
        ({}, ParameterError, "perturbation='output' only"),
        (
            {"perturbation": "output", "tuning": [0.01, 0.1]},
            ParameterError,
            "private tuning splits rows, not persons",
        ),
    ],
)
def test_what_cannot_be_per_person_is_refused_before_any_spend(tmp_path, kw, error, words):
    acct = _acct(tmp_path)
    df = persons(100)
    with pytest.raises(error) as info:
        PrivateLinearSVM(epsilon=1.0, schema=schema(), random_state=0, **kw).fit(
            df.drop(columns="y"), df["y"], accountant=acct, allow_seeded=True
        )
    assert words in str(info.value) and "\n" not in str(info.value)
    assert acct.spent == PrivacyBudget(0.0) and acct.history() == []


def test_auto_max_rows_is_refused_by_a_learner(tmp_path) -> None:
    s = schema("auto")
    with pytest.raises(SchemaError, match=r"needs a declared max_rows .* declare a generous"):
        PrivateLogisticRegression(epsilon=1.0, schema=s, perturbation="output").privacy_budget()


def test_missing_ids_are_refused_before_any_spend(tmp_path) -> None:
    acct = _acct(tmp_path)
    df = persons(100).assign(pid=lambda d: d["pid"].where(d.index != 5))
    model = PrivateLogisticRegression(
        epsilon=1.0, schema=schema(), perturbation="output", random_state=0
    )
    with pytest.raises(Exception, match="has 1 missing id"), pytest.warns(Warning):
        model.fit(df.drop(columns="y"), df["y"], accountant=acct, allow_seeded=True)
    assert acct.spent == PrivacyBudget(0.0)


def test_a_dask_table_is_refused_per_person_before_any_spend(tmp_path) -> None:
    dd = pytest.importorskip("dask.dataframe")
    acct = _acct(tmp_path)
    frame = dd.from_pandas(persons(100), npartitions=2)
    model = PrivateLogisticRegression(
        epsilon=1.0, schema=schema(), perturbation="output", random_state=0
    )
    with pytest.raises(ParameterError, match="trains per person on a pandas DataFrame only"):
        model.fit(frame, accountant=acct, allow_seeded=True, scheduler="sync")
    assert acct.spent == PrivacyBudget(0.0)
