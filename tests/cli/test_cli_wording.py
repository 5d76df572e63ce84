"""Trial item 6: the CLI speaks in flags, its help names every method, and the README's
examples run as written."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ppdp.cli import build_parser, main
from ppdp.registry import PUBLISHERS

README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.fixture
def labelled(tmp_path, monkeypatch):
    """``data.csv`` (700 rows of class 0, 300 of class 1) and ``s.json`` in the cwd."""
    rng = np.random.default_rng(2)
    y = np.repeat([0, 1], [700, 300])
    df = pd.DataFrame({"a": rng.uniform(0, 1, 1000) + y, "b": rng.uniform(0, 1, 1000), "y": y})
    df.to_csv(tmp_path / "data.csv", index=False)
    spec = {
        "schema_version": 1,
        "columns": [
            {"name": "a", "type": "numeric", "lower": 0, "upper": 2},
            {"name": "b", "type": "numeric", "lower": 0, "upper": 1},
        ],
        "label": {"name": "y", "classes": [0, 1]},
    }
    (tmp_path / "s.json").write_text(json.dumps(spec))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _error(capsys):
    err = capsys.readouterr().err
    (line,) = [e for e in err.splitlines() if e.startswith("ppdp: error")]
    return line


def test_the_publish_line_of_ppdp_help_names_every_method():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.choices and "publish" in a.choices)
    line = next(c.help for c in sub._choices_actions if c.dest == "publish")
    assert line.startswith("release a private table: synth (")
    for method in PUBLISHERS.names():
        assert re.search(rf"\b{re.escape(method)}\b", line), method


def test_the_readme_lda_projection_example_runs_as_written(labelled, capsys):
    text = README.read_text(encoding="utf-8")
    (line,) = [x for x in text.splitlines() if x.startswith("$ ppdp publish lda-projection")]
    argv = shlex.split(line[len("$ ppdp ") :], comments=True)
    assert main([*argv, "-q"]) == 0, capsys.readouterr().err
    assert (labelled / "proj.csv").exists()


def test_missing_class_counts_names_the_flag(labelled, capsys):
    argv = ["publish", "lda-projection", "data.csv", "--schema", "s.json", "--epsilon", "1"]
    assert main([*argv, "--delta", "1e-6", "-o", "p.csv"]) == 2
    err = _error(capsys)
    assert err.startswith("ppdp: error: --class-counts (not given): ")
    assert "pass --class-counts N1,N2,..." in err and "class_counts" not in err
    assert main([*argv, "--delta", "1e-6", "-o", "p.csv", "--class-counts", "1000"]) == 2
    assert _error(capsys).startswith("ppdp: error: --class-counts ([1000]) must give one size")


def test_hybrid_svm_without_public_names_the_flag(labelled, capsys):
    argv = ["train", "hybrid-svm", "data.csv", "--schema", "s.json", "--epsilon", "1"]
    assert main([*argv, "-o", "m.json"]) == 2
    err = _error(capsys)
    assert "--public (not given) is required for hybrid-svm" in err
    assert "public (None)" not in err


@pytest.mark.parametrize(
    "command", [["publish", "synth"], ["train", "svm"], ["budget", "init"], ["report"]]
)
def test_help_states_only_defaults_that_say_something(command, capsys):
    """New-user trial: entries read '(default 16) (default: None)'."""
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    out = capsys.readouterr().out
    assert "(default: None)" not in out and "(default: False)" not in out
    assert "(default: utf-8)" in out or command == ["budget", "init"]


def _names_of(*argv: str) -> dict[str, str]:
    """The flag names of the (sub-)sub-command ``argv`` selects, as ``main`` builds them."""
    from ppdp.cli import _deepest, _flag_names

    parser = build_parser()
    args, _ = parser.parse_known_args(list(argv))
    return _flag_names(_deepest(parser, args))


@pytest.mark.parametrize(
    ("argv", "library", "cli"),
    [
        (("budget", "init", "L", "--dataset-id", "x", "--epsilon", "1"),
         "dataset_id ('') must be a non-empty string", "--dataset-id ('') must be"),
        (("publish", "pca", "IN", "-o", "O", "--schema", "S", "--epsilon", "1"),
         "n_components (0) must be an integer >= 1", "--components (0) must be"),
        (("publish", "pca", "IN", "-o", "O", "--schema", "S", "--epsilon", "1"),
         "epsilon (20.0) must be in (0, 10]; pass allow_large_epsilon=True to accept",
         "--epsilon (20.0) must be in (0, 10]; add --allow-large-epsilon to accept"),
        (("publish", "lda-synth", "IN", "-o", "O", "--schema", "S", "--epsilon", "1"),
         "class_counts (None) is required", "--class-counts (not given) is required"),
        (("publish", "synth", "IN", "-o", "O", "--schema", "S", "--epsilon", "1"),
         "the plan is too large: use n_bins <= 8", "use --bins <= 8"),
    ],
)  # fmt: skip
def test_library_parameter_names_read_as_the_commands_flags(argv, library, cli):
    """The library names its parameters; on the command line the same line names the flag
    that sets it (one regression: ``ppdp schema draft --max-categories 0`` said
    ``max_categories (0)``)."""
    from ppdp.cli import _cli_words

    assert cli in _cli_words(f"ppdp: error: {library}", _names_of(*argv))


def test_english_words_stay_words_and_other_commands_flags_stay_python():
    """``epsilon`` is replaced only as the subject the message opens with, never inside a
    sentence; a parameter the command has no flag for is left as the library wrote it."""
    from ppdp.cli import _cli_words

    names = _names_of("publish", "synth", "IN", "-o", "O", "--schema", "S", "--epsilon", "1")
    text = "ppdp: error: the ledger's epsilon (3) is spent; the schema (s.json) declares 2"
    assert _cli_words(text, names) == text
    text = "ppdp: error: budget_epsilon (2.0) must be > 0"  # a flag of federate init only
    assert _cli_words(text, names) == text
    assert _cli_words("ppdp: error: schema (None) is required", names) == (
        "ppdp: error: --schema (not given) is required"
    )
