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


def _stub_run(monkeypatch):
    """``run_experiment`` writing only a run's config (the folder rules, not the figure)."""
    import json

    import ppdp.experiments

    calls = []

    def run(experiment_id, *, out_dir, progress=None, quick=False, seed=None):
        calls.append(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / "config.json"
        path.write_text(json.dumps({"experiment": experiment_id}))
        return SimpleNamespace(experiment_id=experiment_id, files=[path])

    monkeypatch.setattr(ppdp.experiments, "run_experiment", run)
    return calls


def test_an_explicit_folder_with_results_needs_force(capsys, tmp_path, monkeypatch):
    calls = _stub_run(monkeypatch)
    out = tmp_path / "res"
    argv = ["reproduce", "wu-fig1", "--quick", "-o", str(out)]
    assert main(argv) == 0 and len(calls) == 1
    capsys.readouterr()
    (out / "config.json").write_text('{"experiment": "wu-fig1", "mine": 1}')
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1
    assert err == (
        f"ppdp: error: --output ({str(out)!r}) holds the results of a previous run of "
        "'wu-fig1'; choose another folder, or pass --force to replace them\n"
    )
    assert len(calls) == 1 and '"mine"' in (out / "config.json").read_text()  # nothing run
    assert main([*argv, "--force"]) == 0 and len(calls) == 2
    captured = capsys.readouterr()
    assert f"ppdp reproduce: replacing the results of a previous run of 'wu-fig1' in {out}" in (
        captured.err
    )


def test_the_default_folder_is_replaced_and_named(capsys, tmp_path, monkeypatch):
    from pathlib import Path

    calls = _stub_run(monkeypatch)
    monkeypatch.chdir(tmp_path)
    default = Path("experiments-results", "wu-fig1-quick")
    assert main(["reproduce", "wu-fig1", "--quick"]) == 0
    assert "replacing" not in capsys.readouterr().err
    assert main(["reproduce", "wu-fig1", "--quick"]) == 0 and calls == [default, default]
    line = f"ppdp reproduce: replacing the results of a previous run of 'wu-fig1' in {default}"
    assert line in capsys.readouterr().err
    assert main(["-q", "reproduce", "wu-fig1", "--quick"]) == 0  # -q: not said
    assert "replacing" not in capsys.readouterr().err
