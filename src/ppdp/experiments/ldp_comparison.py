"""``ldp-comparison``: at matched ε, the variance of Wu's characteristic-vector scheme vs
the modern LDP frequency oracles (OUE, OLH, Hadamard response).

For each ε, n respondents with values in k = 30 categories (the 30-region histogram of the
bimodal population of ``wu-fig1``) report once through each mechanism; we measure the
per-item variance of the unbiased frequency estimate, times n, averaged over items, over
``trials`` independent runs, next to the closed forms of ALGORITHMS C.6:

* OUE / OLH: 4e^ε/(e^ε − 1)²; HR: ((e^ε + 1)/(e^ε − 1))² (low-frequency approximations;
  the measured value adds the items' own f(1 − f)-type terms);
* characteristic vectors with discrete normal noise (γ = 1): σ² per item, σ calibrated by
  the analytic Gaussian (Balle–Wang) for (ε, 10⁻⁶) with Δ = √2 — the rounded Gaussian is at
  least as private, and its exact ε on the lattice is reported (it is a little below the
  target);
* characteristic vectors with inverse-square noise (γ = 1): pure ε = 4 ln 2 ≈ 2.77, with the
  consistent threshold estimator (the sample mean has no limit); shown at its own ε only.

The oracles are the reference implementations of :mod:`ppdp.experiments._ldp_oracles`
(coins from :mod:`ppdp.noise`); the ``pure-ldp`` package is the peer in
``benchmarks/bench_ldp_comparison.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdp._validation import check_delta
from ppdp.experiments import _framework as fw
from ppdp.experiments import _summary as md
from ppdp.experiments._config import epsilon_grid, set_checked, set_ints
from ppdp.experiments._ldp_oracles import ORACLES
from ppdp.experiments._wu import bimodal_probabilities
from ppdp.local import CharacteristicVectorRandomizer
from ppdp.mechanisms import GaussianMechanism

__all__ = ["ID", "TITLE", "Config", "run"]

ID = "ldp-comparison"
TITLE = "Characteristic vectors vs OUE, OLH and Hadamard response at matched ε"

INVERSE_SQUARE_EPSILON = 4.0 * math.log(2.0)
#: C.6 of the algorithms reference: n·Var of the Gaussian scheme at (ε, 1e-6).
_SUMMARY_COLUMNS = ["mechanism", "epsilon", "n_var_measured", "n_var_formula", "ratio_to_oue"]
C6_GAUSSIAN = {0.5: 130.0, 1.0: 35.7, 2.0: 9.95, 4.0: 2.85}


@dataclass(frozen=True)
class Config:
    """What one run does.

    Attributes
    ----------
    epsilons : tuple of float
        Matched local ε (the inverse-square scheme is added at its own 4 ln 2).
    k : int
        Categories.
    n : int
        Respondents per run.
    trials : int
        Runs per (mechanism, ε) for the variance.
    delta : float
        δ of the Gaussian characteristic-vector scheme.
    seed : int
    """

    epsilons: tuple[float, ...] = (0.5, 1.0, 2.0, INVERSE_SQUARE_EPSILON, 4.0)
    k: int = 30
    n: int = 20_000
    trials: int = 30
    delta: float = 1e-6
    seed: int = 2017

    def __post_init__(self) -> None:
        set_checked(self, epsilon_grid, "epsilons")
        set_ints(self, k=2, n=10, trials=2)
        set_checked(self, check_delta, "delta")
        set_ints(self, seed=0)

    @classmethod
    def full(cls, *, seed: int = 2017) -> Config:
        """ε ∈ {0.5, 1, 2, 4 ln 2, 4}, n = 20,000, 30 runs."""
        return cls(seed=seed)

    @classmethod
    def quick(cls, *, seed: int = 2017) -> Config:
        """A smoke run: ε ∈ {1, 4 ln 2}, n = 5,000, 3 runs."""
        return cls(epsilons=(1.0, INVERSE_SQUARE_EPSILON), n=5_000, trials=3, seed=seed)


def _values(n: int, probs: np.ndarray, seed: np.random.SeedSequence) -> np.ndarray:
    return np.random.default_rng(seed).choice(probs.size, size=n, p=probs)


def _cv_gaussian(eps: float, k: int, delta: float) -> CharacteristicVectorRandomizer:
    sigma = GaussianMechanism(epsilon=eps, delta=delta, sensitivity=math.sqrt(2.0),
                              allow_large_epsilon=True).sigma  # fmt: skip
    return CharacteristicVectorRandomizer(regions=k, noise="discrete-normal", sigma=sigma)


def _plot(plt: Any, agg: pd.DataFrame, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4.2))
    styles = {"OUE": "o-", "OLH": "s-", "HR": "^-", "CV-gaussian": "D-", "CV-inverse-square": "*"}
    for m, g in agg.groupby("mechanism", sort=False):
        style = styles.get(str(m), "o-")
        ax.plot(g.epsilon, g.n_var_measured, style, ms=9 if style == "*" else 4, label=m)
    ax.set_yscale("log")
    ax.set_xlabel("local ε")
    ax.set_ylabel("n · Var per item (measured)")
    ax.legend(fontsize=8)
    ax.set_title("lower is better; CV-gaussian also needs δ = 1e-6", fontsize=9)
    return fw.save_figure(fig, path)


def run(
    config: Config, out_dir: str | Path, *, progress: fw.Progress | None = None
) -> fw.ExperimentResult:
    """Run the experiment; write ``results.csv``, ``summary.csv``, ``config.json``,
    ``variance_vs_epsilon.png`` and ``summary.md`` into ``out_dir``."""
    plt = fw.start(config, Config)
    out = Path(out_dir)
    seeded = fw.SeededRuns()
    probs = bimodal_probabilities(np.linspace(0.0, 1.0, config.k + 1))
    jobs: list[tuple[str, float]] = []
    for eps in config.epsilons:
        jobs += [(m, eps) for m in ("OUE", "OLH", "HR", "CV-gaussian")]
        if math.isclose(eps, INVERSE_SQUARE_EPSILON, rel_tol=1e-9):
            jobs.append(("CV-inverse-square", eps))
    rows = []
    total = len(jobs)
    for j, (mech, eps) in enumerate(jobs):
        ei = config.epsilons.index(eps)
        errors = np.empty((config.trials, config.k))
        exact_eps, theory, bits = eps, math.nan, math.nan
        r = None
        if mech == "CV-gaussian":
            r = _cv_gaussian(eps, config.k, config.delta)
            exact_eps = float(r.guarantee(config.delta).epsilon)
            theory = float(r.sigma) ** 2
        elif mech == "CV-inverse-square":
            r = CharacteristicVectorRandomizer(regions=config.k, noise="inverse-square")
            exact_eps = float(r.guarantee().epsilon)
        else:
            theory = ORACLES[mech][1](eps)
            bits = {"OUE": config.k, "OLH": 2 * 32, "HR": math.ceil(math.log2(config.k + 1))}[mech]
        for t in range(config.trials):
            ss = fw.seed_sequence(config.seed, ei, t)
            values = _values(config.n, probs, ss.spawn(1)[0])
            truth = np.bincount(values, minlength=config.k) / config.n
            noise_seed = fw.seed_sequence(config.seed, ei, t, 1 + j)
            with seeded.collect():
                if r is None:
                    est = ORACLES[mech][0](values, config.k, eps, random_state=noise_seed)
                else:
                    reports = r.randomise(values, random_state=noise_seed)
                    rec = r.estimate(reports)
                    est = np.asarray(rec.details["unbiased"], dtype=np.float64)
                    if mech == "CV-inverse-square":
                        theory = float(rec.details["n_var_per_item"])
            errors[t] = est - truth
        measured = float(config.n * errors.var(axis=0, ddof=1).mean())
        rows.append(
            {
                "mechanism": mech,
                "epsilon": eps,
                "epsilon_exact": exact_eps,
                "delta": config.delta if mech == "CV-gaussian" else 0.0,
                "n_var_measured": measured,
                "n_var_formula": theory,
                "max_abs_mean_error": float(np.abs(errors.mean(axis=0)).max()),
                "report_size": bits if r is None else f"{config.k} integers",
            }
        )
        if progress is not None:
            progress(j + 1, total, f"{mech} at ε={eps:.3g}")
    agg = pd.DataFrame(rows)
    oue = agg[agg.mechanism == "OUE"].set_index("epsilon").n_var_measured
    agg["ratio_to_oue"] = [row.n_var_measured / oue[row.epsilon] for row in agg.itertuples()]
    cv = agg[agg.mechanism == "CV-gaussian"]
    worse = bool((cv.ratio_to_oue > 1).all())
    intro = (
        f"k = {config.k} categories "
        f"(the 30-region histogram of the `wu-fig1` population), n = {config.n:,} respondents, "
        f"{config.trials} runs per cell; n·Var is the per-item variance of the *unbiased* "
        "estimate (no projection) times n, averaged over the items."
    )
    lines = [
        *md.head(TITLE, ID, intro),
        "",
        md.seeded_note(config.seed, seeded.count, "randomisations", unfit="real respondents"),
        "",
        "## n · Var per item: measured (formula)",
        "",
        "| ε | OUE | OLH | HR | CV discrete normal, δ = 1e-6 (exact ε) | CV inverse square "
        "(pure) | CV-gaussian / OUE |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for eps in config.epsilons:
        g = agg[agg.epsilon == eps].set_index("mechanism")

        def cell(m: str, g: pd.DataFrame = g) -> str:
            if m not in g.index:
                return "—"
            v, f = g.loc[m, "n_var_measured"], g.loc[m, "n_var_formula"]
            return f"{v:.3g} ({f:.3g})" if math.isfinite(f) else f"{v:.3g}"

        cvg = g.loc["CV-gaussian"]
        lines.append(
            f"| {eps:.3g} | {cell('OUE')} | {cell('OLH')} | {cell('HR')} | "
            f"{cell('CV-gaussian')} [ε = {cvg.epsilon_exact:.3g}] | {cell('CV-inverse-square')} | "
            f"{cvg.ratio_to_oue:.1f}× |"
        )
    lines += [
        "",
        "Formulas: OUE/OLH 4e^ε/(e^ε − 1)², HR ((e^ε + 1)/(e^ε − 1))², CV-gaussian σ², CV "
        "inverse square: the threshold estimator's own variance. Per-cell rows: "
        "`results.csv`/`summary.csv`; plot: `variance_vs_epsilon.png`. OLH's integer "
        "g = round(e^ε) + 1 makes its variance differ a little from the formula (which "
        "assumes g = e^ε + 1); at large ε the measured values exceed the low-frequency "
        "formulas by the items' own f(1 − f)-type terms.",
        "",
        "## The reference (ALGORITHMS C.6) vs ours",
        "",
        "| claim | C.6 | ours |",
        "|---|---|---|",
        "| the Gaussian characteristic-vector scheme is ~8–40× worse than OUE/OLH at equal ε "
        "and needs δ > 0 | yes | "
        + ", ".join(f"ε={row.epsilon:.3g}: {row.ratio_to_oue:.1f}×" for row in cv.itertuples())
        + " |",
        "| its n·Var at (ε, 1e-6) | "
        + ", ".join(f"ε={e:g}: {v:g}" for e, v in C6_GAUSSIAN.items())
        + " | "
        + ", ".join(f"ε={row.epsilon:.3g}: {row.n_var_measured:.3g}" for row in cv.itertuples())
        + " |",
        "| OUE ≈ OLH at every ε; HR matches them at small ε | yes | see the table |",
        "| inverse square at its pure ε = 2.77: n·Var ≈ 1.06–1.31 vs OUE 0.28 | yes | "
        + (
            ", ".join(
                f"{row.n_var_measured:.3g} vs OUE {oue[row.epsilon]:.3g}"
                for row in agg[agg.mechanism == "CV-inverse-square"].itertuples()
            )
            or "not run"
        )
        + " |",
        "",
        "## Why our numbers differ from the reference's",
        "",
        "- The closed forms are low-frequency approximations; our items have frequencies up "
        "to about 0.09, which adds variance at large ε.",
        "- The discrete normal is calibrated with the continuous bound; its exact lattice ε "
        "(in brackets) is slightly below the target, so it carries a little more noise than "
        "the target needs: the comparison errs against the scheme by that margin (its "
        "variance at the exact target would be a few per cent lower, not 8× lower).",
        "- Wu's report has no such comparison (the oracles are later work); this experiment "
        "answers the issue's question, not a figure of the report.",
        "",
    ]
    summary = "\n".join(lines)
    key = {
        "cv_gaussian_worse_than_oue_everywhere": worse,
        "cv_gaussian_ratio_to_oue": {f"{r.epsilon:.4g}": r.ratio_to_oue for r in cv.itertuples()},
    }
    return fw.write_run(
        ID, config, out, summary, key,
        tables={"results.csv": agg, "summary.csv": agg[_SUMMARY_COLUMNS]},
        figures={"variance_vs_epsilon.png": lambda path: _plot(plt, agg, path)},
    )  # fmt: skip
