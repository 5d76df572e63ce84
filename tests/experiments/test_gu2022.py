"""The Gu, Zhang & Zhang (2022) experiments: tasks, configs, and the quick runs (seconds each)."""

from __future__ import annotations

import importlib.util
import json
import warnings
from dataclasses import FrozenInstanceError

import numpy as np
import pandas as pd
import pytest

from ppdp.exceptions import InsecureRandomnessWarning, ParameterError
from ppdp.experiments import _gu2022 as gu
from ppdp.experiments import get_experiment, gu2022_fig1, gu2022_fig2, gu2022_fig3

needs_matplotlib = pytest.mark.skipif(
    importlib.util.find_spec("matplotlib") is None,
    reason="matplotlib is not installed: pip install 'ppdp[plots]'",
)


@pytest.mark.parametrize("task", list(gu.TASKS))
def test_tasks_are_two_class_problems_without_their_target(task):
    df, schema = gu.load_task(task, 400, seed=1)
    assert len(df) == 400 and schema.label is not None
    assert schema.label.name == "target" and schema.label.n_classes == 2
    X, y = schema.encode(df)
    assert set(np.unique(y)) == {0, 1}
    _, target, _ = gu.TASKS[task]
    assert target not in [c.name for c in schema.columns]
    assert np.all(np.linalg.norm(X, axis=1) <= schema.max_row_l2_norm + 1e-12)


def test_education_task_definition():
    df, schema = gu.load_task("adult-education", None, seed=0)
    from ppdp.datasets import load_adult

    raw, _ = load_adult()
    assert (df["target"] == "yes").to_numpy().tolist() == (raw["education-num"] >= 10).tolist()
    assert "income" in [c.name for c in schema.categorical_columns]
    assert schema.n_features == 34  # 33 Adult features - education-num + 2 income levels


def test_prepare_scales_by_the_declared_bound_and_declares_training_counts():
    df, schema = gu.load_task("nltcs-money", 900, seed=2)
    P = gu.prepare(df, schema, 2, 0, 0)
    assert len(P.y_train) == 600 and len(P.y_test) == 300
    assert P.counts == tuple(np.bincount(P.y_train))
    assert P.scale == pytest.approx(np.sqrt(15), rel=1e-8)
    assert np.max(np.linalg.norm(P.X_train, axis=1)) < 1.0
    assert P.constant is None and P.blocks == ()  # NLTCS: numeric 0/1 columns only
    again = gu.prepare(df, schema, 2, 0, 0)
    np.testing.assert_array_equal(again.y_test, P.y_test)


def test_lda_rule_and_svm_on_separable_data():
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(-0.3, 0.05, (200, 2)), rng.normal(0.3, 0.05, (200, 2))])
    y = np.repeat([0, 1], 200)
    assert gu.svm_error(X[:, :1], y, X[:, :1], y) == 0.0
    W = np.array([[1.0], [0.0]])
    means = np.array([[-0.3, -0.3], [0.3, 0.3]])
    S = np.eye(2) * 0.0025 * 398
    assert gu.lda_rule_error(W, means, S, (200, 200), X, y, 0.0) == 0.0


@pytest.mark.parametrize("module", [gu2022_fig1, gu2022_fig2, gu2022_fig3], ids=lambda m: m.ID)
def test_configs(module):
    full, quick = module.Config.full(), module.Config.quick()
    assert full.trials == 50 and quick.trials < full.trials
    assert quick.n_rows is not None and full.n_rows is None
    assert module.Config.quick(seed=7).seed == 7
    with pytest.raises(FrozenInstanceError):
        full.trials = 3  # type: ignore[misc]
    with pytest.raises(ParameterError, match="trials"):
        module.Config(trials=0)
    assert get_experiment(module.ID).module is module


def test_config_grids():
    assert gu2022_fig1.Config.full().tasks == tuple(gu.TASKS)
    assert gu2022_fig2.Config.full().owners == 3
    f3 = gu2022_fig3.Config.full()
    assert f3.owners == (2, 4, 6, 8, 10) and f3.epsilon == 0.2 and f3.task == "adult-salary"
    with pytest.raises(ParameterError, match="tasks"):
        gu2022_fig1.Config(tasks=("iris",))
    with pytest.raises(ParameterError, match="epsilons"):
        gu2022_fig1.Config(epsilons=(-1.0,))
    with pytest.raises(ParameterError, match="owners"):
        gu2022_fig3.Config(owners=(1, 2))


def _run_quick(module, tmp_path):
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", InsecureRandomnessWarning)  # collected by the run
        result = module.run(
            module.Config.quick(), tmp_path, progress=lambda d, t, m: seen.append((d, t))
        )
    assert [d for d, _ in seen] == list(range(1, seen[-1][1] + 1))
    for path in result.files:
        assert path.exists() and path.stat().st_size > 0
    assert sorted({p.suffix for p in result.files}) == [".csv", ".json", ".md", ".png"]
    assert json.loads((tmp_path / "config.json").read_text())["experiment"] == module.ID
    summary = (tmp_path / "summary.md").read_text()
    assert summary == result.summary and "not recoverable" in summary
    assert "Subsample of 3000 rows" in summary
    return result, pd.read_csv(tmp_path / "results.csv")


@needs_matplotlib
@pytest.mark.parametrize("module", [gu2022_fig1, gu2022_fig2], ids=lambda m: m.ID)
def test_quick_epsilon_grid_runs(module, tmp_path):
    result, res = _run_quick(module, tmp_path)
    methods = set(res.method)
    assert methods == set(gu.METHODS)
    assert res.misclassification.between(0, 1).all()
    # 2 tasks x 2 reps x (2 eps-free + 2 eps x 3 methods)
    assert len(res) == 2 * 2 * (2 + 2 * 3)
    # The DP per-row release carries almost no signal: about the majority rate.
    for task in ("adult-salary", "nltcs-outside"):
        sub = res[res.task == task]
        maj = sub[sub.method == "majority"].misclassification.mean()
        noisy = sub[sub.method == "noisy-projections"].misclassification.mean()
        assert abs(noisy - maj) < 0.05
    assert "peer synthesizer" in result.summary


@needs_matplotlib
def test_quick_owners_run(tmp_path):
    result, res = _run_quick(gu2022_fig3, tmp_path)
    assert set(res.setting) == {"reference", "centralised", "joint-view", "paper-split"}
    paired = pd.read_csv(tmp_path / "paired.csv")
    assert len(paired) == 2 * 2 * 2  # settings x owners x methods
    assert set(result.key_numbers["within_target"]) == {
        "paper-release/joint-view",
        "paper-release/paper-split",
        "lda-rule/joint-view",
        "lda-rule/paper-split",
    }


def _fake_fig1_results(out, tasks=("adult-salary", "nltcs-outside"), eps=(0.2, 1.0)):
    """A tiny finished fig1 run (config.json + results.csv), without running anything."""
    config = gu2022_fig1.Config(tasks=tasks, epsilons=eps, trials=2, n_rows=3000)
    rows = []
    for task in tasks:
        for rep in range(2):
            rows.append((task, np.nan, rep, "non-private", 0.17))
            rows.append((task, np.nan, rep, "majority", 0.25))
            for e in eps:
                for m in ("paper-release", "noisy-projections", "lda-rule"):
                    rows.append((task, e, rep, m, 0.2 - 0.01 * e))
    cols = ["task", "epsilon", "rep", "method", "misclassification"]
    pd.DataFrame(rows, columns=cols).to_csv(out / "results.csv", index=False)
    from ppdp.experiments._framework import config_dict

    (out / "config.json").write_text(json.dumps(config_dict(config, gu2022_fig1.ID)))


@needs_matplotlib
def test_summary_says_how_to_get_the_peer_line_when_absent(tmp_path):
    _fake_fig1_results(tmp_path)
    result = gu2022_fig1.summary_only(tmp_path)
    summary = (tmp_path / "summary.md").read_text()
    assert summary == result.summary
    assert "No peer line" in summary and gu2022_fig1.PEER_FILE in summary
    assert gu2022_fig1.PEER_SCRIPT in summary and "--summary-only" in summary
    assert gu2022_fig1.PEER_LABEL not in summary
    assert "16 seeded releases" in summary  # 2 tasks x 2 reps x 2 eps x 2 releases
    assert (tmp_path / "fig.png").stat().st_size > 0


@needs_matplotlib
def test_summary_and_plot_include_the_peer_line_when_its_csv_is_present(tmp_path):
    _fake_fig1_results(tmp_path)
    before = (tmp_path / "results.csv").read_bytes()
    gu2022_fig1.summary_only(tmp_path)
    png_without = (tmp_path / "fig.png").read_bytes()
    peer = pd.DataFrame(
        {
            "task": ["adult-salary"] * 4 + ["nltcs-outside"] * 2,
            "epsilon": [0.2, 0.2, 1.0, 1.0, 0.2, 1.0],
            "rep": [0, 1, 0, 1, 0, 0],
            "misclassification": [0.30, 0.32, 0.20, 0.22, 0.40, 0.35],
            "seconds": [1.0] * 6,
        }
    )
    peer.to_csv(tmp_path / gu2022_fig1.PEER_FILE, index=False)
    result = gu2022_fig1.summary_only(tmp_path)
    summary = (tmp_path / "summary.md").read_text()
    assert "No peer line" not in summary
    rows = [ln for ln in summary.splitlines() if ln.startswith(f"| {gu2022_fig1.PEER_LABEL} |")]
    assert len(rows) == 2  # one per task
    # adult-salary, eps = 0.2: mean 0.31, s.e. = sd / sqrt(2) = 0.01414 / 1.414 = 0.01
    assert "0.3100 ± 0.0100 s.e. (n = 2)" in rows[0]
    assert "0.2100 ± 0.0100 s.e. (n = 2)" in rows[0]
    assert "0.4000 ± nan s.e. (n = 1)" in rows[1]
    assert result.key_numbers["adult-salary/peer-datasynthesizer/eps=1"] == pytest.approx(0.21)
    # lda-rule is 0.2 - 0.01 * eps in the fake results: 0.198 at eps = 0.2, 0.19 at eps = 1
    assert "ε = 0.2: adult-salary +11.2, nltcs-outside +20.2" in summary
    assert "ε = 1: adult-salary +2.0, nltcs-outside +16.0" in summary
    assert (tmp_path / "results.csv").read_bytes() == before  # nothing rerun
    assert (tmp_path / "fig.png").read_bytes() != png_without


def test_peer_csv_without_the_needed_columns_is_refused(tmp_path):
    bad = pd.DataFrame({"task": ["adult-salary"], "epsilon": [1.0]})
    with pytest.raises(ParameterError, match="misclassification"):
        gu.aggregate_peer(bad)


def test_summary_only_refuses_another_experiments_folder(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"experiment": "gu2022-fig2"}))
    with pytest.raises(ParameterError, match="gu2022-fig2"):
        gu2022_fig1.summary_only(tmp_path)
