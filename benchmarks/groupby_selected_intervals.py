"""Conditional coverage of the 95 % intervals of privately selected keys, by distance to
the threshold, for each selection method.

``--copies`` keys at each of several true counts: at fixed distances from the selection
threshold in units of the count noise's scale ``s`` (``b`` for Laplace, ``σ`` for Gaussian,
the last round's ``σ`` and threshold for DP-SIPS), or, for truncated geometric, persons
from 1 to where the keep-probability reaches 1. Each row a length of stay uniform on
``--values`` (bounds 1–365; the further the mean from the centre 183, the more the
count's error weighs on the mean). ``--releases`` seeded releases through the release path
of ``fit``; per distance: the share of key-releases that released the key, and among
those the share of intervals covering the true count, sum and mean, with the conditional
intervals (new) and, on the very same releases (same seed), the unconditional ones the
release computed before (old: the threshold forgotten by the intervals).

Run: ``PYTHONPATH=src python benchmarks/groupby_selected_intervals.py --releases 500``
(results and the exact commands: ``groupby_selected_intervals.md``).
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pandas as pd

from ppdp.data import Schema
from ppdp.publish import GroupByPublisher
from ppdp.random import resolve_random_state

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "dx", "type": "categorical", "open": True, "categories": ["Z99"]},
            {"name": "los", "type": "numeric", "lower": 1, "upper": 365},
        ]
    }
)
STATS = ("count", "sum_los", "mean_los")
OFFSETS = (-2.0, -1.0, 0.0, 1.0, 2.0, 4.0, 8.0)


def publisher(method: str, epsilon: float, delta: float) -> GroupByPublisher:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return GroupByPublisher(
            epsilon,
            SCHEMA,
            by=["dx"],
            keys="private",
            delta=delta,
            selection=method,
            means=["los"],
            random_state=0,
        )


def true_counts(pub: GroupByPublisher) -> tuple[list[str], np.ndarray]:
    """Each distance's label and true count."""
    sel = pub._params().plan.selection
    assert sel is not None
    if sel.method == "truncated-geometric":
        pi = sel.keep_probabilities()
        counts = np.unique(np.linspace(1, len(pi) - 1, 7).round().astype(int))
        return [f"π(n) = {pi[c]:.2f}" for c in counts], counts
    if sel.method == "dp-sips":
        tau, scale = sel.sips_thresholds()[-1], sel.sips_sigmas()[-1]
    elif sel.method == "laplace":
        tau, scale = sel.threshold_, sel.laplace().scale
    else:
        tau, scale = sel.threshold_, sel.gaussian().sigma
    counts = np.maximum(1, np.rint(tau + np.asarray(OFFSETS) * scale)).astype(int)
    return [f"τ {o:+g} s" for o in OFFSETS], counts


def table(
    counts: np.ndarray, copies: int, values: tuple[float, float], seed: int = 1
) -> pd.DataFrame:
    """``copies`` keys of each true count (key ``K<distance>_<copy>``), values uniform on
    ``values``."""
    rng = np.random.default_rng(seed)
    names = [f"K{i:02d}_{j:03d}" for i in range(len(counts)) for j in range(copies)]
    dx = np.repeat(names, np.repeat(counts, copies))
    return pd.DataFrame({"dx": dx, "los": rng.uniform(*values, len(dx))})


@contextmanager
def unconditional(pub: GroupByPublisher) -> Iterator[None]:
    """The intervals the release computed before: the threshold forgotten."""
    keep = pub._selection_cut
    pub._selection_cut = lambda plan, n, m: np.full(n + m, -np.inf)  # type: ignore[method-assign]
    try:
        yield
    finally:
        pub._selection_cut = keep  # type: ignore[method-assign]


def coverage(
    pub: GroupByPublisher, df: pd.DataFrame, releases: int, groups: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per distance: how often a key was released, and each statistic's hits then."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows, y = pub._encode(df)
        source = resolve_random_state(0)
    plan = pub._params().plan
    agg = pub._keyed_aggregate(plan, rows, y)
    by = df.groupby("dx")["los"]
    names = by.size().index.to_numpy()
    group = np.array([int(k[1:3]) for k in names])
    truth = [by.size().to_numpy(float), by.sum().to_numpy(), by.mean().to_numpy()]
    released = np.zeros(groups)
    hits = np.zeros((len(STATS), groups))
    for _ in range(releases):
        rel = pub._publish_private(plan, agg, source, rows, y)
        at = np.searchsorted(names, rel.data["dx"].to_numpy()[1:])  # row 0: declared Z99
        released += np.bincount(group[at], minlength=groups)
        for i, s in enumerate(STATS):
            lo, hi = rel.statistics[f"{s}_lo"][1:], rel.statistics[f"{s}_hi"][1:]
            ok = (lo <= truth[i][at]) & (truth[i][at] <= hi)
            hits[i] += np.bincount(group[at], weights=ok, minlength=groups)
    return released, hits


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--releases", type=int, default=500)
    ap.add_argument("--copies", type=int, default=20, help="keys per distance")
    ap.add_argument("--epsilon", type=float, default=0.5)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument(
        "--values", type=float, nargs=2, default=(150.0, 250.0), help="lengths of stay range"
    )
    args = ap.parse_args()
    print(
        f"{args.releases} seeded releases per method of {args.copies} keys per distance, "
        f"ε = {args.epsilon:g}, δ = {args.delta:g}, replace-one, 95 % intervals, lengths of "
        f"stay uniform on {args.values} (bounds 1–365). Coverage "
        "among the key-releases that released the key: new (conditional) / old "
        "(unconditional), the same releases.\n"
    )
    print("| method | true count | distance | released | key-releases | count | sum | mean |")
    print("|---|---:|---|---:|---:|---|---|---|")
    for method in ("laplace", "gaussian", "truncated-geometric", "dp-sips"):
        t0 = time.perf_counter()
        pub = publisher(method, args.epsilon, args.delta)
        labels, counts = true_counts(pub)
        df = table(counts, args.copies, tuple(args.values))
        n, new = coverage(pub, df, args.releases, len(counts))
        with unconditional(pub):
            n_old, old = coverage(pub, df, args.releases, len(counts))
        assert np.array_equal(n, n_old)  # the same seed: the same releases
        for i, (label, c) in enumerate(zip(labels, counts, strict=True)):
            rate = n[i] / (args.releases * args.copies)
            cells = [
                f"{new[j, i] / n[i]:.3f} / {old[j, i] / n[i]:.3f}" if n[i] else "–"
                for j in range(len(STATS))
            ]
            print(
                f"| {method} | {c} | {label} | {rate:.3f} | {int(n[i])} | "
                + " | ".join(cells)
                + " |"
            )
        print(f"\n({method}: {time.perf_counter() - t0:.0f} s)\n", flush=True)


if __name__ == "__main__":
    main()
