"""Balanced sampling of TableSynthesizer's models (post-processing).

:func:`~ppdp.publish.table_synth_model.balanced_uniforms` stratifies the uniforms of each
group of rows that share the conditioning values. Two properties matter and each is tested
here with a control that fails it: every row's draw still has the model's law (a row's
uniform is uniform), and a group's counts are within 2 of their expectation (independent
uniforms give binomial counts, which miss that bound).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from ppdp import noise
from ppdp.publish import table_synth_model as model
from ppdp.random import resolve_random_state


def _tree_model() -> model.Model:
    """Two classes, a root feature given the class, a child given (class, root)."""
    rng = np.random.default_rng(3)
    pairs = {0: np.array([[300.0, 500.0, 200.0], [100.0, 250.0, 650.0]])}
    triples = {1: rng.uniform(1.0, 50.0, size=(2, 3, 4))}
    return model.Model(
        n=2000,
        sizes=(3, 4, 2),
        label=2,
        class_counts=np.array([1000.0, 1000.0]),
        pairs=pairs,
        order=(0, 1),
        parent={1: 0},
        triples=triples,
    )


def test_balanced_uniforms_put_one_value_in_each_stratum_of_each_group() -> None:
    group = np.repeat(np.arange(4), [1, 7, 50, 300])
    u = model.balanced_uniforms(group, resolve_random_state(0))
    assert np.all((u >= 0.0) & (u < 1.0))
    assert np.array_equal(u, np.floor(u * 2.0**53) / 2.0**53)  # multiples of 2**-53
    for g, m in enumerate([1, 7, 50, 300]):
        strata = np.sort(np.floor(u[group == g] * m).astype(int))
        assert strata.tolist() == list(range(m))


def test_each_rows_balanced_uniform_is_uniform() -> None:
    """Row 5's value over 4,000 seeds: Kolmogorov–Smirnov against U(0, 1).

    False-positive rate 1e-3 (the p-value threshold), fixed seeds. Control: the stratum
    midpoints in a fixed order (row r always gets (r + 0.5)/m) fail it.
    """
    group = np.zeros(9, dtype=np.int64)
    values = [model.balanced_uniforms(group, resolve_random_state(s))[5] for s in range(4000)]
    assert stats.kstest(values, "uniform").pvalue > 1e-3
    fixed = [(5 + 0.5) / 9] * 4000
    assert stats.kstest(fixed, "uniform").pvalue < 1e-3


def test_sampled_tree_counts_are_within_two_of_the_model() -> None:
    """Every (class, root) and (class, root, child) count within 2 of its expectation given
    the sampled parents; independent uniforms (the control) miss the bound."""
    tree = _tree_model()
    codes = model.sample_codes(tree, 2000, resolve_random_state(1))
    assert _worst_tree_gap(tree, codes) < 2.0
    balanced = model.balanced_uniforms
    try:
        model.balanced_uniforms = lambda g, src: np.asarray(  # type: ignore[assignment]
            noise.uniform(len(g), random_state=src), dtype=np.float64
        )
        iid = model.sample_codes(tree, 2000, resolve_random_state(1))
    finally:
        model.balanced_uniforms = balanced  # type: ignore[assignment]
    assert _worst_tree_gap(tree, iid) > 4.0


def _worst_tree_gap(tree: model.Model, codes: np.ndarray) -> float:
    cls, root, child = codes[:, 2], codes[:, 0], codes[:, 1]
    worst = 0.0
    for k in range(2):
        p = tree.pairs[0][k] / tree.pairs[0][k].sum()
        seen = np.bincount(root[cls == k], minlength=3)
        worst = max(worst, float(np.max(np.abs(seen - p * (cls == k).sum()))))
        for r in range(3):
            rows = (cls == k) & (root == r)
            q = tree.triples[1][k, r] / tree.triples[1][k, r].sum()
            seen = np.bincount(child[rows], minlength=4)
            worst = max(worst, float(np.max(np.abs(seen - q * rows.sum()))))
    return worst


def test_sampled_joint_counts_are_within_two_of_the_table() -> None:
    rng = np.random.default_rng(4)
    counts = rng.uniform(0.0, 10.0, size=(5, 6, 4))
    joint = model.JointModel(n=int(counts.sum()), sizes=(5, 6, 4), counts=counts)
    codes = model.sample_joint(joint, 30_000, resolve_random_state(2))
    cells = np.ravel_multi_index(codes.T, joint.sizes)
    seen = np.bincount(cells, minlength=counts.size)
    expected = counts.ravel() / counts.sum() * 30_000
    assert np.max(np.abs(seen - expected)) < 2.0
    assert len(np.unique(cells[:200])) > 50  # rows come in random order, not by cell
