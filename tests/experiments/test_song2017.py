"""The Song et al. (2017) experiments: tiny runs write every output and show the paper's
orderings; configs validate; the chain sampler draws from the declared chain."""

from __future__ import annotations

import importlib.util
import json
import warnings

import numpy as np
import pandas as pd
import pytest

from ppdp.exceptions import InsecureRandomnessWarning, ParameterError
from ppdp.experiments import EXPERIMENTS, run_experiment, song2017_activity, song2017_synthetic

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
    assert "Paper vs ours" in summary and "differ" in summary
    assert not list(out.glob("*.part"))


def test_registered():
    assert {"song2017-synthetic", "song2017-activity"} <= set(EXPERIMENTS)


@needs_matplotlib
def test_synthetic_quick_run(tmp_path):
    seen = []
    out = tmp_path / "syn"
    result = run_experiment(
        "song2017-synthetic", out_dir=out, quick=True, progress=lambda *a: seen.append(a)
    )
    _check_files(result, out, "song2017-synthetic")
    res = pd.read_csv(out / "results.csv")
    assert len(res) == 9 * 4 and [d for d, _, _ in seen] == list(range(1, 10))
    wide = res.pivot_table(index=["p0", "p1"], columns="method", values="noise_scale")
    assert (wide.GroupDP == 100.0).all()
    assert (wide.MQMExact <= wide.MQMApprox).all() and (wide.MQMApprox <= wide.GroupDP).all()
    # p0 + p1 = 1: the chain is i.i.d., the best quilt isolates each node: σ = 1/ε.
    assert wide.loc[(0.5, 0.5), "MQMExact"] == pytest.approx(1.0)
    assert wide.loc[(0.1, 0.9), "MQMExact"] == pytest.approx(1.0)
    gk = res[res.method == "GK16"]
    assert gk.noise_scale.isna().equals(~gk.applicable)
    assert not gk.set_index(["p0", "p1"]).loc[(0.9, 0.9), "applicable"]  # strong correlation
    k = result.key_numbers
    assert k["exact_le_approx"] == k["approx_le_group"] == k["cells"] == 9
    assert k["weak_log10_ratio_max"] == pytest.approx(2.0)


@needs_matplotlib
def test_activity_tiny_run(tmp_path):
    out = tmp_path / "act"
    with warnings.catch_warnings():
        warnings.simplefilter("error", InsecureRandomnessWarning)  # collected by the run
        result = run_experiment(
            "song2017-activity", out_dir=out, lengths=(50, 400), trials=1, seed=3
        )
    _check_files(result, out, "song2017-activity")
    summary = result.summary
    assert "synthetic" in summary and "seeded" in summary
    res = pd.read_csv(out / "results.csv")
    n_persons = sum(len(p) for p in song2017_activity.PERSONS.values())
    assert set(res.person) == {p for g in song2017_activity.PERSONS.values() for p in g}
    assert len(res[res.method == "MQMExact"]) == n_persons * 2
    assert (res.l1_error >= 0).all()
    scales = pd.read_csv(out / "noise_scales.csv")
    wide = scales.pivot_table(index=["group", "T"], columns="method", values="noise_scale")
    assert (wide.MQMExact <= wide.MQMApprox).all() and (wide.MQMApprox <= wide.GroupDP).all()
    # GroupDP's per-coordinate scale is L·T/ε = 2 at every T; MQM's falls as 1/T.
    assert np.allclose(wide.GroupDP, 2.0, rtol=1e-6)
    for group in song2017_activity.PERSONS:
        assert wide.loc[(group, 400), "MQMExact"] < wide.loc[(group, 50), "MQMExact"]
    again = run_experiment(
        "song2017-activity", out_dir=tmp_path / "b", lengths=(50, 400), trials=1, seed=3
    )
    assert again.summary == result.summary  # seeded: reproducible


def test_configs_validate():
    assert song2017_synthetic.Config.full().grid == tuple(round(0.1 * i, 1) for i in range(1, 10))
    assert song2017_synthetic.Config.full().T == 100
    with pytest.raises(ParameterError, match="grid"):
        song2017_synthetic.Config(grid=(0.0, 0.5))
    with pytest.raises(ParameterError, match="epsilon"):
        song2017_synthetic.Config(epsilon=-1)
    with pytest.raises(ParameterError, match="lengths"):
        song2017_activity.Config(lengths=(100, 50))
    with pytest.raises(ParameterError, match="trials"):
        song2017_activity.Config(trials=0)


def test_sample_chain_follows_the_chain():
    """Seeded; the empirical transition frequencies of 20 000 steps lie within 0.03 of P
    (each is a mean of ≥ 2 000 Bernoulli draws: 0.03 is > 4 standard errors)."""
    P = np.array(song2017_activity.PERSONS["cyclists"]["cyclist-1"])
    q = song2017_activity.stationary(P)
    assert q @ P == pytest.approx(q) and q.sum() == pytest.approx(1.0)
    x = song2017_activity.sample_chain(P, q, 20000, random_state=np.random.SeedSequence(1))
    assert x.min() >= 0 and x.max() <= 3
    counts = np.zeros((4, 4))
    np.add.at(counts, (x[:-1], x[1:]), 1)
    np.testing.assert_allclose(counts / counts.sum(1, keepdims=True), P, atol=0.03)
