"""li2014-*: configs, the shared protocol, and a tiny seeded run of each experiment."""

from __future__ import annotations

import importlib.util
from dataclasses import FrozenInstanceError

import numpy as np
import pandas as pd
import pytest

from ppdp.exceptions import ParameterError
from ppdp.experiments import (
    _li2014,
    get_experiment,
    li2014_auc_vs_dims,
    li2014_auc_vs_epsilon,
    li2014_auc_vs_sampling_rate,
    li2014_time,
)

needs_matplotlib = pytest.mark.skipif(
    importlib.util.find_spec("matplotlib") is None,
    reason="matplotlib is not installed: pip install 'ppdp[plots]'",
)
MODULES = [li2014_auc_vs_epsilon, li2014_auc_vs_dims, li2014_auc_vs_sampling_rate, li2014_time]
TINY = {
    li2014_auc_vs_epsilon: dict(
        epsilons=(0.5, 5.0),
        tuned_dims=(2, 5),
        public_sizes=(20, 40),
        n_public=40,
        n_components=5,
        trials=1,
        diagnostic_trials=2,
        n_rows=1500,
    ),
    li2014_auc_vs_dims: dict(dims=(3, 6), public_sizes=(40,), n_public=40, trials=1, n_rows=1500),
    li2014_auc_vs_sampling_rate: dict(rates=(0.02, 0.05), n_components=5, trials=1, n_rows=1500),
    li2014_time: dict(
        public_sizes=(20, 40),
        fit_dims=(5,),
        private_sizes=(200, 400),
        n_public=40,
        n_components=5,
        svc_max_rows=300,
        trials=1,
        n_rows=1500,
    ),
}


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.ID)
def test_configs_full_quick_frozen_validated(module) -> None:
    full, quick = module.Config.full(), module.Config.quick()
    assert full.n_rows is None and quick.n_rows is not None
    assert module.Config.quick(seed=7).seed == 7
    assert get_experiment(module.ID).module is module
    with pytest.raises(FrozenInstanceError):
        full.trials = 3  # type: ignore[misc]
    for bad in ({"trials": 0}, {"C": -1.0}, {"gamma": 0.0}, {"n_rows": 5}):
        with pytest.raises(ParameterError):
            module.Config(**bad)


def test_config_specific_checks() -> None:
    with pytest.raises(ParameterError, match="epsilons"):
        li2014_auc_vs_epsilon.Config(epsilons=(0.1, -1.0))
    with pytest.raises(ParameterError, match="tuned_dims"):
        li2014_auc_vs_epsilon.Config(tuned_dims=(0, 5))
    assert li2014_auc_vs_epsilon.Config(tuned_dims=()).tuned_dims == ()
    with pytest.raises(ParameterError, match="with_erratum"):
        li2014_auc_vs_epsilon.Config(with_erratum="yes")
    with pytest.raises(ParameterError, match="dims"):
        li2014_auc_vs_dims.Config(dims=(0, 5))
    with pytest.raises(ParameterError, match="rates"):
        li2014_auc_vs_sampling_rate.Config(rates=(0.01, 0.9))


def test_split_is_disjoint_and_seeded() -> None:
    X = np.arange(2000, dtype=float).reshape(-1, 1)
    y = np.arange(2000) % 2
    s = _li2014.split(X, y, seed=1, trial=0, pool_size=100)
    ids = [set(a[:, 0]) for a in (s.X_private, s.X_pool, s.X_test)]
    assert len(ids[1]) == 100 and len(ids[2]) == 200 and len(ids[0]) == 1700
    assert not (ids[0] & ids[1]) and not (ids[0] & ids[2]) and not (ids[1] & ids[2])
    again = _li2014.split(X, y, seed=1, trial=0, pool_size=100)
    np.testing.assert_array_equal(again.X_pool, s.X_pool)
    other = _li2014.split(X, y, seed=1, trial=1, pool_size=100)
    assert not np.array_equal(other.X_pool, s.X_pool)
    capped = _li2014.split(X, y, seed=1, trial=0, pool_size=100, n_private=50)
    assert capped.X_private.shape[0] == 50


def test_erratum_variant_has_n_times_less_noise_and_says_so() -> None:
    X, y = _li2014.adult(1500, 0)
    s = _li2014.split(X, y, seed=0, trial=0, pool_size=40)
    t = _li2014.Trial(0, 0)
    runs = _li2014.SeededRuns()
    kw = dict(
        n_public=40, epsilon=1.0, C=10.0, gamma=0.5, n_components=4, noise_key=(0,), runs=runs
    )
    _, _, ok = _li2014.fit_hybrid(s, t, **kw)
    _, _, bad = _li2014.fit_hybrid(s, t, erratum=True, **kw)
    n = s.X_private.shape[0]
    assert ok.noise_scale_ / bad.noise_scale_ == pytest.approx(n, rel=1e-5)
    assert bad.guarantee_.epsilon == pytest.approx(n * 1.0)  # honest: nε-DP, not ε-DP


def test_paired_noise_adds_the_same_laplace_vector_to_both_learners() -> None:
    """Common random numbers: with the same noise key, hybrid and private release w* + μ
    with the same μ (equal scales), so their AUC difference is due to ρ alone."""
    from ppdp.learn.rbf_svm import solve_svm
    from ppdp.learn.rff import feature_map

    X, y = _li2014.adult(1500, 0)
    s = _li2014.split(X, y, seed=0, trial=0, pool_size=40)
    t = _li2014.Trial(0, 0)
    runs = _li2014.SeededRuns()
    kw = dict(epsilon=1.0, C=10.0, gamma=0.5, n_components=4, noise_key=(1, 0), runs=runs)
    _, _, h = _li2014.fit_hybrid(s, t, n_public=40, **kw)
    _, _, p = _li2014.fit_private(s, t, **kw)
    assert not np.allclose(h.rho_, p.rho_)
    ypm = np.where(s.y_private == 1, 1.0, -1.0)
    mus = []
    for clf in (h, p):
        w, _, _ = solve_svm(feature_map(s.X_private, clf.rho_), ypm, C=10.0, huber_h=0.5)
        mus.append(clf.coef_ - w)
    assert h.noise_scale_ == p.noise_scale_
    assert np.linalg.norm(mus[0]) > 1e-3
    np.testing.assert_allclose(mus[0], mus[1], rtol=0, atol=1e-6)


@needs_matplotlib
@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.ID)
def test_tiny_run_writes_everything_and_is_reproducible(module, tmp_path) -> None:
    config = module.Config(**TINY[module])
    calls = []
    res = module.run(config, tmp_path / "a", progress=lambda d, t, m: calls.append((d, t)))
    for p in res.files:
        assert p.exists() and p.stat().st_size > 0
    names = [p.name for p in res.files]
    assert names[-1] == "summary.md" and "config.json" in names
    assert any(n.endswith(".png") for n in names)
    assert calls and calls[-1][0] == calls[-1][1]
    assert "Adult instead of IPUMS" in res.summary
    assert "Paper vs ours" in res.summary
    if module is not li2014_auc_vs_epsilon:  # the shared protocol: one rerun is enough
        return
    assert "paired_draws.csv" in names and "Hybrid − private, paired" in res.summary
    assert len(res.key_numbers["paired_diff_diagnostic"]) == len(config.epsilons)
    again = module.run(config, tmp_path / "b")
    first = pd.read_csv(res.files[0])
    second = pd.read_csv(again.files[0])
    cols = [c for c in first.columns if c not in ("seconds", "rho_fit_seconds")]
    pd.testing.assert_frame_equal(first[cols], second[cols])  # seeded: same AUCs
