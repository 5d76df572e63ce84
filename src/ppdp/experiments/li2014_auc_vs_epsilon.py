"""``li2014-auc-vs-epsilon``: AUC of the hybrid SVM, the private SVM and the public-only and
all-data SVMs as the privacy budget ε grows (Li et al. 2014), on Adult.

Protocol and learners: :mod:`ppdp.experiments._li2014`. Per trial the public sample (the
first ``n_public`` rows of the public pool), the random frequencies and the split are fixed;
each ε gets fresh noise. The public-only SVMs and the all-data SVM do not depend on ε.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ppdp._validation import check_int, check_positive
from ppdp.exceptions import ParameterError
from ppdp.experiments import _li2014 as li
from ppdp.experiments._config import check_common, epsilon_grid, int_grid
from ppdp.experiments._framework import (
    ExperimentResult,
    Progress,
    SeededRuns,
    config_dict,
    import_pyplot,
    require_sklearn,
    save_figure,
    write_csv,
    write_json,
    write_text,
)

__all__ = ["ID", "TITLE", "Config", "run"]

ID = "li2014-auc-vs-epsilon"
TITLE = "AUC vs ε: hybrid SVM, private SVM, public-only and all-data SVMs (Li et al. 2014)"


@dataclass(frozen=True)
class Config:
    """What one run does.

    Attributes
    ----------
    epsilons : tuple of float
    n_public : int
        Public rows the hybrid SVM fits ρ on.
    public_sizes : tuple of int
        Sizes of the public-only SVMs' training samples.
    C, gamma, n_components : float, float, int
        Hyperparameters (C in the C/n form), fixed in advance.
    tuned_dims : tuple of int
        Also run the hybrid SVM with D chosen among these on its labelled public sample
        (free public tuning, noise simulated); empty to skip.
    with_erratum : bool
        Also run the hybrid SVM with the paper's noise scale (C_s plugged into the C/n
        formula: λ/n). Not DP; shows where the paper's closeness to non-private comes from.
    trials : int
    seed : int
    n_rows : int or None
        A seeded subsample of Adult (tests only).
    """

    epsilons: tuple[float, ...] = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
    n_public: int = 200
    public_sizes: tuple[int, ...] = (50, 100, 200)
    C: float = 100.0
    gamma: float = 0.5
    n_components: int = 50
    tuned_dims: tuple[int, ...] = (5, 10, 20, 50)
    with_erratum: bool = True
    trials: int = 8
    seed: int = 2014
    n_rows: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilons", epsilon_grid("epsilons", self.epsilons))
        object.__setattr__(self, "n_public", check_int("n_public", self.n_public, minimum=2))
        object.__setattr__(
            self, "public_sizes", int_grid("public_sizes", self.public_sizes, minimum=2)
        )
        object.__setattr__(self, "C", check_positive("C", self.C))
        object.__setattr__(self, "gamma", check_positive("gamma", self.gamma))
        object.__setattr__(
            self, "n_components", check_int("n_components", self.n_components, minimum=1)
        )
        tuned = tuple(self.tuned_dims)
        object.__setattr__(self, "tuned_dims", int_grid("tuned_dims", tuned) if tuned else ())
        if not isinstance(self.with_erratum, bool):
            raise ParameterError(f"with_erratum ({self.with_erratum!r}) must be True or False")
        check_common(self)

    @classmethod
    def full(cls, *, seed: int = 2014) -> Config:
        """7 ε × 8 trials on all of Adult."""
        return cls(seed=seed)

    @classmethod
    def quick(cls, *, seed: int = 2014) -> Config:
        """A smoke run (seconds): 3 ε, 1 trial, 4,000 rows, D = 20."""
        return cls(
            epsilons=(0.1, 1.0, 5.0),
            trials=1,
            n_rows=4000,
            n_components=20,
            tuned_dims=(5, 20),
            seed=seed,
        )


def _methods(config: Config) -> list[str]:
    extra = [li.ERRATUM] if config.with_erratum else []
    tuned = [li.TUNED] if config.tuned_dims else []
    return [
        "hybrid",
        *tuned,
        "private",
        *[f"public-{n}" for n in config.public_sizes],
        "all-data",
        *extra,
    ]


def run(
    config: Config, out_dir: str | Path, *, progress: Progress | None = None
) -> ExperimentResult:
    """Run the experiment; write ``results.csv``, ``config.json``, ``auc_vs_epsilon.png``,
    ``summary.md`` into ``out_dir``."""
    if not isinstance(config, Config):
        raise TypeError(f"config ({type(config).__name__}) must be a {__name__}.Config")
    require_sklearn()
    plt = import_pyplot()
    out = Path(out_dir)
    X, y = li.adult(config.n_rows, config.seed)
    runs = SeededRuns()
    cells = [
        li.Cell(x=e, epsilon=e, n_components=config.n_components, n_public=config.n_public)
        for e in config.epsilons
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
            with_erratum=config.with_erratum,
            tuned_dims=config.tuned_dims,
        )
        spread = _score_spread(X, y, config)
    wide = li.mean_table(results, "x", _methods(config))
    wide.index.name = "epsilon"
    chosen: dict[float, str] = {}
    if config.tuned_dims:
        sel = results[results.method == li.TUNED]
        for e, g in sel.groupby("x"):
            chosen[float(e)] = ", ".join(str(int(v)) for v in g.chosen_D)
    se = results.groupby(["x", "method"]).auc.sem().unstack().fillna(0.0)
    summary, key = _summary(config, len(X), X.shape[1], wide, runs, spread, chosen, se)
    fig = li.plot_lines(
        plt,
        wide,
        x_label="ε",
        title=f"Adult, D = {config.n_components}, {config.trials} trial(s)",
        logx=True,
    )
    files = [
        write_csv(results.rename(columns={"x": "epsilon_x"}), out / "results.csv"),
        write_csv(spread, out / "score_spread.csv"),
        write_json(config_dict(config, ID), out / "config.json"),
        save_figure(fig, out / "auc_vs_epsilon.png"),
        write_text(summary, out / "summary.md"),
    ]
    return ExperimentResult(ID, out, tuple(files), summary, key)


def _score_spread(X: Any, y: Any, config: Config) -> pd.DataFrame:
    """Per trial: the spread (sd over test rows) of the noise-free scores w*ᵀz(x) with the
    random and with the fitted frequencies (no release: a diagnostic of the noise's effect,
    which moves every score by μᵀz(x), of sd √2·λ whatever ρ is, since ‖z(x)‖ = 1)."""
    from ppdp.learn.rbf_svm import solve_svm
    from ppdp.learn.rff import draw_frequencies, feature_map, fit_frequencies

    rows = []
    for trial in range(config.trials):
        s = li.split(
            X,
            y,
            seed=config.seed,
            trial=trial,
            pool_size=max(config.n_public, *config.public_sizes),
        )
        t = li.Trial(config.seed, trial)
        d = s.X_private.shape[1]
        rhos = {
            "private (random ρ)": draw_frequencies(
                config.n_components, d, config.gamma, t.feature_seed
            ),
            "hybrid (fitted ρ)": fit_frequencies(
                s.X_pool[: config.n_public],
                n_components=config.n_components,
                gamma=config.gamma,
                random_state=t.feature_seed,
                max_iter=300,
            ).rho,
        }
        ypm = (s.y_private == 1) * 2.0 - 1.0
        for name, rho in rhos.items():
            w, _, _ = solve_svm(feature_map(s.X_private, rho), ypm, C=config.C, huber_h=0.5)
            sd = float((feature_map(s.X_test, rho) @ w).std())
            rows.append(dict(trial=trial, features=name, score_sd=sd, w_norm=float(w @ w) ** 0.5))
    return pd.DataFrame(rows)


def _spread_lines(
    config: Config, spread: pd.DataFrame, n_private: int, se: pd.DataFrame
) -> list[str]:
    med = spread.groupby("features").score_sd.median()
    lam = {
        e: 2.0**2.5 * config.C * config.n_components**0.5 / (n_private * e) for e in config.epsilons
    }
    noisy = [e for e in config.epsilons if 2**0.5 * lam[e] > med.min()]
    ratio = float(med["hybrid (fitted ρ)"] / med["private (random ρ)"])
    rows = [e for e in noisy if e in se.index]
    worst_se = float(se.loc[rows, ["hybrid", "private"]].to_numpy().max()) if rows else 0.0
    if ratio < 0.95:
        why = (
            f"The fitted frequencies give scores {ratio:.0%} as spread as the random ones', "
            "so the same noise costs the hybrid more ranking there."
        )
    else:
        why = (
            f"The fitted and random frequencies give about equally spread scores "
            f"({ratio:.0%}), so the spread does not explain the differences there."
        )
    return [
        "**Where the noise decides.** The noise moves every score by μᵀz(x), whose sd is "
        "√2·λ for any ρ (‖z(x)‖ = 1). The noise-free scores w*ᵀz(x) on the test rows have a "
        "median sd of "
        + ", ".join(f"{v:.3f} ({k})" for k, v in med.items())
        + " (`score_spread.csv`); √2·λ exceeds the smaller one at ε ∈ {"
        + ", ".join(f"{e:g}" for e in noisy)
        + "}, where the private curves fall towards 0.5. "
        + why
        + (
            " At those ε the AUCs vary widely between noise draws: the standard error of the "
            f"hybrid's and the private SVM's mean AUC reaches {worst_se:.3f} over "
            f"{config.trials} trials, so their order there is not settled by this run."
            if config.trials > 1 and rows
            else ""
        ),
        "",
    ]


def _summary(
    config: Config,
    n: int,
    d: int,
    wide: pd.DataFrame,
    runs: SeededRuns,
    spread: pd.DataFrame,
    results_chosen: dict[float, str],
    se: pd.DataFrame,
) -> tuple[str, dict[str, Any]]:
    margin = wide["hybrid"] - wide["private"]
    above = bool((margin > 0).all())
    gap = wide["all-data"] - wide["hybrid"]
    best_public = f"public-{max(config.public_sizes)}"
    lines = li.header_lines(
        TITLE,
        ID,
        n,
        d,
        f"Hybrid: {config.n_public} public rows. C = {config.C:g} (C/n form), "
        f"γ = {config.gamma:g}, D = {config.n_components}; {config.trials} trial(s).",
        runs,
        config.n_rows,
    )
    lines += [
        "",
        "## Mean AUC",
        "",
        *li.markdown_table(wide, "ε"),
        "",
        "## Paper vs ours",
        "",
        li.PAPER_CLAIMS,
        "",
        "| claim | paper | ours |",
        "|---|---|---|",
        f"| hybrid AUC above the private SVM's at every ε | yes (plot) | "
        f"{'yes' if above else 'no'}: margin {float(margin.min()):+.3f} to "
        f"{float(margin.max()):+.3f} |",
        f"| hybrid close to the non-private all-data SVM | yes (plot) | gap "
        f"{float(gap.iloc[-1]):+.3f} at ε = {wide.index[-1]:g}, {float(gap.iloc[0]):+.3f} at "
        f"ε = {wide.index[0]:g} |",
        "| hybrid above the public-only SVMs | yes (plot) | "
        + _first_eps_above(wide, best_public)
        + " |",
        "",
        *_tuned_lines(wide, results_chosen),
        *_erratum_lines(wide),
        *_spread_lines(
            config, spread, n - max(n // 10, 2) - max(config.n_public, *config.public_sizes), se
        ),
        *li.DIFFERENCES,
    ]
    key = {
        "hybrid_above_private_everywhere": above,
        "hybrid_auc": [float(v) for v in wide["hybrid"]],
        "private_auc": [float(v) for v in wide["private"]],
        "all_data_auc": float(wide["all-data"].iloc[0]),
    }
    return "\n".join(lines), key


def _tuned_lines(wide: pd.DataFrame, chosen: dict[float, str]) -> list[str]:
    if li.TUNED not in wide.columns:
        return []
    margin = wide[li.TUNED] - wide["private"]
    best = wide[["hybrid", li.TUNED]].max(axis=1) - wide["private"]
    return [
        f"**Tuning D on the public sample.** `{li.TUNED}` picks D from the grid by 3-fold "
        "cross-validation on the hybrid's labelled public rows with the release's noise "
        "simulated (free: public rows and public n, ε, C only). Above the private SVM at ε ∈ {"
        + ", ".join(f"{e:g}" for e in wide.index[margin > 0])
        + f"}} (margin {float(margin.min()):+.3f} to {float(margin.max()):+.3f}); chosen D per "
        "ε (trials): "
        + "; ".join(f"ε = {e:g}: {chosen[e]}" for e in wide.index)
        + ". The better of the two hybrids is above the private SVM at "
        + ("every ε" if bool((best > 0).all()) else f"{int((best > 0).sum())} of {len(best)} ε")
        + ".",
        "",
    ]


def _erratum_lines(wide: pd.DataFrame) -> list[str]:
    if li.ERRATUM not in wide.columns:
        return []
    gap = wide["all-data"] - wide[li.ERRATUM]
    return [
        f"**The erratum explains the paper's closeness to non-private.** `{li.ERRATUM}` is "
        "the hybrid SVM with the paper's noise scale, i.e. a LIBSVM C_s plugged into "
        "2^2.5·C·√D/(nε): λ/n, which is really nε-DP, not ε-DP. Its AUC is within "
        f"{float(gap.abs().max()):.3f} of the all-data SVM at every ε — the paper's "
        "picture. With the correct noise (the `hybrid` column) the gap at small ε is large.",
        "",
    ]


def _first_eps_above(wide: pd.DataFrame, col: str) -> str:
    above = wide.index[wide["hybrid"] > wide[col]]
    if not len(above):
        return f"at no ε of the grid (vs {col})"
    return f"at ε ∈ {{{', '.join(f'{e:g}' for e in above)}}} (vs {col})"
