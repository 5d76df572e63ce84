"""The Wu experiments: tiny runs write every output and show the properties the report
claims (or say why not); configs validate; the population helpers are exact."""

from __future__ import annotations

import importlib.util
import json
import math
from dataclasses import FrozenInstanceError

import numpy as np
import pandas as pd
import pytest

from ppdp.exceptions import ParameterError
from ppdp.experiments import EXPERIMENTS, _wu, run_experiment, wu_fig1, wu_fig2, wu_fig3, wu_fig4

needs_matplotlib = pytest.mark.skipif(
    importlib.util.find_spec("matplotlib") is None,
    reason="matplotlib is not installed: pip install 'ppdp[plots]'",
)


def _check_files(result, out, experiment_id):
    assert sorted({p.suffix for p in result.files}) == [".csv", ".json", ".md", ".png"]
    for path in result.files:
        assert path.exists() and path.stat().st_size > 0 and path.parent == out
        if path.suffix == ".png":
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((out / "config.json").read_text())["experiment"] == experiment_id
    summary = (out / "summary.md").read_text()
    assert summary == result.summary
    assert "vs ours" in summary and "differ" in summary and "seeded" in summary
    assert not list(out.glob("*.part"))


def test_registered_and_configs_validate():
    assert {"wu-fig1", "wu-fig2", "wu-fig3", "wu-fig4"} <= set(EXPERIMENTS)
    for module in (wu_fig1, wu_fig2, wu_fig3, wu_fig4):
        full, quick = module.Config.full(), module.Config.quick()
        with pytest.raises(FrozenInstanceError):
            full.seed = 1  # type: ignore[misc]
        assert quick != full
    assert wu_fig1.Config.full().n == 500_000 and wu_fig1.Config.full().harmonics == 12
    assert wu_fig2.Config.full().n == 100_000 and wu_fig2.Config.full().harmonics[0] == 12
    f3 = wu_fig3.Config.full()
    assert (f3.n, f3.k, f3.gamma, f3.sigma) == (10_000, 30, 0.5, 1.0)
    with pytest.raises(ParameterError):
        wu_fig1.Config(n=10)
    with pytest.raises(ParameterError):
        wu_fig2.Config(noises=(("cauchy", 1.0),))
    with pytest.raises(ParameterError):
        wu_fig4.Config(sigmas=(0.0,))
    with pytest.raises(TypeError):
        wu_fig1.run(wu_fig2.Config.quick(), "x")


def test_population_helpers():
    edges = np.linspace(0, 1, 11)
    p = _wu.bimodal_probabilities(edges)
    assert p.sum() == pytest.approx(1.0, abs=1e-12) and (p > 0).all()
    # the density integrates to the bin probabilities
    x = np.linspace(0, 1, 200_001)
    dens = _wu.bimodal_density(x)
    assert np.trapezoid(dens, x) == pytest.approx(1.0, abs=1e-8)
    assert _wu.bimodal_density(np.array([-0.1, 1.1])).tolist() == [0.0, 0.0]
    s = _wu.bimodal_sample(50_000, np.random.SeedSequence(1))
    assert s.size == 50_000 and s.min() >= 0 and s.max() <= 1
    # 10 bins, n = 50,000: the empirical histogram is within 0.01 of the law (sd ~ 0.004)
    assert _wu.half_l1(_wu.empirical_probabilities(s, edges), p) < 0.01
    # C.5's numbers: the continuous bound at γ = 0.5, σ = 1 and at γ = 1, σ = 4
    assert _wu.continuous_gaussian_epsilon(1.0, 2 * math.sqrt(2), 1e-6) == pytest.approx(
        16.86, abs=0.01
    )
    assert _wu.continuous_gaussian_epsilon(4.0, math.sqrt(2), 1e-6) == pytest.approx(1.54, abs=0.01)


@needs_matplotlib
def test_fig1_tiny(tmp_path):
    out = tmp_path / "f1"
    result = run_experiment("wu-fig1", out_dir=out, n=20_000)
    _check_files(result, out, "wu-fig1")
    k = result.key_numbers
    assert k["wu_setting_refused"] is True  # Wu's U[0, 20] is degenerate
    assert k["min_abs_phi"] == pytest.approx(abs(np.sinc(8 * 2 / 15)), rel=1e-9)
    res = pd.read_csv(out / "results.csv")
    width = res.bin_high - res.bin_low
    # Both estimates recover most of the truth: their loss is well below the uninformative
    # uniform guess's, recomputed here (at n = 20,000 the losses vary with the seed, from
    # about 0.07 to 0.17 over seeds 0-5, against about 0.34 for the uniform guess).
    truth = res.true_density * width
    uniform_loss = 0.5 * float(np.abs(truth - width / width.sum()).sum())
    assert k["fourier_wu_loss"] < uniform_loss * 2 / 3 and k["em_wu_loss"] < uniform_loss * 2 / 3
    for col in ("true_density", "fourier_density", "em_density", "population_density"):
        assert (res[col] * width).sum() == pytest.approx(1.0, abs=1e-9)
    phi = pd.read_csv(out / "phi.csv")
    assert (phi.abs_phi_wu_u0_20 < 1e-12).all() and (phi.abs_phi_ours > 0.06).all()
    assert "no finite local ε" in result.summary


@needs_matplotlib
def test_fig2_tiny(tmp_path):
    out = tmp_path / "f2"
    result = run_experiment(
        "wu-fig2",
        out_dir=out,
        n=5_000,
        trials=2,
        harmonics=(12, 6),
        tapers=("fejer",),
        shrinkages=("soft",),
        extra_tols=(1e-4,),
        confirm_seeds=(7,),
    )
    _check_files(result, out, "wu-fig2")
    res = pd.read_csv(out / "results.csv")
    # root seed: 2 noises × 2 trials × (uniform + 12, 6, 12-fejer, 12-soft); the same ×
    # (uniform + 12) at 1e-4; confirmation seed: × (uniform + 12, 12-fejer, 12-soft)
    assert len(res) == 2 * 2 * 5 + 2 * 2 * 2 + 2 * 2 * 4
    assert res.converged.all() and (res.iterations >= 1).all()
    assert set(res.init) == {
        "uniform",
        "fourier-12",
        "fourier-6",
        "fourier-12-fejer",
        "fourier-12-soft",
    }
    assert set(res[res.seed == 7].init) == {
        "uniform",
        "fourier-12",
        "fourier-12-fejer",
        "fourier-12-soft",
    }
    assert set(res.smoothing) == {"none", "taper fejer", "shrinkage soft"}
    # the smoothed start is the shrunk Fourier estimate: on the same reports it is closer
    # to the truth than the raw 12-harmonic start
    main = res[(res.seed == 2003) & (res.tol == 1e-3)].set_index(["noise", "trial", "init"])
    raw = main.xs("fourier-12", level="init").start_wu_loss
    soft = main.xs("fourier-12-soft", level="init").start_wu_loss
    assert (soft < raw).all()
    summ = pd.read_csv(out / "summary.csv")
    assert len(summ) == 2 * 4 + 2 + 2 * 3
    assert set(summ.columns) >= {"target_met", "iterations_fourier", "start", "seed"}
    assert "With tighter tolerances" in result.summary
    assert "| seed 2003 | seed 7 |" in result.summary and "paired" in result.summary
    k = result.key_numbers
    assert isinstance(k["target_met"], bool)
    assert set(k["target_met_by_start_and_seed"]) == {
        "fourier-12",
        "fourier-12-fejer",
        "fourier-12-soft",
    }
    assert set(k["starts_meeting_target_on_every_seed_by_noise"]) == {"uniform", "gaussian"}


def test_fig2_config_validates_smoothing():
    with pytest.raises(ParameterError, match="tapers"):
        wu_fig2.Config(tapers=("boxcar",))
    with pytest.raises(ParameterError, match="shrinkages"):
        wu_fig2.Config(shrinkages=("james-stein",))
    with pytest.raises(ParameterError, match="confirm_seeds"):
        wu_fig2.Config(confirm_seeds=(-1,))
    # the root seed is not repeated as a confirmation seed
    assert wu_fig2.Config(seed=3001).confirm_seeds == (3002, 3003)


@needs_matplotlib
def test_fig3_guarantee_beside_the_estimate(tmp_path):
    out = tmp_path / "f3"
    result = run_experiment("wu-fig3", out_dir=out, trials=2)
    _check_files(result, out, "wu-fig3")
    k = result.key_numbers
    # exact lattice ε at δ = 1e-6 lies below the continuous bound 16.86 (C.5), above 16
    assert 16.0 < k["epsilon_at_1e-6"] <= k["epsilon_bound_at_1e-6"] < 16.9
    assert 1e-6 < k["delta_at_16"] < 3e-6  # C.5: δ ≈ 2e-6 at ε = 16
    assert 1 / 30 < k["map_success_uniform_prior"] < 1
    assert k["wu_loss_mean"] < 0.1
    res = pd.read_csv(out / "results.csv")
    assert len(res) == 30 and res.estimate.sum() == pytest.approx(1.0)
    assert (res.estimate >= 0).all()
    assert "1e-06" in result.summary and "essentially no local privacy" in result.summary


@needs_matplotlib
def test_fig4_loss_falls_with_n(tmp_path):
    out = tmp_path / "f4"
    result = run_experiment("wu-fig4", out_dir=out, quick=True)
    _check_files(result, out, "wu-fig4")
    k = result.key_numbers
    assert k["falls_for_every_sigma"] is True
    assert k["epsilons"]["1"] == pytest.approx(7.13, abs=0.05)
    assert k["epsilons"]["4"] == pytest.approx(1.54, abs=0.02)
    assert all(-0.7 < s < -0.2 for s in k["slopes"].values())
