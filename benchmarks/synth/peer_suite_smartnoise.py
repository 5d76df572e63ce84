"""MST or AIM (smartnoise-synth 1.0.8) on one table of integer codes, sampled as shipped and fixed.

Called by ``benchmarks/synth/suite.py --peers`` inside the peer venv
(``benchmarks/.peer-venv-smartnoise``), not by hand::

    benchmarks/.peer-venv-smartnoise/bin/python benchmarks/synth/peer_suite_smartnoise.py \
        CODES.csv SIZES.json OUTDIR --method aim --epsilon 1 --seed 0 --aim-time 400

The domain is the declared one (``SIZES.json``: each column's number of codes), given to
smartnoise through ``peers_device._public_transformer`` (``preprocessor_eps=0``); the fitted
model is sampled twice by ``peers_device._two_samples`` (as shipped, and with
``peer_sampler``'s junction-tree sampler: post-processing). AIM (``peers_device.run_aim``,
smartnoise's defaults: ``max_model_size=80``, 16·d rounds, the workload of every 2-way
marginal) stops starting rounds once the process has used ``--aim-time`` seconds of CPU
time (CPU, not wall: the machine is shared, and a busy neighbour should not cut AIM short):
the model is then estimated from the measurements taken so far and ``status.txt`` says where
it stopped (rounds, share of ρ spent; the release is DP at the full (ε, δ) and spent less).

Writes ``OUTDIR/shipped.csv``, ``OUTDIR/fixed.csv``, ``OUTDIR/seconds.txt`` (fit + both
samples: wall and process CPU seconds) and ``OUTDIR/status.txt``. MST and AIM are
(ε, δ)-DP under add/remove neighbours.

The venv (``benchmarks/.peer-venv-smartnoise``, git-ignored)::

    python3 -m venv benchmarks/.peer-venv-smartnoise
    benchmarks/.peer-venv-smartnoise/bin/pip install --no-deps smartnoise-synth==1.0.8 \
        smartnoise-sql==1.0.10 mbi==1.1.0 opendp==0.14.2 pandas==2.3.3 numpy scipy networkx \
        jax jaxlib chex optax absl-py toolz attrs antlr4-python3-runtime==4.9.3 Faker \
        SQLAlchemy PyYAML Deprecated wrapt disjoint-set graphviz typing_extensions \
        python-dateutil pytz tzdata six ml_dtypes opt_einsum greenlet etils

(smartnoise-synth's declared opacus and pac-synth pull in torch and are used by neither.)
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
    p.add_argument("--method", choices=("mst", "aim"), default="mst")
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--aim-time", type=float, default=420.0, help="AIM: no round after this CPU time (s)"
    )
    a = p.parse_args()
    from peers_device import run_aim, run_mst

    sizes = json.loads(Path(a.sizes).read_text(encoding="utf-8"))
    train = pd.read_csv(a.codes)[list(sizes)]
    run = run_mst if a.method == "mst" else run_aim
    t, c = time.perf_counter(), time.process_time()
    results = run(
        train,
        {"sizes": sizes},
        a.epsilon,
        a.seed,
        {"aim_time": a.aim_time, "clock": time.process_time},
    )
    secs, cpu = time.perf_counter() - t, time.process_time() - c
    out = Path(a.out)
    for (_, syn, _), name in zip(results, ("shipped", "fixed"), strict=True):
        syn[list(sizes)].astype(int).to_csv(out / f"{name}.csv", index=False)
    (out / "seconds.txt").write_text(f"{secs:.3f} {cpu:.3f}\n", encoding="utf-8")
    (out / "status.txt").write_text(results[1][2] + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
