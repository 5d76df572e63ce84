"""Benchmark: per-group counts and means, ppdp's GroupByPublisher vs diffprivlib's tools.

Query: on UCI Adult (45,222 rows, :func:`ppdp.datasets.load_adult`), per (sex, race) group
(2 × 5 = 10 groups, the smallest about 150 rows), the row count and the means of ``age``
(declared [17, 90]) and ``hours-per-week`` ([1, 99]). Same ε split for both: a third each
for the counts and the two mean columns. Groups are disjoint, so the diffprivlib version,
one call per group, composes in parallel over groups.

* ours: ``GroupByPublisher(ε, schema, by=["sex", "race"], means=[...])`` under replace-one
  (the default) and under add/remove; noisy counts (discrete Laplace), noisy centred sums;
  mean = midpoint + noisy centred sum / noisy count, clamped; NaN (below: the midpoint)
  where the noisy count is below 1.
* diffprivlib 0.6.6, what a user writes: per group ``count_nonzero(in_group, ε/3)`` of the
  whole table's membership indicator (geometric noise, sensitivity 1: add/remove,
  truncated to ``[0, n]``; counting ``ones(n_g)`` instead would truncate at the group's
  exact size, which leaks it and hides half the noise) and ``mean(values, ε/3, bounds)``
  over the group's rows. **Its mean uses the exact
  group size** as public (sensitivity ``(upper − lower)/n_g``), so its guarantee holds only
  if every group's size is public: that is neither our add/remove nor our replace-one
  (where only the total n is public), and it is the reason its means can be more accurate
  for small groups. The table states this; the ratios are reported as measured.

Metric: mean absolute error against the exact values, over the 10 groups and ``--reps``
seeds (default 200), per ε. Ratio = ours / diffprivlib (< 1: ours is more accurate).

Measured (200 seeds; MAE per group; ratio ours / diffprivlib):

====  =====================  ========  ========  ===========  =======  =======
ε     quantity               ours r-1  ours a/r  diffprivlib  r-1/dpl  a/r/dpl
====  =====================  ========  ========  ===========  =======  =======
0.1   count                  61.35     30.67     30.47        2.01     1.01
0.1   mean age               5.694     3.302     5.258        1.08     0.63
0.1   mean hours-per-week    8.031     4.392     7.281        1.10     0.60
1     count                  6.115     3.019     3.001        2.04     1.01
1     mean age               0.6998    0.3467    0.6074       1.15     0.57
1     mean hours-per-week    0.8264    0.4116    0.782        1.06     0.53
====  =====================  ========  ========  ===========  =======  =======

Counts at the same relation (add/remove) match (ratio 1.01); replace-one doubles the count
sensitivity (a row moving between groups), hence 2×. Means: under add/remove ours has about
half diffprivlib's error (centred sums: half a range per row, against its full range over
n_g); under replace-one 5–16 % more, while not assuming the group sizes public.

Run (the peer venv, see ``bench_logreg_vs_diffprivlib.py`` for its setup)::

    benchmarks/.peer-venv-diffprivlib/bin/python benchmarks/groupby_vs_diffprivlib.py

Without diffprivlib (e.g. with ``.venv/bin/python``) the script says so and runs ours only.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

from ppdp.datasets import load_adult
from ppdp.exceptions import InsecureRandomnessWarning
from ppdp.publish import GroupByPublisher

EPSILONS = (0.1, 0.5, 1.0, 2.0)
BY = ("sex", "race")
MEANS = ("age", "hours-per-week")


def truth(df, schema):
    keys = GroupByPublisher(1.0, schema, by=BY).plan().keys()
    g = df.groupby(list(BY))
    counts = g.size()
    out = keys.copy()
    out["count"] = [int(counts.get(tuple(k), 0)) for k in keys.itertuples(index=False)]
    for col in MEANS:
        means = g[col].mean()
        out[col] = [float(means.get(tuple(k), np.nan)) for k in keys.itertuples(index=False)]
    return out


def ours(df, schema, eps, seed, relation):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        pub = GroupByPublisher(
            eps, schema, by=BY, means=MEANS, relation=relation, random_state=seed
        ).fit(df)
    data = pub.release_.data
    counts = data["count"].to_numpy(dtype=float)
    means = []
    for col in MEANS:
        c = schema.column(col)
        m = data[f"mean_{col}"].to_numpy()
        means.append(np.where(np.isnan(m), (c.lower + c.upper) / 2, m))
    return counts, means


def peer(df, schema, eps, seed, keys):
    from diffprivlib.accountant import BudgetAccountant
    from diffprivlib.tools import count_nonzero, mean

    rng = np.random.default_rng(seed)
    share = eps / (1 + len(MEANS))
    counts, means = [], [[] for _ in MEANS]
    for k in keys.itertuples(index=False):
        member = ((df[BY[0]] == k[0]) & (df[BY[1]] == k[1])).to_numpy()
        rows = df[member]
        acct = BudgetAccountant()  # groups are disjoint: one budget per group (parallel)
        state = int(rng.integers(2**31))
        counts.append(count_nonzero(member, epsilon=share, random_state=state, accountant=acct))
        for j, col in enumerate(MEANS):
            c = schema.column(col)
            means[j].append(
                mean(
                    rows[col].to_numpy(dtype=float),
                    epsilon=share,
                    bounds=(c.lower, c.upper),
                    random_state=state + j + 1,
                    accountant=acct,
                )
            )
    return np.asarray(counts, dtype=float), [np.asarray(m) for m in means]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    args = parser.parse_args()
    try:
        import diffprivlib  # noqa: F401

        have_peer = True
    except ImportError:
        have_peer = False
        print("diffprivlib is not installed in this interpreter: ours only")
    df, schema = load_adult()
    exact = truth(df, schema)
    keys = exact[list(BY)]
    print(
        f"Adult, {len(df):,} rows, {len(exact)} groups (sizes {exact['count'].min()}"
        f"..{exact['count'].max()}), {args.reps} seeds per ε; MAE per group"
    )
    header = f"{'ε':>5} {'quantity':<20} {'ours r-1':>10} {'ours a/r':>10}"
    if have_peer:
        header += f" {'diffprivlib':>12} {'r-1/dpl':>8} {'a/r/dpl':>8}"
    print(header)
    for eps in EPSILONS:
        errs: dict[str, dict[str, list[float]]] = {}
        for seed in range(args.reps):
            runs = {r: ours(df, schema, eps, seed, r) for r in ("replace-one", "add/remove")}
            if have_peer:
                runs["dpl"] = peer(df, schema, eps, seed, keys)
            for name, (counts, means) in runs.items():
                e = errs.setdefault(name, {})
                e.setdefault("count", []).append(np.mean(np.abs(counts - exact["count"])))
                for col, m in zip(MEANS, means, strict=True):
                    e.setdefault(f"mean {col}", []).append(np.mean(np.abs(m - exact[col])))
        for q in errs["replace-one"]:
            r1, ar = np.mean(errs["replace-one"][q]), np.mean(errs["add/remove"][q])
            line = f"{eps:>5g} {q:<20} {r1:>10.4g} {ar:>10.4g}"
            if have_peer:
                d = np.mean(errs["dpl"][q])
                line += f" {d:>12.4g} {r1 / d:>8.2f} {ar / d:>8.2f}"
            print(line)
    if have_peer:
        print(
            "diffprivlib's mean treats each group's exact size as public (sensitivity "
            "(upper - lower)/n_g); ours does not (only n, under replace-one)."
        )


if __name__ == "__main__":
    main()
