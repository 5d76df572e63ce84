"""Bad Parquet input to ``ppdp publish``, ``ppdp train`` and ``ppdp report`` (issue 16).

A missing column in one file, mixed kinds of type across files, a folder with no Parquet
file, an undeclared category in one file, an unreachable scheduler: one clear line (exit 2
from the command line), nothing spent, nothing visible (no folder, no guarantee file, no
hidden leftovers). An empty partition is not bad input: the result is the same without it.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from ppdp import PrivacyBudget
from ppdp.accounting import budget_report
from ppdp.cli import build_parser, main
from ppdp.datasets import load_adult
from ppdp.evaluate.parquet_report import dataset_report
from ppdp.exceptions import DataValidationError, ParameterError
from ppdp.learn.files import train_model_file
from ppdp.publish.files import publish_table_file

pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

N_ROWS = 900
UNREACHABLE = "tcp://127.0.0.1:9"


def _cli_has_scheduler() -> bool:
    """The ``--scheduler`` flag of ``ppdp publish`` (added by the command line's owner)."""
    try:
        build_parser().parse_args(["publish", "pca", "x", "--schema", "s", "--epsilon", "1",
                                   "-o", "o", "--scheduler", "sync"])  # fmt: skip
    except SystemExit:
        return False
    return True


@pytest.fixture(scope="module")
def adult(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad_parquet")
    df, schema = load_adult()
    df = df.iloc[:N_ROWS].reset_index(drop=True)
    schema.to_file(root / "adult.json")
    return root, df, schema


def _dataset(folder, parts: list[pd.DataFrame]):
    folder.mkdir()
    for i, part in enumerate(parts):
        part.to_parquet(folder / f"part-{i}.parquet", index=False)
    return folder


def _thirds(df: pd.DataFrame) -> list[pd.DataFrame]:
    return [df.iloc[:300], df.iloc[300:600], df.iloc[600:]]


def _bad_datasets(root, df):
    """name -> (folder, fragment of the one line); value problems found by the scan."""
    a, b, c = _thirds(df)
    wrong_kind = c.copy()
    wrong_kind["age"] = wrong_kind["age"].astype(str)
    undeclared = c.copy()
    undeclared.loc[undeclared.index[:7], "workclass"] = "Astronaut"
    (root / "none").mkdir()
    (root / "none" / "readme.txt").write_text("no parquet here")
    return {
        "missing column": (
            _dataset(root / "missing", [a, b, c.drop(columns=["race"])]),
            "lacks column(s) 'race'",
        ),
        "mixed dtypes": (
            _dataset(root / "mixed", [a, b, wrong_kind]),
            "column 'age' is stored as numeric",
        ),
        "no parquet": (root / "none", "the folder holds no Parquet file"),
        "undeclared category": (
            _dataset(root / "undeclared", [a, b, undeclared]),
            "7 value(s)",
        ),
    }


@pytest.fixture(scope="module")
def bad(adult):
    root, df, _ = adult
    return _bad_datasets(root, df)


def _ledger(folder):
    folder.mkdir()
    path = folder / "budget.db"
    argv = ["budget", "init", str(path), "--dataset-id", "adult", "--epsilon", "5"]
    assert main([*argv, "--delta", "1e-6"]) == 0
    return path


def _untouched(ledger) -> None:
    report = budget_report(ledger)
    assert report.spent == PrivacyBudget(0.0) and report.spends == ()


def _nothing_visible(folder) -> None:
    assert sorted(p.name for p in folder.iterdir()) == ["ledger"], list(folder.iterdir())


def _one_line_exit_2(capsys, argv: list[str], fragment: str) -> str:
    status = main(argv)
    err = capsys.readouterr().err.splitlines()
    errors = [line for line in err if not re.match(r"ppdp [a-z]+: ", line)]
    assert status == 2, err
    assert len(errors) == 1 and errors[0].startswith("ppdp: error: "), err
    assert fragment in errors[0], errors[0]
    return errors[0]


CASES = ["missing column", "mixed dtypes", "no parquet", "undeclared category"]
#: Found by reading the files' footers, before any cluster is started.
FOOTER_CASES = ["missing column", "mixed dtypes", "no parquet"]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("method", [("pca", {"n_components": 2}), ("synth", {})])
def test_publish_refuses_in_one_line_and_spends_nothing(adult, bad, tmp_path, case, method):
    root, _, _ = adult
    folder, fragment = bad[case]
    ledger = _ledger(tmp_path / "ledger")
    name, options = method
    with pytest.raises((DataValidationError, ParameterError)) as err:
        publish_table_file(
            name,
            folder,
            schema=root / "adult.json",
            output=tmp_path / "release",
            epsilon=1.0,
            options=options,
            ledger=ledger,
            scheduler="sync",
        )
    assert fragment in str(err.value) and "\n" not in str(err.value)
    assert "Astronaut" not in str(err.value)  # a count, never a value
    _untouched(ledger)
    _nothing_visible(tmp_path)


@pytest.mark.parametrize("case", CASES)
def test_train_refuses_in_one_line_and_spends_nothing(adult, bad, tmp_path, case):
    root, _, _ = adult
    folder, fragment = bad[case]
    ledger = _ledger(tmp_path / "ledger")
    with pytest.raises((DataValidationError, ParameterError)) as err:
        train_model_file(
            "logreg",
            folder,
            schema=root / "adult.json",
            output=tmp_path / "model.json",
            epsilon=1.0,
            ledger=ledger,
            scheduler="sync",
        )
    assert fragment in str(err.value) and "\n" not in str(err.value)
    _untouched(ledger)
    _nothing_visible(tmp_path)


@pytest.mark.parametrize("case", FOOTER_CASES)
def test_report_refuses_a_bad_original_in_one_line(adult, bad, tmp_path, case):
    _root, df, schema = adult
    folder, fragment = bad[case]
    with pytest.raises(DataValidationError, match=re.escape(fragment)):
        dataset_report(folder, df, schema, scheduler="sync")


@pytest.mark.parametrize("case", FOOTER_CASES)
def test_the_command_line_exits_2_with_one_line(adult, bad, tmp_path, capsys, case):
    """Footer problems are found before a cluster starts: no --scheduler needed."""
    root, df, _ = adult
    folder, fragment = bad[case]
    ledger = _ledger(tmp_path / "ledger")
    common = ["--schema", str(root / "adult.json"), "--epsilon", "1", "--ledger", str(ledger)]
    publish = ["publish", "pca", str(folder), *common, "--components", "2"]
    _one_line_exit_2(capsys, [*publish, "-o", str(tmp_path / "release")], fragment)
    train = ["train", "logreg", str(folder), *common, "-o", str(tmp_path / "model.json")]
    _one_line_exit_2(capsys, train, fragment)
    _untouched(ledger)
    _nothing_visible(tmp_path)
    good = tmp_path / "good"
    _dataset(good, _thirds(df))
    assert main([*publish[:2], str(good), *publish[3:], "-o", str(good / "x")]) == 2
    capsys.readouterr()
    (tmp_path / "rel").mkdir()  # a folder without _SUCCESS: refused before reading anything
    report = ["report", str(tmp_path / "rel"), "--original", str(folder)]
    report += ["--schema", str(root / "adult.json"), "-o", str(tmp_path / "r.html")]
    _one_line_exit_2(capsys, [*report, "--no-guarantee"], "has no _SUCCESS marker")
    assert not (tmp_path / "r.html").exists()


@pytest.mark.skipif(not _cli_has_scheduler(), reason="ppdp publish has no --scheduler yet")
@pytest.mark.parametrize("case", CASES)
def test_the_command_line_with_a_scheduler(adult, bad, tmp_path, capsys, case):
    root, _, _ = adult
    folder, fragment = bad[case]
    ledger = _ledger(tmp_path / "ledger")
    common = ["--schema", str(root / "adult.json"), "--epsilon", "1", "--ledger", str(ledger)]
    common += ["--scheduler", "sync"]
    publish = ["publish", "synth", str(folder), *common, "-o", str(tmp_path / "release")]
    _one_line_exit_2(capsys, publish, fragment)
    train = ["train", "logreg", str(folder), *common, "-o", str(tmp_path / "model.json")]
    _one_line_exit_2(capsys, train, fragment)
    _untouched(ledger)
    _nothing_visible(tmp_path)


def test_an_unreachable_scheduler_is_one_line_and_free(adult, tmp_path):
    root, df, schema = adult
    good = _dataset(tmp_path / "good", _thirds(df))
    ledger = _ledger(tmp_path / "ledger")
    common = {"schema": root / "adult.json", "epsilon": 1.0, "ledger": ledger}
    with pytest.raises(ParameterError, match="cannot be reached") as err:
        publish_table_file(
            "synth", good, output=tmp_path / "release", scheduler=UNREACHABLE, **common
        )
    assert "\n" not in str(err.value) and UNREACHABLE in str(err.value)
    with pytest.raises(ParameterError, match="cannot be reached"):
        train_model_file(
            "logreg", good, output=tmp_path / "model.json", scheduler=UNREACHABLE, **common
        )
    with pytest.raises(ParameterError, match="cannot be reached"):
        dataset_report(good, df, schema, scheduler=UNREACHABLE)
    _untouched(ledger)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good", "ledger"]


@pytest.mark.filterwarnings("ignore::ppdp.exceptions.LowUtilityWarning")  # the pair check
def test_an_empty_partition_changes_nothing(adult, tmp_path):
    root, df, schema = adult
    a, b, c = _thirds(df)
    plain = _dataset(tmp_path / "plain", [a, b, c])
    holey = _dataset(tmp_path / "holey", [a, df.iloc[:0], b, df.iloc[:0], c])
    kwargs = {"schema": root / "adult.json", "epsilon": 1.0, "random_state": 9}
    one = publish_table_file("synth", plain, output=tmp_path / "r1", scheduler="sync", **kwargs)
    two = publish_table_file("synth", holey, output=tmp_path / "r2", scheduler="sync", **kwargs)
    s1, s2 = one.release.statistics, two.release.statistics
    assert s1.keys() == s2.keys() and s1
    for key in s1:
        np.testing.assert_array_equal(s1[key], s2[key])
    assert one.rows_written == two.rows_written == N_ROWS
    m1 = train_model_file("logreg", plain, output=tmp_path / "m1.json", scheduler="sync", **kwargs)
    m2 = train_model_file("logreg", holey, output=tmp_path / "m2.json", scheduler="sync", **kwargs)
    np.testing.assert_allclose(m1.estimator.coef_, m2.estimator.coef_, rtol=1e-9, atol=1e-12)
    r1 = dataset_report(plain, tmp_path / "r1", schema, scheduler="sync")
    r2 = dataset_report(holey, tmp_path / "r1", schema, scheduler="sync")
    assert [c["tv"] for c in r1.columns] == [c["tv"] for c in r2.columns]
