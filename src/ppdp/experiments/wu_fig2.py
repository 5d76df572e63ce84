"""``wu-fig2``: EM started from the Fourier estimate vs from the uniform density.

Wu's report (Fig. 2) runs the Agrawal–Aggarwal EM on 100,000 perturbed samples from two
starting points — the uniform density and the one-step Fourier estimate — and reports that
the Fourier start reaches the stopping rule in fewer iterations at an equal or lower
information loss. Both runs here use the same stopping rule (half the L1 distance between
successive estimates below ``tol``; :func:`ppdp.local.reconstruct_em`), the same reports
and the same bins; the Fourier start is mixed with 1 % of the uniform (a bin started at 0
stays at 0 under EM's multiplicative update).

Two noise laws, each scaled so that every kept harmonic is usable (see ``wu-fig1`` for why
Wu's U[0, 20] is degenerate): uniform of width 2/15 of the domain, and Gaussian with
σ = 0.03 (|φ_Y(12)| = 0.077). The Fourier start is run with Wu's 12 harmonics and, to show
where the claim holds, with 10, 8 and 6: a start with more harmonics is closer in bias but
noisier, and the stopping rule halts EM near its start, keeping that noise.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdp._validation import check_int, check_positive
from ppdp.exceptions import ParameterError
from ppdp.experiments._config import int_grid
from ppdp.experiments._framework import (
    ExperimentResult,
    Progress,
    SeededRuns,
    config_dict,
    import_pyplot,
    save_figure,
    seed_sequence,
    write_csv,
    write_json,
    write_text,
)
from ppdp.experiments._wu import (
    bimodal_probabilities,
    bimodal_sample,
    empirical_probabilities,
    half_l1,
)
from ppdp.local import AdditiveRandomizer, reconstruct_em

__all__ = ["ID", "TITLE", "Config", "run"]

ID = "wu-fig2"
TITLE = "EM from the Fourier estimate vs from uniform: iterations and information loss (Wu, Fig. 2)"

_NOISES = (("uniform", 2.0 / 15.0), ("gaussian", 0.03))


@dataclass(frozen=True)
class Config:
    """What one run does.

    Attributes
    ----------
    n : int
        Respondents per trial (Wu: 100,000).
    bins : int
    harmonics : tuple of int
        Harmonics of the Fourier starts (Wu: 12; the first is the headline).
    tol : float
        The shared stopping rule: ½‖θ_{r+1} − θ_r‖₁ < tol.
    extra_tols : tuple of float
        Tighter tolerances run with the headline harmonics only (does the finding depend on
        the tolerance?).
    max_iter : int
    noises : tuple of (str, float)
        (noise law, scale) pairs on the domain [0, 1].
    trials : int
        Independent samples and randomisations per noise.
    seed : int
    """

    n: int = 100_000
    bins: int = 50
    harmonics: tuple[int, ...] = (12, 10, 8, 6)
    tol: float = 1e-3
    extra_tols: tuple[float, ...] = (1e-4,)
    max_iter: int = 10_000
    noises: tuple[tuple[str, float], ...] = _NOISES
    trials: int = 20
    seed: int = 2003

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", check_int("n", self.n, minimum=100))
        object.__setattr__(self, "bins", check_int("bins", self.bins, minimum=2))
        object.__setattr__(self, "harmonics", int_grid("harmonics", self.harmonics))
        object.__setattr__(self, "tol", check_positive("tol", self.tol))
        object.__setattr__(
            self, "extra_tols", tuple(check_positive("extra_tols", t) for t in self.extra_tols)
        )
        object.__setattr__(self, "max_iter", check_int("max_iter", self.max_iter, minimum=1))
        object.__setattr__(self, "trials", check_int("trials", self.trials, minimum=1))
        object.__setattr__(self, "seed", check_int("seed", self.seed, minimum=0))
        noises = tuple((str(a), float(b)) for a, b in self.noises)
        if not noises or any(a not in ("uniform", "gaussian", "laplace") for a, _ in noises):
            raise ParameterError(f"noises ({self.noises!r}) must be (law, scale) pairs")
        object.__setattr__(self, "noises", noises)

    @classmethod
    def full(cls, *, seed: int = 2003) -> Config:
        """Wu's n = 100,000; 20 trials per noise law."""
        return cls(seed=seed)

    @classmethod
    def quick(cls, *, seed: int = 2003) -> Config:
        """A smoke run: n = 20,000, 2 trials, starts with 12 and 6 harmonics, one tolerance."""
        return cls(n=20_000, trials=2, harmonics=(12, 6), extra_tols=(), seed=seed)


def _plot(plt: Any, results: pd.DataFrame, path: Path) -> Path:
    noises = list(dict.fromkeys(results.noise))
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    colors = {"uniform": "#4c72b0", "fourier": "#dd8452"}
    for j, noise in enumerate(noises):
        sub = results[results.noise == noise]
        first = next(i for i in dict.fromkeys(sub.init) if i != "uniform")
        for init in ("uniform", "fourier"):
            name = init if init == "uniform" else first
            s = sub[sub.init == name]
            axes[0].scatter(s.iterations, s.wu_loss, s=18, color=colors[init],
                            marker="o" if j == 0 else "^",
                            label=f"{noise} noise, {name} start")  # fmt: skip
        means = [sub[sub.init == i].iterations.mean() for i in ("uniform", first)]
        axes[1].bar([2 * j, 2 * j + 0.8], means, width=0.7,
                    color=[colors["uniform"], colors["fourier"]])  # fmt: skip
    axes[0].set_xlabel("EM iterations to the stopping rule")
    axes[0].set_ylabel("information loss vs the true histogram")
    axes[0].legend(fontsize=7)
    axes[1].set_xticks([2 * j + 0.4 for j in range(len(noises))], noises)
    axes[1].set_ylabel("mean iterations (blue: uniform start, orange: Fourier)")
    fig.tight_layout()
    return save_figure(fig, path)


def run(
    config: Config, out_dir: str | Path, *, progress: Progress | None = None
) -> ExperimentResult:
    """Run the experiment; write ``results.csv``, ``summary.csv``, ``config.json``,
    ``fig2_em_start.png`` and ``summary.md`` into ``out_dir``."""
    if not isinstance(config, Config):
        raise TypeError(f"config ({type(config).__name__}) must be a {__name__}.Config")
    plt = import_pyplot()
    out = Path(out_dir)
    seeded = SeededRuns()
    rows: list[dict[str, Any]] = []
    total = len(config.noises) * config.trials
    done = 0
    edges = np.linspace(0.0, 1.0, config.bins + 1)
    pop = bimodal_probabilities(edges)
    for ni, (noise, scale) in enumerate(config.noises):
        r = AdditiveRandomizer(noise=noise, scale=scale, domain=(0.0, 1.0))  # type: ignore[arg-type]
        for trial in range(config.trials):
            x = bimodal_sample(config.n, seed_sequence(config.seed, ni, trial, 0))
            with seeded.collect():
                reports = r.randomise(x, random_state=seed_sequence(config.seed, ni, trial, 1))
            truth = empirical_probabilities(x, edges)
            runs = [(config.tol, h) for h in (0, *config.harmonics)]
            runs += [(t, h) for t in config.extra_tols for h in (0, config.harmonics[0])]
            for tol, h in runs:
                init = "uniform" if h == 0 else "fourier"
                t0 = time.perf_counter()
                est = reconstruct_em(reports, r, config.bins, init=init, tol=tol,
                                     max_iter=config.max_iter, harmonics=max(h, 1))  # fmt: skip
                rows.append(
                    {
                        "noise": noise,
                        "scale": scale,
                        "trial": trial,
                        "tol": tol,
                        "init": "uniform" if h == 0 else f"fourier-{h}",
                        "iterations": est.iterations,
                        "converged": est.converged,
                        "wu_loss": half_l1(est.probabilities, truth),
                        "aa_loss": half_l1(est.probabilities, pop),
                        "seconds": time.perf_counter() - t0,
                    }
                )
            done += 1
            if progress is not None:
                progress(done, total, f"{noise} noise, trial {trial + 1}")
    results = pd.DataFrame(rows)
    agg_rows = []
    for (noise, _), tol in [
        (nz, t) for t in (config.tol, *config.extra_tols) for nz in config.noises
    ]:
        sub = results[(results.noise == noise) & (results.tol == tol)]
        uni = sub[sub.init == "uniform"].set_index("trial")
        for h in config.harmonics if tol == config.tol else config.harmonics[:1]:
            f = sub[sub.init == f"fourier-{h}"].set_index("trial")
            agg_rows.append(
                {
                    "noise": noise,
                    "tol": tol,
                    "harmonics": h,
                    "trials": len(f),
                    "iterations_uniform": float(uni.iterations.mean()),
                    "iterations_fourier": float(f.iterations.mean()),
                    "wu_loss_uniform": float(uni.wu_loss.mean()),
                    "wu_loss_fourier": float(f.wu_loss.mean()),
                    "aa_loss_uniform": float(uni.aa_loss.mean()),
                    "aa_loss_fourier": float(f.aa_loss.mean()),
                    "trials_fourier_fewer_iterations": int((f.iterations < uni.iterations).sum()),
                    "trials_fourier_loss_not_higher": int((f.wu_loss <= uni.wu_loss).sum()),
                }
            )
    agg = pd.DataFrame(agg_rows)
    agg["target_met"] = (agg.iterations_fourier < agg.iterations_uniform) & (
        agg.wu_loss_fourier <= agg.wu_loss_uniform
    )
    main = agg[agg.tol == config.tol]
    extra = agg[agg.tol != config.tol]
    head = main[main.harmonics == config.harmonics[0]]
    target = bool(head.target_met.all())
    met = main[main.target_met]
    lines = [
        f"# {TITLE}",
        "",
        f"Command: `ppdp reproduce {ID}` (config in `config.json`). n = {config.n:,} per trial, "
        f"{config.trials} trials per noise law, {config.bins} bins, stopping rule "
        f"½‖θ_(r+1) − θ_r‖₁ < {config.tol:g} (at most {config.max_iter} iterations), Fourier "
        f"starts with {', '.join(map(str, config.harmonics))} harmonics.",
        "",
        f"**Runs are seeded** (root seed {config.seed}; {seeded.count} seeded randomisations, "
        "collected): reproducible, and for that reason not fit for real respondents.",
        "",
        "## Mean over trials",
        "",
        "| noise | Fourier harmonics | iterations (uniform start) | iterations (Fourier start) "
        "| Wu loss (uniform) | Wu loss (Fourier) | AA loss (uniform) | AA loss (Fourier) | "
        "trials: Fourier fewer iterations | trials: Fourier loss ≤ |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for a in main.itertuples():
        lines.append(
            f"| {a.noise} | {a.harmonics} | {a.iterations_uniform:.1f} | "
            f"{a.iterations_fourier:.1f} | "
            f"{a.wu_loss_uniform:.4f} | {a.wu_loss_fourier:.4f} | {a.aa_loss_uniform:.4f} | "
            f"{a.aa_loss_fourier:.4f} | {a.trials_fourier_fewer_iterations}/{a.trials} | "
            f"{a.trials_fourier_loss_not_higher}/{a.trials} |"
        )
    lines += [
        "",
        *(
            [
                f"With tighter tolerances ({config.harmonics[0]}-harmonic start only):",
                "",
                "| noise | tol | iterations (uniform) | iterations (Fourier) | Wu loss (uniform) "
                "| Wu loss (Fourier) |",
                "|---|---:|---:|---:|---:|---:|",
                *(
                    f"| {a.noise} | {a.tol:g} | {a.iterations_uniform:.1f} | "
                    f"{a.iterations_fourier:.1f} | {a.wu_loss_uniform:.4f} | "
                    f"{a.wu_loss_fourier:.4f} |"
                    for a in extra.itertuples()
                ),
            ]
            if len(extra)
            else []
        ),
        "",
        "Wu loss: ½‖ĥ − h‖₁ against the empirical histogram of the true values; AA loss: "
        "against the population's bin probabilities. Per-run rows: `results.csv`; means: "
        "`summary.csv`; plot: `fig2_em_start.png`.",
        "",
        "## Paper vs ours",
        "",
        "| claim | Wu's report (Fig. 2) | ours |",
        "|---|---|---|",
        f"| Fourier-started EM ({config.harmonics[0]} harmonics) needs fewer iterations to "
        "the same stopping rule | yes | "
        + "; ".join(
            f"{a.noise}: {a.iterations_fourier:.1f} vs {a.iterations_uniform:.1f}"
            for a in head.itertuples()
        )
        + " |",
        "| … at equal or lower information loss | yes | "
        + "; ".join(
            f"{a.noise}: {a.wu_loss_fourier:.4f} vs {a.wu_loss_uniform:.4f}"
            for a in head.itertuples()
        )
        + " |",
        f"| both hold on every noise law with {config.harmonics[0]} harmonics | — | "
        f"{'yes' if target else 'no'} |",
        "| settings (noise, harmonics) where both hold | — | "
        + (", ".join(f"{a.noise} {a.harmonics}" for a in met.itertuples()) or "none")
        + " |",
        "| exact numbers | plot only | tables above |",
        "",
        "## Why our numbers differ from the report's",
        "",
        "- The Fourier start carries the one-step estimator's sampling noise, which grows "
        "with the number of harmonics (standard error 2/(√n·|φ_Y(i)|) per coefficient). "
        "The stopping rule halts EM after a few iterations near its start, so a noisy "
        "12-harmonic start can end with a higher loss than the early-stopped uniform start, "
        "even though it stops sooner; fewer harmonics give a smoother start. At a tighter "
        "tolerance (second table) the Fourier start still stops sooner and the two losses "
        "come close, both higher: run longer, EM approaches the discretised MLE and fits the "
        "sampling noise (see `docs/local.md`).",
        "- Noise scalings are ours: Wu's U[0, 20] on [0, 1] is degenerate for the Fourier "
        "start (see `wu-fig1`).",
        "- The stopping rule is ours (half the L1 change between successive estimates); the "
        "report does not state its rule or threshold, and iteration counts depend on both.",
        "- The Fourier start is projected onto the simplex and mixed with 1 % of the uniform "
        "(EM cannot revive a bin that starts at exactly 0).",
        "",
    ]
    summary = "\n".join(lines)
    key = {
        "target_met": target,
        "settings_meeting_target": [[a.noise, a.harmonics] for a in met.itertuples()],
        **{
            f"{a.noise}_iterations": [a.iterations_uniform, a.iterations_fourier]
            for a in head.itertuples()
        },
        **{f"{a.noise}_wu_loss": [a.wu_loss_uniform, a.wu_loss_fourier] for a in head.itertuples()},
    }
    files = [
        write_csv(results, out / "results.csv"),
        write_csv(agg, out / "summary.csv"),
        write_json(config_dict(config, ID), out / "config.json"),
        _plot(plt, results[results.tol == config.tol], out / "fig2_em_start.png"),
        write_text(summary, out / "summary.md"),
    ]
    return ExperimentResult(ID, out, tuple(files), summary, key)
