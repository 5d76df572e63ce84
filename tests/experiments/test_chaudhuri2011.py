"""chaudhuri2011-adult and chaudhuri2011-kdd: configs, data, a tiny seeded run of each."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import FrozenInstanceError, replace

import numpy as np
import pandas as pd
import pytest

from ppdp.exceptions import ParameterError
from ppdp.experiments import _chaudhuri2011, chaudhuri2011_adult, chaudhuri2011_kdd, get_experiment

needs_matplotlib = pytest.mark.skipif(
    importlib.util.find_spec("matplotlib") is None,
    reason="matplotlib is not installed: pip install 'ppdp[plots]'",
)
MODULES = [chaudhuri2011_adult, chaudhuri2011_kdd]
TINY = {
    "epsilons": (0.5, 2.0),
    "regularizations": (1e-3, 1e-2),
    "select_epsilon": 0.5,
    "folds": 2,
    "draws": 1,
    "n_rows": 1200,
}


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.ID)
def test_configs_full_quick_frozen_validated(module) -> None:
    full, quick = module.Config.full(), module.Config.quick()
    assert full.epsilons == (0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
    assert full.select_epsilon == 0.1 and full.huber_h == 0.5  # the paper's
    assert full.private_tuning and full.n_rows is None and full.folds == 5
    assert len(quick.epsilons) < len(full.epsilons) and quick.n_rows is not None
    assert module.Config.quick(seed=7).seed == 7
    with pytest.raises(FrozenInstanceError):
        full.folds = 3  # type: ignore[misc]
    for bad, match in [
        ({"epsilons": (0.1, -1.0)}, "epsilons"),
        ({"regularizations": (1e-3,)}, "at least 2"),
        ({"regularizations": (1e-3, 0.0)}, "regularizations"),
        ({"folds": 1}, "folds"),
        ({"draws": 0}, "draws"),
        ({"n_rows": 5}, "n_rows"),
        ({"private_tuning": "yes"}, "private_tuning"),
    ]:
        with pytest.raises(ParameterError, match=match):
            module.Config(**bad)
    assert get_experiment(module.ID).module is module


def test_adult_keeps_all_columns_as_the_papers_105_features() -> None:
    df, schema = chaudhuri2011_adult.load_adult_105()
    assert df.shape == (45_222, 15)
    assert schema.n_features == 105 and (schema.p1, schema.p2) == (6, 8)
    X, y, report = schema.encode(df, return_report=True)
    assert X.shape == (45_222, 105) and not report.has_corrections  # no value outside bounds
    assert int(y.sum()) == 11_208
    assert schema.column("native-country").categories[-1] == "Holand-Netherlands"


def test_kdd_uses_the_shipped_sample() -> None:
    data = chaudhuri2011_kdd._load(chaudhuri2011_kdd.Config(**TINY))
    assert data.X.shape == (1200, 118)
    assert data.schema.classes == ("not-dos", "dos")
    assert data.schema.max_row_l2_norm == 4.0  # the declared bound, below sqrt(41)
    assert np.linalg.norm(data.X, axis=1).max() <= 4.0


@needs_matplotlib
@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.ID)
def test_tiny_run_writes_everything_and_is_reproducible(module, tmp_path) -> None:
    config = module.Config(**TINY)
    calls = []
    res = module.run(config, tmp_path / "a", progress=lambda d, t, m: calls.append((d, t)))
    names = [p.name for p in res.files]
    assert names == [
        "results.csv",
        "non_private.csv",
        "curves.csv",
        "config.json",
        "error_vs_epsilon.png",
        "summary.md",
    ]
    assert all(p.is_file() for p in res.files)
    results = pd.read_csv(tmp_path / "a" / "results.csv")
    # 4 learners x (2 Λ x 2 ε in the grid + 2 ε tuned) x 2 folds
    assert len(results) == 4 * (2 * 2 + 2) * 2
    assert calls[-1] == (48, 48)
    assert set(results.phase) == {"lambda-grid", "private-tuning"}
    curves = pd.read_csv(tmp_path / "a" / "curves.csv")
    assert set(curves.phase) == {"fixed-lambda", "best-lambda", "private-tuning"}
    assert (curves["count"] == 2).all() and len(curves) == 3 * 4 * 2
    assert results.test_error.between(0, 1).all()
    tuned = results[results.phase == "private-tuning"]
    assert set(tuned.regularization) <= set(config.regularizations)
    cfg = json.loads((tmp_path / "a" / "config.json").read_text())
    assert cfg["experiment"] == module.ID and cfg["config"]["folds"] == 2
    summary = res.summary
    paper = module.PAPER
    for loss in ("logistic", "huber"):
        assert _chaudhuri2011._fmt(paper.objective[loss]) in summary
        assert _chaudhuri2011._fmt(paper.output[loss]) in summary
    assert "Runs are seeded" in summary and "Subsample of 1200 rows" in summary
    assert set(res.key_numbers) >= {"objective_beats_output_fixed", "non_private"}
    if module is chaudhuri2011_kdd:
        return  # the shared protocol's reproducibility is checked once, on Adult
    # seeded: a second run gives the same errors
    res2 = module.run(config, tmp_path / "b")
    again = pd.read_csv(tmp_path / "b" / "results.csv")
    pd.testing.assert_frame_equal(results.drop(columns="seconds"), again.drop(columns="seconds"))
    assert res2.key_numbers["best_over_lambda"] == res.key_numbers["best_over_lambda"]


def test_comparison_table_and_welch() -> None:
    rows = []
    for pert, err in (("objective", 0.1), ("output", 0.3)):
        for k in range(3):
            rows.append(
                {
                    "phase": "fixed-lambda",
                    "loss": "logistic",
                    "perturbation": pert,
                    "epsilon": 0.1,
                    "test_error": err + 0.01 * k,
                }
            )
    comp = _chaudhuri2011._comparison(pd.DataFrame(rows), "fixed-lambda")
    assert comp.objective_better.tolist() == [True]
    assert comp.p_value.iloc[0] < 1e-3
    flipped = pd.DataFrame(rows).assign(
        perturbation=lambda d: d.perturbation.map({"objective": "output", "output": "objective"})
    )
    assert _chaudhuri2011._comparison(flipped, "fixed-lambda").objective_better.tolist() == [False]


def test_folds_partition_the_rows() -> None:
    folds = _chaudhuri2011._folds(103, 5, seed=1)
    allrows = np.concatenate(folds)
    assert sorted(allrows.tolist()) == list(range(103))
    assert [len(f) for f in folds] == [21, 21, 21, 20, 20]
    assert replace(chaudhuri2011_adult.Config.quick(), folds=3).folds == 3
