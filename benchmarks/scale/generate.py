"""Write the scale benchmark's dataset: N rows x 50 numeric columns + a 2-class label, as Parquet.

Usage::

    .venv/bin/python benchmarks/scale/generate.py --rows 20000000 --out /tmp/scale-2e7
    .venv/bin/python benchmarks/scale/generate.py --rows 1000000 --out /tmp/scale-1e6

The table is written file by file (``part-00000.parquet``, ...; one file in memory at a
time, so memory stays bounded by one file whatever ``--rows``), seeded: the same arguments
give the same bytes. Beside the files, ``<out>.schema.json`` (outside the folder, so the
folder holds Parquet files only) declares every column's public bounds and the label's
classes with their counts (``public_counts``, known here because the generator made the
data; a real custodian must know them from elsewhere).

The columns are driven by 5 shared Gaussian factors, so they are correlated, and pass
through skewing transforms so that they are not Gaussian:

- ``u00..u14`` in ``[0, 1]``: a logistic squash raised to a power in ``[1, 3]`` (right skew);
- ``v15..v29`` in ``[-5, 5]``: a scaled log-normal shape, clipped (long right tail);
- ``w30..w39`` in ``[0, 100]``: zero-heavy (about 60 % exact zeros), long tail;
- ``k40..k49`` in ``[0, 10]``, declared integer: rounded, clipped Gaussians.

The label is Bernoulli of a logistic model of four of the standardised factors-driven
scores (one per group), about 40 % positives, so a linear classifier learns it well
(accuracy about 0.8) but not perfectly.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

N_COLS = 50
N_FACTORS = 5
LABEL = "label"
GROUPS = (("u", 0, 15), ("v", 15, 30), ("w", 30, 40), ("k", 40, 50))
# Label logit: weights on the standardised scores of one column per group, plus a bias.
LOGIT_WEIGHTS = {0: 1.4, 17: -1.1, 33: 0.9, 45: 0.7}
LOGIT_BIAS = -0.45


def column_names() -> list[str]:
    """The 50 feature names, in order (``u00..u14, v15..v29, w30..w39, k40..k49``)."""
    names = []
    for prefix, start, stop in GROUPS:
        names.extend(f"{prefix}{j:02d}" for j in range(start, stop))
    return names


def schema_dict(class_counts: list[int]) -> dict[str, object]:
    """The ppdp schema of the dataset (declared bounds; label classes and counts)."""
    columns: list[dict[str, object]] = []
    for name in column_names():
        kind = name[0]
        if kind == "u":
            columns.append({"name": name, "type": "numeric", "lower": 0, "upper": 1})
        elif kind == "v":
            columns.append({"name": name, "type": "numeric", "lower": -5, "upper": 5})
        elif kind == "w":
            columns.append({"name": name, "type": "numeric", "lower": 0, "upper": 100})
        else:
            columns.append(
                {"name": name, "type": "numeric", "lower": 0, "upper": 10, "integer": True}
            )
    return {
        "schema_version": 1,
        "columns": columns,
        "label": {"name": LABEL, "classes": [0, 1], "public_counts": class_counts},
        "nan_policy": "error",
    }


class Model:
    """The fixed (seeded) parameters of the generator: loadings and per-column shapes."""

    def __init__(self, seed: int) -> None:
        rng = np.random.default_rng([seed, 0xC0FFEE])
        self.loadings = rng.normal(size=(N_COLS, N_FACTORS)) * 0.7
        self.sd = np.sqrt((self.loadings**2).sum(axis=1) + 0.5**2)
        self.power = rng.uniform(1.0, 3.0, size=N_COLS)
        self.scale = rng.uniform(1.0, 2.0, size=N_COLS)
        self.shift = rng.uniform(0.0, 0.6, size=N_COLS)

    def block(self, rng: np.random.Generator, m: int) -> tuple[np.ndarray, np.ndarray]:
        """``m`` rows: the (m, 50) feature matrix and the (m,) 0/1 label."""
        z = rng.normal(size=(m, N_FACTORS))
        s = z @ self.loadings.T
        s += rng.normal(scale=0.5, size=(m, N_COLS))
        s /= self.sd  # standardised scores, correlated through the factors
        logit = np.full(m, LOGIT_BIAS)
        for j, w in LOGIT_WEIGHTS.items():
            logit += w * s[:, j]
        label = (rng.random(m) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
        x = np.empty_like(s)
        for prefix, a, b in GROUPS:
            t = s[:, a:b]
            if prefix == "u":
                x[:, a:b] = (1.0 / (1.0 + np.exp(-1.5 * t))) ** self.power[a:b]
            elif prefix == "v":
                shape = self.scale[a:b] * (np.exp(0.6 * t) - math.exp(0.18))
                x[:, a:b] = np.clip(shape, -5.0, 5.0)
            elif prefix == "w":
                x[:, a:b] = np.clip(25.0 * np.maximum(t - self.shift[a:b], 0.0) ** 1.5, 0, 100)
            else:
                x[:, a:b] = np.clip(np.rint(5.0 + 2.0 * t), 0.0, 10.0)
        return x, label


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=float, default=2e7, help="rows in all (default 2e7)")
    ap.add_argument(
        "--files", type=int, default=None, help="number of files (default: 5e5 rows a file)"
    )
    ap.add_argument("--out", type=Path, default=Path("/tmp/scale-2e7"), help="output folder")
    ap.add_argument("--row-group", type=int, default=100_000, help="rows per Parquet row group")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--overwrite", action="store_true", help="replace an existing folder")
    args = ap.parse_args()

    rows = int(args.rows)
    if rows < 2:
        sys.exit(f"--rows ({args.rows}) must be at least 2")
    files = args.files if args.files is not None else max(1, math.ceil(rows / 500_000))
    if not (1 <= files <= rows):
        sys.exit(f"--files ({files}) must be in 1..{rows}")
    out: Path = args.out
    schema_path = out.with_name(out.name + ".schema.json")
    if out.exists() and not args.overwrite:
        sys.exit(f"--out ({out}) exists; pass --overwrite to replace it")
    mem_bytes = rows * (N_COLS + 1) * 8
    need = int(mem_bytes * 1.05) + (1 << 29)
    out.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(out.parent).free
    if free < need:
        sys.exit(
            f"not enough disk under {out.parent}: need ~{need / 1e9:.1f} GB, "
            f"have {free / 1e9:.1f} GB"
        )

    tmp = out.with_name(out.name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model = Model(args.seed)
    names = [*column_names(), LABEL]
    counts = np.zeros(2, dtype=np.int64)
    t0 = time.perf_counter()
    base, extra = divmod(rows, files)
    for i in range(files):
        m = base + (1 if i < extra else 0)
        x, label = model.block(np.random.default_rng([args.seed, i + 1]), m)
        counts += np.bincount(label, minlength=2)
        arrays = [pa.array(x[:, j]) for j in range(N_COLS)] + [pa.array(label)]
        table = pa.Table.from_arrays(arrays, names=names)
        pq.write_table(table, tmp / f"part-{i:05d}.parquet", row_group_size=args.row_group)
        del x, label, arrays, table
        if files >= 10 and (i + 1) % max(1, files // 10) == 0:
            print(f"  {i + 1}/{files} files, {time.perf_counter() - t0:.0f} s", flush=True)
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    schema = schema_dict([int(c) for c in counts])
    schema_path.write_text(json.dumps(schema, indent=1) + "\n")

    from ppdp.data import Schema

    Schema.from_file(schema_path)  # the declaration must load
    disk = sum(f.stat().st_size for f in out.glob("*.parquet"))
    print(
        f"wrote {out}: {rows:,} rows x {N_COLS} columns + label in {files} files, "
        f"{time.perf_counter() - t0:.1f} s"
    )
    print(f"schema: {schema_path}  (class counts {counts.tolist()})")
    print(f"size on disk: {disk / 1e9:.2f} GB")
    print(f"in-memory size (rows x 51 x 8 B): {mem_bytes / 1e9:.2f} GB")


if __name__ == "__main__":
    main()
