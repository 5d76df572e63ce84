"""``li2014-auc-vs-sampling-rate``: AUC as the public sample grows (Li et al. 2014), on Adult.

Our reading of the paper's "sampling rate": the share of the training records that is
public (the paper's public sample is a small sample of the same population). At each rate r
the first ``round(r · n_train)`` rows of the public pool are the public sample: the hybrid
SVM fits ρ on them, and the public-only SVM trains on them; the private rows are the rest.
The private SVM does not use them (its curve is flat up to noise). Protocol and learners:
:mod:`ppdp.experiments._li2014`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ppdp._validation import check_epsilon, check_positive
from ppdp.exceptions import ParameterError
from ppdp.experiments import _framework as fw
from ppdp.experiments import _li2014 as li
from ppdp.experiments._config import check_common, set_checked, set_ints

__all__ = ["ID", "TITLE", "Config", "run"]

ID = "li2014-auc-vs-sampling-rate"
TITLE = "AUC vs the public sampling rate: hybrid vs public-only and private SVMs (Li et al. 2014)"


def _rates(values: Any) -> tuple[float, ...]:
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise ParameterError(f"rates ({values!r}) must be a non-empty sequence in (0, 0.5]")
    out = tuple(check_positive("rates", v) for v in values)
    if not out or any(v > 0.5 for v in out):
        raise ParameterError(f"rates ({values!r}) must be a non-empty sequence in (0, 0.5]")
    return out


@dataclass(frozen=True)
class Config:
    """What one run does.

    Attributes
    ----------
    rates : tuple of float
        Public share of the training rows (public sample size = round(r · n_train), ≥ 10).
    epsilon : float
    n_components : int
    C, gamma : float
        Fixed in advance (C in the C/n form).
    trials, seed, n_rows
        As in the other experiments.
    """

    rates: tuple[float, ...] = (0.001, 0.002, 0.005, 0.01, 0.02)
    epsilon: float = 1.0
    n_components: int = 50
    C: float = 100.0
    gamma: float = 0.5
    trials: int = 5
    seed: int = 2014
    n_rows: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "rates", _rates(self.rates))
        set_checked(self, check_epsilon, "epsilon")
        set_ints(self, n_components=1)
        set_checked(self, check_positive, "C", "gamma")
        check_common(self)

    @classmethod
    def full(cls, *, seed: int = 2014) -> Config:
        """Rates 0.1 %–2 % × 5 trials on all of Adult, ε = 1, D = 50."""
        return cls(seed=seed)

    @classmethod
    def quick(cls, *, seed: int = 2014) -> Config:
        """A smoke run (seconds): 3 rates, 1 trial, 4,000 rows, D = 20."""
        return cls(rates=(0.01, 0.03, 0.1), trials=1, n_rows=4000, n_components=20, seed=seed)


_METHODS = ["hybrid", "private", "public-only", "all-data"]


def run(
    config: Config, out_dir: str | Path, *, progress: fw.Progress | None = None
) -> fw.ExperimentResult:
    """Run the experiment; write ``results.csv``, ``config.json``,
    ``auc_vs_sampling_rate.png``, ``summary.md`` into ``out_dir``."""
    plt = fw.start(config, Config, sklearn=True)
    out = Path(out_dir)
    X, y = li.adult(config.n_rows, config.seed)
    n_train = len(X) - max(len(X) // 10, 2)
    sizes = [max(10, round(r * n_train)) for r in config.rates]
    runs = fw.SeededRuns()
    cells = [
        li.Cell(x=r, epsilon=config.epsilon, n_components=config.n_components, n_public=m)
        for r, m in zip(config.rates, sizes, strict=True)
    ]
    with li.one_thread():
        results = li.sweep(
            X,
            y,
            cells,
            C=config.C,
            gamma=config.gamma,
            public_sizes=(),
            trials=config.trials,
            seed=config.seed,
            runs=runs,
            progress=progress,
        )
    wide = li.mean_table(results, "x", _METHODS)
    wide.index.name = "rate"
    summary, key = _summary(config, len(X), X.shape[1], wide, sizes, runs)
    fig = li.plot_lines(
        plt,
        wide,
        x_label="public sampling rate (share of the training rows)",
        title=f"Adult, ε = {config.epsilon:g}, D = {config.n_components}, {config.trials} trial(s)",
        logx=True,
    )
    return fw.write_run(
        ID, config, out, summary, key,
        tables={"results.csv": results.rename(columns={"x": "rate"})},
        figures={"auc_vs_sampling_rate.png": lambda path: fw.save_figure(fig, path)},
    )  # fmt: skip


def _summary(
    config: Config,
    n: int,
    d: int,
    wide: pd.DataFrame,
    sizes: list[int],
    runs: fw.SeededRuns,
) -> tuple[str, dict[str, Any]]:
    over_private = bool((wide["hybrid"] > wide["private"]).all())
    over_public = wide.index[wide["hybrid"] > wide["public-only"]]
    shown = wide.copy()
    shown.insert(0, "public rows", sizes)
    lines = li.header_lines(
        TITLE,
        ID,
        n,
        d,
        f"ε = {config.epsilon:g}, D = {config.n_components}, C = {config.C:g} (C/n form), "
        f"γ = {config.gamma:g}; {config.trials} trial(s). Public sample sizes: "
        + ", ".join(f"{r:g} → {m}" for r, m in zip(config.rates, sizes, strict=True))
        + ".",
        runs,
        config.n_rows,
    )
    lines += [
        "",
        "## Mean AUC",
        "",
        "| rate | public rows | " + " | ".join(_METHODS) + " |",
        "|---:|---:|" + "---:|" * len(_METHODS),
    ]
    for (rate, row), m in zip(wide.iterrows(), sizes, strict=True):
        lines.append(f"| {rate:g} | {m} | " + " | ".join(li.fmt(row[c]) for c in _METHODS) + " |")
    lines += [
        *li.PAPER_VS_OURS,
        f"| hybrid above the private SVM at every rate | yes (plot) | "
        f"{'yes' if over_private else 'no'} |",
        "| hybrid above the public-only SVM on the same public rows | yes (plot) | "
        + (
            f"at rates {', '.join(f'{r:g}' for r in over_public)}"
            if len(over_public)
            else "at no rate of the grid"
        )
        + " |",
        "",
        "Sampling rate is our reading (share of the training rows that is public); the "
        "public-only SVM is an exact kernel SVM, so it improves quickly with its sample.",
        "",
        *li.DIFFERENCES,
    ]
    key = {
        "hybrid_above_private_everywhere": over_private,
        "public_sizes": sizes,
        "hybrid_auc": [float(v) for v in wide["hybrid"]],
        "public_only_auc": [float(v) for v in wide["public-only"]],
    }
    return "\n".join(lines), key
