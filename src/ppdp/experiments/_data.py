"""The data every Jiang et al. experiment starts from: Adult, optionally subsampled."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ppdp.data import Schema
from ppdp.datasets import load_adult
from ppdp.experiments._framework import seed_sequence

__all__ = ["adult", "split"]

# Stream keys, so that the subsample and the splits never share a stream with a release.
_SUBSAMPLE_KEY = 900
_SPLIT_KEY = 901


def adult(n_rows: int | None, seed: int) -> tuple[pd.DataFrame, Schema]:
    """Adult as Jiang et al. preprocess it (45,222 rows), or a seeded subsample of it.

    Subsampling is for fast tests only: with fewer rows the same epsilon buys much noisier
    statistics, so the numbers are not comparable with the paper's.
    """
    df, schema = load_adult()
    if n_rows is not None and n_rows < len(df):
        rng = np.random.default_rng(seed_sequence(seed, _SUBSAMPLE_KEY))
        idx = np.sort(rng.choice(len(df), size=n_rows, replace=False))
        df = df.iloc[idx].reset_index(drop=True)
    return df, schema


def split(df: pd.DataFrame, seed: int, trial: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A seeded random 2/3 - 1/3 split (training rows, held-out test rows)."""
    rng = np.random.default_rng(seed_sequence(seed, _SPLIT_KEY, trial))
    perm = rng.permutation(len(df))
    n_train = (2 * len(df)) // 3
    train = df.iloc[np.sort(perm[:n_train])].reset_index(drop=True)
    test = df.iloc[np.sort(perm[n_train:])].reset_index(drop=True)
    return train, test
