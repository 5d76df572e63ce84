"""Benchmark: the explicit joint fit of ``TableSynthesizer(method="pairs")`` (small domains).

``method="auto"`` takes the explicit joint whenever cells × levels ≤ 2²³, which is every
table of a few columns (six of Adult's took about 3 minutes in a trial). The fit is
post-processing of the noisy pair tables; this times it on synthetic noisy pair tables of
the given domain shapes (every pair measured, σ from 3 upwards, n = 5,000, seed 0), and
saves the fitted tables so that two trees can be compared value for value.

Run on the code under test (``--src`` puts another tree's ``src`` first, e.g. the code
before a change exported with ``git archive REV src | tar -x -C /tmp/before``)::

    .venv/bin/python benchmarks/synth/bench_fit_joint.py --save /tmp/after.npz
    .venv/bin/python benchmarks/synth/bench_fit_joint.py --src /tmp/before/src \\
        --save /tmp/before.npz --compare /tmp/after.npz
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time

import numpy as np

SHAPES = ("6,5,4,3", "18,18,9,2", "18,18,16,9,2")


def _measurements(shape: tuple[int, ...], n: int, measurement: type) -> list:
    rng = np.random.default_rng(0)
    true = rng.dirichlet(np.full(int(np.prod(shape)), 0.3)).reshape(shape) * n
    out = []
    for i, j in itertools.combinations(range(len(shape)), 2):
        other = tuple(a for a in range(len(shape)) if a not in (i, j))
        table = true.sum(axis=other)
        sigma = 3.0 + i
        out.append(measurement((i, j), (table + rng.normal(0, sigma, table.shape)).ravel(), sigma))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", help="a tree's src folder to import ppdp from")
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES))
    parser.add_argument("--save", help="write the fitted tables to this .npz")
    parser.add_argument("--compare", help="an .npz of another run: print the largest difference")
    args = parser.parse_args()
    if args.src:
        sys.path.insert(0, args.src)
    from ppdp.publish.table_synth_model import Measurement, fit_joint

    fitted = {}
    other = np.load(args.compare) if args.compare else None
    print("| domain | cells | seconds | largest difference from --compare |")
    print("|---|---:|---:|---:|")
    for text in args.shapes:
        shape = tuple(int(x) for x in text.split(","))
        ms = _measurements(shape, 5000, Measurement)
        t = time.perf_counter()
        model = fit_joint(5000, shape, ms)
        seconds = time.perf_counter() - t
        fitted[text] = model.counts
        diff = "-"
        if other is not None and text in other:
            diff = f"{float(np.abs(other[text] - model.counts).max()):.2g}"
        print(f"| {text} | {int(np.prod(shape)):,} | {seconds:.2f} | {diff} |")
    if args.save:
        np.savez(args.save, **fitted)


if __name__ == "__main__":
    main()
