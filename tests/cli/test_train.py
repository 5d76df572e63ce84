"""``ppdp train`` and ``ppdp predict``: model files through the ledger; bad input is free."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from ppdp import PrivacyBudget
from ppdp.accounting import budget_report
from ppdp.cli import main
from ppdp.datasets import load_adult
from ppdp.learn import PrivateLogisticRegression
from ppdp.learn._model_io import read_model


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("adult")
    df, schema = load_adult()
    df.iloc[:1500].to_csv(root / "adult.csv", index=False)
    df.iloc[1500:1600].to_csv(root / "public.csv", index=False)
    df.iloc[2000:2300].to_csv(root / "new.csv", index=False)
    schema.to_file(root / "adult.json")
    bad = df.iloc[:50].copy()
    bad.loc[3, "age"] = np.nan
    bad.to_csv(root / "nan.csv", index=False)
    df.iloc[:40][df.iloc[:40]["income"] == "<=50K"].to_csv(root / "one_class.csv", index=False)
    df.iloc[:50].drop(columns=["sex"]).to_csv(root / "no_sex.csv", index=False)
    d = schema.to_dict()
    d.pop("label")
    (root / "nolabel.json").write_text(json.dumps(d))
    d3 = schema.to_dict()
    d3["label"]["classes"] = ["<=50K", ">50K", "unknown"]
    (root / "three.json").write_text(json.dumps(d3))
    return root


def _ledger(tmp_path, epsilon=3.0):
    ledger = tmp_path / "budget.db"
    argv = ["budget", "init", str(ledger), "--dataset-id", "adult", "--epsilon", str(epsilon)]
    assert main(argv) == 0
    return ledger


def _train(
    files, tmp_path, learner="logreg", *extra, data="adult.csv", schema="adult.json", out=None
):
    return [
        "train",
        learner,
        str(files / data),
        "--schema",
        str(files / schema),
        "-o",
        str(out or tmp_path / "model.json"),
        *extra,
    ]


@pytest.mark.parametrize(
    ("learner", "extra"),
    [
        ("logreg", ["--perturbation", "objective", "--regularization", "0.01"]),
        ("svm", ["--perturbation", "output", "--huber-h", "0.4"]),
        ("logreg", ["--tune-grid", "1e-3,1e-2,1e-1"]),
    ],
)
def test_train_then_predict_through_the_ledger(files, tmp_path, capsys, learner, extra):
    ledger = _ledger(tmp_path)
    argv = _train(files, tmp_path, learner, "--epsilon", "1", "--ledger", str(ledger))
    assert main([*argv, "--seed", "5", "--allow-seeded", *extra]) == 0
    assert budget_report(ledger).spent == PrivacyBudget(1.0)
    out = capsys.readouterr().out
    assert "NOT fit for a real release" in out
    assert re.search(r"^guarantee: ε-DP, ε = 1, replace-one — Private\w+", out, flags=re.M)
    assert "differential privacy with" not in out and "in full in " in out
    mf = read_model(tmp_path / "model.json")
    assert mf.schema is not None and mf.schema.n_features == 33
    assert mf.classes == ("<=50K", ">50K")
    # data_norm is the schema's declared encoded row-norm bound, sqrt(p1 + p2) = sqrt(10)
    assert mf.estimator.data_norm == pytest.approx(np.sqrt(10))
    pred = tmp_path / "pred.csv"
    argv = ["predict", str(tmp_path / "model.json"), str(files / "new.csv"), "-o", str(pred)]
    assert main(argv) == 0
    got = pd.read_csv(pred)
    assert len(got) == 300 and set(got["prediction"]) <= {"<=50K", ">50K"}
    df, schema = load_adult()
    X, _ = schema.encode(df.iloc[2000:2300])
    expected = np.asarray(["<=50K", ">50K"])[mf.estimator.predict(X)]
    np.testing.assert_array_equal(got["prediction"], expected)
    np.testing.assert_allclose(got["score"], mf.estimator.decision_function(X), rtol=1e-15)
    assert ("probability" in got.columns) == (learner == "logreg")
    assert budget_report(ledger).spent == PrivacyBudget(1.0)  # predicting is free


def test_budget_ledger_alias_and_no_ledger_warning(files, tmp_path, capsys):
    ledger = _ledger(tmp_path)
    argv = _train(files, tmp_path, "svm", "--epsilon", "0.5", "--budget-ledger", str(ledger))
    assert main(argv) == 0
    assert budget_report(ledger).spent == PrivacyBudget(0.5)
    (tmp_path / "model.json").unlink()
    assert main([*_train(files, tmp_path, "logreg", "--epsilon", "0.5"), "-v"]) == 0
    printed = capsys.readouterr()
    assert "no --ledger given" in printed.err
    summary = "guarantee: ε-DP, ε = 0.5, replace-one — PrivateLogisticRegression: "
    assert summary in printed.out
    assert "  in full: ε-differential privacy with ε=0.5, neighbouring: replace-one" in printed.out


def test_kernel_learners(files, tmp_path, capsys):
    pytest.importorskip("ppdp.learn.rbf_svm")
    ledger = _ledger(tmp_path)
    argv = _train(files, tmp_path, "rbf-svm", "--epsilon", "1", "--ledger", str(ledger))
    assert (
        main([*argv, "--components", "20", "--gamma", "0.5", "--seed", "1", "--allow-seeded"]) == 0
    )
    mf = read_model(tmp_path / "model.json")
    assert mf.estimator_name == "PrivateRBFSVM" and mf.estimator.rho_.shape == (20, 33)
    (tmp_path / "model.json").unlink()
    argv = _train(files, tmp_path, "hybrid-svm", "--epsilon", "1", "--ledger", str(ledger))
    argv += [
        "--public",
        str(files / "public.csv"),
        "--components",
        "10",
        "--seed",
        "1",
        "--allow-seeded",
    ]
    assert main(argv) == 0
    assert read_model(tmp_path / "model.json").estimator_name == "HybridRBFSVM"
    assert budget_report(ledger).spent == PrivacyBudget(2.0)
    pred = tmp_path / "p.csv"
    argv = ["predict", str(tmp_path / "model.json"), str(files / "new.csv"), "-o", str(pred)]
    assert main(argv) == 0
    assert list(pd.read_csv(pred).columns) == ["prediction", "score"]


BAD_TRAIN = [
    (["--epsilon", "-1"], {}, "epsilon (-1.0) must be"),
    (["--epsilon", "1", "--regularization", "0"], {}, "regularization"),
    (["--epsilon", "5"], {}, "budget"),
    (["--epsilon", "1"], {"schema": "nolabel.json"}, "no label"),
    (
        ["--epsilon", "1"],
        {"schema": "three.json"},
        "has 3 classes; the private classifiers need exactly two: derive a two-class",
    ),
    (["--epsilon", "1"], {"data": "nan.csv"}, "'age': 1 missing"),
    (["--epsilon", "1"], {"data": "one_class.csv"}, "1 class"),
    (["--epsilon", "1"], {"data": "no_sex.csv"}, "missing column(s) 'sex'"),
    (["--epsilon", "1"], {"data": "absent.csv"}, "does not exist"),
    (["--epsilon", "1", "--public", "PUBLIC"], {}, "hybrid-svm only"),
    (["--epsilon", "1", "--gamma", "0.5"], {}, "gamma (0.5) does not apply to logreg"),
    (["--epsilon", "1", "--tune-grid", "1e-3,x"], {}, "--tune-grid"),
    (["--epsilon", "1", "--tune-grid", "1e-3"], {}, "at least 2"),
]


@pytest.fixture(scope="module")
def shared_ledger(tmp_path_factory):
    """One ledger for every bad-input case: each must leave it with nothing spent."""
    return _ledger(tmp_path_factory.mktemp("ledger"))


@pytest.mark.parametrize(("extra", "where", "message"), BAD_TRAIN)
def test_bad_training_input_is_one_line_exit_2_nothing_spent_no_file(
    files, tmp_path, capsys, shared_ledger, extra, where, message
):
    ledger = shared_ledger
    extra = [str(files / "public.csv") if e == "PUBLIC" else e for e in extra]
    argv = _train(files, tmp_path, "logreg", *extra, "--ledger", str(ledger), **where)
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    progress = [  # progress lines come before the check that fails; warnings do not
        line
        for line in lines
        if line.startswith("ppdp train: ") and not line.startswith("ppdp train: warning")
    ]
    err = [line for line in lines if line not in progress]
    assert len(err) == 1 and err[0].startswith("ppdp: error:") and message in err[0], err
    assert budget_report(ledger).spent == PrivacyBudget(0.0)
    assert list(tmp_path.iterdir()) == []


def test_bad_learner_options_and_paths(files, tmp_path, capsys):
    cases = [
        (_train(files, tmp_path, "hybrid-svm", "--epsilon", "1"),
         "--public (not given) is required"),
        (_train(files, tmp_path, "rbf-svm", "--epsilon", "1", "--perturbation", "output"),
         "perturbation ('output') does not apply to rbf-svm"),
        (_train(files, tmp_path, "rbf-svm", "--epsilon", "1", "--tune-grid", "1,2"),
         "applies to logreg and svm only"),
        (_train(files, tmp_path, "logreg", "--epsilon", "1", out=tmp_path / "m.pkl"),
         "must end in .json"),
        (_train(files, tmp_path, "logreg", "--epsilon", "1", out=tmp_path / "no" / "m.json"),
         "does not exist"),
        (_train(files, tmp_path, "logreg", "--epsilon", "1", "--ledger", str(tmp_path / "nope.db")),
         "nope.db"),
    ]  # fmt: skip
    for argv, message in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].startswith("ppdp: error:") and message in err[-1], (message, err)
        assert list(tmp_path.iterdir()) == []


def test_bad_prediction_input(files, tmp_path, capsys):
    df, schema = load_adult()
    X, y = schema.encode(df.iloc[:300])
    from ppdp.learn._model_io import save_model

    est = PrivateLogisticRegression(data_norm=schema.max_row_l2_norm, random_state=0).fit(X, y)
    model = save_model(est, tmp_path / "m.json", schema=schema)
    bare = save_model(est, tmp_path / "bare.json")
    tampered = tmp_path / "t.json"
    data = json.loads(model.read_text())
    data["model"]["model"]["coef"][0] = 9.0
    tampered.write_text(json.dumps(data))
    out = str(tmp_path / "out.csv")
    new = str(files / "new.csv")
    cases = [
        (["predict", str(tmp_path / "missing.json"), new, "-o", out], "does not exist"),
        (["predict", str(tampered), new, "-o", out], "edited or damaged"),
        (["predict", str(bare), new, "-o", out], "holds no schema"),
        (["predict", str(model), str(files / "no_sex.csv"), "-o", out], "'sex'"),
        (["predict", str(model), new, "-o", str(tmp_path / "out.json")], ".csv"),
    ]
    for argv, message in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], (message, err)
        assert not (tmp_path / "out.csv").exists() and not (tmp_path / "out.json").exists()
    # a label column in the input is ignored; .csv.gz works
    gz = tmp_path / "out.csv.gz"
    assert main(["predict", str(model), str(files / "adult.csv"), "-o", str(gz)]) == 0
    assert len(pd.read_csv(gz)) == 1500


def test_training_says_what_it_does_and_quiet_drops_it(files, tmp_path, capsys):
    public = str(files / "public.csv")
    argv = _train(files, tmp_path, "hybrid-svm", "--epsilon", "1", "--public", public)
    assert main([*argv, "--no-overlap-check", "--seed", "1"]) == 0
    said = [
        line
        for line in capsys.readouterr().err.splitlines()
        if line.startswith("ppdp train: ") and "warning" not in line
    ]
    assert said == [
        f"ppdp train: reading the public sample {public}",
        f"ppdp train: reading {files / 'adult.csv'}",
        "ppdp train: 1,500 rows; checking the data and training hybrid-svm (ε=1); the "
        "frequencies are fitted to the 100 public rows first (the time grows with the "
        "square of their number)",
        f"ppdp train: writing {tmp_path / 'model.json'}",
    ]
    quiet = _train(files, tmp_path, "logreg", "--epsilon", "1", out=tmp_path / "q.json")
    assert main([*quiet, "--seed", "1", "-q"]) == 0
    assert "ppdp train: reading" not in capsys.readouterr().err
    capped = _train(files, tmp_path, "hybrid-svm", "--epsilon", "1", "--public", public,
                    "--rho-fit-rows", "40", out=tmp_path / "capped.json")  # fmt: skip
    assert main([*capped, "--no-overlap-check", "--seed", "1"]) == 0
    assert "frequencies are fitted to 40 of the 100 public rows (--rho-fit-rows) first" in (
        capsys.readouterr().err
    )


def test_a_feature_crowded_near_0_is_named_with_the_log_scale(tmp_path, capsys):
    import json

    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    income = rng.lognormal(10, 0.8, 600)
    df = pd.DataFrame({"income": income, "y": np.where(income > 22_000, "b", "a")})
    df.to_csv(tmp_path / "d.csv", index=False)
    spec = {
        "columns": [{"name": "income", "type": "numeric", "lower": 0, "upper": 1e6}],
        "label": {"name": "y", "classes": ["a", "b"]},
    }
    for scale, warned in (("linear", True), ("log", False)):
        spec["columns"][0]["scale"] = scale
        (tmp_path / "s.json").write_text(json.dumps(spec))
        argv = ["train", "logreg", str(tmp_path / "d.csv"), "--schema", str(tmp_path / "s.json")]
        assert main([*argv, "--epsilon", "1", "-o", str(tmp_path / f"{scale}.json")]) == 0
        err = capsys.readouterr().err
        assert ("declare 'scale: log' for it" in err) is warned, err
    share = np.count_nonzero((income > 0) & (income < 1e6 / 16)) / len(income)
    assert share > 0.5


def test_adult_gets_no_crowding_warning(files, tmp_path, capsys):
    assert main([*_train(files, tmp_path, "logreg", "--epsilon", "1"), "--seed", "1"]) == 0
    assert "crowded" not in capsys.readouterr().err


# -- the words of train: no --delta, the no-ledger warning, parameters checked first ---------


def test_train_has_no_delta_flag(bank_table, tmp_path, one_error_line):
    # No learner takes δ (every guarantee is ε-DP), so ``ppdp train`` has no --delta: it
    # is refused by argparse in one line pointing at the help, nothing written.
    data, schema = bank_table
    argv = ["train", "logreg", str(data), "--schema", str(schema), "--epsilon", "1"]
    with pytest.raises(SystemExit) as info:
        main([*argv, "--delta", "1e-5", "-o", str(tmp_path / "m.json")])
    assert info.value.code == 2
    line = one_error_line()
    assert "unrecognized arguments: --delta 1e-5" in line and "ppdp train logreg --help" in line
    assert not (tmp_path / "m.json").exists()
    from ppdp.registry import LEARNERS

    for name in LEARNERS.names():
        assert "delta" not in LEARNERS.load(name)._get_param_names()


def test_train_without_a_ledger_warns_once_in_cli_words(bank_table, tmp_path, capsys):
    # The library's UnaccountedFitWarning gives Python advice (fit(..., accountant=acct));
    # the CLI says the same in its own words once.
    data, schema = bank_table
    argv = ["train", "logreg", str(data), "--schema", str(schema), "--epsilon", "1"]
    assert main([*argv, "-o", str(tmp_path / "m.json")]) == 0
    err = capsys.readouterr().err
    assert "warning: no --ledger given; the spend of ε=1 is not recorded anywhere" in err
    assert "UnaccountedFitWarning" not in err and "accountant=acct" not in err


def test_train_with_a_bad_parameter_gives_only_the_error(bank_table, tmp_path, capsys):
    """The no-ledger warning follows the parameter checks: a refused --gamma spent nothing,
    and the warning about an unrecorded spend came first and read as if it had."""
    data, schema = bank_table
    argv = ["train", "rbf-svm", str(data), "--schema", str(schema), "--epsilon", "1"]
    assert main([*argv, "--gamma", "-1", "-o", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == ["ppdp: error: --gamma (-1.0) must be a finite number > 0"]


def test_hybrid_parameters_are_checked_before_the_public_sample_is_read(
    bank_table, tmp_path, capsys
):
    """A refused --gamma used to be said only after the whole public sample was read (17 s
    for 1,000 rows in a trial); now the public file is not even opened: here it does not
    exist, and the parameter error is what the user hears."""
    data, schema = bank_table
    argv = ["train", "hybrid-svm", str(data), "--schema", str(schema), "--epsilon", "1"]
    argv += ["--public", str(tmp_path / "nowhere.csv"), "--gamma", "-1"]
    assert main([*argv, "-o", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == ["ppdp: error: --gamma (-1.0) must be a finite number > 0"]
