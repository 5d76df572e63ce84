"""``jiang2013-fig4``: entropy of private releases of Adult and their KL divergence to it.

Jiang et al. (2013), Fig. 4: the entropy of each release and the Kullback-Leibler
divergence from the release to the original, at ε ∈ {0.1, 0.25, 0.5, 1, 1.25, 1.5}. The
paper does not say over which values the distributions range; we compute them per
attribute on fixed public cells (declared categories; 10 equal-width bins of each numeric
attribute's declared bounds), average over the attributes (label included), and smooth
the KL with 1e-6 (:mod:`ppdp.evaluate.information`). Releases are built from the whole
table, 10 trials per (method, ε); DP-PCA uses a fixed k.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdp._validation import check_nonnegative
from ppdp.evaluate import entropy, kl_divergence
from ppdp.experiments import _data
from ppdp.experiments import _framework as fw
from ppdp.experiments import _summary as md
from ppdp.experiments._config import check_common, check_table_releases, set_checked, set_ints
from ppdp.experiments._methods import LABELS, release

__all__ = ["ID", "TITLE", "Config", "run"]

ID = "jiang2013-fig4"
TITLE = "Entropy and KL divergence of private releases of Adult (Jiang et al. 2013, Fig. 4)"

_EPSILONS = (0.1, 0.25, 0.5, 1.0, 1.25, 1.5)
_METHOD_KEYS = {"DP-LDA": 21, "DP-PCA": 22, "LAP": 23, "EXP": 24}


@dataclass(frozen=True)
class Config:
    """What one run of the experiment does.

    Attributes
    ----------
    epsilons : tuple of float
        The privacy budgets (each release spends one whole ε).
    trials : int
        Independent releases per (method, ε).
    seed : int
        Root seed.
    methods : tuple of str
        Any of "DP-LDA", "DP-PCA", "LAP", "EXP".
    lda_class_sizes : {"public", "noisy"}
        DP-LDA's class sizes: "public" (the paper's assumption; the sizes of the table
        being released are declared public) or "noisy" (released with part of ε).
    pca_components : int
        The k of DP-PCA, fixed in advance.
    bins : int
        Equal-width bins over each numeric attribute's declared bounds.
    smoothing : float
        Additive smoothing of the KL divergence.
    n_rows : int or None
        Use a seeded subsample of Adult (tests only; not comparable with the paper).
    """

    epsilons: tuple[float, ...] = _EPSILONS
    trials: int = 10
    seed: int = 2013
    methods: tuple[str, ...] = ("DP-LDA", "DP-PCA", "LAP", "EXP")
    lda_class_sizes: str = "public"
    pca_components: int = 5
    bins: int = 10
    smoothing: float = 1e-6
    n_rows: int | None = None

    def __post_init__(self) -> None:
        check_table_releases(self, _METHOD_KEYS)
        set_ints(self, bins=1)
        set_checked(self, check_nonnegative, "smoothing")
        check_common(self)

    @classmethod
    def full(cls, *, seed: int = 2013) -> Config:
        """The paper's grid: 6 ε × 10 trials, every method."""
        return cls(seed=seed)

    @classmethod
    def quick(cls, *, seed: int = 2013) -> Config:
        """A smoke run: 2 ε × 2 trials, every method."""
        return cls(epsilons=(0.1, 1.0), trials=2, seed=seed)


def _moment_errors(
    rel_stats: dict[str, Any], synthetic: pd.DataFrame, df: pd.DataFrame, schema: Any
) -> tuple[float, float]:
    """Mean absolute error of DP-LDA's noisy statistics and of its synthetic rows' statistics.

    Both against the true statistics of ``df``: class means (K × p) and the pooled second
    moment (p × p), all entries averaged. The paper claims the synthetic rows' statistics
    are closer to the truth than the noisy statistics they were drawn from.
    """
    means, moment = rel_stats.get("class_means"), rel_stats.get("second_moment")
    if means is None or moment is None:
        return math.nan, math.nan
    means, moment = np.asarray(means, dtype=float), np.asarray(moment, dtype=float)
    X, y = schema.encode(df)
    if X.shape[1] != means.shape[1]:
        X, y = schema.encode(df, include_label=True)
    Xs, ys = schema.encode(synthetic, include_label=X.shape[1] != schema.n_features)
    k = means.shape[0]

    def stats(A: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        counts = np.bincount(labels, minlength=k)[:, None]
        sums = np.zeros((k, A.shape[1]))
        np.add.at(sums, labels, A)
        with np.errstate(invalid="ignore", divide="ignore"):
            return sums / counts, A.T @ A / len(A)

    true_means, true_moment = stats(X, y)
    syn_means, syn_moment = stats(Xs, ys)
    ok = np.isfinite(true_means) & np.isfinite(means) & np.isfinite(syn_means)

    def err(m: np.ndarray, q: np.ndarray) -> float:
        return float(
            (np.abs(m - true_means)[ok].sum() + np.abs(q - true_moment).sum()) / (ok.sum() + q.size)
        )

    return err(means, moment), err(syn_means, syn_moment)


def _plot(plt: Any, results: pd.DataFrame, h_orig: float, config: Config, path: Path) -> Path:
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    colors = {"DP-LDA": "#4c72b0", "DP-PCA": "#55a868", "LAP": "#c44e52", "EXP": "#8172b2"}
    for ax, metric, label in (
        (axes[0], "entropy", "entropy (nats)"),
        (axes[1], "kl", "KL(release ‖ original) (nats)"),
    ):
        for m in config.methods:
            g = results[results.method == m].groupby("epsilon")[metric]
            ax.errorbar(
                g.mean().index,
                g.mean().values,
                yerr=g.std(ddof=1).fillna(0).values,
                marker="o",
                ms=4,
                capsize=3,
                color=colors[m],
                label=LABELS[m],
            )
        ax.set_xlabel("ε")
        ax.set_ylabel(label)
    axes[0].axhline(h_orig, color="k", ls="--", lw=1, label=f"original ({h_orig:.3f})")
    if (results.kl > 0).all():
        axes[1].set_yscale("log")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"Per-attribute entropy and KL, averaged over attributes ({config.trials} trials)")
    fig.tight_layout()
    return fw.save_figure(fig, path)


def _summary(
    config: Config,
    n: int,
    h_orig: float,
    results: pd.DataFrame,
    seeded: fw.SeededRuns,
    config_attributes: tuple[str, ...],
) -> tuple[str, dict[str, Any]]:
    g = results.groupby(["method", "epsilon"])
    n_attributes = len(config_attributes)
    ent, kl = g.entropy.mean(), g.kl.mean()
    setting = (
        f"Adult: n = {n:,} rows; {config.trials} trials per (method, ε); DP-PCA "
        f"k = {config.pca_components}. Entropy and KL per attribute (declared categories; "
        f"{config.bins} equal-width bins of each numeric attribute's declared bounds; label "
        f"included), averaged over the {n_attributes} attributes; KL smoothed with "
        f"{config.smoothing:g}; natural logs (nats)."
    )

    def by_epsilon(values: pd.Series, spec: str) -> list[str]:
        return md.table(
            ["ε", *(LABELS[m] for m in config.methods)],
            ([f"{e:g}", *(format(values[(m, e)], spec) for m in config.methods)]
             for e in config.epsilons),
            "r" * (1 + len(config.methods)),
        )  # fmt: skip

    lines = [
        *md.head(TITLE, ID, setting),
        "",
        md.seeded_note(config.seed, seeded.count, how="warnings collected"),
        *seeded.notes(),
        *md.subsample_note(config.n_rows, md.NOT_COMPARABLE),
        "",
        f"## Entropy (nats; the original table: {h_orig:.4f})",
        "",
        *by_epsilon(ent, ".4f"),
        "",
        "## KL(release ‖ original) (nats)",
        "",
        *by_epsilon(kl, ".4g"),
    ]
    best = {e: min(config.methods, key=lambda m, e=e: kl[(m, e)]) for e in config.epsilons}
    falling = {
        m: bool(kl[(m, config.epsilons[-1])] <= kl[(m, config.epsilons[0])]) for m in config.methods
    }
    lda = results[results.method == "DP-LDA"].dropna(subset=["stat_error_noisy"])
    closer = None
    if not lda.empty:
        closer = int((lda.stat_error_synthetic < lda.stat_error_noisy).sum())
        lines += [
            "",
            "## DP-LDA: are the synthetic rows' statistics closer to the truth than the noisy "
            "statistics?",
            "",
            "Mean absolute error per entry of the class means and the pooled second moment, "
            "against the true values (the paper claims the synthetic statistics are closer).",
            "",
            "| ε | noisy statistics | synthetic rows | synthetic closer |",
            "|---:|---:|---:|---:|",
        ]
        for e, g in lda.groupby("epsilon"):
            lines.append(
                f"| {e:g} | {g.stat_error_noisy.mean():.4g} | {g.stat_error_synthetic.mean():.4g}"
                f" | {int((g.stat_error_synthetic < g.stat_error_noisy).sum())} of {len(g)} |"
            )
    lines += [
        "",
        "Raw results: `results.csv`; plot: `fig4_entropy_kl.png`.",
        "",
        "## Paper vs ours",
        "",
        "| quantity | paper (Jiang et al. 2013) | ours |",
        "|---|---|---|",
        "| values | shown only as plots; how entropy and KL range over the data is not "
        "stated | per-attribute on fixed public cells (tables above) |",
        "| lowest KL per ε | plots only; no ordering stated in the text available to us | "
        + "; ".join(f"ε={e:g}: {LABELS[best[e]]}" for e in config.epsilons)
        + " |",
        "| DP-LDA synthetic statistics closer to the truth than the noisy ones | yes | "
        + ("not measured" if closer is None else f"{closer} of {len(lda)} releases")
        + " |",
        "| KL falls as ε grows | expected of any private release (more ε, less noise) | "
        + ", ".join(f"{LABELS[m]}: {'yes' if falling[m] else 'no'}" for m in config.methods)
        + " |",
        "",
        "## Why our numbers differ from the paper's",
        "",
        "- **The metric's domain is our reading** (ALGORITHMS-publishing A.6): per attribute "
        "on public cells, averaged; another reading (e.g. the joint distribution of all "
        "attributes) gives different values and can change the ordering.",
        "- **Post-processing** (arg-max one-hot, clamped numerics) concentrates noisy "
        "numeric values at the bounds and spreads one-hot choices over every category, so a "
        "very noisy release drifts towards a few end bins for numerics and towards uniform "
        "for categoricals; both move its entropy and KL away from the original's.",
        "- **Safe sensitivities** (A.3, A.4): our DP-PCA and DP-LDA noise is larger than the "
        "paper's at equal ε.",
        "- **EXP** is our per-record reading of the paper's exponential baseline (A.5).",
        "",
    ]
    key = {
        "entropy_original": h_orig,
        "kl": {f"{m}@{e:g}": float(kl[(m, e)]) for m in config.methods for e in config.epsilons},
        "lowest_kl": {f"{e:g}": best[e] for e in config.epsilons},
        "dplda_synthetic_closer": closer,
    }
    return "\n".join(lines), key


def run(
    config: Config, out_dir: str | Path, *, progress: fw.Progress | None = None
) -> fw.ExperimentResult:
    """Run the experiment and write its outputs into ``out_dir``.

    Writes ``results.csv`` (method, epsilon, trial, entropy, kl), ``config.json``,
    ``fig4_entropy_kl.png`` and ``summary.md``.
    """
    plt = fw.start(config, Config)
    out = Path(out_dir)
    df, schema = _data.adult(config.n_rows, config.seed)
    h_orig = entropy(df, schema, bins=config.bins)
    seeded = fw.SeededRuns()
    total = len(config.epsilons) * config.trials * len(config.methods)
    done = 0
    rows: list[dict[str, Any]] = []
    for ei, eps in enumerate(config.epsilons):
        for trial in range(config.trials):
            for method in config.methods:
                k = config.pca_components if method == "DP-PCA" else None
                ss = fw.seed_sequence(config.seed, _METHOD_KEYS[method], ei, trial)
                with seeded.collect():
                    rel = release(
                        method,
                        df,
                        schema,
                        epsilon=eps,
                        k=k,
                        random_state=ss,
                        class_sizes=config.lda_class_sizes,
                    )
                with_label = schema.label is not None and schema.label.name in rel.data.columns
                noisy_err = synthetic_err = math.nan
                if method == "DP-LDA":
                    noisy_err, synthetic_err = _moment_errors(rel.statistics, rel.data, df, schema)
                rows.append(
                    {
                        "stat_error_noisy": noisy_err,
                        "stat_error_synthetic": synthetic_err,
                        "method": method,
                        "epsilon": eps,
                        "trial": trial,
                        "entropy": entropy(
                            rel.data, schema, bins=config.bins, include_label=with_label
                        ),
                        "kl": kl_divergence(
                            rel.data,
                            df,
                            schema,
                            bins=config.bins,
                            smoothing=config.smoothing,
                            include_label=with_label,
                        ),
                    }
                )
                done += 1
                if progress is not None:
                    progress(done, total, f"eps={eps:g} {LABELS[method]} trial {trial + 1}")
    results = pd.DataFrame(rows)
    summary, key = _summary(config, len(df), h_orig, results, seeded, schema.column_names)
    return fw.write_run(
        ID, config, out, summary, key,
        tables={"results.csv": results},
        figures={"fig4_entropy_kl.png": lambda path: _plot(plt, results, h_orig, config, path)},
    )  # fmt: skip
