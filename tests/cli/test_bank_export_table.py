"""Issue 15, items 1 and 4: a new user's own table through the CLI, with no workaround.

The table is what a bank's custodian exports: semicolon-separated, an ID column,
integer-coded categories (SEX 1/2, EDUCATION 1-6), months as text, a skewed numeric column.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ppdp.cli import main


@pytest.fixture
def bank(tmp_path):
    rng = np.random.default_rng(7)
    n = 300
    df = pd.DataFrame(
        {
            "ID": np.arange(50_000, 50_000 + n),
            "SEX": rng.integers(1, 3, n),
            "EDUCATION": rng.integers(1, 7, n),
            "LIMIT": np.round(np.exp(rng.normal(10, 1, n)), 2),  # skewed
            "month": rng.choice(["may", "jun", "jan", "dec"], n),
            "default": rng.choice(["no", "yes"], n, p=[0.8, 0.2]),
        }
    )
    path = tmp_path / "bank.csv"
    df.to_csv(path, sep=";", index=False)
    return path


def _review(schema) -> None:
    """What the user does after reviewing the draft: delete its 'draft: true'."""
    raw = json.loads(schema.read_text())
    assert raw.pop("draft") is True
    schema.write_text(json.dumps(raw))


def test_draft_detects_the_separator_leaves_the_id_out_and_codes_categories(
    bank, tmp_path, capsys, caplog
):
    schema = tmp_path / "schema.json"
    with caplog.at_level("INFO", logger="ppdp.data"):
        assert main(["schema", "draft", str(bank), "--label", "default", "-o", str(schema)]) == 0
    err = capsys.readouterr().err
    # the detection is said once, at INFO: a header with ';' alone is clear (shown with -v)
    assert caplog.text.count("';'-separated") == 1
    assert all(r.levelname == "INFO" for r in caplog.records if "separated" in r.message)
    assert "'ID'" in err and "identifier" in err
    assert "'SEX', 'EDUCATION'" in err
    spec = json.loads(schema.read_text())
    cols = {c["name"]: c for c in spec["columns"]}
    assert set(cols) == {"SEX", "EDUCATION", "LIMIT", "month"}
    assert cols["SEX"]["type"] == "categorical" and cols["SEX"]["categories"] == [1, 2]
    assert cols["month"]["categories"] == ["jan", "may", "jun", "dec"]
    assert cols["LIMIT"]["type"] == "numeric"

    # reviewed ('draft: true' deleted), it publishes the same file with no --sep and no
    # other editing by hand
    _review(schema)
    ledger = tmp_path / "b.db"
    assert main(["budget", "init", str(ledger), "--dataset-id", "bank", "--epsilon", "3"]) == 0
    out = tmp_path / "release.csv"
    argv = ["publish", "pca", str(bank), "--schema", str(schema), "--epsilon", "1"]
    argv += ["--components", "3", "-o", str(out), "--ledger", str(ledger)]
    assert main(argv) == 0
    assert len(pd.read_csv(out)) == 300
    model = tmp_path / "model.json"
    argv = ["train", "logreg", str(bank), "--schema", str(schema), "--epsilon", "1"]
    argv += ["-o", str(model), "--ledger", str(ledger), "--sep", ";"]
    assert main(argv) == 0
    assert json.loads(model.read_text())["estimator"] == "PrivateLogisticRegression"


def test_exclude_and_bad_table_options_are_one_line(bank, tmp_path, capsys):
    assert main(["schema", "draft", str(bank), "--exclude", "month"]) == 0
    assert '"month"' not in capsys.readouterr().out
    assert main(["schema", "draft", str(bank), "--exclude", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len([e for e in err if e.startswith("ppdp: error")]) == 1 and "exclude" in err[-1]
    assert main(["schema", "draft", str(bank), "--encoding", "no-such"]) == 2
    assert "encoding" in capsys.readouterr().err


def test_cli_errors_name_the_cli_flag_not_the_python_keyword(bank, tmp_path, capsys):
    schema = tmp_path / "schema.json"
    assert main(["schema", "draft", str(bank), "--label", "default", "-o", str(schema)]) == 0
    _review(schema)
    capsys.readouterr()
    out = tmp_path / "r.csv"
    argv = ["publish", "laplace", str(bank), "--schema", str(schema), "--epsilon", "20"]
    assert main([*argv, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--allow-large-epsilon" in err and "allow_large_epsilon=True" not in err
    assert main([*argv, "--allow-large-epsilon", "-o", str(out)]) == 0
    missing = tmp_path / "none.db"
    out2 = tmp_path / "r2.csv"
    assert main([*argv[:-2], "--epsilon", "1", "--ledger", str(missing), "-o", str(out2)]) == 2
    err = capsys.readouterr().err
    assert "ppdp budget init" in err and "Accountant.open" not in err


def test_train_no_intercept_flag(bank, tmp_path, capsys):
    schema = tmp_path / "schema.json"
    assert main(["schema", "draft", str(bank), "--label", "default", "-o", str(schema)]) == 0
    _review(schema)
    base = ["train", "logreg", str(bank), "--schema", str(schema), "--epsilon", "1"]
    with_b, without = tmp_path / "a.json", tmp_path / "b.json"
    assert main([*base, "-o", str(with_b)]) == 0
    assert main([*base, "--no-intercept", "-o", str(without)]) == 0
    assert json.loads(with_b.read_text())["model"]["hyperparameters"]["fit_intercept"] is True
    assert json.loads(without.read_text())["model"]["hyperparameters"]["fit_intercept"] is False
    rbf = ["train", "rbf-svm", str(bank), "--schema", str(schema), "--epsilon", "1"]
    assert main([*rbf, "--no-intercept", "-o", str(tmp_path / "c.json")]) == 2
    assert "--no-intercept" in capsys.readouterr().err


def test_train_large_epsilon_error_names_a_flag_that_exists(bank, tmp_path, capsys):
    schema = tmp_path / "schema.json"
    assert main(["schema", "draft", str(bank), "--label", "default", "-o", str(schema)]) == 0
    _review(schema)
    capsys.readouterr()
    base = ["train", "logreg", str(bank), "--schema", str(schema), "--epsilon", "20"]
    assert main([*base, "-o", str(tmp_path / "m.json")]) == 2
    assert "add --allow-large-epsilon" in capsys.readouterr().err
    assert main([*base, "--allow-large-epsilon", "-o", str(tmp_path / "m.json")]) == 0


def test_method_specific_flags_reach_the_library_or_are_refused(bank, tmp_path, capsys):
    schema = tmp_path / "schema.json"
    assert main(["schema", "draft", str(bank), "--label", "default", "-o", str(schema)]) == 0
    _review(schema)
    capsys.readouterr()
    pub = ["publish", "pca", str(bank), "--schema", str(schema), "--epsilon", "1"]
    assert (
        main([*pub, "--components", "2", "--count-share", "0.2", "-o", str(tmp_path / "x.csv")])
        == 2
    )
    err = capsys.readouterr().err
    assert "--count-share (0.2) applies to lda-synth and groupby only, not pca" in err
    out = tmp_path / "pca.csv"
    assert main([*pub, "--components", "2", "--no-clamp", "-o", str(out)]) == 0
    train = ["train", "rbf-svm", str(bank), "--schema", str(schema), "--epsilon", "1"]
    assert main([*train, "--param-grid", "{C: 1}", "-o", str(tmp_path / "m.json")]) == 2
    assert "--param-grid" in capsys.readouterr().err
    grid = '{"C": [1, 10]}'
    model = tmp_path / "m.json"
    argv = [*train, "--components", "20", "--tuning", "private", "--param-grid", grid]
    assert main([*argv, "--feature-seed", "3", "-o", str(model)]) == 0
    saved = json.loads(model.read_text())["model"]["hyperparameters"]
    assert saved["tuning"] == "private" and saved["param_grid"] == {"C": [1, 10]}
