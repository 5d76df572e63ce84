"""``wu-fig1``: Wu's Fourier estimate (12 harmonics) vs EM after 100 iterations vs the truth.

Wu's report (Fig. 1) perturbs a bimodal X ⊆ [0, 1] with additive noise, 500,000 samples,
and shows the one-step Fourier (orthogonal-series) estimate with 12 harmonics and the EM
estimate after 100 iterations next to the true histogram.

**The noise scaling is changed.** Wu states Y ~ U[0, 20] for X ⊆ [0, 1]. Then
φ_Y(i) = E e^{2πiiY} = 0 for every integer i (20·i is an integer), so Z mod 1 is exactly
uniform and no estimator can recover anything from the harmonics (ALGORITHMS C.3);
:func:`ppdp.local.reconstruct_fourier` refuses it. Any uniform width w has some harmonic
i ≤ 12 with i·w within 1/13 of an integer (Dirichlet), so with 12 harmonics the width
must stay below about 1/7 of the domain for every |φ_Y(i)| to be usable. We keep Wu's
noise *family* (uniform) and use w = 2/15 of the domain (noise on [−w/2, w/2]): the
smallest |φ_Y(i)|, i ≤ 12, is 0.062 (at i = 8), so each Fourier coefficient has standard
error 2/(√n·|φ_Y(i)|) ≤ 0.046 at n = 500,000. The |φ_Y(i)| of both widths are in
``phi.csv``.

The library's default one-step estimate, ``reconstruct_fourier(reports, r)`` with
``harmonics="auto"`` (the count read from n, the domain and the noise law) and soft
shrinkage, is shown beside Wu's 12 harmonics.

Uniform noise gives no finite local ε at any δ < min(1, D/w) (the privacy loss is 0 or
±∞; :meth:`AdditiveRandomizer.guarantee`); the summary states it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdp._validation import check_positive
from ppdp.exceptions import ParameterError
from ppdp.experiments import _framework as fw
from ppdp.experiments import _summary as md
from ppdp.experiments import _wu
from ppdp.experiments._config import set_checked, set_ints
from ppdp.local import AdditiveRandomizer, reconstruct_em, reconstruct_fourier

__all__ = ["ID", "TITLE", "Config", "run"]

ID = "wu-fig1"
TITLE = "Fourier estimate (12 harmonics) vs EM after 100 iterations vs the truth (Wu, Fig. 1)"
WU_WIDTH = 20.0


@dataclass(frozen=True)
class Config:
    """What one run does.

    Attributes
    ----------
    n : int
        Respondents (Wu: 500,000).
    bins : int
        Value bins on [0, 1] for the histograms and EM.
    harmonics : int
        Fourier harmonics (Wu: 12).
    em_iterations : int
        EM iterations, run exactly (Wu: 100).
    noise_width : float
        Width w of the uniform noise on [−w/2, w/2] (domain [0, 1]); see the module docstring.
    seed : int
    """

    n: int = 500_000
    bins: int = 50
    harmonics: int = 12
    em_iterations: int = 100
    noise_width: float = 2.0 / 15.0
    seed: int = 2003

    def __post_init__(self) -> None:
        set_ints(self, n=100, bins=2, harmonics=1, em_iterations=1)
        set_checked(self, check_positive, "noise_width")
        set_ints(self, seed=0)

    @classmethod
    def full(cls, *, seed: int = 2003) -> Config:
        """Wu's setting: 500,000 samples, 12 harmonics, 100 EM iterations."""
        return cls(seed=seed)

    @classmethod
    def quick(cls, *, seed: int = 2003) -> Config:
        """A smoke run: 50,000 samples."""
        return cls(n=50_000, seed=seed)


def _phi_table(config: Config) -> pd.DataFrame:
    i = np.arange(1, config.harmonics + 1, dtype=np.float64)
    ours = AdditiveRandomizer(noise="uniform", scale=config.noise_width, domain=(0.0, 1.0))
    wu = AdditiveRandomizer(noise="uniform", scale=WU_WIDTH, domain=(0.0, 1.0))
    phi_ours = np.abs(ours.noise_characteristic(2 * np.pi * i))
    phi_wu = np.abs(wu.noise_characteristic(2 * np.pi * i))
    return pd.DataFrame(
        {
            "harmonic": i.astype(int),
            "abs_phi_ours": phi_ours,
            "abs_phi_wu_u0_20": phi_wu,
            "coef_std_error_ours": 2.0 / (np.sqrt(config.n) * phi_ours),
        }
    )


def _wu_setting_refused(config: Config, reports: np.ndarray) -> str:
    wu = AdditiveRandomizer(noise="uniform", scale=WU_WIDTH, domain=(0.0, 1.0))
    try:
        reconstruct_fourier(reports, wu, config.harmonics, bins=config.bins)
    except ParameterError as exc:
        return str(exc)
    return "(not refused)"  # pragma: no cover - the check is in reconstruct_fourier


def _plot(plt: Any, table: pd.DataFrame, config: Config, auto_m: int, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    edges = np.concatenate([table.bin_low.to_numpy(), [table.bin_high.iloc[-1]]])
    ax.stairs(table.true_density, edges, color="black", lw=1.6, label="true histogram")
    ax.stairs(table.fourier_density, edges, color="#dd8452", lw=1.4,
              label=f"Fourier, {config.harmonics} harmonics")  # fmt: skip
    ax.stairs(table.fourier_auto_density, edges, color="#55a868", lw=1.2, ls=":",
              label=f"Fourier, harmonics='auto' (= {auto_m}), soft")  # fmt: skip
    ax.stairs(table.em_density, edges, color="#4c72b0", lw=1.4, ls="--",
              label=f"EM, {config.em_iterations} iterations")  # fmt: skip
    grid = np.linspace(0, 1, 400)
    ax.plot(grid, _wu.bimodal_density(grid), color="grey", lw=0.8, alpha=0.7, label="population")
    ax.set_xlabel("x")
    ax.set_ylabel("density")
    ax.set_title(f"n = {config.n:,}, Y ~ U[−w/2, w/2], w = {config.noise_width:.4g}")
    ax.legend(loc="upper left", fontsize=8)
    return fw.save_figure(fig, path)


def run(
    config: Config, out_dir: str | Path, *, progress: fw.Progress | None = None
) -> fw.ExperimentResult:
    """Run the experiment; write ``results.csv``, ``phi.csv``, ``config.json``,
    ``fig1_estimates.png`` and ``summary.md`` into ``out_dir``."""
    plt = fw.start(config, Config)
    out = Path(out_dir)
    seeded = fw.SeededRuns()
    r = AdditiveRandomizer(noise="uniform", scale=config.noise_width, domain=(0.0, 1.0))
    x = _wu.bimodal_sample(config.n, fw.seed_sequence(config.seed, 0))
    with seeded.collect():
        reports = r.randomise(x, random_state=fw.seed_sequence(config.seed, 1))
    four = reconstruct_fourier(reports, r, config.harmonics, bins=config.bins)
    # the library's default: harmonics="auto" (public inputs only), soft shrinkage
    auto = reconstruct_fourier(reports, r, bins=config.bins)
    auto_m = int(auto.details["harmonics"])
    stop = str(auto.details["harmonics_stop"]).replace("|", "\\|")  # inside a table cell
    if progress is not None:
        progress(1, 2, "Fourier estimates")
    em = reconstruct_em(reports, r, config.bins, tol=0.0, max_iter=config.em_iterations)
    if progress is not None:
        progress(2, 2, f"EM, {config.em_iterations} iterations")
    edges = np.asarray(four.edges)
    width = np.diff(edges)
    truth = _wu.empirical_probabilities(x, edges)
    pop = _wu.bimodal_probabilities(edges)
    table = pd.DataFrame(
        {
            "bin_low": edges[:-1],
            "bin_high": edges[1:],
            "true_density": truth / width,
            "population_density": pop / width,
            "fourier_density": four.probabilities / width,
            "fourier_auto_density": auto.probabilities / width,
            "em_density": em.probabilities / width,
        }
    )
    phi = _phi_table(config)
    refused = _wu_setting_refused(config, reports)
    losses = {
        name: (_wu.half_l1(est.probabilities, truth), _wu.half_l1(est.probabilities, pop))
        for name, est in (("Fourier", four), ("Fourier auto", auto), ("EM", em))
    }
    g = r.guarantee()
    worst = phi.loc[phi.abs_phi_ours.idxmin()]
    intro = (
        f"n = {config.n:,} draws "
        f"of a bimodal X on [0, 1] (equal mixture of N(0.3, 0.08²) and N(0.7, 0.10²), "
        f"truncated); {config.bins} bins; Y ~ U[−w/2, w/2] with w = {config.noise_width:.4g}."
    )
    lines = [
        *md.head(TITLE, ID, intro),
        "",
        md.seeded_note(config.seed, seeded.count, "randomisation", unfit="real respondents"),
        "",
        "## Information loss (½‖·‖₁ on the bins)",
        "",
        "| estimate | vs the true histogram (Wu's loss) | vs the population (AA loss, binned) |",
        "|---|---:|---:|",
    ]
    for name, (lw, la) in losses.items():
        label = {
            "Fourier": f"Fourier, {config.harmonics} harmonics",
            "Fourier auto": f'Fourier, `harmonics="auto"` (= {auto_m}), soft shrinkage '
            "(the library's default)",
        }.get(name, f"EM, {config.em_iterations} iterations (uniform start)")
        lines.append(f"| {label} | {lw:.4f} | {la:.4f} |")
    lines += [
        f"| (the true histogram itself) | 0 | {_wu.half_l1(truth, pop):.4f} |",
        "",
        "Per-bin densities: `results.csv`; plot: `fig1_estimates.png`; |φ_Y(i)|: `phi.csv`.",
        "",
        "## The noise scaling: why Wu's U[0, 20] cannot be used",
        "",
        f"With X ⊆ [0, 1] and Y ~ U[0, 20], |φ_Y(i)| = |sin(20πi)/(20πi)| = 0 for every "
        f"harmonic (numerically at most {phi.abs_phi_wu_u0_20.max():.1e}): Z mod 1 is exactly "
        "uniform, so the reports carry no information about any Fourier coefficient of X. "
        "`reconstruct_fourier` refuses that setting:",
        "",
        f"> {refused}",
        "",
        f"Our width w = {config.noise_width:.4g} keeps every |φ_Y(i)|, i ≤ {config.harmonics}, "
        f"at or above {worst.abs_phi_ours:.3f} (smallest at i = {int(worst.harmonic)}), so the "
        f"largest coefficient standard error is {worst.coef_std_error_ours:.3f}. Wider uniform "
        "noise with 12 harmonics always puts some |φ_Y(i)| near 0 (Dirichlet: some i ≤ 12 has "
        "i·w within 1/13 of an integer); the figure in the report must have used another "
        "scaling, which it does not state.",
        "",
        "## Paper vs ours",
        "",
        "| claim | Wu's report (Fig. 1) | ours |",
        "|---|---|---|",
        "| the Fourier estimate (12 harmonics) follows the bimodal truth | yes (plot only) | "
        f"loss {losses['Fourier'][0]:.4f} vs the true histogram |",
        "| EM after 100 iterations follows it too | yes (plot only) | "
        f"loss {losses['EM'][0]:.4f} |",
        '| (ours only) the default Fourier estimate, `harmonics="auto"` with soft shrinkage '
        f"| — | {auto_m} harmonics ({stop}); loss "
        f"{losses['Fourier auto'][0]:.4f} |",
        "| noise | U[0, 20] on X ⊆ [0, 1] | U[−w/2, w/2], w = "
        f"{config.noise_width:.4g} (U[0, 20] is degenerate) |",
        "| exact numbers | none printed | tables above |",
        "",
        "## Why our numbers differ from the report's",
        "",
        "- The noise width differs (above): the report's stated setting is degenerate.",
        "- The bimodal population is ours (the report gives no formula); so are the 50 bins.",
        "- The Fourier estimate is projected onto the probability simplex rather than clipped "
        "at 0 (clipping biases upward and breaks the total, C.7 (2)).",
        "",
        "## Formal guarantee of this randomizer",
        "",
        f"{g}. Uniform noise has a privacy loss of 0 or ±∞, so no finite local ε exists "
        "below δ = min(1, D/w); the legacy metrics (interval widths, Π(Y)) are average-case.",
        "",
    ]
    summary = "\n".join(lines)
    key = {
        "fourier_wu_loss": losses["Fourier"][0],
        "em_wu_loss": losses["EM"][0],
        "fourier_aa_loss": losses["Fourier"][1],
        "fourier_auto_harmonics": auto_m,
        "fourier_auto_wu_loss": losses["Fourier auto"][0],
        "fourier_auto_aa_loss": losses["Fourier auto"][1],
        "em_aa_loss": losses["EM"][1],
        "min_abs_phi": float(worst.abs_phi_ours),
        "wu_setting_refused": "degenerate" in refused,
    }
    return fw.write_run(
        ID, config, out, summary, key,
        tables={"results.csv": table, "phi.csv": phi},
        figures={"fig1_estimates.png": lambda path: _plot(plt, table, config, auto_m, path)},
    )  # fmt: skip
