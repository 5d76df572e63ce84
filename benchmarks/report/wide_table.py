"""A seeded wide table with its schema, for the report's scale and readability checks.

``wide_table(n_rows, n_columns, n_codes, seed)`` draws rows from a fixed law: eight latent
normal factors (the law's parameters come from ``law_seed`` only, so two seeds give two
samples of the same population), and in turn a numeric column (a factor plus noise, in
[0, 100]), a categorical column of 6 codes (a factor cut at fixed points) and, every fifth
column, a categorical column of ``n_codes`` codes (Zipf-like shares tilted by a factor).
Columns built on the same factor are associated (within a group, Pearson's r about 0.5 to
0.8), the rest independent. The last column is a two-class label built on factor 0.

Used by ``tests/browser/test_report_wide_in_chromium.py`` and
``benchmarks/report/bench_report_wide.py``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ppdp.data import Schema

N_FACTORS = 8


def wide_table(
    n_rows: int, n_columns: int = 150, n_codes: int = 200, seed: int = 0, law_seed: int = 7
) -> tuple[pd.DataFrame, Schema]:
    """``n_rows`` rows of ``n_columns`` columns (the label last) and their declared schema."""
    law = np.random.default_rng(law_seed)
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n_rows, N_FACTORS))
    data: dict[str, object] = {}
    specs: list[dict[str, object]] = []
    codes = [f"c{k:03d}" for k in range(n_codes)]
    base = 1.0 / np.arange(1, n_codes + 1)
    tilt = law.standard_normal(n_codes)
    for j in range(n_columns - 1):
        f = z[:, j % N_FACTORS]
        weight = law.uniform(0.5, 0.9)
        x = weight * f + np.sqrt(1 - weight**2) * rng.standard_normal(n_rows)
        if j % 5 == 4:
            logits = np.log(base)[None, :] + 1.5 * tilt[None, :] * x[:, None]
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            pick = (p.cumsum(axis=1) > rng.random(n_rows)[:, None]).argmax(axis=1)
            name = f"code_{j:03d}"
            data[name] = np.asarray(codes, dtype=object)[pick]
            specs.append({"name": name, "type": "categorical", "categories": codes})
        elif j % 3 == 1:
            name = f"cat_{j:03d}"
            cells = np.digitize(x, [-1.2, -0.5, 0.0, 0.5, 1.2])
            data[name] = np.asarray(list("abcdef"), dtype=object)[cells]
            specs.append({"name": name, "type": "categorical", "categories": list("abcdef")})
        else:
            name = f"num_{j:03d}"
            data[name] = np.clip(50 + 15 * x, 0, 100).round(1)
            specs.append({"name": name, "type": "numeric", "lower": 0, "upper": 100})
    y = z[:, 0] + 0.8 * rng.standard_normal(n_rows) > 0.3
    data["label"] = np.where(y, "yes", "no").astype(object)
    schema = Schema.from_dict(
        {"columns": specs, "label": {"name": "label", "classes": ["no", "yes"]}}
    )
    return pd.DataFrame(data)[list(schema.column_names)], schema


def shuffled(df: pd.DataFrame, seed: int = 0, columns: list[str] | None = None) -> pd.DataFrame:
    """``df`` with each of ``columns`` (default: all) shuffled on its own."""
    rng = np.random.default_rng(seed)
    out = df.copy()
    for c in columns if columns is not None else list(df.columns):
        out[c] = rng.permutation(out[c].to_numpy())
    return out
