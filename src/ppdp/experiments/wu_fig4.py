"""``wu-fig4``: information loss of the characteristic-vector estimate vs n, several σ (γ = 1).

Wu's report (Fig. 4) shows the information loss of the one-step estimate falling as the
number of respondents grows, for several noise levels. Here: k = 30 regions of [0, 1]
(the bimodal population of ``wu-fig1``), discrete normal noise with γ = 1 and
σ ∈ {0.5, 1, 2, 4} (lattice units), n from 1,000 to 100,000, and the mean of Wu's loss
½‖p̂ − h‖₁ over trials. The estimate is unbiased with per-region variance σ²/n before the
projection, so the loss should fall like 1/√n until the projection's bias dominates; the
formal (ε, 10⁻⁶) of each σ is printed beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdp.exceptions import ParameterError
from ppdp.experiments import _framework as fw
from ppdp.experiments import _summary as md
from ppdp.experiments import _wu
from ppdp.experiments._config import int_grid, set_checked, set_ints
from ppdp.local import CharacteristicVectorRandomizer

__all__ = ["ID", "TITLE", "Config", "run"]

ID = "wu-fig4"
TITLE = "Information loss vs n for several σ, characteristic vectors with γ = 1 (Wu, Fig. 4)"
DELTA = 1e-6


@dataclass(frozen=True)
class Config:
    """What one run does.

    Attributes
    ----------
    ns : tuple of int
        Numbers of respondents.
    sigmas : tuple of float
        Discrete-normal standard deviations (lattice units, γ = 1).
    k : int
        Regions.
    trials : int
    seed : int
    """

    ns: tuple[int, ...] = (1_000, 3_000, 10_000, 30_000, 100_000)
    sigmas: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0)
    k: int = 30
    trials: int = 10
    seed: int = 2003

    def __post_init__(self) -> None:
        set_checked(self, int_grid, "ns", minimum=10)
        sig = tuple(float(s) for s in self.sigmas)
        if not sig or any(not s > 0 for s in sig):
            raise ParameterError(f"sigmas ({self.sigmas!r}) must be positive numbers")
        object.__setattr__(self, "sigmas", sig)
        set_ints(self, k=2, trials=1, seed=0)

    @classmethod
    def full(cls, *, seed: int = 2003) -> Config:
        """5 n × 4 σ × 10 trials."""
        return cls(seed=seed)

    @classmethod
    def quick(cls, *, seed: int = 2003) -> Config:
        """A smoke run: n ∈ {1,000, 10,000}, σ ∈ {1, 4}, 2 trials."""
        return cls(ns=(1_000, 10_000), sigmas=(1.0, 4.0), trials=2, seed=seed)


def _plot(plt: Any, agg: pd.DataFrame, eps: dict[float, float], path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for s, g in agg.groupby("sigma"):
        ax.errorbar(g.n, g.wu_loss_mean, yerr=g.wu_loss_sd, marker="o", ms=4, capsize=2,
                    label=f"σ = {s:g} (ε = {eps[s]:.2f} at δ = 1e-6)")  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n (respondents)")
    ax.set_ylabel("information loss ½‖p̂ − h‖₁")
    ax.legend(fontsize=8)
    return fw.save_figure(fig, path)


def run(
    config: Config, out_dir: str | Path, *, progress: fw.Progress | None = None
) -> fw.ExperimentResult:
    """Run the experiment; write ``results.csv``, ``summary.csv``, ``config.json``,
    ``fig4_loss_vs_n.png`` and ``summary.md`` into ``out_dir``."""
    plt = fw.start(config, Config)
    out = Path(out_dir)
    seeded = fw.SeededRuns()
    edges = np.linspace(0.0, 1.0, config.k + 1)
    pop = _wu.bimodal_probabilities(edges)
    rows = []
    eps: dict[float, float] = {}
    total = len(config.sigmas) * len(config.ns) * config.trials
    done = 0
    for si, sigma in enumerate(config.sigmas):
        r = CharacteristicVectorRandomizer(regions=list(edges), noise="discrete-normal",
                                           gamma=1.0, sigma=sigma)  # fmt: skip
        eps[sigma] = float(r.guarantee(DELTA).epsilon)
        for ni, n in enumerate(config.ns):
            for t in range(config.trials):
                x = _wu.bimodal_sample(n, fw.seed_sequence(config.seed, si, ni, t, 0))
                with seeded.collect():
                    reports = r.randomise(
                        x, random_state=fw.seed_sequence(config.seed, si, ni, t, 1)
                    )
                est = r.estimate(reports)
                truth = _wu.empirical_probabilities(x, edges)
                rows.append(
                    {
                        "sigma": sigma,
                        "n": n,
                        "trial": t,
                        "wu_loss": _wu.half_l1(est.probabilities, truth),
                        "aa_loss": _wu.half_l1(est.probabilities, pop),
                    }
                )
                done += 1
                if progress is not None:
                    progress(done, total, f"σ={sigma:g} n={n} trial {t + 1}")
    results = pd.DataFrame(rows)
    agg = (
        results.groupby(["sigma", "n"])
        .agg(
            wu_loss_mean=("wu_loss", "mean"),
            wu_loss_sd=("wu_loss", "std"),
            aa_loss_mean=("aa_loss", "mean"),
        )
        .reset_index()
    )
    agg["wu_loss_sd"] = agg.wu_loss_sd.fillna(0.0)
    falls = {}
    slopes = {}
    for s, g in agg.groupby("sigma"):
        m = g.sort_values("n").wu_loss_mean.to_numpy()
        falls[s] = bool(np.all(np.diff(m) < 0))
        slopes[s] = float(np.polyfit(np.log(g.n), np.log(g.wu_loss_mean), 1)[0])
    target = all(falls.values())
    ns = list(config.ns)
    intro = (
        f"k = {config.k} regions of "
        f"[0, 1], the bimodal population of `wu-fig1`, discrete normal noise with γ = 1; "
        f"{config.trials} trials per (σ, n); one-step mean estimator projected onto the "
        "simplex."
    )
    lines = [
        *md.head(TITLE, ID, intro),
        "",
        md.seeded_note(config.seed, seeded.count, "randomisations", unfit="real respondents"),
        "",
        "## Mean information loss ½‖p̂ − h‖₁ (against the true histogram)",
        "",
        "| σ | ε at δ = 1e-6 | " + " | ".join(f"n = {n:,}" for n in ns) + " | log-log slope |",
        "|---:|---:|" + "---:|" * len(ns) + "---:|",
    ]
    for s in config.sigmas:
        g = agg[agg.sigma == s].set_index("n")
        cells = " | ".join(f"{g.loc[n, 'wu_loss_mean']:.4f}" for n in ns)
        lines.append(f"| {s:g} | {eps[s]:.2f} | {cells} | {slopes[s]:.2f} |")
    lines += [
        "",
        "Per-run rows: `results.csv`; means and standard deviations: `summary.csv`; plot: "
        "`fig4_loss_vs_n.png`. A slope near −0.5 is the 1/√n rate of an unbiased estimator.",
        "",
        "## Paper vs ours",
        "",
        "| claim | Wu's report (Fig. 4) | ours |",
        "|---|---|---|",
        "| information loss falls with n for every σ | yes (plot only) | "
        + ("yes" if target else "no: " + ", ".join(f"σ={s:g}" for s, f in falls.items() if not f))
        + " |",
        "| larger σ, larger loss at every n | yes (plot only) | "
        + (
            "yes"
            if all(
                np.all(np.diff(agg[agg.n == n].sort_values("sigma").wu_loss_mean) > 0) for n in ns
            )
            else "not at every n"
        )
        + " |",
        "| formal privacy of each σ | not given | ε at δ = 1e-6 in the table (C.5: σ = 1 → "
        "≈ 7.3, σ = 4 → ≈ 1.54 by the continuous bound) |",
        "| exact numbers | plot only | tables above |",
        "",
        "## Why our numbers differ from the report's",
        "",
        "- The population, k and the grid of n and σ are ours; the report's figure gives "
        "neither the population nor the exact grid.",
        "- The estimate is projected onto the simplex instead of clipped at 0.",
        "- Wu writes the discrete normal's parameter as a variance and plots σ; we read σ "
        "as the standard deviation in lattice units (the two agree at σ = 1).",
        "",
    ]
    summary = "\n".join(lines)
    key = {
        "falls_for_every_sigma": target,
        "slopes": {f"{s:g}": slopes[s] for s in config.sigmas},
        "epsilons": {f"{s:g}": eps[s] for s in config.sigmas},
    }
    return fw.write_run(
        ID, config, out, summary, key,
        tables={"results.csv": results, "summary.csv": agg},
        figures={"fig4_loss_vs_n.png": lambda path: _plot(plt, agg, eps, path)},
    )  # fmt: skip
