"""Check :mod:`peer_sampler` against mbi 1.1.0's shipped sampler on one fitted MST model.

Fits smartnoise-synth's MST once (declared domain, ``preprocessor_eps=0``) on a table of
integer codes and compares the two samplers twice:

* against the **model** (what a sampler must reproduce): both samplers draw ``--draws`` rows
  in the model's own (compressed) domain, and the mean TVD between each sample's 2-way
  marginals and the model's exact 2-way marginals (mbi's variable elimination) is printed
  for the pairs that are edges of MST's tree and for all other pairs;
* against the **real rows**: the released tables (as many rows as the input, decoded) and
  the mean 2-way TVD to the input rows, again tree pairs / other pairs.

Run in the peer venv::

    benchmarks/.peer-venv-smartnoise/bin/python benchmarks/synth/check_peer_sampler.py \
        benchmarks/synth/device-inputs/adult_train.csv --rows 5000 --epsilon 1
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from peer_sampler import sample_model
from peers_device import _public_transformer, _two_samples


def _tvd(x: np.ndarray, y: np.ndarray, sx: int, sy: int, ref: np.ndarray) -> float:
    p = np.bincount(x * sy + y, minlength=sx * sy) / len(x)
    return 0.5 * float(np.abs(p - ref).sum())


def _summary(label: str, d: dict[str, dict[str, list[float]]]) -> None:
    for kind in ("tree", "other"):
        s, f = np.mean(d[kind]["shipped"]), np.mean(d[kind]["fixed"])
        print(
            f"  {label}: {kind:5s} pairs ({len(d[kind]['fixed'])}): mean 2-way TVD "
            f"shipped {s:.4f}, fixed {f:.4f} (ratio {s / f:.1f})"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--rows", type=int, default=5000, help="input rows (0: all)")
    ap.add_argument("--draws", type=int, default=100_000, help="rows drawn to compare to the model")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    from snsynth import Synthesizer

    path = Path(a.csv)
    task = path.name.split("_")[0]
    meta = json.loads((path.parent / "domain.json").read_text())[task]
    cols = list(meta["sizes"])
    sizes = [int(meta["sizes"][c]) for c in cols]
    df = pd.read_csv(path)[cols]
    if 0 < a.rows < len(df):
        df = df.sample(a.rows, random_state=0).reset_index(drop=True)
    np.random.seed(a.seed)  # noqa: NPY002 - smartnoise and mbi use numpy's global generator
    synth = Synthesizer.create("mst", epsilon=a.epsilon, delta=1e-9)
    synth.fit(df, transformer=_public_transformer(meta["sizes"]), preprocessor_eps=0.0)
    model = synth.synthesizer
    names = list(model.domain.attrs)
    edges = {tuple(sorted(cl)) for cl in model.cliques if len(cl) == 2}
    print(f"{task}, {len(df)} rows, MST eps={a.epsilon}, {len(edges)} tree edges")

    # 1. against the model, in its own domain
    shipped = model.synthetic_data(rows=a.draws).df
    fixed = sample_model(model, a.draws, np.random.default_rng(a.seed))
    d = {k: {"shipped": [], "fixed": []} for k in ("tree", "other")}
    for x, y in itertools.combinations(names, 2):
        sx, sy = model.domain[x], model.domain[y]
        ref = np.asarray(model.project((x, y)).datavector(), dtype=float)
        ref = ref / ref.sum()
        kind = "tree" if tuple(sorted((x, y))) in edges else "other"
        d[kind]["shipped"].append(_tvd(shipped[x].to_numpy(), shipped[y].to_numpy(), sx, sy, ref))
        d[kind]["fixed"].append(_tvd(fixed[x], fixed[y], sx, sy, ref))
    _summary(f"vs the model ({a.draws} draws)", d)

    # 2. the released tables against the real rows
    rel_shipped, rel_fixed = _two_samples(synth, len(df), a.seed)
    real = df.to_numpy()
    d = {k: {"shipped": [], "fixed": []} for k in ("tree", "other")}
    for i, j in itertools.combinations(range(len(cols)), 2):
        ref = np.bincount(real[:, i] * sizes[j] + real[:, j], minlength=sizes[i] * sizes[j])
        ref = ref / len(real)
        kind = "tree" if tuple(sorted((names[i], names[j]))) in edges else "other"
        for name, rel in (("shipped", rel_shipped), ("fixed", rel_fixed)):
            s = rel[cols].to_numpy().astype(np.int64)
            d[kind][name].append(_tvd(s[:, i], s[:, j], sizes[i], sizes[j], ref))
    _summary("vs the real rows", d)


if __name__ == "__main__":
    main()
