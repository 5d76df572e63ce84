"""``ppdp publish lda-projection``: through the ledger; bad input writes and spends nothing."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ppdp.accounting import budget_report
from ppdp.cli import main
from ppdp.datasets import load_adult
from ppdp.exceptions import LowUtilityWarning

N_ROWS = 1500


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("adult")
    df, schema = load_adult()
    df = df.iloc[:N_ROWS]
    df.to_csv(root / "adult.csv", index=False)
    schema.to_file(root / "adult.json")
    counts = [int((df["income"] == c).sum()) for c in ("<=50K", ">50K")]
    nan = df.copy()
    nan.loc[3, "age"] = float("nan")
    nan.to_csv(root / "nan.csv", index=False)
    return root, counts


def _init(tmp_path, epsilon="2", delta="1e-5"):
    ledger = tmp_path / "budget.db"
    argv = ["budget", "init", str(ledger), "--dataset-id", "adult", "--epsilon", epsilon]
    assert main([*argv, "--delta", delta]) == 0
    return ledger


def _argv(root, out, ledger, *extra, data="adult.csv"):
    return [
        "publish",
        "lda-projection",
        str(root / data),
        "--schema",
        str(root / "adult.json"),
        "--epsilon",
        "1",
        "-o",
        str(out),
        "--ledger",
        str(ledger),
        *extra,
    ]


def test_noisy_projections_through_the_ledger(files, tmp_path, capsys) -> None:
    root, counts = files
    ledger = _init(tmp_path)
    out = tmp_path / "proj.csv"
    extra = ["--delta", "1e-6", "--class-counts", f"{counts[0]},{counts[1]}", "--seed", "1"]
    extra += ["--allow-seeded"]  # an experiment through a ledger: stated and recorded
    assert main(_argv(root, out, ledger, *extra)) == 0
    table = pd.read_csv(out)
    assert list(table.columns) == ["lda_1"] and len(table) == N_ROWS
    side = json.loads((tmp_path / "proj.csv.guarantee.json").read_text())
    assert side["guarantee"]["epsilon"] == 1.0 and side["guarantee"]["delta"] == 1e-6
    assert len(side["ledger_indices"]) == 3 and side["seeded"] is True
    assert len(side["features"]) == 33 and np.shape(side["directions"]) == (33, 1)
    spent = budget_report(ledger).spent
    assert spent.epsilon == pytest.approx(1.0) and spent.delta == pytest.approx(1e-6)
    stdout = capsys.readouterr().out
    assert "ε = 1, δ = 1e-06, replace-one — LDA-DP" in stdout, stdout  # the one-line summary
    assert "same class" in side["guarantee"]["statement"]  # the full statement, in the sidecar


def test_direction_release_writes_the_direction(files, tmp_path, capsys) -> None:
    root, counts = files
    ledger = _init(tmp_path)
    out = tmp_path / "dir.csv"
    extra = ["--delta", "1e-6", "--release", "direction", "--calibration", "paper"]
    extra += ["--class-counts", f"{counts[0]},{counts[1]}", "--seed", "2", "--allow-seeded"]
    assert main(_argv(root, out, ledger, *extra)) == 0
    # the template at n = 1500: the fit's warning is one CLI line, not a Python warning
    err = capsys.readouterr().err
    assert "warning: LowUtilityWarning:" in err and "mostly noise" in err
    table = pd.read_csv(out)
    assert list(table.columns) == ["feature", "lda_1"] and len(table) == 33
    assert table["lda_1"].pow(2).sum() == pytest.approx(1.0)
    assert len(json.loads((tmp_path / "dir.csv.guarantee.json").read_text())["ledger_indices"]) == 2


def test_raw_projections_say_the_rows_are_not_protected(files, tmp_path, capsys) -> None:
    root, counts = files
    ledger = _init(tmp_path)
    out = tmp_path / "raw.csv"
    extra = ["--delta", "1e-6", "--release", "raw-projections", "--seed", "3", "--allow-seeded"]
    extra += ["--class-counts", f"{counts[0]},{counts[1]}"]
    assert main(_argv(root, out, ledger, *extra)) == 0
    side = json.loads((tmp_path / "raw.csv.guarantee.json").read_text())
    assert side["guarantee"]["kind"] == "none"
    printed = capsys.readouterr()
    assert "NOT protected" in printed.out
    warned = [ln for ln in printed.err.splitlines() if "NotDifferentiallyPrivateWarning" in ln]
    assert len(warned) == 1 and "NOT" in warned[0]


@pytest.mark.parametrize(
    ("data", "extra", "message"),
    [
        ("adult.csv", ["--class-counts", "{c0},{c1}"], "--delta (not given) is required"),
        ("adult.csv", ["--delta", "0", "--class-counts", "{c0},{c1}"], "delta (0.0)"),
        ("adult.csv", ["--delta", "1e-6"], "public_counts"),
        ("adult.csv", ["--delta", "1e-6", "--class-counts", "a,b"], "--class-counts ('a,b')"),
        ("adult.csv", ["--delta", "1e-6", "--class-counts", "1000,500"], "class counts"),
        ("adult.csv", ["--delta", "1e-6", "--class-counts", "{c0}"], "--class-counts ("),
        ("nan.csv", ["--delta", "1e-6", "--class-counts", "{c0},{c1}"], "column 'age'"),
        (
            "adult.csv",
            ["--delta", "1e-6", "--components", "2", "--class-counts", "{c0},{c1}"],
            "--components (2)",
        ),
        ("adult.csv", ["--delta", "1e-3", "--class-counts", "{c0},{c1}"], "exceed"),
        ("absent.csv", ["--delta", "1e-6", "--class-counts", "{c0},{c1}"], "does not exist"),
    ],
)
def test_bad_input_writes_nothing_and_spends_nothing(files, tmp_path, capsys, data, extra, message):
    root, counts = files
    ledger = _init(tmp_path, delta="1e-4")
    out = tmp_path / "release.csv"
    extra = [e.format(c0=counts[0], c1=counts[1]) for e in extra]
    assert main(_argv(root, out, ledger, *extra, data=data)) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if not line.startswith("ppdp publish:")]
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "budget.db",
        "budget.db.checkpoint",
        "budget.db.key",
    ]
    assert budget_report(ledger).spent.is_zero


def test_lda_options_are_refused_for_other_methods(files, tmp_path, capsys) -> None:
    root, _ = files
    out = tmp_path / "x.csv"
    argv = ["publish", "laplace", str(root / "adult.csv"), "--schema", str(root / "adult.json")]
    assert main([*argv, "--epsilon", "1", "-o", str(out), "--delta", "1e-6"]) == 2
    assert "--delta (1e-06) applies to lda-projection" in capsys.readouterr().err  # and synth
    assert not out.exists()


@pytest.mark.parametrize("dry_run", [False, True])
def test_low_utility_is_one_line_before_the_spend(files, tmp_path, capsys, dry_run) -> None:
    import warnings

    root, counts = files
    ledger = _init(tmp_path)
    out = tmp_path / "proj.csv"
    extra = ["--delta", "1e-6", "--class-counts", f"{counts[0]},{counts[1]}"]
    extra += ["--dry-run"] if dry_run else []
    capsys.readouterr()
    with warnings.catch_warnings():
        # The library warns the same message in fit; the CLI has already printed it, so a
        # second (Python) warning here would fail the test.
        warnings.simplefilter("error", LowUtilityWarning)
        assert main(_argv(root, out, ledger, *extra)) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "LowUtilityWarning" in line]
    assert len(lines) == 1 and "noisy projections at epsilon 1.0" in lines[0]
    assert "epsilon above 2.01" in lines[0]
    assert err.index("LowUtilityWarning") < err.index("reading")  # before the data are read
    assert out.exists() != dry_run
