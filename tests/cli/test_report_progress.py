"""``ppdp report`` says on stderr what it is doing (a wide report takes a while) where progress
bars would be drawn (a terminal; here ``is_active`` is made true, as on a terminal); ``-q``
silences it, and a piped stderr keeps only its error lines; stdout keeps the verdict and the
paths only."""

from __future__ import annotations

import pytest

from ppdp.cli import main
from ppdp.datasets import load_adult

pytest.importorskip("matplotlib")


@pytest.fixture
def files(tmp_path):
    df, schema = load_adult()
    df = df.sample(600, random_state=0)
    orig, rel, s = tmp_path / "o.csv", tmp_path / "r.csv", tmp_path / "s.json"
    df.to_csv(orig, index=False)
    df.sample(frac=1.0, random_state=1).to_csv(rel, index=False)
    schema.to_file(s)
    return orig, rel, s, tmp_path


def _argv(files, name, *extra):
    orig, rel, s, tmp = files
    return [*extra, "report", str(rel), "--original", str(orig), "--schema", str(s),
            "--no-guarantee", "-o", str(tmp / name)]  # fmt: skip


@pytest.fixture
def terminal(monkeypatch):
    from ppdp import _progress

    monkeypatch.setattr(_progress, "is_active", lambda: True)


def test_the_report_says_what_it_is_doing(files, capsys, terminal):
    assert main(_argv(files, "a.html")) == 0
    out, err = capsys.readouterr()
    lines = [x for x in err.splitlines() if x.startswith("ppdp report: ")]
    stages = " | ".join(lines)
    for stage in ("reading", "marginals of 11 columns", "55 pairs", "correlations", "writing"):
        assert stage in stages, stages
    assert out.startswith("verdict: useful")
    assert "ppdp report:" not in out


def test_quiet_silences_it(files, capsys, terminal):
    assert main(_argv(files, "b.html", "-q")) == 0
    _, err = capsys.readouterr()
    assert "ppdp report: " not in err


def test_a_piped_stderr_gets_no_stage_lines(files, capsys):
    assert main(_argv(files, "c.html")) == 0
    assert "ppdp report: " not in capsys.readouterr().err
