"""``ppdp report``: an HTML and JSON quality report; bad input is one line, exit 2."""

from __future__ import annotations

import json
import sys
import warnings

import numpy as np
import pytest

from ppdp.cli import main
from ppdp.datasets import load_adult
from ppdp.exceptions import LowUtilityWarning

pytest.importorskip("sklearn")
pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    df, schema = load_adult()
    rows = np.sort(np.random.default_rng(1).choice(len(df), 2000, replace=False))
    df = df.iloc[rows].reset_index(drop=True)
    df.iloc[:1500].to_csv(root / "orig.csv", index=False)
    df.iloc[1500:].to_csv(root / "test.csv", index=False)
    df.iloc[1500:].drop(columns="income").to_csv(root / "test-no-income.csv", index=False)
    df.iloc[:1500].assign(extra=1).to_csv(root / "extra.csv", index=False)
    schema.to_file(root / "adult.json")
    code = main(
        [
            "publish", "laplace", str(root / "orig.csv"), "--schema", str(root / "adult.json"),
            "--epsilon", "1", "-o", str(root / "lap.csv"), "-q",
        ]
    )  # fmt: skip
    assert code == 0
    df.iloc[:1500].to_csv(root / "same.csv", index=False)  # no sidecar
    return root


def _report(files, release, *extra):
    return [
        "report", str(files / release), "--original", str(files / "orig.csv"),
        "--schema", str(files / "adult.json"), *extra,
    ]  # fmt: skip


def test_a_laplace_release_is_reported_with_its_guarantee(files, tmp_path, capsys):
    out, js = tmp_path / "r.html", tmp_path / "r.json"
    argv = _report(files, "lap.csv", "--holdout", str(files / "test.csv"), "--target", "income")
    assert main([*argv, "-o", str(out), "--json", str(js)]) == 0
    stdout = capsys.readouterr().out
    assert stdout.startswith("verdict: ")
    text = out.read_text(encoding="utf-8")
    data = json.loads(js.read_text(encoding="utf-8"))
    assert data["guarantee"]["epsilon"] == 1.0
    assert data["release_info"]["method"] == "laplace"
    assert data["ml_utility"]["n_test"] == 500
    assert f"Verdict: {data['verdict']}" in text
    assert "For the custodian only" in text
    assert "No guarantee file was found" not in text
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "").replace(
        'xmlns:xlink="http://www.w3.org/1999/xlink"', ""
    )


def test_without_a_sidecar_the_release_is_refused(files, tmp_path, capsys):
    out = tmp_path / "same.html"
    assert main([*_report(files, "same.csv", "--target", "income"), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "same.csv.guarantee.json" in err and "--no-guarantee" in err
    assert not out.exists()


def test_without_a_sidecar_no_guarantee_reports_and_says_so(files, tmp_path, capsys):
    out = tmp_path / "same.html"
    argv = [*_report(files, "same.csv", "--target", "income"), "--no-guarantee", "-o", str(out)]
    assert main(argv) == 0
    stdout = capsys.readouterr().out
    assert stdout.startswith("verdict: useful")
    assert "no guarantee file" in stdout
    assert "No guarantee file was found" in out.read_text(encoding="utf-8")


def _bad(files, tmp_path, argv, capsys, match):
    out = tmp_path / "bad.html"
    assert main([*argv, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert match in err
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name != "folder"] == []


@pytest.mark.parametrize(
    ("release", "extra", "match"),
    [
        ("extra.csv", ["--no-guarantee"], "do not match the schema"),
        ("lap.csv", ["--holdout", "test.csv"], "--holdout is only used with --target"),
        ("lap.csv", ["--holdout", "test-no-income.csv", "--target", "income"], "no column"),
        ("lap.csv", ["--target", "nope"], "not a column"),
    ],
)
def test_bad_input_is_one_line_exit_2(files, tmp_path, capsys, release, extra, match):
    extra = [str(files / e) if e.endswith(".csv") else e for e in extra]
    _bad(files, tmp_path, _report(files, release, *extra), capsys, match)


def test_a_corrupt_sidecar_is_refused(files, tmp_path, capsys):
    rel = tmp_path / "rel.csv"
    rel.write_bytes((files / "lap.csv").read_bytes())
    side = tmp_path / "rel.csv.guarantee.json"
    side.write_text("{not json", encoding="utf-8")
    out = tmp_path / "bad.html"
    argv = [
        "report", str(rel), "--original", str(files / "orig.csv"),
        "--schema", str(files / "adult.json"), "-o", str(out),
    ]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "corrupt" in err
    assert not out.exists()


def test_an_output_folder_or_existing_file_is_refused(files, tmp_path, capsys):
    (tmp_path / "folder.html").mkdir()
    argv = _report(files, "same.csv")
    assert main([*argv, "-o", str(tmp_path / "folder.html")]) == 2
    assert "is a folder" in capsys.readouterr().err
    existing = tmp_path / "old.html"
    existing.write_text("old", encoding="utf-8")
    assert main([*argv, "-o", str(existing)]) == 2
    assert "--force" in capsys.readouterr().err
    assert existing.read_text(encoding="utf-8") == "old"


def test_without_matplotlib_it_names_the_extra(files, tmp_path, capsys, monkeypatch):
    for name in list(sys.modules):
        if name == "matplotlib" or name.startswith("matplotlib."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "r.html"
    assert main([*_report(files, "same.csv"), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'ppdp[plots]'" in err
    assert not out.exists()


@pytest.fixture(scope="module")
def model(files):
    path = files / "model.json"
    argv = [
        "train", "logreg", str(files / "orig.csv"), "--schema", str(files / "adult.json"),
        "--epsilon", "2", "-o", str(path), "-q",
    ]  # fmt: skip
    assert main(argv) == 0
    return path


@pytest.mark.parametrize("with_original", [False, True])
def test_a_model_is_reported_on_the_holdout(files, model, tmp_path, capsys, with_original):
    out, js = tmp_path / "m.html", tmp_path / "m.json"
    argv = ["report", str(model), "--holdout", str(files / "test.csv")]
    if with_original:
        argv += ["--original", str(files / "orig.csv")]
    assert main([*argv, "-o", str(out), "--json", str(js)]) == 0
    assert capsys.readouterr().out.startswith("verdict: ")
    data = json.loads(js.read_text(encoding="utf-8"))
    assert data["kind"] == "model"
    assert data["ml_utility"]["n_test"] == 500
    assert data["verdict"] in ("useful", "weak", "no better than the trivial baseline")
    assert data["guarantee"]["epsilon"] == 2.0
    text = out.read_text(encoding="utf-8")
    assert "Quality report of a private model" in text and "For the custodian only" in text


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        ([], "--holdout"),
        (["--holdout", "test-no-income.csv"], "no column 'income'"),
        (["--holdout", "test.csv", "--target", "sex"], "not the model's label"),
    ],
)
def test_bad_model_input_is_one_line_exit_2(files, model, tmp_path, capsys, extra, match):
    extra = [str(files / e) if e.endswith(".csv") else e for e in extra]
    _bad(files, tmp_path, ["report", str(model), *extra], capsys, match)


def test_a_table_needs_original_and_schema(files, tmp_path, capsys):
    argv = ["report", str(files / "lap.csv"), "--schema", str(files / "adult.json")]
    _bad(files, tmp_path, argv, capsys, "--original is required")


def test_an_unwritable_or_missing_output_folder_is_refused(files, tmp_path, capsys, monkeypatch):
    import ppdp._io

    argv = _report(files, "same.csv")
    assert main([*argv, "-o", str(tmp_path / "nowhere" / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not exist" in err

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(ppdp._io.tempfile, "mkstemp", refuse)  # root ignores chmod
    assert main([*argv, "-o", str(tmp_path / "r.html"), "--json", str(tmp_path / "r.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot write" in err and "Permission denied" in err
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def projection(files):
    out = files / "proj.csv"
    argv = [
        "publish", "lda-projection", str(files / "orig.csv"), "--schema", str(files / "adult.json"),
        "--epsilon", "0.5", "--delta", "1e-6", "-o", str(out), "-q", "--seed", "3",
        "--class-counts", _class_counts(files),
    ]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LowUtilityWarning)  # the point of this release
        assert main(argv) == 0
    return out


def _class_counts(files):
    import pandas as pd

    counts = pd.read_csv(files / "orig.csv")["income"].value_counts()
    return f"{counts['<=50K']},{counts['>50K']}"


def test_an_lda_projection_release_is_reported(files, projection, tmp_path, capsys):
    out, js = tmp_path / "p.html", tmp_path / "p.json"
    capsys.readouterr()
    argv = _report(files, "proj.csv", "--holdout", str(files / "test.csv"))
    assert main([*argv, "-o", str(out), "--json", str(js)]) == 0
    stdout = capsys.readouterr().out
    # the verdict alone on its line, the numbers behind it on the next
    assert stdout.startswith("verdict: no better than the trivial baseline\n  the released rows")
    data = json.loads(js.read_text(encoding="utf-8"))
    assert data["kind"] == "lda-projection"
    assert data["release_info"]["method"] == "lda-projection"
    assert data["ml_utility"]["n_test"] == 500
    assert data["ml_utility"]["direction"]["auc"] > 0.6
    assert "Quality report of an LDA projection release" in out.read_text(encoding="utf-8")


def test_an_lda_projection_release_needs_its_sidecar(files, projection, tmp_path, capsys):
    rel = tmp_path / "p.csv"
    rel.write_bytes(projection.read_bytes())
    out = tmp_path / "bad.html"
    argv = [
        "report", str(rel), "--original", str(files / "orig.csv"),
        "--schema", str(files / "adult.json"), "-o", str(out),
    ]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "looks like an LDA projection release" in err
    assert not out.exists()


def test_an_lda_projection_report_refuses_another_target(files, projection, tmp_path, capsys):
    argv = _report(files, "proj.csv", "--target", "sex")
    _bad(files, tmp_path, argv, capsys, "not the schema's label")
