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

The 12-harmonic start is also run smoothed, with no tuning on the truth: tapered (Fejér,
Lanczos, Hann) and shrunk coefficient by coefficient from its own size and its known noise
variance ``4/(n|φ_Y(i)|²)`` (``shrinkage=`` of :func:`ppdp.local.reconstruct_fourier`:
empirical Wiener; hard, soft and garrote at the universal threshold). The 12-harmonic
comparisons are repeated on fresh root seeds (``confirm_seeds``) that played no part in
choosing the rules.

``"auto"`` in ``harmonics`` adds the library's default start, ``reconstruct_em(...,
init="fourier")`` with no other argument: the harmonic count chosen from n, the domain and
the noise law alone (:func:`ppdp.local.reconstruction.auto_harmonics`) with soft shrinkage.
It is run on the root seed and on every confirmation seed.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdp._validation import check_int, check_positive
from ppdp.exceptions import ParameterError
from ppdp.experiments import _framework as fw
from ppdp.experiments import _summary as md
from ppdp.experiments import _wu
from ppdp.experiments._config import int_grid, set_checked, set_ints
from ppdp.local import AdditiveRandomizer, reconstruct_em, reconstruct_fourier
from ppdp.local.reconstruction import AUTO_HARMONICS_MAX, AUTO_HARMONICS_THRESHOLD, auto_harmonics

__all__ = ["ID", "TITLE", "Config", "run"]

ID = "wu-fig2"
TITLE = "EM from the Fourier estimate vs from uniform: iterations and information loss (Wu, Fig. 2)"

_NOISES = (("uniform", 2.0 / 15.0), ("gaussian", 0.03))
_CONFIRM_SEEDS = (3001, 3002, 3003)
_TAPERS = ("fejer", "lanczos", "hann")
_SHRINKAGES = ("wiener", "hard", "soft", "garrote")
#: as in reconstruct_em(init="fourier"): EM cannot revive a bin started at exactly 0
_MIX = 0.01


@dataclass(frozen=True)
class Config:
    """What one run does.

    Attributes
    ----------
    n : int
        Respondents per trial (Wu: 100,000).
    bins : int
    harmonics : tuple of int and "auto"
        Harmonics of the untapered Fourier starts (Wu: 12; the first, an int, is the
        headline); ``"auto"`` adds the default start (automatic count, soft shrinkage).
    tapers : tuple of str
        Tapers of ``reconstruct_fourier`` tried on the headline harmonics.
    shrinkages : tuple of str
        Shrinkage rules of ``reconstruct_fourier`` tried on the headline harmonics.
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
    confirm_seeds : tuple of int
        Further root seeds on which the headline-harmonic starts (raw, tapered, shrunk) are
        run again at ``tol`` (a check on samples not used to choose the rules).
    """

    n: int = 100_000
    bins: int = 50
    harmonics: tuple[int | str, ...] = (12, 10, 8, 6, "auto")
    tapers: tuple[str, ...] = _TAPERS
    shrinkages: tuple[str, ...] = _SHRINKAGES
    tol: float = 1e-3
    extra_tols: tuple[float, ...] = (1e-4,)
    max_iter: int = 10_000
    noises: tuple[tuple[str, float], ...] = _NOISES
    trials: int = 20
    seed: int = 2003
    confirm_seeds: tuple[int, ...] = _CONFIRM_SEEDS

    def __post_init__(self) -> None:
        set_ints(self, n=100, bins=2)
        object.__setattr__(self, "harmonics", _harmonics_grid(self.harmonics))
        set_checked(self, check_positive, "tol")
        object.__setattr__(
            self, "extra_tols", tuple(check_positive("extra_tols", t) for t in self.extra_tols)
        )
        set_ints(self, max_iter=1, trials=1, seed=0)
        for name, allowed in (("tapers", _TAPERS), ("shrinkages", _SHRINKAGES)):
            vals = tuple(getattr(self, name))
            if any(v not in allowed for v in vals):
                raise ParameterError(
                    f"{name} ({getattr(self, name)!r}) must be drawn from {', '.join(allowed)}"
                )
            object.__setattr__(self, name, vals)
        seeds = tuple(check_int("confirm_seeds", v, minimum=0) for v in self.confirm_seeds)
        object.__setattr__(self, "confirm_seeds", tuple(v for v in seeds if v != self.seed))
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
        """A smoke run: n = 20,000, 2 trials, starts with 12 and 6 harmonics and the automatic
        count, Fejér and soft shrinkage at 12, one tolerance, one confirmation seed."""
        return cls(
            n=20_000,
            trials=2,
            harmonics=(12, 6, "auto"),
            tapers=("fejer",),
            shrinkages=("soft",),
            extra_tols=(),
            confirm_seeds=(3001,),
            seed=seed,
        )


AUTO_LABEL = "fourier-auto"


def _harmonics_grid(values: Any) -> tuple[int | str, ...]:
    """Ints >= 1, the first one an int (the headline), and at most one ``"auto"``."""
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise ParameterError(f"harmonics ({values!r}) must be a sequence of integers and 'auto'")
    vals = tuple(values)
    if not vals or isinstance(vals[0], str) or sum(isinstance(v, str) for v in vals) > 1:
        raise ParameterError(
            f"harmonics ({values!r}) must start with an integer (the headline) and hold "
            "'auto' at most once"
        )
    if any(isinstance(v, str) and v != "auto" for v in vals):
        raise ParameterError(f"harmonics ({values!r}) must hold integers >= 1 and 'auto' only")
    ints = int_grid("harmonics", [v for v in vals if not isinstance(v, str)])
    it = iter(ints)
    return tuple("auto" if v == "auto" else next(it) for v in vals)


def _label(h: int | str, smoothing: str) -> str:
    if h == "auto":
        return AUTO_LABEL
    return f"fourier-{h}" if smoothing == "none" else f"fourier-{h}-{smoothing.split()[-1]}"


def _starts(
    config: Config, *, headline_only: bool
) -> list[tuple[int | str, str | None, str | None]]:
    """(harmonics, taper, shrinkage) of every Fourier start of one run; the automatic start
    is ``("auto", None, "auto")``, what ``reconstruct_em(init="fourier")`` does by default."""
    h0 = config.harmonics[0]
    ints = [h for h in config.harmonics if h != "auto"]
    raw = [(h0, None, None)] if headline_only else [(h, None, None) for h in ints]
    auto = [("auto", None, "auto")] if "auto" in config.harmonics else []
    return [
        *raw,
        *((h0, t, None) for t in config.tapers),
        *((h0, None, s) for s in config.shrinkages),
        *auto,
    ]


def _smoothing(taper: str | None, shrinkage: str | None) -> str:
    if taper is not None:
        return f"taper {taper}"
    if shrinkage == "auto":
        return "shrinkage soft"  # what shrinkage="auto" is with harmonics="auto"
    if shrinkage is not None:
        return f"shrinkage {shrinkage}"
    return "none"


def _start_name(start: str, harmonics: int, smoothing: str) -> str:
    """How a start is named in the tables (the automatic one with its count)."""
    if start == AUTO_LABEL:
        return f"auto = {harmonics}, {smoothing}"
    return f"{harmonics}, {smoothing}"


def _plot(plt: Any, results: pd.DataFrame, highlight: str, path: Path) -> Path:
    noises = list(dict.fromkeys(results.noise))
    raw = next(i for i in dict.fromkeys(results.init) if i != "uniform")
    shown = list(dict.fromkeys(("uniform", raw, highlight)))
    palette = ("#4c72b0", "#dd8452", "#55a868")
    colors = dict(zip(shown, palette, strict=False))
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 3.8))
    for j, noise in enumerate(noises):
        sub = results[results.noise == noise]
        for name in shown:
            s = sub[sub.init == name]
            axes[0].scatter(s.iterations, s.wu_loss, s=16, color=colors[name],
                            marker="o" if j == 0 else "^",
                            label=f"{noise} noise, {name} start")  # fmt: skip
        means = [sub[sub.init == i].iterations.mean() for i in shown]
        xs = [j * (len(shown) + 1) + q for q in range(len(shown))]
        axes[1].bar(xs, means, width=0.8, color=[colors[i] for i in shown])
    axes[0].set_xlabel("EM iterations to the stopping rule")
    axes[0].set_ylabel("information loss vs the true histogram")
    axes[0].legend(fontsize=6)
    axes[1].set_xticks(
        [j * (len(shown) + 1) + (len(shown) - 1) / 2 for j in range(len(noises))], noises
    )
    axes[1].set_ylabel("mean iterations")
    axes[1].set_title(" / ".join(shown), fontsize=7)
    fig.tight_layout()
    return fw.save_figure(fig, path)


def _compare(results: pd.DataFrame, seed: int, noise: str, tol: float, init: str) -> dict[str, Any]:
    sub = results[(results.seed == seed) & (results.noise == noise) & (results.tol == tol)]
    uni = sub[sub.init == "uniform"].set_index("trial")
    f = sub[sub.init == init].set_index("trial")
    first = f.iloc[0]
    return {
        "seed": seed,
        "noise": noise,
        "tol": tol,
        "start": init,
        "harmonics": int(first.harmonics),
        "smoothing": first.smoothing,
        "trials": len(f),
        "iterations_uniform": float(uni.iterations.mean()),
        "iterations_fourier": float(f.iterations.mean()),
        "wu_loss_uniform": float(uni.wu_loss.mean()),
        "wu_loss_fourier": float(f.wu_loss.mean()),
        "aa_loss_uniform": float(uni.aa_loss.mean()),
        "aa_loss_fourier": float(f.aa_loss.mean()),
        "start_wu_loss": float(f.start_wu_loss.mean()),
        "trials_fourier_fewer_iterations": int((f.iterations < uni.iterations).sum()),
        "trials_fourier_loss_not_higher": int((f.wu_loss <= uni.wu_loss).sum()),
    }


def _paired_difference(
    results: pd.DataFrame, seeds: tuple[int, ...], noise: str, tol: float, init: str
) -> tuple[float, float]:
    """Mean and standard error of the per-trial Wu-loss difference (Fourier − uniform)."""
    sub = results[results.seed.isin(seeds) & (results.noise == noise) & (results.tol == tol)]
    uni = sub[sub.init == "uniform"].set_index(["seed", "trial"]).wu_loss
    four = sub[sub.init == init].set_index(["seed", "trial"]).wu_loss
    d = (four - uni).dropna().to_numpy()
    se = float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else float("nan")
    return float(d.mean()), se


def _every_seed_by_noise(agg: pd.DataFrame, tol: float, starts: list[str]) -> dict[str, list[str]]:
    """Per noise law, the starts whose claim holds (in the means) on every seed."""
    out: dict[str, list[str]] = {}
    sub = agg[agg.tol == tol]
    for noise in dict.fromkeys(sub.noise):
        rows = sub[sub.noise == noise]
        out[str(noise)] = [i for i in starts if bool(rows[rows.start == i].target_met.all())]
    return out


def _verdict(rows: pd.DataFrame) -> str:
    """'yes' if the claim holds (in the means) on every noise law, else what fails."""
    bad = []
    for a in rows.itertuples():
        if a.iterations_fourier >= a.iterations_uniform:
            bad.append(
                f"{a.noise}: iterations {a.iterations_fourier:.1f} ≥ {a.iterations_uniform:.1f}"
            )
        if a.wu_loss_fourier > a.wu_loss_uniform:
            bad.append(f"{a.noise}: loss {a.wu_loss_fourier:.5f} > {a.wu_loss_uniform:.5f}")
    return "yes" if not bad else "no (" + "; ".join(bad) + ")"


def run(
    config: Config, out_dir: str | Path, *, progress: fw.Progress | None = None
) -> fw.ExperimentResult:
    """Run the experiment; write ``results.csv``, ``summary.csv``, ``config.json``,
    ``fig2_em_start.png`` and ``summary.md`` into ``out_dir``."""
    plt = fw.start(config, Config)
    out = Path(out_dir)
    seeded = fw.SeededRuns()
    rows: list[dict[str, Any]] = []
    seeds = (config.seed, *config.confirm_seeds)
    total = len(seeds) * len(config.noises) * config.trials
    done = 0
    edges = np.linspace(0.0, 1.0, config.bins + 1)
    pop = _wu.bimodal_probabilities(edges)
    h0 = config.harmonics[0]
    for seed in seeds:
        main_seed = seed == config.seed
        runs: list[tuple[float, tuple[int | str, str | None, str | None] | None]] = [
            (config.tol, None),
            *((config.tol, st) for st in _starts(config, headline_only=not main_seed)),
        ]
        if main_seed:
            runs += [(t, st) for t in config.extra_tols for st in (None, (h0, None, None))]
        for ni, (noise, scale) in enumerate(config.noises):
            r = AdditiveRandomizer(noise=noise, scale=scale, domain=(0.0, 1.0))  # type: ignore[arg-type]
            for trial in range(config.trials):
                x = _wu.bimodal_sample(config.n, fw.seed_sequence(seed, ni, trial, 0))
                with seeded.collect():
                    reports = r.randomise(x, random_state=fw.seed_sequence(seed, ni, trial, 1))
                truth = _wu.empirical_probabilities(x, edges)
                for tol, st in runs:
                    t0 = time.perf_counter()
                    if st is None:
                        est = reconstruct_em(reports, r, config.bins, tol=tol,
                                             max_iter=config.max_iter)  # fmt: skip
                        h, smoothing, start_loss = 0, "none", _wu.half_l1(1.0 / config.bins, truth)
                        init = "uniform"
                    else:
                        hh, taper, shrinkage = st
                        four = reconstruct_fourier(reports, r, hh, bins=edges, taper=taper,
                                                   shrinkage=shrinkage)  # fmt: skip
                        # the start reconstruct_em(init="fourier") uses (tested identical)
                        theta0 = (1.0 - _MIX) * four.probabilities + _MIX / config.bins
                        est = reconstruct_em(reports, r, config.bins, init=theta0, tol=tol,
                                             max_iter=config.max_iter)  # fmt: skip
                        smoothing = _smoothing(taper, shrinkage)
                        start_loss = _wu.half_l1(theta0, truth)
                        h = int(four.details["harmonics"])  # the count used ("auto": chosen)
                        init = _label(hh, smoothing)
                    rows.append(
                        {
                            "seed": seed,
                            "noise": noise,
                            "scale": scale,
                            "trial": trial,
                            "tol": tol,
                            "init": init,
                            "harmonics": h,
                            "smoothing": smoothing,
                            "iterations": est.iterations,
                            "converged": est.converged,
                            "start_wu_loss": start_loss,
                            "wu_loss": _wu.half_l1(est.probabilities, truth),
                            "aa_loss": _wu.half_l1(est.probabilities, pop),
                            "seconds": time.perf_counter() - t0,
                        }
                    )
                done += 1
                if progress is not None:
                    progress(done, total, f"seed {seed}, {noise} noise, trial {trial + 1}")
    results = pd.DataFrame(rows)
    main_starts = [_label(h, _smoothing(t, s)) for h, t, s in _starts(config, headline_only=False)]
    head_starts = [_label(h, _smoothing(t, s)) for h, t, s in _starts(config, headline_only=True)]
    agg_rows = [
        _compare(results, config.seed, noise, config.tol, init)
        for noise, _ in config.noises
        for init in main_starts
    ]
    agg_rows += [
        _compare(results, config.seed, noise, tol, f"fourier-{h0}")
        for tol in config.extra_tols
        for noise, _ in config.noises
    ]
    agg_rows += [
        _compare(results, seed, noise, config.tol, init)
        for seed in config.confirm_seeds
        for noise, _ in config.noises
        for init in head_starts
    ]
    agg = pd.DataFrame(agg_rows)
    agg["target_met"] = (agg.iterations_fourier < agg.iterations_uniform) & (
        agg.wu_loss_fourier <= agg.wu_loss_uniform
    )
    main = agg[(agg.seed == config.seed) & (agg.tol == config.tol)]
    extra = agg[(agg.seed == config.seed) & (agg.tol != config.tol)]
    head = main[main.start == f"fourier-{h0}"]
    target = bool(head.target_met.all())
    met = main[main.target_met]
    by_start = {
        init: {
            int(seed): bool(
                agg[
                    (agg.seed == seed) & (agg.tol == config.tol) & (agg.start == init)
                ].target_met.all()
            )
            for seed in seeds
        }
        for init in head_starts
    }
    every_seed = [init for init in head_starts if all(by_start[init].values())]
    smoothed = [init for init in head_starts if init != f"fourier-{h0}"]
    best_loss = {init: float(main[main.start == init].wu_loss_fourier.mean()) for init in smoothed}
    highlight = (
        AUTO_LABEL  # the library's default start
        if AUTO_LABEL in head_starts
        else every_seed[0]
        if every_seed and every_seed[0] != f"fourier-{h0}"
        else (min(best_loss, key=best_loss.__getitem__) if best_loss else f"fourier-{h0}")
    )
    by_noise = _every_seed_by_noise(agg, config.tol, head_starts)
    summary = _summary(config, seeded.count, results, main, extra, agg, head, target, met,
                       by_start, every_seed, by_noise, head_starts)  # fmt: skip
    key = {
        "target_met": target,
        "settings_meeting_target": [[a.noise, a.start] for a in met.itertuples()],
        "target_met_by_start_and_seed": by_start,
        "starts_meeting_target_on_every_seed": every_seed,
        "starts_meeting_target_on_every_seed_by_noise": by_noise,
        **{
            f"{a.noise}_iterations": [a.iterations_uniform, a.iterations_fourier]
            for a in head.itertuples()
        },
        **{f"{a.noise}_wu_loss": [a.wu_loss_uniform, a.wu_loss_fourier] for a in head.itertuples()},
    }
    auto_rows = main[main.start == AUTO_LABEL]
    if len(auto_rows):
        key["auto_harmonics"] = {a.noise: int(a.harmonics) for a in auto_rows.itertuples()}
        key["auto_start"] = {
            a.noise: {
                "iterations": [a.iterations_uniform, a.iterations_fourier],
                "wu_loss": [a.wu_loss_uniform, a.wu_loss_fourier],
                "target_met_by_seed": {
                    int(sd): bool(
                        agg[
                            (agg.seed == sd)
                            & (agg.tol == config.tol)
                            & (agg.start == AUTO_LABEL)
                            & (agg.noise == a.noise)
                        ].target_met.all()
                    )
                    for sd in seeds
                },
            }
            for a in auto_rows.itertuples()
        }
    shown = results[(results.tol == config.tol) & (results.seed == config.seed)]
    return fw.write_run(
        ID, config, out, summary, key,
        tables={"results.csv": results, "summary.csv": agg},
        figures={"fig2_em_start.png": lambda path: _plot(plt, shown, highlight, path)},
    )  # fmt: skip


def _auto_section(
    config: Config, results: pd.DataFrame, agg: pd.DataFrame, seeds: tuple[int, ...]
) -> list[str]:
    """The default start: its count per noise law (and why the rule stopped there) and how
    it compares with the uniform start on every seed."""
    if "auto" not in config.harmonics:
        return []
    lines = [
        "",
        '## The library\'s default start: `harmonics="auto"` with soft shrinkage',
        "",
        '`reconstruct_em(reports, r, bins, init="fourier")` with no other argument: harmonic '
        "i is kept while the standard error of its coefficient, s_i = 2/(√n·|φ_Y(i)|), is at "
        f"most {AUTO_HARMONICS_THRESHOLD:g} (and |φ_Y(i)| ≥ 1e-8), stopping at the first "
        "harmonic that fails — n, the domain and the noise law only, never the reports — and "
        "the start is shrunk by the soft rule.",
        "",
        "| noise | harmonics kept (m) | s_m | first harmonic not kept "
        "| iterations (uniform) | iterations (auto) | Wu loss (uniform) | Wu loss (auto) "
        "| loss difference, paired, all seeds | seeds where the claim holds |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for noise, scale in config.noises:
        r = AdditiveRandomizer(noise=noise, scale=scale, domain=(0.0, 1.0))  # type: ignore[arg-type]
        m = auto_harmonics(r, config.n)
        phi = np.abs(r.noise_characteristic(2.0 * np.pi * np.arange(1, m + 2)))
        se = 2.0 / (np.sqrt(config.n) * phi)
        if m >= AUTO_HARMONICS_MAX:
            nxt = f"none (the cap, {AUTO_HARMONICS_MAX})"
        elif phi[m] < 1e-8:
            nxt = f"{m + 1}: erased by the noise (abs φ_Y = {phi[m]:.2g})"
        else:
            nxt = f"{m + 1}: s = {se[m]:.3g} (abs φ_Y = {phi[m]:.2g})"
        main = agg[
            (agg.seed == config.seed)
            & (agg.tol == config.tol)
            & (agg.noise == noise)
            & (agg.start == AUTO_LABEL)
        ]
        rows = agg[(agg.tol == config.tol) & (agg.noise == noise) & (agg.start == AUTO_LABEL)]
        mean, err = _paired_difference(results, seeds, noise, config.tol, AUTO_LABEL)
        a = main.iloc[0]
        lines.append(
            f"| {noise} | {m} | {se[m - 1]:.3g} | {nxt} | {a.iterations_uniform:.2f} | "
            f"{a.iterations_fourier:.2f} | {a.wu_loss_uniform:.5f} | {a.wu_loss_fourier:.5f} | "
            f"{mean:+.5f} ± {err:.5f} | {int(rows.target_met.sum())} of {len(rows)} |"
        )
    lines += [
        "",
        f"Iterations and losses: root seed {config.seed}, mean over {config.trials} trials; "
        "the paired difference is Fourier − uniform Wu loss per trial over all seeds (mean ± "
        "standard error); the claim: fewer mean iterations and mean Wu loss ≤ the uniform "
        "start's.",
    ]
    return lines


def _summary(
    config: Config,
    seeded_count: int,
    results: pd.DataFrame,
    main: pd.DataFrame,
    extra: pd.DataFrame,
    agg: pd.DataFrame,
    head: pd.DataFrame,
    target: bool,
    met: pd.DataFrame,
    by_start: dict[str, dict[int, bool]],
    every_seed: list[str],
    by_noise: dict[str, list[str]],
    head_starts: list[str],
) -> str:
    h0 = config.harmonics[0]
    seeds = (config.seed, *config.confirm_seeds)
    intro = (
        f"n = {config.n:,} per trial, "
        f"{config.trials} trials per noise law, {config.bins} bins, stopping rule "
        f"½‖θ_(r+1) − θ_r‖₁ < {config.tol:g} (at most {config.max_iter} iterations). Fourier "
        f"starts: {', '.join(str(h) for h in config.harmonics if h != 'auto')} harmonics "
        f"untapered; {h0} harmonics tapered ("
        + (", ".join(config.tapers) or "none")
        + ") and shrunk ("
        + (", ".join(config.shrinkages) or "none")
        + ")"
        + (
            '; the library\'s default start (`init="fourier"`: `harmonics="auto"`, soft shrinkage)'
            if "auto" in config.harmonics
            else ""
        )
        + "."
    )
    lines = [
        *md.head(TITLE, ID, intro),
        "",
        md.seeded_note(
            f"{config.seed}, confirmation seeds {', '.join(map(str, config.confirm_seeds))}"
            if config.confirm_seeds
            else config.seed,
            seeded_count,
            "randomisations",
            unfit="real respondents",
        ),
        "",
        f"## Mean over trials (root seed {config.seed})",
        "",
        "| noise | Fourier start | iterations (uniform start) | iterations (Fourier start) "
        "| Wu loss of the start alone | Wu loss (uniform) | Wu loss (Fourier) | AA loss (uniform) "
        "| AA loss (Fourier) | trials: Fourier fewer iterations | trials: Fourier loss ≤ "
        "| claim holds (means) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for a in main.itertuples():
        lines.append(
            f"| {a.noise} | {_start_name(a.start, a.harmonics, a.smoothing)} | "
            f"{a.iterations_uniform:.2f} | "
            f"{a.iterations_fourier:.2f} | {a.start_wu_loss:.4f} | "
            f"{a.wu_loss_uniform:.5f} | {a.wu_loss_fourier:.5f} | {a.aa_loss_uniform:.4f} | "
            f"{a.aa_loss_fourier:.4f} | {a.trials_fourier_fewer_iterations}/{a.trials} | "
            f"{a.trials_fourier_loss_not_higher}/{a.trials} | "
            f"{'yes' if a.target_met else 'no'} |"
        )
    if len(extra):
        lines += [
            "",
            f"With tighter tolerances ({h0}-harmonic untapered start only):",
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
    lines += [
        "",
        "Wu loss: ½‖ĥ − h‖₁ against the empirical histogram of the true values; AA loss: "
        "against the population's bin probabilities; the start alone: the Fourier start (with "
        "its 1 % of uniform) before any EM iteration. Per-run rows: `results.csv`; means: "
        "`summary.csv`; plot: `fig2_em_start.png`.",
        "",
        f"## Does Wu's claim hold with {h0} harmonics, per start and seed?",
        "",
        "Claim: fewer mean iterations **and** mean Wu loss ≤ the uniform start's, on every "
        f"noise law ({config.trials} trials each)."
        + (
            " Confirmation runs: seed"
            + ("s " if len(config.confirm_seeds) > 1 else " ")
            + ", ".join(map(str, config.confirm_seeds))
            + "."
            if config.confirm_seeds
            else ""
        ),
        "",
        "| Fourier start | " + " | ".join(f"seed {s}" for s in seeds) + " |",
        "|---|" + "---|" * len(seeds),
    ]
    for init in head_starts:
        cells = []
        for s in seeds:
            sub = agg[(agg.seed == s) & (agg.tol == config.tol) & (agg.start == init)]
            cells.append(_verdict(sub))
        smoothing = agg[agg.start == init].smoothing.iloc[0]
        name = f"auto, {smoothing}" if init == AUTO_LABEL else f"{h0}, {smoothing}"
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    conf = agg[agg.seed.isin(config.confirm_seeds) & (agg.tol == config.tol)]
    if len(conf):
        lines += [
            "",
            "Confirmation seeds pooled (mean of the per-seed means; trial counts summed; the "
            "paired difference is Fourier − uniform Wu loss per trial, mean ± standard error):",
            "",
            "| noise | Fourier start | iterations (uniform) | iterations (Fourier) "
            "| Wu loss (uniform) | Wu loss (Fourier) | loss difference, paired "
            "| trials: fewer iterations | trials: loss ≤ |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for (noise, start), g in conf.groupby(["noise", "start"], sort=False):
            mean, se = _paired_difference(
                results, config.confirm_seeds, str(noise), config.tol, str(start)
            )
            lines.append(
                f"| {noise} | "
                f"{_start_name(str(start), g.harmonics.iloc[0], g.smoothing.iloc[0])} | "
                f"{g.iterations_uniform.mean():.2f} | "
                f"{g.iterations_fourier.mean():.2f} | {g.wu_loss_uniform.mean():.5f} | "
                f"{g.wu_loss_fourier.mean():.5f} | {mean:+.5f} ± {se:.5f} | "
                f"{g.trials_fourier_fewer_iterations.sum()}/{g.trials.sum()} | "
                f"{g.trials_fourier_loss_not_higher.sum()}/{g.trials.sum()} |"
            )
        lines += ["", "Verdict per noise law (all seeds):", ""]
        allc = agg[agg.tol == config.tol]
        for noise in dict.fromkeys(allc.noise):
            ok = by_noise.get(str(noise), [])
            diffs = {
                i: _paired_difference(results, seeds, str(noise), config.tol, i)
                for i in head_starts
            }
            best = min(diffs, key=lambda i: diffs[i][0])
            rows = allc[(allc.noise == noise) & (allc.start == best)]
            lines.append(
                f"- {noise} noise: the claim holds on every seed with "
                + (", ".join(ok) if ok else "no start")
                + f". Lowest loss relative to the uniform start: {best}, paired difference "
                f"{diffs[best][0]:+.5f} ± {diffs[best][1]:.5f} over {len(seeds)} seeds × "
                f"{config.trials} trials, mean iterations "
                f"{rows.iterations_fourier.mean():.2f} vs {rows.iterations_uniform.mean():.2f}"
                f"; its claim holds on {int(rows.target_met.sum())} of {len(rows)} seeds."
            )
    shrunk_ok = [i for i in every_seed if i != f"fourier-{h0}"]
    lines += _auto_section(config, results, agg, seeds)
    auto_main = main[main.start == AUTO_LABEL]
    auto_row = (
        [
            '| the library\'s default Fourier start (`harmonics="auto"`, soft shrinkage) '
            "meets both (root seed; mean iterations, mean Wu loss, Fourier vs uniform) | — | "
            + "; ".join(
                f"{a.noise} ({a.harmonics} harmonics): {a.iterations_fourier:.1f} vs "
                f"{a.iterations_uniform:.1f}, {a.wu_loss_fourier:.5f} vs {a.wu_loss_uniform:.5f}"
                f" — {'yes' if a.target_met else 'no'}"
                for a in auto_main.itertuples()
            )
            + " |"
        ]
        if len(auto_main)
        else []
    )
    lines += [
        "",
        "## Paper vs ours",
        "",
        "| claim | Wu's report (Fig. 2) | ours |",
        "|---|---|---|",
        f"| Fourier-started EM ({h0} harmonics) needs fewer iterations to "
        "the same stopping rule | yes | untapered: "
        + "; ".join(
            f"{a.noise}: {a.iterations_fourier:.1f} vs {a.iterations_uniform:.1f}"
            for a in head.itertuples()
        )
        + " |",
        "| … at equal or lower information loss | yes | untapered: "
        + "; ".join(
            f"{a.noise}: {a.wu_loss_fourier:.4f} vs {a.wu_loss_uniform:.4f}"
            for a in head.itertuples()
        )
        + " |",
        f"| both hold on every noise law with the untapered {h0}-harmonic start | — | "
        f"{'yes' if target else 'no'} |",
        f"| both hold on every noise law and every seed with a smoothed {h0}-harmonic "
        + ("or the automatic " if AUTO_LABEL in head_starts else "")
        + "start | — | "
        + (", ".join(shrunk_ok) if shrunk_ok else "none")
        + " |",
        *auto_row,
        "| … per noise law, every seed (any start of the per-seed table) | — | "
        + "; ".join(f"{k}: {', '.join(v) or 'none'}" for k, v in by_noise.items())
        + " |",
        f"| settings meeting both (root seed {config.seed}) | — | "
        + (", ".join(f"{a.noise} {a.start}" for a in met.itertuples()) or "none")
        + " |",
        "| exact numbers | plot only | tables above |",
        "",
        "## Why our numbers differ from the report's",
        "",
        "- The Fourier start carries the one-step estimator's sampling noise, which grows "
        "with the number of harmonics (E|ĉ_i − c_i|² ≤ 4/(n·|φ_Y(i)|²) per complex "
        "coefficient). The stopping rule halts EM after a few iterations near its start, so a "
        f"noisy untapered {h0}-harmonic start ends with a higher loss than the early-stopped "
        "uniform start, even though it stops sooner; fewer harmonics give a smoother start. At "
        "a tighter tolerance the Fourier start still stops sooner and the two losses come "
        "close, both higher: run longer, EM approaches the discretised MLE and fits the "
        "sampling noise (see `docs/local.md`).",
        "- Smoothing the start: tapers damp every high harmonic by a fixed weight, signal or "
        "not, so they blur the peaks as well as remove noise (see the start-alone column), "
        "and EM stops before it has sharpened them again. Shrinkage "
        "acts on each coefficient by its own signal-to-noise ratio, from public quantities "
        "only (n, the noise law's |φ_Y(i)|, and the coefficient itself: post-processing of "
        "the reports; the truth is used only to score). `hard`, `soft` and `garrote` use "
        "Donoho–Johnstone's universal threshold λ_i² = ln(2m)·4/(n|φ_Y(i)|²); `wiener` is "
        "max(0, 1 − v_i/|ĉ_i|²), which zeroes only coefficients below one noise standard "
        "deviation and keeps too much noise here (the plug-in |ĉ|²/(|ĉ|² + v) shrinks less "
        "still).",
        "- How the rules were chosen: the four rules and the threshold are textbook choices, "
        "fixed before these tables; during development they were tried on root seeds "
        "2003–2005 together with variants not kept (the threshold doubled; "
        "max(0, 1 − 2v/|ĉ|²); and, after the tables, a soft threshold chosen by Stein's "
        "unbiased risk estimate, worse than the universal one on every seed tried: paired "
        "loss difference +0.0015 to +0.0043). The confirmation seeds 3001–3003 were run only "
        "after the four rules were fixed.",
        *(
            [
                '- The automatic count (`harmonics="auto"`) is not tuned on these runs or '
                "seeds: it keeps harmonic i while 2/(√n·|φ_Y(i)|) ≤ "
                f"{AUTO_HARMONICS_THRESHOLD:g} from n, the domain and the noise law alone, "
                "stopping at the first harmonic that fails (`docs/local.md`; the threshold was "
                "set on development draws of `benchmarks/bench_fourier_auto.py --sweep`). Where "
                "|φ_Y| dips (uniform noise) it stops at the dip even if later harmonics would "
                "pass; the soft rule then zeroes the kept harmonics that carry no signal for "
                "this density.",
            ]
            if AUTO_LABEL in head_starts
            else []
        ),
        "- Noise scalings are ours: Wu's U[0, 20] on [0, 1] is degenerate for the Fourier "
        "start (see `wu-fig1`).",
        "- The stopping rule is ours (half the L1 change between successive estimates); the "
        "report does not state its rule or threshold, and iteration counts depend on both.",
        "- The Fourier start is projected onto the simplex and mixed with 1 % of the uniform "
        "(EM cannot revive a bin that starts at exactly 0).",
        "",
    ]
    return "\n".join(lines)
