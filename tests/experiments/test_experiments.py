"""The experiments framework: registry, configs, and a tiny run of each experiment.

Runs use a 600-row subsample of Adult and the smallest grids, so each takes seconds; the
publishers are the real ones where they exist (the ``publishers`` fixture says which).
"""

from __future__ import annotations

import importlib.util
import json
import warnings
from dataclasses import FrozenInstanceError

import pandas as pd
import pytest

from ppdp.exceptions import InsecureRandomnessWarning, ParameterError, ParameterTypeError
from ppdp.experiments import (
    EXPERIMENTS,
    ExperimentResult,
    _framework,
    get_experiment,
    jiang2013_fig2,
    jiang2013_fig3,
    jiang2013_fig4,
    list_experiments,
    run_experiment,
)
from ppdp.experiments._registry import _available

# The experiments write PNG plots: they need the `plots` extra (part of `dev`).
needs_matplotlib = pytest.mark.skipif(
    importlib.util.find_spec("matplotlib") is None,
    reason="matplotlib is not installed: pip install 'ppdp[plots]'",
)

TINY = {
    "jiang2013-fig2": {"epsilons": (1.0, 1.5), "components": (1, 3), "trials": 2},
    "jiang2013-fig3": {"epsilons": (1.0, 1.5), "trials": 2},
    "jiang2013-fig4": {"epsilons": (1.0, 1.5), "trials": 2},
}
N_ROWS = 1500


def test_registry_lists_the_three_experiments():
    assert list(EXPERIMENTS)[:3] == ["jiang2013-fig2", "jiang2013-fig3", "jiang2013-fig4"]
    infos = list_experiments()
    assert [i.id for i in infos] == [i for i in EXPERIMENTS if _available(i)]
    assert all("Jiang et al. 2013" in i.title for i in infos[:3])


def test_unknown_id_lists_the_known_ones():
    with pytest.raises(ParameterError, match="known: jiang2013-fig2, jiang2013-fig3"):
        get_experiment("fig9")
    with pytest.raises(ParameterTypeError):
        get_experiment(2)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "module", [jiang2013_fig2, jiang2013_fig3, jiang2013_fig4], ids=lambda m: m.ID
)
def test_configs_full_quick_frozen_validated(module):
    full, quick = module.Config.full(), module.Config.quick()
    assert full.epsilons == (0.1, 0.25, 0.5, 1.0, 1.25, 1.5)
    assert full.trials == 10
    assert len(quick.epsilons) < len(full.epsilons) and quick.trials < full.trials
    assert module.Config.quick(seed=7).seed == 7
    with pytest.raises(FrozenInstanceError):
        full.trials = 3  # type: ignore[misc]
    with pytest.raises(ParameterError, match="epsilons"):
        module.Config(epsilons=(0.5, -1.0))
    with pytest.raises(ParameterError, match="trials"):
        module.Config(trials=0)
    with pytest.raises(ParameterError, match="n_rows"):
        module.Config(n_rows=5)


def test_fig2_full_grid_is_the_papers():
    c = jiang2013_fig2.Config.full()
    assert c.components == tuple(range(1, 11))


def test_seed_sequences_are_distinct_and_reproducible():
    a = _framework.seed_sequence(1, 2, 3).generate_state(2)
    assert (a == _framework.seed_sequence(1, 2, 3).generate_state(2)).all()
    assert (a != _framework.seed_sequence(1, 3, 2).generate_state(2)).any()


@pytest.mark.parametrize("experiment_id", list(TINY))
@needs_matplotlib
def test_tiny_run_writes_every_output(experiment_id, tmp_path, publishers):
    seen: list[tuple[int, int, str]] = []
    with warnings.catch_warnings():
        # Seeded-randomness warnings must be collected by the run, not leak out.
        warnings.simplefilter("error", InsecureRandomnessWarning)
        result = run_experiment(
            experiment_id,
            out_dir=tmp_path / "out",
            seed=3,
            n_rows=N_ROWS,
            progress=lambda d, t, m: seen.append((d, t, m)),
            **TINY[experiment_id],
        )
    assert isinstance(result, ExperimentResult)
    suffixes = sorted({p.suffix for p in result.files})
    assert suffixes == [".csv", ".json", ".md", ".png"]
    for path in result.files:
        assert path.exists() and path.stat().st_size > 0
        assert path.parent == tmp_path / "out"
        if path.suffix == ".png":
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            assert path.stat().st_size < 200_000
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert config["experiment"] == experiment_id
    assert config["config"]["seed"] == 3 and config["config"]["n_rows"] == N_ROWS
    assert config["seeded"] is True
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert summary == result.summary
    assert "Paper vs ours" in summary and "differ" in summary and "seeded" in summary
    assert f"Subsample of {N_ROWS} rows" in summary
    results = pd.read_csv(tmp_path / "out" / "results.csv")
    assert len(results) > 0 and results.select_dtypes("number").notna().any().all()
    # progress: counts up to its total, one call per release
    assert [d for d, _, _ in seen] == list(range(1, seen[-1][1] + 1))
    assert not list((tmp_path / "out").glob("*.part"))  # nothing half-written


@needs_matplotlib
def test_fig2_results_and_tests(tmp_path, publishers):
    result = run_experiment(
        "jiang2013-fig2", out_dir=tmp_path, n_rows=N_ROWS, **TINY["jiang2013-fig2"]
    )
    res = pd.read_csv(tmp_path / "results.csv")
    # LAP and EXP once per (eps, trial); DP-PCA once per (eps, k, trial)
    counts = res.groupby("method").size().to_dict()
    assert counts == {"DP-PCA": 2 * 2 * 2, "LAP": 2 * 2, "EXP": 2 * 2}
    assert (res.frobenius >= 0).all()
    assert res.mse.to_numpy() == pytest.approx(res.frobenius.to_numpy() / (N_ROWS * 35))
    energy = pd.read_csv(tmp_path / "energy.csv")
    assert len(energy) == 35 and energy.energy.sum() == pytest.approx(1.0)
    assert energy.energy.is_monotonic_decreasing
    tests = pd.read_csv(tmp_path / "tests.csv")
    assert set(tests.versus) == {"LAP", "EXP"} and len(tests) == 2 * 2 * 2
    assert tests.p_value_one_sided.between(0, 1).all()
    assert set(result.key_numbers) >= {"dppca_below_lap_everywhere", "max_p_value"}


@needs_matplotlib
def test_fig3_has_reference_lines(tmp_path, publishers):
    run_experiment("jiang2013-fig3", out_dir=tmp_path, n_rows=N_ROWS, **TINY["jiang2013-fig3"])
    res = pd.read_csv(tmp_path / "results.csv")
    la = res[res.method == "LA"]
    assert (la.auc == 0.5).all() and la.accuracy.between(0.6, 0.9).all()
    assert set(res.classifier) == {"lda", "tree"}
    assert set(res.method) == {"BA", "LA", "DP-LDA", "DP-PCA", "LAP", "EXP"}
    private = res[~res.method.isin(["BA", "LA"])]
    assert private.accuracy.between(0, 1).all() and private.auc.between(0, 1).all()


@needs_matplotlib
def test_fig4_values(tmp_path, publishers):
    run_experiment("jiang2013-fig4", out_dir=tmp_path, n_rows=N_ROWS, **TINY["jiang2013-fig4"])
    res = pd.read_csv(tmp_path / "results.csv")
    assert (res.entropy > 0).all() and (res.kl >= 0).all()
    assert len(res) == 2 * 2 * 4
    others = res[res.method != "DP-LDA"]
    assert others.stat_error_noisy.isna().all() and others.stat_error_synthetic.isna().all()
    if publishers["DP-LDA"] == "real":
        lda = res[res.method == "DP-LDA"]
        assert (lda.stat_error_noisy > 0).all() and (lda.stat_error_synthetic > 0).all()


@needs_matplotlib
def test_run_is_reproducible(tmp_path, standins):
    kw = {"n_rows": N_ROWS, "epsilons": (1.0,), "components": (2,), "trials": 2}
    run_experiment("jiang2013-fig2", out_dir=tmp_path / "a", seed=11, **kw)
    run_experiment("jiang2013-fig2", out_dir=tmp_path / "b", seed=11, **kw)
    run_experiment("jiang2013-fig2", out_dir=tmp_path / "c", seed=12, **kw)
    a, b, c = (pd.read_csv(tmp_path / d / "results.csv") for d in "abc")
    pd.testing.assert_frame_equal(a, b)
    assert not a.frobenius.equals(c.frobenius)


def test_missing_matplotlib_fails_before_any_work(tmp_path, monkeypatch, standins):
    import sys

    from ppdp.exceptions import OptionalDependencyError

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(OptionalDependencyError, match=r"ppdp\[plots\]"):
        run_experiment("jiang2013-fig4", out_dir=tmp_path / "x", quick=True)
    assert not (tmp_path / "x").exists()
