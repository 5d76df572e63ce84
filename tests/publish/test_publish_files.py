"""Issue 18: ``publish_table_file`` does what ``ppdp publish`` does; the registry drives the CLI."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ppdp.accounting import budget_report
from ppdp.cli import build_parser, main
from ppdp.datasets import load_adult
from ppdp.exceptions import ParameterError
from ppdp.publish import publish_table_file
from ppdp.publish.files import build_publisher
from ppdp.registry import LEARNERS, PUBLISHERS, RANDOMIZERS


@pytest.fixture(scope="module")
def adult_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("adult")
    df, schema = load_adult()
    df.iloc[:800].to_csv(root / "adult.csv", index=False)
    schema.to_file(root / "adult.json")
    return root


def _ledger(tmp_path, name):
    ledger = tmp_path / name
    assert main(["budget", "init", str(ledger), "--dataset-id", "adult", "--epsilon", "5"]) == 0
    return ledger


def test_python_call_writes_what_the_cli_writes(adult_files, tmp_path):
    """Same seed, same inputs: the same table, sidecar and ledger spend, byte for byte."""
    data, schema = adult_files / "adult.csv", adult_files / "adult.json"
    cli_out, py_out = tmp_path / "cli.csv", tmp_path / "py.csv"
    cli_ledger, py_ledger = _ledger(tmp_path, "a.db"), _ledger(tmp_path, "b.db")
    argv = ["publish", "pca", str(data), "--schema", str(schema), "--epsilon", "1"]
    argv += ["--components", "3", "-o", str(cli_out), "--ledger", str(cli_ledger)]
    assert main([*argv, "--seed", "5", "--allow-seeded"]) == 0
    result = publish_table_file(
        "pca",
        data,
        schema=schema,
        output=py_out,
        epsilon=1.0,
        options={"n_components": 3},
        ledger=str(py_ledger),
        random_state=5,
        allow_seeded=True,
    )
    assert result.path == py_out and len(result.table) == 800
    pd.testing.assert_frame_equal(pd.read_csv(cli_out), pd.read_csv(py_out))
    cli_side = json.loads((tmp_path / "cli.csv.guarantee.json").read_text())
    py_side = json.loads(result.sidecar.read_text())
    assert cli_side["guarantee"] == py_side["guarantee"]
    assert budget_report(cli_ledger).spent == budget_report(py_ledger).spent
    assert result.ledger is not None and result.ledger.guarantee.epsilon == pytest.approx(1.0)


def test_dry_run_spends_and_writes_nothing(adult_files, tmp_path):
    ledger = _ledger(tmp_path, "c.db")
    out = tmp_path / "dry.csv"
    result = publish_table_file(
        "laplace",
        adult_files / "adult.csv",
        schema=adult_files / "adult.json",
        output=out,
        epsilon=1.0,
        ledger=str(ledger),
        dry_run=True,
    )
    assert result.dry_run and result.table is None and result.n_rows == 800
    assert len(result.charges) >= 1 and result.after is not None
    assert not out.exists() and budget_report(ledger).spent.epsilon == 0


def test_options_are_refused_where_they_do_not_apply(adult_files):
    from ppdp.data import Schema

    schema = Schema.from_file(adult_files / "adult.json")
    with pytest.raises(ParameterError, match=r"--bins \(8\) applies to synth only, not pca"):
        build_publisher("pca", epsilon=1, schema=schema, options={"n_bins": 8, "n_components": 2})
    with pytest.raises(ParameterError, match=r"--components \(not given\) is required for pca"):
        build_publisher("pca", epsilon=1, schema=schema)
    with pytest.raises(
        ParameterError, match="lda-projection and synth and groupby only, not laplace"
    ):
        build_publisher("laplace", epsilon=1, schema=schema, options={"--delta": 1e-6})


def test_the_cli_choices_are_the_registry():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.choices and "publish" in a.choices)
    positional = {
        name: next(a for a in sub.choices[name]._actions if a.dest in ("method", "learner"))
        for name in ("publish", "train")
    }
    assert tuple(positional["publish"].choices) == PUBLISHERS.names()
    assert tuple(positional["train"].choices) == LEARNERS.names()
    assert PUBLISHERS.names() == (
        "pca",
        "lda-synth",
        "lda-projection",
        "laplace",
        "exponential",
        "synth",
        "groupby",
    )


@pytest.mark.parametrize("registry", [PUBLISHERS, LEARNERS, RANDOMIZERS])
def test_every_entry_loads_its_class_and_takes_its_flags(registry):
    import inspect

    for entry in registry.entries():
        cls = entry.load()
        assert cls.__name__ == entry.class_name
        params = set(inspect.signature(cls).parameters)
        assert set(entry.flags.values()) <= params, entry.name


def test_an_unknown_randomizer_type_names_the_registered_ones():
    from ppdp.local._protocol import randomizer_from_dict

    with pytest.raises(ParameterError, match="'additive' or 'characteristic-vector'"):
        randomizer_from_dict({"type": "gaussian-sketch"})
    with pytest.raises(ParameterError, match=r"\(\['x'\]\)"):
        randomizer_from_dict({"type": ["x"]})


def test_a_name_registered_twice_is_refused():
    from ppdp.registry import Registry

    reg = Registry("thing")
    reg.register("a", "ppdp.publish.pca:DPPCAPublisher")
    with pytest.raises(ValueError, match="already registered"):
        reg.register("a", "ppdp.publish.pca:DPPCAPublisher")


def test_a_warning_of_the_fit_is_one_cli_line_and_a_python_warning(adult_files, tmp_path, capsys):
    """New-user trial: DP-PCA's stage-1 warning reached the CLI as a raw two-line Python
    warning (the source line under it)."""
    from ppdp.exceptions import LowUtilityWarning

    schema = adult_files / "adult.json"
    small = tmp_path / "small.csv"
    pd.read_csv(adult_files / "adult.csv").iloc[:30].to_csv(small, index=False)
    argv = ["publish", "pca", str(small), "--schema", str(schema), "--epsilon", "1"]
    argv += ["--components", "2", "-o", str(tmp_path / "out.csv")]
    assert main(argv) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "n (30) is too small" in ln]
    assert len(lines) == 1 and lines[0].startswith("ppdp publish: warning: LowUtilityWarning:")
    assert "warnings.warn" not in err and "stacklevel" not in err
    with pytest.warns(LowUtilityWarning, match=r"n \(30\) is too small"):  # Python: a warning
        publish_table_file(
            "pca", small, schema=schema, output=tmp_path / "py.csv", epsilon=1.0,
            options={"n_components": 2},
        )  # fmt: skip
