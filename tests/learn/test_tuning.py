"""Private tuning (CMS11 Algorithm 4): partition, selection law, total cost."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget
from ppdp.exceptions import ParameterError, ParameterTypeError
from ppdp.learn import PrivateLogisticRegression, PrivateTuning
from ppdp.learn.tuning import split_parts, tune
from ppdp.random import SeededRandom


def _data(n: int = 400, d: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X @ np.ones(d) > 0, "yes", "no")
    return X, y


@pytest.fixture
def acct() -> Accountant:
    return Accountant.in_memory(total=PrivacyBudget(5.0))


def test_grid_validation() -> None:
    with pytest.raises(ParameterError, match="at least 2"):
        PrivateTuning((0.1,))
    with pytest.raises(ParameterError, match=r"regularization_grid\[0\]"):
        PrivateTuning((0.0, 1.0))
    with pytest.raises(ParameterTypeError, match="sequence"):
        PrivateTuning("0.1")  # type: ignore[arg-type]
    assert PrivateTuning.coerce([0.1, 1]) == PrivateTuning((0.1, 1.0))
    assert PrivateTuning.coerce(None) is None
    with pytest.raises(ParameterTypeError, match="tuning"):
        PrivateTuning.coerce(5)
    with pytest.raises(ParameterTypeError, match="tuning"):
        PrivateTuning.coerce("0.1,1")


def test_split_is_a_partition_with_public_sizes() -> None:
    t = PrivateTuning((0.1, 1.0, 10.0))
    sizes = t.part_sizes(103)
    assert sizes == [26, 26, 26, 25]
    parts = split_parts(103, sizes, SeededRandom(0))
    assert [p.size for p in parts] == sizes
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)), np.arange(103))


def test_selection_follows_the_exponential_mechanism() -> None:
    """With fixed mistake counts z, the choice is softmax(−ε z / 2) (chi-square, p > 1e-4)."""
    grid = PrivateTuning((1.0, 2.0, 3.0))
    z = {1.0: 0, 2.0: 2, 3.0: 5}
    eps = 0.8
    src = SeededRandom(1)
    draws = 4000
    counts = np.zeros(3)
    Z, y = np.zeros((8, 1)), np.ones(8)
    for _ in range(draws):
        out = tune(
            Z,
            y,
            tuning=grid,
            epsilon=eps,
            fit_one=lambda Zi, yi, lam: lam,
            mistakes=lambda model, Zv, yv: z[model],
            source=src,
        )
        counts[out.index] += 1
        assert out.model == out.regularization
    p = np.exp(-eps * np.array([0, 2, 5]) / 2)
    p /= p.sum()
    assert stats.chisquare(counts, draws * p).pvalue > 1e-4


def test_tuning_costs_epsilon_once_and_releases_no_errors(acct) -> None:
    X, y = _data(n=3000)
    grid = (1e-4, 1e-2, 1.0)
    clf = PrivateLogisticRegression(
        epsilon=1.0, data_norm=4.0, tuning=PrivateTuning(grid), random_state=0
    )
    clf.fit(X, y, accountant=acct, allow_seeded=True)
    assert acct.spent.epsilon == pytest.approx(1.0)
    assert len(acct.history()) == 1
    assert clf.regularization_ in grid
    details = clf.guarantee_.details
    assert details["tuning_grid"] == list(grid)
    assert details["n_train"] == 750  # 3000 rows in m + 1 = 4 parts
    assert "errors" not in json.dumps(clf.to_model_dict())


def test_tuning_prefers_the_good_candidate() -> None:
    """Output perturbation with Λ = 1e-6 is noise (sensitivity 2/(nΛ) = 1500); it must lose."""
    X, y = _data(n=4000)
    wins = 0
    for seed in range(10):
        clf = PrivateLogisticRegression(
            epsilon=1.0,
            data_norm=4.0,
            perturbation="output",
            tuning=[1e-6, 1.0],
            random_state=seed,
        ).fit(X, y)
        wins += clf.regularization_ == 1.0
    assert wins >= 9


def test_part_sizes_are_public_and_equal() -> None:
    t = PrivateTuning((0.1, 1.0, 10.0))
    assert t.part_sizes(10) == [3, 3, 2, 2]
    assert sum(t.part_sizes(1001)) == 1001
