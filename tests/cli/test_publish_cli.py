"""``ppdp budget init`` and ``ppdp publish``: releases go through the ledger; bad input is free."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ppdp import PrivacyBudget
from ppdp.accounting import Accountant, budget_report
from ppdp.budget import Guarantee
from ppdp.cli import main
from ppdp.datasets import load_adult


@pytest.fixture(scope="module")
def adult_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("adult")
    df, schema = load_adult()
    df.iloc[:1500].to_csv(root / "adult.csv", index=False)
    schema.to_file(root / "adult.json")
    return root


def _init(tmp_path, epsilon=5.0):
    ledger = tmp_path / "budget.db"
    assert (
        main(["budget", "init", str(ledger), "--dataset-id", "adult", "--epsilon", str(epsilon)])
        == 0
    )
    return ledger


def _spent(ledger) -> PrivacyBudget:
    return budget_report(ledger).spent


@pytest.mark.parametrize(
    ("method", "extra", "cost"),
    [
        ("pca", ["--components", "4"], 2),
        ("lda-synth", [], 2),
        ("laplace", [], 1),
        ("exponential", [], 1),
    ],
)
def test_each_method_releases_through_the_ledger(
    adult_files, tmp_path, capsys, method, extra, cost
):
    ledger = _init(tmp_path)
    out = tmp_path / "release.csv"
    argv = [
        "publish",
        method,
        str(adult_files / "adult.csv"),
        "--schema",
        str(adult_files / "adult.json"),
        "--epsilon",
        "1",
        "-o",
        str(out),
        "--ledger",
        str(ledger),
        "--seed",
        "3",
        "--allow-seeded",
        *extra,
    ]
    assert main(argv) == 0
    released = pd.read_csv(out)
    _, schema = load_adult()
    assert list(released.columns) == list(schema.column_names)
    assert "income" in released.columns
    assert set(released["income"]) <= {"<=50K", ">50K"}
    assert released["age"].between(17, 90).all()
    if method != "lda-synth":
        assert len(released) == 1500
    side = json.loads((tmp_path / "release.csv.guarantee.json").read_text())
    assert side["guarantee"]["epsilon"] == 1.0 and side["seeded"] is True
    assert len(side["ledger_indices"]) == cost
    assert _spent(ledger) == PrivacyBudget(1.0)
    stdout = capsys.readouterr().out
    assert "NOT fit for a real release" in stdout
    # The terminal shows the one-line summary; the sidecar holds the full statement.
    guarantee = Guarantee.from_dict(side["guarantee"])
    assert f"guarantee: {guarantee.summary()}\n" in stdout
    assert stdout.count("guarantee: ") == 1 and guarantee.summary().startswith("ε-DP, ε = 1, ")
    assert "differential privacy with" not in stdout and "assumes:" not in stdout
    assert f"in full in {out}.guarantee.json (or add -v)" in stdout
    assert side["guarantee"]["statement"] == str(guarantee)


def test_parquet_output_and_no_ledger_warning(adult_files, tmp_path, capsys):
    out = tmp_path / "release.parquet"
    argv = [
        "publish",
        "laplace",
        str(adult_files / "adult.csv"),
        "--schema",
        str(adult_files / "adult.json"),
        "--epsilon",
        "1",
        "-o",
        str(out),
    ]
    assert main(argv) == 0
    assert len(pd.read_parquet(out)) == 1500
    printed = capsys.readouterr()
    assert "no --ledger given" in printed.err
    assert "differential privacy with" not in printed.out
    # -v, after the command or before it: the full statement beneath the summary.
    for verbose in ([*argv, "--force", "-v"], ["-v", *argv, "--force"]):
        assert main(verbose) == 0
        stdout = capsys.readouterr().out
        side = json.loads((tmp_path / "release.parquet.guarantee.json").read_text())
        statement = side["guarantee"]["statement"]
        assert statement.startswith("ε-differential privacy with ε=1, neighbouring: replace-one")
        assert f"guarantee: {Guarantee.from_dict(side['guarantee']).summary()}\n" in stdout
        assert f"  in full: {statement}\n" in stdout


def _bad_inputs(root):
    df = pd.read_csv(root / "adult.csv")
    nan = df.copy()
    nan.loc[3, "age"] = float("nan")
    nan.to_csv(root / "nan.csv", index=False)
    other = df.copy()
    other.loc[3, "race"] = "Martian"
    other.to_csv(root / "undeclared.csv", index=False)
    df.drop(columns=["sex"]).to_csv(root / "missing_column.csv", index=False)


@pytest.mark.parametrize(
    ("data", "extra", "message"),
    [
        ("nan.csv", ["pca", "--components", "3"], "column 'age'"),
        ("undeclared.csv", ["laplace"], "column 'race'"),
        ("missing_column.csv", ["lda-synth"], "sex"),
        ("adult.csv", ["pca", "--components", "99"], "--components (99)"),
        ("adult.csv", ["pca"], "--components (not given) is required"),
        ("adult.csv", ["laplace", "--epsilon", "0"], "epsilon (0.0)"),
        ("adult.csv", ["laplace", "--epsilon", "9"], "would exceed the budget"),
        ("absent.csv", ["laplace"], "does not exist"),
    ],
)
def test_bad_input_writes_nothing_and_spends_nothing(
    adult_files, tmp_path, capsys, data, extra, message
):
    _bad_inputs(adult_files)
    ledger = _init(tmp_path, epsilon=2.0)
    out = tmp_path / "release.csv"
    method, *rest = extra
    argv = [
        "publish",
        method,
        str(adult_files / data),
        "--schema",
        str(adult_files / "adult.json"),
        "--epsilon",
        "1",
        "-o",
        str(out),
        "--ledger",
        str(ledger),
        *rest,
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if not line.startswith("ppdp publish:")]
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "budget.db",
        "budget.db.checkpoint",
        "budget.db.key",
    ]
    assert _spent(ledger).is_zero


def test_budget_init_refuses_an_existing_ledger(tmp_path, capsys):
    ledger = _init(tmp_path)
    with Accountant.open_existing(ledger) as acct:
        acct.spend(PrivacyBudget(1.0), mechanism="earlier")
    assert main(["budget", "init", str(ledger), "--dataset-id", "adult", "--epsilon", "100"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert budget_report(ledger).total == PrivacyBudget(5.0)


def test_the_closing_line_names_the_entry_and_the_ledger_total(adult_files, tmp_path, capsys):
    ledger = _init(tmp_path)
    base = ["publish", "laplace", str(adult_files / "adult.csv")]
    base += ["--schema", str(adult_files / "adult.json"), "--ledger", str(ledger), "-q"]
    for k in (1, 2):
        assert main([*base, "--epsilon", "0.5", "-o", str(tmp_path / f"r{k}.csv")]) == 0
        lines = capsys.readouterr().out.splitlines()
        total = "0.5" if k == 1 else "1"
        assert (
            f"charged in {ledger} (entry {k}); ledger total ε={total} (basic composition)" in lines
        )
