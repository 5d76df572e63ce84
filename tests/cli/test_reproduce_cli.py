"""``ppdp reproduce``: list, unknown IDs, exit codes, and a tiny run through the CLI."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import ppdp.cli
from ppdp.cli import main
from ppdp.experiments import EXPERIMENTS


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    """Register the sub-command even before the dispatcher lists it."""
    if "ppdp.cli._reproduce" not in ppdp.cli._COMMAND_MODULES:
        monkeypatch.setattr(
            ppdp.cli, "_COMMAND_MODULES", (*ppdp.cli._COMMAND_MODULES, "ppdp.cli._reproduce")
        )


def test_list(capsys):
    assert main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out] == list(EXPERIMENTS)


def test_unknown_id_is_one_line_exit_2(capsys, tmp_path):
    assert main(["reproduce", "fig99", "-o", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "unknown experiment 'fig99'" in err and "jiang2013-fig2" in err
    assert not (tmp_path / "x").exists()


def test_missing_id_exit_2(capsys):
    assert main(["reproduce"]) == 2
    assert "no experiment given" in capsys.readouterr().err


def test_bad_seed_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "jiang2013-fig2", "--seed", "abc"])
    assert exc.value.code == 2
    assert main(["reproduce", "jiang2013-fig2", "--seed", "-1"]) == 2
    assert "seed (-1)" in capsys.readouterr().err


class _Identity:
    """A stand-in publisher that releases the table unchanged (CLI plumbing only)."""

    def __init__(self, epsilon, schema, k, random_state, **options):
        self.schema = schema

    def fit(self, df, accountant=None):
        enc = self.schema.encode(df, include_label=True)[0]
        self.release_ = SimpleNamespace(data=df, encoded=enc)
        return self


def test_tiny_run_through_the_cli(capsys, tmp_path, monkeypatch):
    """The CLI passes --quick, --seed and -o through and reports progress on stderr."""
    pytest.importorskip("matplotlib", reason="the experiments' plots need the plots extra")
    from ppdp.experiments import _methods, _registry

    monkeypatch.setattr(_methods, "PUBLISHERS", dict.fromkeys(_methods.PUBLISHERS, _Identity))

    calls = {}
    real = _registry.ExperimentInfo.config

    def small(self, *, quick=False, seed=None, **overrides):
        calls["quick"], calls["seed"] = quick, seed
        return real(self, quick=quick, seed=seed, n_rows=1500, trials=2, epsilons=(1.0,))

    monkeypatch.setattr(_registry.ExperimentInfo, "config", small)
    out_dir = tmp_path / "fig4"
    assert main(["reproduce", "jiang2013-fig4", "--quick", "--seed", "5", "-o", str(out_dir)]) == 0
    assert calls == {"quick": True, "seed": 5}
    captured = capsys.readouterr()
    assert "[1/8] eps=1 DP-LDA trial 1" in captured.err
    assert "summary.md" in captured.out
    assert (out_dir / "summary.md").exists() and (out_dir / "results.csv").exists()
