"""``li2014-auc-vs-dims``: AUC of the hybrid and private SVMs as the number of random
frequencies D grows (Li et al. 2014), with the public-only and all-data SVMs, on Adult.

More frequencies approximate the kernel better but cost noise: λ = 2^2.5·C·√D/(nε) on each of
2D coefficients. The hybrid SVM's fitted frequencies approximate the kernel better at the
same D (on held-out rows too), which is its argument for a small D. Protocol and learners:
:mod:`ppdp.experiments._li2014`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ppdp._validation import check_epsilon, check_positive
from ppdp.experiments import _framework as fw
from ppdp.experiments import _li2014 as li
from ppdp.experiments._config import check_common, int_grid, set_checked, set_ints

__all__ = ["ID", "TITLE", "Config", "run"]

ID = "li2014-auc-vs-dims"
TITLE = "AUC vs the number of frequencies D: hybrid vs private SVM (Li et al. 2014)"


@dataclass(frozen=True)
class Config:
    """What one run does.

    Attributes
    ----------
    dims : tuple of int
        Numbers of frequencies D (the models have 2D coefficients).
    epsilon : float
    n_public : int
        Public rows the hybrid SVM fits ρ on.
    public_sizes : tuple of int
        Sizes of the public-only SVMs' samples (they do not depend on D).
    C, gamma : float
        Fixed in advance (C in the C/n form).
    trials, seed, n_rows
        As in the other experiments.
    """

    dims: tuple[int, ...] = (5, 10, 20, 50, 100)
    epsilon: float = 1.0
    n_public: int = 200
    public_sizes: tuple[int, ...] = (50, 100, 200)
    C: float = 100.0
    gamma: float = 0.5
    trials: int = 5
    seed: int = 2014
    n_rows: int | None = None

    def __post_init__(self) -> None:
        set_checked(self, int_grid, "dims")
        set_checked(self, check_epsilon, "epsilon")
        set_ints(self, n_public=2)
        set_checked(self, int_grid, "public_sizes", minimum=2)
        set_checked(self, check_positive, "C", "gamma")
        check_common(self)

    @classmethod
    def full(cls, *, seed: int = 2014) -> Config:
        """D ∈ {5, 10, 20, 50, 100} × 5 trials on all of Adult, ε = 1."""
        return cls(seed=seed)

    @classmethod
    def quick(cls, *, seed: int = 2014) -> Config:
        """A smoke run (seconds): 3 values of D, 1 trial, 4,000 rows."""
        return cls(dims=(5, 20, 50), trials=1, n_rows=4000, seed=seed)


def _methods(config: Config) -> list[str]:
    return ["hybrid", "private", *[f"public-{n}" for n in config.public_sizes], "all-data"]


def run(
    config: Config, out_dir: str | Path, *, progress: fw.Progress | None = None
) -> fw.ExperimentResult:
    """Run the experiment; write ``results.csv``, ``config.json``, ``auc_vs_dims.png``,
    ``summary.md`` into ``out_dir``."""
    plt = fw.start(config, Config, sklearn=True)
    out = Path(out_dir)
    X, y = li.adult(config.n_rows, config.seed)
    runs = fw.SeededRuns()
    cells = [
        li.Cell(x=D, epsilon=config.epsilon, n_components=D, n_public=config.n_public)
        for D in config.dims
    ]
    with li.one_thread():
        results = li.sweep(
            X,
            y,
            cells,
            C=config.C,
            gamma=config.gamma,
            public_sizes=config.public_sizes,
            trials=config.trials,
            seed=config.seed,
            runs=runs,
            progress=progress,
        )
    wide = li.mean_table(results, "x", _methods(config))
    wide.index.name = "D"
    summary, key = _summary(config, len(X), X.shape[1], wide, runs)
    fig = li.plot_lines(
        plt,
        wide,
        x_label="D (number of frequencies; 2D features)",
        title=f"Adult, ε = {config.epsilon:g}, {config.trials} trial(s)",
        logx=True,
    )
    return fw.write_run(
        ID, config, out, summary, key,
        tables={"results.csv": results.rename(columns={"x": "D"})},
        figures={"auc_vs_dims.png": lambda path: fw.save_figure(fig, path)},
    )  # fmt: skip


def _summary(
    config: Config, n: int, d: int, wide: pd.DataFrame, runs: fw.SeededRuns
) -> tuple[str, dict[str, Any]]:
    margin = wide["hybrid"] - wide["private"]
    above = bool((margin > 0).all())
    best_h, best_p = wide["hybrid"].idxmax(), wide["private"].idxmax()
    lines = li.header_lines(
        TITLE,
        ID,
        n,
        d,
        f"ε = {config.epsilon:g}; hybrid: {config.n_public} public rows. C = {config.C:g} "
        f"(C/n form), γ = {config.gamma:g}; {config.trials} trial(s).",
        runs,
        config.n_rows,
    )
    lines += [
        "",
        "## Mean AUC",
        "",
        *li.markdown_table(wide, "D"),
        *li.PAPER_VS_OURS,
        f"| hybrid above the private SVM at every D | yes (plot) | "
        f"{'yes' if above else 'no'}: margin {float(margin.min()):+.3f} to "
        f"{float(margin.max()):+.3f} |",
        f"| best D | small D suffices for the hybrid (plot) | hybrid best at D = {best_h:g} "
        f"({float(wide['hybrid'].max()):.3f}); private best at D = {best_p:g} "
        f"({float(wide['private'].max()):.3f}) |",
        "",
        "The all-data column is the non-private SVM in the private SVM's random features at "
        "that D: it rises with D (better kernel approximation) while the private curves pay "
        "λ ∝ √D per coefficient on 2D coefficients.",
        "",
        *li.DIFFERENCES,
    ]
    key = {
        "hybrid_above_private_everywhere": above,
        "hybrid_auc": [float(v) for v in wide["hybrid"]],
        "private_auc": [float(v) for v in wide["private"]],
    }
    return "\n".join(lines), key
