"""``jiang2013-fig2``: eigenvector energy of Adult, and the F-norm of DP-PCA vs LAP and EXP.

Jiang et al. (2013), Fig. 2: (a) the share of the total variance ("energy") carried by
each eigenvector of the covariance of the encoded Adult table (p = 35 with the label's
two dummies); (b) boxplots over 10 trials of the squared Frobenius error
``||X - X̄||_F²`` of the DP-PCA release at k = 1..10 components, next to the Laplace (LAP)
and exponential (EXP) baselines, at ε ∈ {0.1, 0.25, 0.5, 1, 1.25, 1.5}.

Panel (a) is an *analysis* figure computed from the exact, non-private covariance (Adult
is public). Choosing k from it on private data would leak (ALGORITHMS-publishing A.7 (4));
the experiment sweeps a fixed grid of k instead.

LAP and EXP take no k: they are released once per (ε, trial) and drawn beside every k.
The comparison uses Welch's one-sided t-test (DP-PCA error < baseline error) over the
trials at each (ε, k): the trials of different methods are independent draws on the same
table, so there is nothing to pair.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdp.evaluate import frobenius_error, mse
from ppdp.experiments import _data
from ppdp.experiments import _framework as fw
from ppdp.experiments import _summary as md
from ppdp.experiments._config import check_common, epsilon_grid, int_grid, set_checked
from ppdp.experiments._methods import LABELS, encode_like, release

__all__ = ["ID", "TITLE", "Config", "run"]

ID = "jiang2013-fig2"
TITLE = "Eigenvector energy of Adult; F-norm of DP-PCA vs LAP and EXP (Jiang et al. 2013, Fig. 2)"

_EPSILONS = (0.1, 0.25, 0.5, 1.0, 1.25, 1.5)
_METHOD_KEYS = {"DP-PCA": 1, "LAP": 2, "EXP": 3}


@dataclass(frozen=True)
class Config:
    """What one run of the experiment does.

    Attributes
    ----------
    epsilons : tuple of float
        The privacy budgets (each release spends one whole ε).
    components : tuple of int
        The numbers of principal components k of DP-PCA.
    trials : int
        Independent releases per (method, ε, k).
    seed : int
        Root seed; every release has its own stream derived from it.
    n_rows : int or None
        Use a seeded subsample of Adult (tests only; not comparable with the paper).
    """

    epsilons: tuple[float, ...] = _EPSILONS
    components: tuple[int, ...] = tuple(range(1, 11))
    trials: int = 10
    seed: int = 2013
    n_rows: int | None = None

    def __post_init__(self) -> None:
        set_checked(self, epsilon_grid, "epsilons")
        set_checked(self, int_grid, "components")
        check_common(self)

    @classmethod
    def full(cls, *, seed: int = 2013) -> Config:
        """The paper's grid: 6 ε × k = 1..10 × 10 trials."""
        return cls(seed=seed)

    @classmethod
    def quick(cls, *, seed: int = 2013) -> Config:
        """A smoke run (well under a minute): 2 ε × 3 k × 3 trials."""
        return cls(epsilons=(0.1, 1.0), components=(1, 3, 10), trials=3, seed=seed)


def _energy(X: np.ndarray) -> pd.DataFrame:
    cov = np.cov(X, rowvar=False, bias=True)
    lam = np.clip(np.linalg.eigvalsh(cov)[::-1], 0.0, None)
    share = lam / lam.sum()
    return pd.DataFrame(
        {
            "component": np.arange(1, lam.size + 1),
            "eigenvalue": lam,
            "energy": share,
            "cumulative_energy": np.cumsum(share),
            # n * sum_{i>k} lambda_i: the F-norm of the exact rank-k PCA reconstruction
            "truncation_error": X.shape[0] * (lam.sum() - np.cumsum(lam)),
        }
    )


def _tests(results: pd.DataFrame) -> pd.DataFrame:
    from scipy.stats import ttest_ind

    rows = []
    pca = results[results.method == "DP-PCA"]
    for (eps, k), group in pca.groupby(["epsilon", "k"]):
        a = group.frobenius.to_numpy()
        for other in ("LAP", "EXP"):
            b = results[(results.method == other) & (results.epsilon == eps)].frobenius
            b = b.to_numpy()
            if a.size >= 2 and b.size >= 2:
                t = ttest_ind(a, b, equal_var=False, alternative="less")
                stat, p = float(t.statistic), float(t.pvalue)
            else:
                stat = p = math.nan
            rows.append(
                {
                    "epsilon": eps,
                    "k": int(k),
                    "versus": other,
                    "mean_dppca": float(a.mean()),
                    "mean_other": float(b.mean()),
                    "ratio": float(a.mean() / b.mean()),
                    "welch_t": stat,
                    "p_value_one_sided": p,
                }
            )
    return pd.DataFrame(rows)


def _plot_energy(plt: Any, energy: pd.DataFrame, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(7, 3.6))
    ax.bar(energy.component, energy.energy, color="#4c72b0", label="energy of eigenvector i")
    ax.plot(
        energy.component, energy.cumulative_energy, "o-", color="#dd8452", ms=3, label="cumulative"
    )
    ax.set_xlabel("eigenvector i (by decreasing eigenvalue)")
    ax.set_ylabel("share of total variance")
    ax.set_title(f"Adult, encoded (p = {len(energy)}): energy per eigenvector")
    ax.set_ylim(0, 1.02)
    ax.legend(loc="center right")
    return fw.save_figure(fig, path)


def _plot_fnorm(plt: Any, results: pd.DataFrame, config: Config, path: Path) -> Path:
    eps = config.epsilons
    ncol = min(3, len(eps))
    nrow = math.ceil(len(eps) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.6 * ncol, 3.4 * nrow), squeeze=False)
    ks = list(config.components)
    for ax, e in zip(axes.flat, eps, strict=False):
        sub = results[results.epsilon == e]
        data = [sub[(sub.method == "DP-PCA") & (sub.k == k)].frobenius for k in ks]
        data += [sub[sub.method == m].frobenius for m in ("LAP", "EXP")]
        labels = [str(k) for k in ks] + ["LAP", "EXP"]
        box = ax.boxplot(data, tick_labels=labels, patch_artist=True, widths=0.6)
        for i, patch in enumerate(box["boxes"]):
            patch.set_facecolor("#4c72b0" if i < len(ks) else "#c44e52")
        ax.set_yscale("log")
        ax.set_title(f"ε = {e:g}")
        ax.set_xlabel("k (DP-PCA)  |  baselines")
        ax.set_ylabel("‖X − X̄‖²_F")
    for ax in list(axes.flat)[len(eps) :]:
        ax.axis("off")
    fig.suptitle(f"Squared Frobenius error on Adult ({config.trials} trials)")
    fig.tight_layout()
    return fw.save_figure(fig, path)


def _k_trend(results: pd.DataFrame, config: Config) -> str:
    """One sentence on how DP-PCA's error moves with k, and why."""
    if len(config.components) < 2:
        return ""
    pca = results[results.method == "DP-PCA"].groupby(["epsilon", "k"]).frobenius.mean()
    k0, k1 = min(config.components), max(config.components)
    grows = [e for e in config.epsilons if pca[(e, k1)] > pca[(e, k0)]]
    if len(grows) == len(config.epsilons):
        return (
            f"DP-PCA's error grows with k at every ε (k = {k0} is best): each component adds "
            "a projected coordinate with Laplace noise of scale 2√(k(p1 + 2p2))/ε per row, "
            "which does not shrink with n, and at these ε it outweighs the variance the "
            "extra component recovers (compare the exact rank-k error in (a)). The paper's "
            "Theorem 3 predicts the same trade-off."
        )
    return (
        f"DP-PCA's error grows from k = {k0} to k = {k1} at ε ∈ "
        f"{{{', '.join(f'{e:g}' for e in grows)}}} and falls at the other ε: the projection "
        "noise grows with k while the truncation error falls."
    )


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def _summary(
    config: Config,
    n: int,
    p: int,
    energy: pd.DataFrame,
    results: pd.DataFrame,
    tests: pd.DataFrame,
    seeded: fw.SeededRuns,
) -> tuple[str, dict[str, Any]]:
    def mean(method: str, eps: float, k: int | None = None) -> float:
        sel = (results.method == method) & (results.epsilon == eps)
        if k is not None:
            sel &= results.k == k
        return float(results[sel].frobenius.mean())

    wins = {other: bool((tests[tests.versus == other].ratio < 1).all()) for other in ("LAP", "EXP")}

    def below(other: str) -> str:
        worse = int((tests[tests.versus == other].ratio >= 1).sum())
        return "yes" if wins[other] else f"no: {worse} of the (ε, k) cells"

    losses = tests[tests.ratio >= 1]
    k_show = [k for k in (1, 2, 5, 10) if k in config.components] or list(config.components)
    top = energy.head(5)
    setting = (
        f"Adult: n = {n:,} rows, p = {p} encoded columns (label block included, as the paper's "
        f"p = 35). {config.trials} trials per cell; ε ∈ "
        f"{{{', '.join(f'{e:g}' for e in config.epsilons)}}}; "
        f"k ∈ {{{', '.join(map(str, config.components))}}}."
    )
    lines = [
        *md.head(TITLE, ID, setting),
        "",
        md.seeded_note(config.seed, seeded.count, how=md.WARNED),
        *seeded.notes(),
        *md.subsample_note(
            config.n_rows,
            " (test configuration): the noise is far larger relative to the data than in the "
            "paper; do not compare numbers.",
        ),
        "",
        "## (a) Energy per eigenvector (exact, non-private covariance; an analysis figure)",
        "",
        *md.table(
            ["eigenvector", "energy", "cumulative", "exact rank-k error n·Σ_{i>k} λ_i"],
            (
                [
                    r.component,
                    f"{r.energy:.3f}",
                    f"{r.cumulative_energy:.3f}",
                    _fmt(r.truncation_error),
                ]
                for r in top.itertuples()
            ),
            "rrrr",
        ),
    ]
    k90 = int((energy.cumulative_energy >= 0.9).to_numpy().argmax()) + 1
    lines += [
        "",
        f"{k90} eigenvectors carry 90 % of the variance. The paper shows the same kind of "
        "plot (a few leading eigenvectors carry most of the energy) and uses it to motivate "
        "small k; picking k from this exact spectrum would leak on private data, so we sweep "
        "a fixed grid.",
        "",
        "## (b) Squared Frobenius error ‖X − X̄‖²_F (mean over trials)",
        "",
        *md.table(
            ["ε", *(f"DP-PCA k={k}" for k in k_show), "LAP", "EXP"],
            (
                [
                    f"{e:g}",
                    *(_fmt(mean("DP-PCA", e, k)) for k in k_show),
                    *(_fmt(mean(m, e)) for m in ("LAP", "EXP")),
                ]
                for e in config.epsilons
            ),
            "r" * (len(k_show) + 3),
        ),
        "",
        "Full results: `results.csv` (one row per release), `tests.csv` (Welch one-sided "
        "t-tests, DP-PCA < baseline, per (ε, k)), `energy.csv`; plots `fig2a_energy.png`, "
        "`fig2b_fnorm.png`.",
        "",
        "## Paper vs ours",
        "",
        *md.table(
            ["claim", "paper (Jiang et al. 2013)", "ours"],
            [
                ["DP-PCA F-norm below LAP at every ε, k", "yes (Fig. 2, boxplots)", below("LAP")],
                ["DP-PCA F-norm below EXP at every ε, k", "yes", below("EXP")],
                [
                    "(ε, k) cells where DP-PCA < baseline is significant (Welch, one-sided, "
                    "p < 0.05)",
                    "not reported",
                    ", ".join(
                        f"vs {o}: {int((tests[tests.versus == o].p_value_one_sided < 0.05).sum())}"
                        f" of {int((tests.versus == o).sum())}"
                        for o in ("LAP", "EXP")
                    ),
                ],
                ["exact numbers", "shown only as plots", "tables above"],
            ],
            "lll",
        ),
        "",
    ]
    trend = _k_trend(results, config)
    if trend:
        lines += [trend, ""]
    if not losses.empty:
        lines += ["Cells where DP-PCA's mean error is not below the baseline's:", ""]
        for (other, eps), g in losses.groupby(["versus", "epsilon"]):
            ks = ", ".join(str(k) for k in sorted(g.k))
            lines.append(f"- vs {other}, ε = {eps:g}: k = {ks} (ratio up to {g.ratio.max():.3f})")
        lines.append("")
    lines += [
        "## Why our numbers differ from the paper's",
        "",
        "- **Safe sensitivities.** The paper's categorical sensitivity is too small for "
        "p2 ≥ 2 (ALGORITHMS-publishing A.3); DP-PCA here uses the proven bound "
        "s_safe = (p1 + 2p2) + p1(p1+1)/2 + 2p1p2 + p2(p2+1), so its covariance noise is "
        "larger than the paper's and its error at small ε somewhat higher.",
        "- **EXP is our reading** (A.5): the paper does not say how Blum-Ligett-Roth's "
        "mechanism gave a row-aligned table. Ours is the per-record exponential mechanism "
        "with utility −‖x − r‖₁ on [0, 1]^p, Δu = p1 + 2p2: a Laplace of scale "
        "2(p1 + 2p2)/ε per cell truncated to [0, 1], labelled 'EXP (per-record reading)'. "
        "At small ε its cells are close to uniform on [0, 1] (expected squared error about "
        "1/3 per cell) while LAP's clamped cells sit at 0 or 1 (about 1/2): this is why EXP "
        "can beat LAP, and DP-PCA at large k, at ε = 0.1. Its level is not the paper's.",
        "- **LAP** adds Lap((p1 + 2p2)/ε) per cell (the dummy-aware row sensitivity), then "
        "decodes categoricals by arg-max and clamps numerics, as DP-PCA's output is; the "
        "paper's exact post-processing of LAP is not stated.",
        "- **Post-processing of all releases** (arg-max one-hot, clamped numerics) bounds "
        "every cell's error, which compresses the gap between methods at small ε compared "
        "with raw noisy matrices.",
        "- **No exact figures** are printed in the paper, so the comparison is of the claim "
        "(ordering of the methods), not of values.",
        "- LAP and EXP take no k; each is released once per (ε, trial) and compared with every k.",
        "",
    ]
    key = {
        "dppca_below_lap_everywhere": wins["LAP"],
        "dppca_below_exp_everywhere": wins["EXP"],
        "max_p_value": float(tests.p_value_one_sided.max()),
        "energy_first": float(energy.energy.iloc[0]),
        "components_for_90pct": k90,
    }
    return "\n".join(lines), key


def run(
    config: Config, out_dir: str | Path, *, progress: fw.Progress | None = None
) -> fw.ExperimentResult:
    """Run the experiment and write its outputs into ``out_dir``.

    Writes ``results.csv`` (method, epsilon, k, trial, frobenius, mse), ``energy.csv``,
    ``tests.csv``, ``config.json``, ``fig2a_energy.png``, ``fig2b_fnorm.png`` and
    ``summary.md``. Each file appears only when complete.

    Parameters
    ----------
    config : Config
        ``Config.full()`` for the paper's grid, ``Config.quick()`` for a smoke run.
    out_dir : path
        Created if needed.
    progress : callable, optional
        ``progress(done, total, message)`` after each release.
    """
    plt = fw.start(config, Config)
    out = Path(out_dir)
    df, schema = _data.adult(config.n_rows, config.seed)
    X_full = schema.encode(df, include_label=True)[0]
    energy = _energy(X_full)
    seeded = fw.SeededRuns()
    total = len(config.epsilons) * config.trials * (2 + len(config.components))
    done = 0
    rows: list[dict[str, Any]] = []
    X_cache: dict[int, np.ndarray] = {}
    for ei, eps in enumerate(config.epsilons):
        for trial in range(config.trials):
            jobs = [("LAP", None), ("EXP", None)] + [("DP-PCA", k) for k in config.components]
            for method, k in jobs:
                ss = fw.seed_sequence(config.seed, _METHOD_KEYS[method], ei, k or 0, trial)
                with seeded.collect():
                    rel = release(method, df, schema, epsilon=eps, k=k, random_state=ss)
                assert rel.encoded is not None
                width = rel.encoded.shape[1]
                if width not in X_cache:
                    X_cache[width] = encode_like(df, schema, width)
                X = X_cache[width]
                rows.append(
                    {
                        "method": method,
                        "epsilon": eps,
                        "k": k,
                        "trial": trial,
                        "frobenius": frobenius_error(X, rel.encoded),
                        "mse": mse(X, rel.encoded),
                    }
                )
                done += 1
                if progress is not None:
                    kk = f" k={k}" if k is not None else ""
                    progress(done, total, f"eps={eps:g} {LABELS[method]}{kk} trial {trial + 1}")
    results = pd.DataFrame(rows)
    results["k"] = results["k"].astype("Int64")
    tests = _tests(results)
    summary, key = _summary(config, len(df), X_full.shape[1], energy, results, tests, seeded)
    return fw.write_run(
        ID, config, out, summary, key,
        tables={"results.csv": results, "energy.csv": energy, "tests.csv": tests},
        figures={
            "fig2a_energy.png": lambda path: _plot_energy(plt, energy, path),
            "fig2b_fnorm.png": lambda path: _plot_fnorm(plt, results, config, path),
        },
    )  # fmt: skip
