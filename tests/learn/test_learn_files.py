"""Issue 18: ``ppdp.learn.files`` does what ``ppdp train`` / ``ppdp predict`` do, from Python."""

from __future__ import annotations

import pandas as pd
import pytest

from ppdp.accounting import Accountant, budget_report
from ppdp.cli import main
from ppdp.datasets import load_adult
from ppdp.exceptions import InsecureRandomnessWarning, ParameterError
from ppdp.learn import UnaccountedFitWarning, _base, predict_file, train_model_file


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("adult")
    df, schema = load_adult()
    df.iloc[:600].to_csv(root / "adult.csv", index=False)
    df.iloc[600:700].to_csv(root / "new.csv", index=False)
    schema.to_file(root / "adult.json")
    return root


def _ledger(tmp_path):
    ledger = tmp_path / "budget.db"
    assert main(["budget", "init", str(ledger), "--dataset-id", "adult", "--epsilon", "3"]) == 0
    return ledger


def test_train_through_a_ledger_path_then_predict(files, tmp_path):
    ledger = _ledger(tmp_path)
    lines: list[str] = []
    result = train_model_file(
        "logreg",
        files / "adult.csv",
        schema=files / "adult.json",
        output=tmp_path / "model.json",
        epsilon=1.0,
        ledger=ledger,
        say=lines.append,
    )
    assert result.path.exists() and result.ledger_indices
    assert budget_report(ledger).spent.epsilon == pytest.approx(1.0)
    assert result.ledger_state.guarantee.epsilon == pytest.approx(1.0)
    assert not any("no --ledger" in line for line in lines)
    out = predict_file(result.path, files / "new.csv", output=tmp_path / "p.csv")
    assert out.n_rows == 100 and len(pd.read_csv(out.path)) == 100


def test_dry_run_and_without_a_ledger(files, tmp_path, monkeypatch):
    ledger = _ledger(tmp_path)
    dry = train_model_file(
        "svm",
        files / "adult.csv",
        schema=files / "adult.json",
        output=tmp_path / "m.json",
        epsilon=1.0,
        ledger=ledger,
        dry_run=True,
    )
    assert dry.plan is not None and dry.after is not None
    assert not (tmp_path / "m.json").exists() and budget_report(ledger).spent.epsilon == 0
    lines: list[str] = []
    # The warning is shown once per process: make this the first, whatever ran before.
    monkeypatch.setattr(_base, "_warned_unaccounted", False)
    with pytest.warns(UnaccountedFitWarning):
        train_model_file(
            "logreg",
            files / "adult.csv",
            schema=files / "adult.json",
            output=tmp_path / "free.json",
            epsilon=1.0,
            say=lines.append,
        )
    assert any("no --ledger given" in line for line in lines)


def test_ledger_and_accountant_together_are_refused(files, tmp_path):
    ledger = _ledger(tmp_path)
    with Accountant.open_existing(ledger) as acct, pytest.raises(ParameterError, match="not both"):
        train_model_file(
            "logreg",
            files / "adult.csv",
            schema=files / "adult.json",
            output=tmp_path / "x.json",
            epsilon=1.0,
            ledger=ledger,
            accountant=acct,
        )
    assert not (tmp_path / "x.json").exists()


def test_public_data_are_refused_by_a_learner_that_takes_none(files, tmp_path):
    with pytest.raises(ParameterError, match="apply to hybrid-svm only, not logreg"):
        train_model_file(
            "logreg",
            files / "adult.csv",
            schema=files / "adult.json",
            output=tmp_path / "y.json",
            epsilon=1.0,
            public=files / "new.csv",
        )


def test_predict_keeps_the_id_columns_asked_for_in_front(files, tmp_path):
    """New-user trial: predictions could only be joined back by row order."""
    with pytest.warns(InsecureRandomnessWarning):
        model = train_model_file(
            "logreg", files / "adult.csv", schema=files / "adult.json",
            output=tmp_path / "m.json", epsilon=1.0, random_state=0,
        )  # fmt: skip
    new = pd.read_csv(files / "new.csv").assign(visit_id=lambda t: range(900, 900 + len(t)))
    new.iloc[::-1].to_csv(tmp_path / "ids.csv", index=False)  # reversed: order is no key
    out = predict_file(model.path, tmp_path / "ids.csv", output=tmp_path / "p.csv",
                       keep=["visit_id", "age"])  # fmt: skip
    got = pd.read_csv(out.path)
    assert list(got.columns[:3]) == ["visit_id", "age", "prediction"]
    assert got.visit_id.tolist() == list(range(999, 899, -1))
    plain = pd.read_csv(predict_file(model.path, files / "new.csv", output=tmp_path / "q.csv").path)
    assert got.score.tolist() == plain.score.iloc[::-1].tolist()
    with pytest.raises(ParameterError, match="visit"):
        predict_file(model.path, files / "new.csv", output=tmp_path / "r.csv", keep=["visit"])
    assert not (tmp_path / "r.csv").exists()
    with pytest.raises(ParameterError, match="overwrite the prediction columns"):
        renamed = new.rename(columns={"visit_id": "score"})
        renamed.to_csv(tmp_path / "clash.csv", index=False)
        predict_file(model.path, tmp_path / "clash.csv", output=tmp_path / "s.csv", keep="score")


def _visits(files, tmp_path):
    import numpy as np

    from ppdp.data import Schema

    df = pd.read_csv(files / "adult.csv")
    df.insert(0, "patient_id", np.arange(len(df)) // 3)
    df.to_csv(tmp_path / "visits.csv", index=False)
    spec = Schema.from_file(files / "adult.json").to_dict()
    spec["privacy_unit"] = {"column": "patient_id", "max_rows": 3}
    Schema.from_dict(spec).to_file(tmp_path / "visits.json")
    return tmp_path / "visits.csv", tmp_path / "visits.json"


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_schema_with_a_privacy_unit_is_refused_before_anything_is_spent(files, tmp_path, dry_run):
    """A learner that cannot calibrate to a person refuses a unit in one line, never
    ignores it (docs/proofs/privacy-unit.md): the RBF SVM, and the linear learners with
    objective perturbation (their default)."""
    from ppdp.exceptions import ParameterError, SchemaError

    data, schema = _visits(files, tmp_path)
    ledger = _ledger(tmp_path)
    for kind, error, words in (
        ("logreg", ParameterError, "perturbation='output' only"),
        ("rbf-svm", SchemaError, "train rbf-svm protects single rows only"),
    ):
        with pytest.raises(error, match=words):
            train_model_file(
                kind,
                data,
                schema=schema,
                output=tmp_path / "m.json",
                epsilon=1.0,
                ledger=ledger,
                dry_run=dry_run,
            )
    assert budget_report(ledger).spent.epsilon == 0.0
    assert not (tmp_path / "m.json").exists()


def test_train_per_person_with_output_perturbation(files, tmp_path):
    """``ppdp train logreg --perturbation output`` on a schema with a unit: the learner
    reads the unit's column, n counts persons, the model file says per person."""
    data, schema = _visits(files, tmp_path)
    ledger = _ledger(tmp_path)
    lines: list[str] = []
    result = train_model_file(
        "logreg",
        data,
        schema=schema,
        output=tmp_path / "m.json",
        epsilon=1.0,
        ledger=ledger,
        perturbation="output",
        random_state=0,
        allow_seeded=True,
        say=lines.append,
    )
    assert "per person (patient_id, ≤ 3 rows each)" in result.guarantee.summary()
    persons = pd.read_csv(data)["patient_id"].nunique()
    assert result.guarantee.details["n"] == persons
    assert any("(custodian only, not released)" in line for line in lines)
    assert "patient_id" not in result.estimator.feature_names_in_
