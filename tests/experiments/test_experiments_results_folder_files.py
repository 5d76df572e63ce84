"""``results_folder``: an explicit folder holding a previous run's results is refused
without ``force``; the default folder's are replaced, and said; nothing is touched on a
refusal."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ppdp import _io
from ppdp.exceptions import ParameterError, ParameterTypeError
from ppdp.experiments.files import RUN_MARKER, previous_run, results_folder


def _a_run(folder, experiment="wu-fig1"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / RUN_MARKER).write_text(json.dumps({"experiment": experiment, "config": {}}))
    (folder / "results.csv").write_text("a\n1\n")


def _orphan(folder):
    """A partial file of a process that no longer exists (a killed run)."""
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    path = folder / f".results.csv.{_io.host_tag()}.{int(proc.stdout)}-abc{_io.PART_SUFFIX}"
    path.write_text("partial")
    return path


def test_a_missing_or_empty_folder_is_fine(tmp_path):
    assert results_folder("wu-fig1", tmp_path / "new" / "deeper") == tmp_path / "new" / "deeper"
    (tmp_path / "empty").mkdir()
    assert results_folder("wu-fig1", tmp_path / "empty") == tmp_path / "empty"
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")  # no run's results: fine
    assert results_folder("wu-fig1", tmp_path / "other") == tmp_path / "other"


def test_a_killed_runs_partial_files_are_still_removed(tmp_path):
    orphan = _orphan(tmp_path)
    assert results_folder("wu-fig1", tmp_path) == tmp_path
    assert not orphan.exists()


def test_an_explicit_folder_with_a_previous_run_is_refused(tmp_path):
    out = tmp_path / "res"
    _a_run(out, "jiang2013-fig2")
    orphan = _orphan(out)
    before = sorted(p.name for p in out.iterdir())
    with pytest.raises(ParameterError) as exc:
        results_folder("wu-fig1", out)
    line = str(exc.value)
    assert line == (
        f"--output ({str(out)!r}) holds the results of a previous run of 'jiang2013-fig2'; "
        "choose another folder, or pass --force to replace them"
    )
    assert sorted(p.name for p in out.iterdir()) == before and orphan.exists()  # untouched
    said = []
    assert results_folder("wu-fig1", out, force=True, say=said.append) == out
    assert said == [f"replacing the results of a previous run of 'jiang2013-fig2' in {out}"]
    assert not orphan.exists()


def test_a_config_json_that_is_not_a_runs_is_refused_too(tmp_path):
    (tmp_path / RUN_MARKER).write_text("not json")
    assert previous_run(tmp_path) == "a config.json (the results of a previous run?)"
    with pytest.raises(ParameterError, match=r"holds a config\.json"):
        results_folder("wu-fig1", tmp_path)
    assert previous_run(tmp_path / "nope") is None


def test_the_default_folder_is_replaced_and_said(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    said = []
    default = results_folder("wu-fig1", None, quick=True, say=said.append)
    assert default == Path("experiments-results", "wu-fig1-quick")
    assert said == []
    _a_run(tmp_path / default)
    assert results_folder("wu-fig1", None, quick=True, say=said.append) == default
    assert said == [f"replacing the results of a previous run of 'wu-fig1' in {default}"]
    assert results_folder("wu-fig1", None, quick=True) == default  # no say: still fine


def test_force_must_be_a_bool(tmp_path):
    with pytest.raises(ParameterTypeError, match=r"force \('yes'\) must be True or False"):
        results_folder("wu-fig1", tmp_path, force="yes")
