"""The explicit joint fit (``method="pairs"``) computes its pair marginals as matrix products.

:func:`~ppdp.publish.table_synth_model.fit_joint` used to sum the whole table over the other
axes once per measured pair and broadcast each pair's residual back (cells × pairs work in
strided sums: 9–19 s of NLTCS's fit). It now splits the axes into two groups and gets every
pair's marginal, and the gradient, from three products with the groups' one-hot codes
(``_PairMarginals``). The objective, the steps and the stopping rule are unchanged; only the
order of the sums differs, so the fitted tables agree to rounding and, for the seeds checked
here and on NLTCS (``benchmarks/synth/nltcs_time.md``), the released rows are the same bytes.

Each test below fails on a broken variant, named in its docstring.
"""

from __future__ import annotations

import hashlib
import itertools
import warnings

import numpy as np
import pandas as pd
import pytest

from ppdp.data import Schema
from ppdp.publish import TableSynthesizer
from ppdp.publish import table_synth_model as model

SHAPES = [(3, 2), (2, 4, 3), (6, 5, 4, 3), (2,) * 9, (5, 1, 7, 2), (18, 2, 9), (300, 2), (2, 3, 40)]


def _direct_marginal(table: np.ndarray, i: int, j: int) -> np.ndarray:
    other = tuple(a for a in range(table.ndim) if a not in (i, j))
    g = table.sum(axis=other) if other else table
    return g if i < j else g.T


def _direct_broadcast(shape, residuals) -> np.ndarray:
    out = np.zeros(shape)
    for (i, j), r in residuals.items():
        view = [1] * len(shape)
        view[i], view[j] = shape[i], shape[j]
        out += (r if i < j else r.T).reshape(view)
    return out.reshape(-1)


@pytest.mark.parametrize("shape", SHAPES)
def test_pair_marginals_and_broadcast_match_direct_sums(shape) -> None:
    """Every pair's block equals the sum over the other axes; the broadcast equals the sum
    of the pair tables spread over the cells (to 1e-12). Fails if a group's within-pairs
    are left out of either (e.g. ``if self.k > 1`` read as ``if self.k > 2``)."""
    rng = np.random.default_rng(sum(shape))
    pm = model._PairMarginals(shape)
    table = rng.dirichlet(np.ones(int(np.prod(shape)))).reshape(shape)
    blocks = pm.marginals(table.reshape(-1))
    residuals = {}
    for i, j in itertools.combinations(range(len(shape)), 2):
        assert np.allclose(pm.block(blocks, i, j), _direct_marginal(table, i, j), atol=1e-12)
        assert np.allclose(pm.block(blocks, j, i), _direct_marginal(table, j, i), atol=1e-12)
        residuals[(i, j)] = rng.normal(size=(shape[i], shape[j]))
    r = np.zeros_like(blocks)
    for (i, j), v in residuals.items():
        pm.block(r, i, j)[...] += v
    assert np.allclose(pm.broadcast(r), _direct_broadcast(shape, residuals), atol=1e-12)


def test_targets_give_the_terms_loss_also_for_a_pair_in_both_orders() -> None:
    """``Σ weight·(M − target)² + constant`` is the sum of the terms' own losses on any
    marginals ``M``, with ``(0, 2)`` measured in both orders. Fails without the constant."""
    shape = (3, 2, 4)
    rng = np.random.default_rng(7)
    pm = model._PairMarginals(shape)
    terms = [(0, 1, rng.random((3, 2)), 1.0), (0, 2, rng.random((3, 4)), 0.5)]
    terms += [(2, 0, rng.random((4, 3)), 0.25), (1, 2, rng.random((2, 4)), 0.75)]
    target, weight, const = pm.targets(terms)
    table = rng.dirichlet(np.ones(24)).reshape(shape)
    blocks = pm.marginals(table.reshape(-1))
    want = sum(w * ((_direct_marginal(table, i, j) - y) ** 2).sum() for i, j, y, w in terms)
    assert const > 0
    assert np.isclose(float((weight * (blocks - target) ** 2).sum()) + const, want, rtol=1e-12)


def _reference_fit(n, shape, measurements, min_iterations=100, max_iterations=1000):
    """The fit as it was before the products: one strided sum per pair and per loss."""
    pairs, sigma_min, floor = {}, min(m.sigma for m in measurements), 0.0
    for m in measurements:
        i, j = m.clique
        pairs[(i, j)] = (m.values.reshape(shape[i], shape[j]) / n, 1.0 / m.sigma**2)
        floor += shape[i] * shape[j] * sigma_min**2 / float(n) ** 2
    top = max(w for _, w in pairs.values())
    terms = [(i, j, y, w / top) for (i, j), (y, w) in pairs.items()]

    def loss(p):
        table, value, residuals = p.reshape(shape), 0.0, {}
        for i, j, y, w in terms:
            diff = _direct_marginal(table, i, j) - y
            value += w * float((diff * diff).sum())
            residuals[(i, j)] = w * diff
        return value, residuals

    cells = int(np.prod(shape))
    theta, p = np.zeros(cells), np.full(cells, 1.0 / cells)
    value, res = loss(p)
    step = 1.0
    for step_index in range(max_iterations):
        if step_index >= min_iterations and value <= floor:
            break
        grad = 2.0 * _direct_broadcast(shape, res)
        while True:
            trial = theta - step * grad
            w = np.exp(trial - trial.max())
            q = w / w.sum()
            new, res_new = loss(q)
            if new <= value or step < 1e-12:
                break
            step *= 0.5
        theta, p, value, res = trial, q, new, res_new
        step *= 1.5
    return p.reshape(shape) * n


def _measurements(shape, n, both_orders=False):
    rng = np.random.default_rng(len(shape))
    true = rng.dirichlet(np.full(int(np.prod(shape)), 0.3)).reshape(shape) * n
    out = []
    for i, j in itertools.combinations(range(len(shape)), 2):
        for a, b in ((i, j), (j, i)) if both_orders else ((i, j),):
            t = _direct_marginal(true, a, b)
            sigma = 3.0 + a
            out.append(
                model.Measurement((a, b), (t + rng.normal(0, sigma, t.shape)).ravel(), sigma)
            )
    return out


@pytest.mark.parametrize("both_orders", [False, True])
@pytest.mark.parametrize("shape", [(6, 5, 4, 3), (2,) * 8, (5, 1, 7, 2)])
def test_fit_joint_matches_the_per_pair_sums(shape, both_orders) -> None:
    """The fitted table equals the per-pair reference fit to 1e-9 counts (n = 2,000), also
    when a pair is measured in both orders (merged into one block plus a constant). Fails
    if a group's within-pairs are dropped (``self.k > 2``) or the step grows by 2.0."""
    ms = _measurements(shape, 2000, both_orders)
    got = model.fit_joint(2000, shape, ms).counts
    assert np.allclose(got, _reference_fit(2000, shape, ms), rtol=0, atol=1e-9)


def _nltcs_like(rows: int = 1500) -> tuple[pd.DataFrame, Schema]:
    """Nine 0/1 items driven by one latent disability score, and a 3-level region."""
    rng = np.random.default_rng(30)
    latent = rng.normal(size=rows)
    items = {
        f"item{k}": (latent + rng.normal(0, 1, rows) > 0.4 + 0.1 * k).astype(int) for k in range(9)
    }
    df = pd.DataFrame(items)
    df["region"] = rng.choice(["north", "south", "west"], rows, p=[0.5, 0.3, 0.2])
    cols = [{"name": c, "type": "numeric", "lower": 0, "upper": 1, "integer": True} for c in items]
    cols.append({"name": "region", "type": "categorical", "categories": ["north", "south", "west"]})
    return df, Schema.from_dict({"schema_version": 1, "columns": cols, "nan_policy": "error"})


#: sha256 of the CSV of the seeded release below, computed on the code before the products
#: (commit bce16bb); the products must keep every released byte.
RELEASE_DIGEST = "8c56d36ab8cfa976fa33fd047f21ee6a6b4e79e6043d101e2a5d7eb84b421ab6"


def test_seeded_release_keeps_its_bytes() -> None:
    """A seeded ``method="auto"`` (here the explicit joint) release of an NLTCS-like table
    hashes to the digest of the code before the change. Fails if the fit's objective,
    steps or stopping rule change (e.g. ``step *= 1.5`` made 2.0)."""
    df, schema = _nltcs_like()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # random_state's reproducibility warning
        synth = TableSynthesizer(1.0, schema, delta=1e-9, relation="add/remove", random_state=0)
        data = synth.fit(df).release_.data
    assert synth.plan().method == "pairs"
    digest = hashlib.sha256(data.to_csv(index=False).encode()).hexdigest()
    assert digest == RELEASE_DIGEST
