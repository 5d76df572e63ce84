"""Run smartnoise-synth's MST on a table of integer codes (inside its own peer venv).

Usage (called by ``benchmarks/synth_vs_peers.py --peers``, not by hand)::

    benchmarks/.peer-venv-smartnoise/bin/python benchmarks/synth/peer_mst.py \
        IN.csv OUT.csv --epsilon E --delta D --seed S

Every column of IN is categorical (the benchmark's 16-bin codes and category indices), so
MST's own preprocessing is the identity on codes (``preprocessor_eps=0``: no budget is spent
on bounds). MST as shipped by smartnoise-synth 1.0.8 (mbi 1.x, whose sampler PEERS.md flags);
its guarantee is (ε, δ)-DP under add/remove neighbours.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("inp")
    p.add_argument("out")
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--delta", type=float, default=1e-9)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    from snsynth import Synthesizer

    df = pd.read_csv(a.inp).astype(str)
    np.random.seed(a.seed)  # noqa: NPY002 - mbi draws from numpy's global generator
    t = time.perf_counter()
    synth = Synthesizer.create("mst", epsilon=a.epsilon, delta=a.delta)
    synth.fit(df, categorical_columns=list(df.columns), preprocessor_eps=0.0)
    out = synth.sample(len(df))
    secs = time.perf_counter() - t
    out.to_csv(a.out, index=False)
    print(f"{secs:.3f}")


if __name__ == "__main__":
    main()
