"""First-hour frictions of issue 34: an interrupt after a spend, --force over a release, the
ledger's record count beside its spends."""

from __future__ import annotations

import pytest

from ppdp.cli import main
from ppdp.datasets import load_adult


@pytest.fixture
def files(tmp_path):
    df, schema = load_adult()
    data, s = tmp_path / "d.csv", tmp_path / "s.json"
    df.sample(300, random_state=0).to_csv(data, index=False)
    schema.to_file(s)
    ledger = tmp_path / "l.db"
    assert main(["budget", "init", str(ledger), "--dataset-id", "a", "--epsilon", "5"]) == 0
    return data, s, ledger, tmp_path


def _publish(files, *extra):
    data, s, ledger, tmp = files
    return ["publish", "laplace", str(data), "--schema", str(s), "--epsilon", "1",
            "-o", str(tmp / "r.csv"), "--ledger", str(ledger), *extra]  # fmt: skip


def test_an_interrupt_says_epsilon_may_be_charged_and_how_to_retry(files, capsys, monkeypatch):
    import ppdp.publish.files as pf

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pf, "publish_table_file", interrupted)
    assert main(_publish(files)) == 130
    err = capsys.readouterr().err
    assert "ε was charged in" in err and "--idempotency-key KEY" in err
    assert main(_publish(files, "--idempotency-key", "k1")) == 130
    assert "--idempotency-key k1 again" in capsys.readouterr().err


def test_force_over_a_release_warns_that_it_may_be_out(files, capsys):
    assert main(_publish(files)) == 0
    assert "will be replaced" not in capsys.readouterr().err
    assert main(_publish(files, "--force")) == 0
    err = capsys.readouterr().err
    assert "will be replaced (--force)" in err and "stays charged" in err


def test_budget_show_says_the_chain_counts_its_header(files, capsys):
    _, _, ledger, _ = files
    assert main(_publish(files)) == 0
    capsys.readouterr()
    assert main(["budget", "show", str(ledger)]) == 0
    out = capsys.readouterr().out
    assert "a chain of 2 records, the header included" in out and "1 spends" in out


def test_schema_check_names_a_text_in_a_numeric_column_and_its_row(tmp_path, capsys):
    df, schema = load_adult()
    df = df.head(30).astype({"age": object})
    df.loc[4, "age"] = "n/a"  # read as missing by the CSV reader
    df.loc[9, "age"] = "inconnu"  # not: refused, and named here (custodian-only)
    data, s = tmp_path / "d.csv", tmp_path / "s.json"
    df.to_csv(data, index=False)
    schema.to_file(s)
    assert main(["schema", "check", str(s), "--data", str(data)]) == 2
    out = capsys.readouterr().out
    assert "age: 'inconnu' (data row 10)" in out
    assert "n/a" in out and "missing_values" in out  # says which texts are missing already


def test_a_data_column_the_schema_does_not_declare_is_named_not_dropped_silently(files, caplog):
    """A column of the data that the schema leaves out is not released; the publish says
    so by name on the ppdp.data logger (never a value), and says nothing when every column
    is declared."""
    import pandas as pd

    data, _, _, tmp = files
    with caplog.at_level("WARNING", logger="ppdp.data"):
        assert main(_publish(files)) == 0
    assert "not in the schema" not in caplog.text
    df = pd.read_csv(data)
    df.insert(1, "patient_note", ["secret text"] * len(df))
    df["ward"] = 7
    df.to_csv(data, index=False)
    caplog.clear()
    with caplog.at_level("WARNING", logger="ppdp.data"):
        assert main(_publish(files, "--force")) == 0
    line = next(x for x in caplog.text.splitlines() if "not in the schema" in x)
    assert "'patient_note', 'ward'" in line and "left out" in line
    assert "secret text" not in caplog.text
    assert "patient_note" not in pd.read_csv(tmp / "r.csv").columns
