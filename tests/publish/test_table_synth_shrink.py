"""Rare codes in the tree model's edge tables: shrinkage toward independence (issue 30).

A rare code's row of a noisy edge table is mostly noise; clipped at 0 and fitted to its margins
it reads as a 0 % / 100 % conditional. ``_shrink_edge_table`` pulls each row toward the child's
share given the class with ``PRIOR_SIGMAS · σ`` pseudo-rows, fading as 1/n above a row total of
``PRIOR_SIGMAS · σ · √x`` (post-processing). Each test also
runs the code as it was before (the weight set to 0) and shows it failing the same threshold.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ppdp.data import Schema
from ppdp.publish import TableSynthesizer, table_synth
from ppdp.publish import table_synth_model as model

SIGMA = 10.0
#: Edge table (parent 3 codes x child 2 codes): two heavy rows and one rare row of 6 rows.
EXACT = np.array([[1500.0, 3500.0], [2100.0, 900.0], [3.0, 3.0]])


def _fit(noise: np.ndarray) -> model.Model:
    """``estimate`` on EXACT measured with ``noise`` (first-round tables exact, for clarity)."""
    first = {
        0: model.Measurement((0,), EXACT.sum(axis=1), SIGMA),
        1: model.Measurement((1,), EXACT.sum(axis=0), SIGMA),
    }
    second = {(0, 1): model.Measurement((0, 1), EXACT + noise, SIGMA)}
    return model.estimate(int(EXACT.sum()), [3, 2], [0, 1], None, first, [(0, 1)], second)


def _rare_row_errors(monkeypatch: pytest.MonkeyPatch, weight: float) -> tuple[float, float]:
    """Mean |P(child 0 | rare) − P(child 0)| and max heavy-row error over 200 noise draws."""
    monkeypatch.setattr(model, "PRIOR_SIGMAS", weight)
    rng = np.random.default_rng(7)
    share = EXACT[:, 0].sum() / EXACT.sum()
    rare, heavy = [], []
    for _ in range(200):
        m = _fit(rng.normal(0.0, SIGMA, EXACT.shape))
        t = m.triples[1][0]
        cond = t[:, 0] / np.maximum(t.sum(axis=1), 1e-12)
        if t[2].sum() > 0.5:  # the rare row can be estimated empty: no conditional to read
            rare.append(abs(cond[2] - share))
        heavy.append(np.abs(cond[:2] - EXACT[:2, 0] / EXACT[:2].sum(axis=1)).max())
        # Margins preserved: the fitted edge table sums to its (C, x) tables.
        np.testing.assert_allclose(t.sum(axis=1), m.pairs[0][0], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(t.sum(axis=0), m.pairs[1][0], rtol=1e-6, atol=1e-6)
    return float(np.mean(rare)), float(np.max(heavy))


def test_rare_row_keeps_about_the_marginal_heavy_rows_their_measurement(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rare, heavy = _rare_row_errors(monkeypatch, model.PRIOR_SIGMAS)
    assert rare < 0.2  # measured 0.16 (6 true rows under σ = 10 noise per cell)
    assert heavy < 0.01  # a 3,000-row row moves by at most a percent
    # Before the shrinkage (weight 0) the rare row's conditional sits near 0 % or 100 %.
    old, _ = _rare_row_errors(monkeypatch, 0.0)
    assert old > 0.28, old  # measured 0.33


def test_shrink_is_the_dirichlet_posterior_mean() -> None:
    # σ = 10, factor 3: w = 30; full weight up to a row total of 30·√2 ≈ 42.4, then w·42.4/n.
    noisy = np.array([[[10.0, -4.0], [600.0, 400.0]]])  # (K=1, p=2, x=2)
    rows = np.array([[6.0, 1000.0]])
    cols = np.array([[450.0, 550.0]])
    out = model._shrink_edge_table(noisy, rows, cols, 10.0)
    heavy = 30.0 * 30.0 * np.sqrt(2.0) / 1000.0  # 1.27 pseudo-rows
    expect = [[[10.0 + 13.5, -4.0 + 16.5], [600.0 + 0.45 * heavy, 400.0 + 0.55 * heavy]]]
    np.testing.assert_allclose(out, expect)
    assert np.all(model._shrink_edge_table(noisy, rows, cols, 10.0, 0.0) == np.maximum(noisy, 0))


def _long_tail(seed: int = 0) -> tuple[pd.DataFrame, Schema]:
    """60 codes (30 with 200-600 rows, 30 with 20-60), sex ~ 45 % F independent of the code."""
    rng = np.random.default_rng(seed)
    sizes = np.r_[rng.integers(200, 601, 30), rng.integers(20, 61, 30)]
    code = np.repeat(np.arange(60), sizes)
    sex = np.where(rng.random(code.size) < 0.45, "F", "M")
    df = pd.DataFrame({"code": [f"d{c}" for c in code], "sex": sex})
    schema = Schema.from_dict(
        {
            "columns": [
                {"name": "code", "type": "categorical", "categories": [f"d{c}" for c in range(60)]},
                {"name": "sex", "type": "categorical", "categories": ["F", "M"]},
            ]
        }
    )
    return df, schema


def _rare_share_gap(
    monkeypatch: pytest.MonkeyPatch, weight: float, merge: bool = True
) -> tuple[float, float]:
    """Mean and largest |synthetic − real share of F| over the rare codes, seeds 0-2, ε = 1;
    ``merge=False`` also stops the edge tables from merging the codes round 1 cannot tell
    from noise (as before issue 30's edge forms)."""
    monkeypatch.setattr(model, "PRIOR_SIGMAS", weight)
    if not merge:
        monkeypatch.setattr(
            table_synth, "compress_levels", lambda first, *a, **k: np.arange(first.shape[-1])
        )
    df, schema = _long_tail()
    rare = [f"d{c}" for c in range(30, 60)]
    real = df[df.code.isin(rare)].groupby("code").sex.apply(lambda s: (s == "F").mean())
    gaps = []
    for seed in range(3):
        with pytest.warns(Warning):  # random_state is for tests only
            synth = TableSynthesizer(1.0, schema, method="tree", random_state=seed).fit(df)
        out = synth.release_.data
        syn = out[out.code.isin(rare)].groupby("code").sex.apply(lambda s: (s == "F").mean())
        gaps.append((syn - real.reindex(syn.index)).abs())
    g = pd.concat(gaps)
    return float(g.mean()), float(g.max())


def test_long_tail_codes_get_no_invented_association(monkeypatch: pytest.MonkeyPatch) -> None:
    # Seeded; with ~40 rows per rare code the sampling error alone gives a mean gap of ~0.09.
    # Measured 0.089, 0.57 (shrinkage and merged rare codes; 0.108, 0.43 with shrinkage
    # alone): the largest gap is one small code whose real share sits far from 45 % by its
    # own sampling, which a model of independence cannot follow (nor should).
    mean_gap, max_gap = _rare_share_gap(monkeypatch, model.PRIOR_SIGMAS)
    assert mean_gap < 0.12 and max_gap < 0.65, (mean_gap, max_gap)
    old_mean, old_max = _rare_share_gap(monkeypatch, 0.0, merge=False)
    assert old_mean > 0.16 and old_max > 0.65, (old_mean, old_max)  # measured 0.188, 0.74


def _diagonal_spurious_share(monkeypatch: pytest.MonkeyPatch, project: bool) -> float:
    """Mean share of the fitted edge table off the diagonal of a 16 x 16 diagonal table
    (1,000 rows per code, σ = 20 per cell) over 20 seeded noise draws."""
    if not project:  # the code before the projection: every row clipped at 0
        monkeypatch.setattr(model, "_project_rows", lambda v, t: np.maximum(v, 0.0))
    exact = np.diag(np.full(16, 1000.0))
    first = {
        0: model.Measurement((0,), exact.sum(axis=1), 20.0),
        1: model.Measurement((1,), exact.sum(axis=0), 20.0),
    }
    rng = np.random.default_rng(11)
    shares = []
    for _ in range(20):
        noisy = exact + rng.normal(0.0, 20.0, exact.shape)
        second = {(0, 1): model.Measurement((0, 1), noisy, 20.0)}
        m = model.estimate(int(exact.sum()), [16, 16], [0, 1], None, first, [(0, 1)], second)
        t = m.triples[1][0]
        shares.append(1.0 - np.trace(t) / t.sum())
    return float(np.mean(shares))


def test_well_measured_rows_lose_the_clipped_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    # Rows of 1,000 > PRIOR_SIGMAS·σ·√16 = 240 are projected onto {≥ 0, Σ = total}: the
    # positive noise clipping keeps in the 15 empty cells of each row (about 0.4σ each,
    # 12 % of the row) mostly goes. Seeded, so deterministic; measured 0.03 against 0.11.
    assert _diagonal_spurious_share(monkeypatch, project=True) < 0.06
    # Broken variant (clip only, as before): the same threshold fails.
    assert _diagonal_spurious_share(monkeypatch, project=False) > 0.09
