"""train_model_file and predict_file on a Parquet dataset (issue 16).

Training hands the folder to the learner's distributed fit (the same model file as in
memory for the same seed, one charge: every registered learner in
tests/test_registry_contract.py); predicting writes a partitioned folder in the input's row
order, equal to the CSV predictions; refusals come before the spend and write nothing.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ppdp import PrivacyBudget
from ppdp.accounting import budget_report
from ppdp.cli import main
from ppdp.data.distributed import SUCCESS_MARKER
from ppdp.datasets import load_adult
from ppdp.exceptions import ParameterError
from ppdp.learn.files import predict_file, train_model_file
from ppdp.registry import LEARNERS

pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

N_ROWS = 1500
pytestmark = pytest.mark.filterwarnings("ignore::ppdp.exceptions.InsecureRandomnessWarning")


@pytest.fixture(scope="module")
def adult(tmp_path_factory):
    root = tmp_path_factory.mktemp("adult_train_parquet")
    df, schema = load_adult()
    df = df.iloc[:N_ROWS].reset_index(drop=True)
    (root / "ds").mkdir()
    for i, (a, b) in enumerate([(0, 600), (600, 600), (600, 1100), (1100, N_ROWS)]):
        df.iloc[a:b].to_parquet(root / "ds" / f"part-{i}.parquet", index=False)
    df.to_csv(root / "adult.csv", index=False)
    schema.to_file(root / "adult.json")
    return root


def _ledger(tmp_path):
    (tmp_path / "ledger").mkdir()
    path = tmp_path / "ledger" / "budget.db"
    assert main(["budget", "init", str(path), "--dataset-id", "adult", "--epsilon", "5"]) == 0
    return path


def test_predict_a_dataset_writes_a_folder_in_row_order(adult, tmp_path):
    model = train_model_file(
        "logreg",
        adult / "adult.csv",
        schema=adult / "adult.json",
        output=tmp_path / "m.json",
        epsilon=1.0,
        random_state=1,
    ).path
    folder = predict_file(model, adult / "ds", output=tmp_path / "pred", scheduler="sync")
    flat = predict_file(model, adult / "adult.csv", output=tmp_path / "pred.csv")
    assert folder.n_rows == flat.n_rows == N_ROWS and folder.columns == flat.columns
    assert (folder.path / SUCCESS_MARKER).is_file()
    assert len(list(folder.path.glob("part-*.parquet"))) == 4  # one per partition, empty too
    got, want = pd.read_parquet(folder.path), pd.read_csv(flat.path)
    np.testing.assert_allclose(got["score"], want["score"], rtol=0, atol=1e-12)
    assert list(got["prediction"].astype(str)) == list(want["prediction"].astype(str))
    with pytest.raises(ParameterError, match="already exists"):
        predict_file(model, adult / "ds", output=tmp_path / "pred", scheduler="sync")
    again = predict_file(
        model, adult / "ds", output=tmp_path / "pred", force=True, scheduler="threads"
    )
    assert again.n_rows == N_ROWS
    pd.testing.assert_frame_equal(pd.read_parquet(again.path), got)


def test_dry_run_scans_and_spends_nothing(adult, tmp_path):
    ledger = _ledger(tmp_path)
    result = train_model_file(
        "logreg",
        adult / "ds",
        schema=adult / "adult.json",
        output=tmp_path / "m.json",
        epsilon=1.0,
        ledger=ledger,
        scheduler="sync",
        dry_run=True,
    )
    assert result.report.n_rows == N_ROWS and result.plan.details["n"] == N_ROWS
    assert result.after is not None and not (tmp_path / "m.json").exists()
    assert budget_report(ledger).spent == PrivacyBudget(0.0)


def test_refusals_before_the_spend(adult, tmp_path, monkeypatch):
    ledger = _ledger(tmp_path)
    base = {"schema": adult / "adult.json", "epsilon": 1.0, "ledger": ledger}
    monkeypatch.setattr(LEARNERS.load("svm"), "supports_distributed", False)
    with pytest.raises(ParameterError, match=r"learner \('svm'\): PrivateLinearSVM does not"):
        train_model_file("svm", adult / "ds", output=tmp_path / "m.json", **base)
    with pytest.raises(ParameterError, match=r"scheduler \('sync'\) is for a Parquet dataset"):
        train_model_file(
            "logreg", adult / "adult.csv", output=tmp_path / "m.json", scheduler="sync", **base
        )
    with pytest.raises(ParameterError, match="cannot be reached"):
        train_model_file(
            "logreg",
            adult / "ds",
            output=tmp_path / "m.json",
            scheduler="tcp://127.0.0.1:9",
            **base,
        )
    assert budget_report(ledger).spent == PrivacyBudget(0.0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger"]
