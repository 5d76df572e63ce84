"""MST (smartnoise-synth 1.0.8) on one table of integer codes, sampled as shipped and fixed.

Called by ``benchmarks/synth/suite.py --peers`` inside the peer venv
(``benchmarks/.peer-venv-smartnoise``), not by hand::

    benchmarks/.peer-venv-smartnoise/bin/python benchmarks/synth/peer_suite_mst.py \
        CODES.csv SIZES.json OUTDIR --epsilon 1 --seed 0

The domain is the declared one (``SIZES.json``: each column's number of codes), given to
smartnoise through ``peers_device._public_transformer`` (``preprocessor_eps=0``); the fitted
model is sampled twice by ``peers_device._two_samples`` (as shipped, and with
``peer_sampler``'s junction-tree sampler: post-processing). Writes ``OUTDIR/shipped.csv``,
``OUTDIR/fixed.csv`` and ``OUTDIR/seconds.txt`` (fit + both samples). MST is (ε, δ)-DP under
add/remove neighbours.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("codes")
    p.add_argument("sizes")
    p.add_argument("out")
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    from peers_device import run_mst

    sizes = json.loads(Path(a.sizes).read_text(encoding="utf-8"))
    train = pd.read_csv(a.codes)[list(sizes)]
    t = time.perf_counter()
    results = run_mst(train, {"sizes": sizes}, a.epsilon, a.seed, {})
    secs = time.perf_counter() - t
    out = Path(a.out)
    for (_, syn, _), name in zip(results, ("shipped", "fixed"), strict=True):
        syn[list(sizes)].astype(int).to_csv(out / f"{name}.csv", index=False)
    (out / "seconds.txt").write_text(f"{secs:.3f}\n", encoding="utf-8")


if __name__ == "__main__":
    main()
