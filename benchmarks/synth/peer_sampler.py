"""A correct sampler for a fitted mbi ``MarkovRandomField`` (post-processing of the model).

mbi 1.1.0's ``MarkovRandomField.synthetic_data`` (the version smartnoise-synth 1.0.8 pins)
conditions each column on the measurement cliques rather than on the junction tree, and its
"round" mode ranks rows by position inside their parent group, so two children of the same
parent come out comonotone (see ``../shared/PEERS.md``). This module draws rows from the
model's own distribution instead:

1. build the junction tree of the model's cliques (mbi's ``make_junction_tree``) and
   calibrate the clique marginals on it (``message_passing_stable``);
2. in each connected component, draw the root clique's attributes jointly from its
   marginal; then walk the tree away from the root and, for each clique, draw its new
   attributes jointly from the clique marginal conditioned on the separator attributes
   already drawn (the running-intersection property makes this the model's joint law).

Each row has the model's law; by default the uniforms are stratified within each
conditioning group (randomized rounding done right: strata assigned by a random permutation
per column), ``stratified=False`` gives i.i.d. rows. It uses only the fitted model, never
the data, so it costs no privacy budget. Runs inside a peer environment (mbi 1.x, jax);
imports nothing from ppdp.
"""

from __future__ import annotations

import networkx as nx
import numpy as np


def _uniforms(group: np.ndarray, n_groups: int, rng: np.random.Generator) -> np.ndarray:
    """Stratified uniforms: in a group of c rows, one in each of [k/c, (k+1)/c), k random.

    Each row's uniform is still uniform on [0, 1) given its group, and the strata are
    assigned by a fresh random permutation for every column (not by row position, which
    made mbi 1.1.0's siblings comonotone), so the draw has the model's law with less
    sampling noise in the group counts, as randomized rounding intends.
    """
    n = group.size
    perm = rng.permutation(n)
    order = perm[np.argsort(group[perm], kind="stable")]
    counts = np.bincount(group, minlength=n_groups)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - starts[group[order]]
    return (rank + rng.random(n)) / counts[group]


def _conditional_draw(
    table: np.ndarray,
    parent_index: np.ndarray,
    rng: np.random.Generator,
    stratified: bool = True,
) -> np.ndarray:
    """One draw per row from ``table[parent_index[row], :]`` (rows of non-negative weights).

    Parameters
    ----------
    table : numpy.ndarray
        ``(n_parent_configs, n_child_configs)`` weights; a row summing to 0 is uniform.
    parent_index : numpy.ndarray
        Each row's parent configuration.
    rng : numpy.random.Generator
        Source of the uniforms.
    stratified : bool, default True
        Stratified uniforms within each parent group (:func:`_uniforms`), else i.i.d.

    Returns
    -------
    numpy.ndarray
        Each row's child configuration index.
    """
    table = np.clip(np.asarray(table, dtype=np.float64), 0.0, None)
    n_parent, n_child = table.shape
    sums = table.sum(axis=1, keepdims=True)
    cond = np.where(sums > 0, table / np.where(sums > 0, sums, 1.0), 1.0 / n_child)
    cdf = np.cumsum(cond, axis=1)
    cdf[:, -1] = 1.0
    # One sorted array: group s holds s + cdf[s, :], so s + u (u in [0, 1)) falls in group s.
    flat = (np.arange(n_parent, dtype=np.float64)[:, None] + cdf).ravel()
    u = _uniforms(parent_index, n_parent, rng) if stratified else rng.random(parent_index.size)
    pos = np.searchsorted(flat, parent_index + u, side="right")
    return np.clip(pos - parent_index * n_child, 0, n_child - 1)


def sample_model(
    model, rows: int, rng: np.random.Generator, stratified: bool = True
) -> dict[str, np.ndarray]:
    """Draw ``rows`` records from a fitted mbi ``MarkovRandomField``.

    Parameters
    ----------
    model : mbi.MarkovRandomField
        The fitted model (its ``potentials`` and ``domain``).
    rows : int
        Number of records.
    rng : numpy.random.Generator
        Source of randomness.
    stratified : bool, default True
        Stratify the uniforms within each conditioning group (less sampling noise in the
        released counts); ``False`` draws the rows i.i.d.

    Returns
    -------
    dict of str to numpy.ndarray
        One integer column per attribute of ``model.domain``.
    """
    from mbi import junction_tree, marginal_oracles

    domain = model.domain
    jtree, _ = junction_tree.make_junction_tree(domain, [tuple(c) for c in model.cliques])
    potentials = model.potentials.expand(list(jtree.nodes))
    marginals = marginal_oracles.message_passing_stable(potentials)
    data: dict[str, np.ndarray] = {}
    for component in nx.connected_components(jtree):
        root = max(component, key=lambda c: (len(c), c))
        order = [root] + [v for _, v in nx.bfs_edges(jtree.subgraph(component), root)]
        for clique in order:
            given = [a for a in clique if a in data]
            new = [a for a in clique if a not in data]
            if not new:
                continue
            attrs = tuple(given + new)
            shape_g = [domain[a] for a in given]
            shape_n = [domain[a] for a in new]
            arr = np.asarray(marginals.project(attrs).datavector(flatten=False), np.float64)
            table = arr.reshape(int(np.prod(shape_g, dtype=np.int64)), -1)
            if given:
                pidx = np.ravel_multi_index(tuple(data[a] for a in given), shape_g)
            else:
                pidx = np.zeros(rows, dtype=np.int64)
            child = _conditional_draw(table, pidx, rng, stratified)
            for a, col in zip(new, np.unravel_index(child, shape_n), strict=True):
                data[a] = col.astype(np.int64)
    return {a: data[a] for a in domain.attrs}
