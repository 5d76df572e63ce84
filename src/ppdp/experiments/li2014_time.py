"""``li2014-time``: running times of the hybrid SVM, its ρ fit, the private SVM and the
non-private SVMs (Li et al. 2014), on Adult.

Two tables: (a) seconds to fit ρ by L-BFGS with the analytic gradient against the public
sample size and D (the paper reports minutes in MATLAB); (b) seconds to train each learner
against the number of private training rows: hybrid (ρ fit + private SVM), private SVM,
the non-private SVM in random features, and the exact RBF-kernel SVM (scikit-learn ``SVC``,
quadratic in n: run up to ``svc_max_rows``). Timings are wall-clock on one BLAS thread on a
shared 2-core machine: compare ratios, not absolute values.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdp._validation import check_epsilon, check_positive
from ppdp.experiments import _framework as fw
from ppdp.experiments import _li2014 as li
from ppdp.experiments._config import check_common, int_grid, set_checked, set_ints

__all__ = ["ID", "TITLE", "Config", "run"]

ID = "li2014-time"
TITLE = "Running time: ρ fit, hybrid, private and non-private SVMs (Li et al. 2014)"


@dataclass(frozen=True)
class Config:
    """What one run does.

    Attributes
    ----------
    public_sizes : tuple of int
        Public sample sizes for the ρ-fit timings.
    fit_dims : tuple of int
        D for the ρ-fit timings.
    private_sizes : tuple of int
        Numbers of private training rows for the learner timings (capped by the data).
    n_public, n_components, epsilon, C, gamma
        Settings of the learner timings.
    svc_max_rows : int
        Largest training set for the exact kernel SVM (its cost grows as n²).
    trials, seed, n_rows
        As in the other experiments (timings: median over trials).
    """

    public_sizes: tuple[int, ...] = (50, 100, 200, 500)
    fit_dims: tuple[int, ...] = (25, 50, 100)
    private_sizes: tuple[int, ...] = (1000, 3000, 10000, 30000)
    n_public: int = 200
    n_components: int = 50
    epsilon: float = 1.0
    C: float = 100.0
    gamma: float = 0.5
    svc_max_rows: int = 10000
    trials: int = 3
    seed: int = 2014
    n_rows: int | None = None

    def __post_init__(self) -> None:
        set_checked(self, int_grid, "public_sizes", minimum=2)
        set_checked(self, int_grid, "fit_dims")
        set_checked(self, int_grid, "private_sizes", minimum=10)
        set_ints(self, n_public=2, n_components=1)
        set_checked(self, check_epsilon, "epsilon")
        set_checked(self, check_positive, "C", "gamma")
        set_ints(self, svc_max_rows=2)
        check_common(self)

    @classmethod
    def full(cls, *, seed: int = 2014) -> Config:
        """The grids above, 3 trials, all of Adult."""
        return cls(seed=seed)

    @classmethod
    def quick(cls, *, seed: int = 2014) -> Config:
        """A smoke run (seconds)."""
        return cls(
            public_sizes=(50, 200),
            fit_dims=(25,),
            private_sizes=(500, 2000),
            n_components=20,
            svc_max_rows=2000,
            trials=1,
            n_rows=4000,
            seed=seed,
        )


def _rho_fit_times(X: np.ndarray, y: np.ndarray, config: Config) -> pd.DataFrame:
    from ppdp.learn.rff import fit_frequencies

    rows = []
    for trial in range(config.trials):
        s = li.split(X, y, seed=config.seed, trial=trial, pool_size=max(config.public_sizes))
        t = li.Trial(config.seed, trial)
        for m in config.public_sizes:
            for D in config.fit_dims:
                fit = fit_frequencies(
                    s.X_pool[:m],
                    n_components=D,
                    gamma=config.gamma,
                    random_state=t.feature_seed,
                    max_iter=300,
                )
                rows.append(
                    dict(
                        trial=trial,
                        n_public=m,
                        D=D,
                        seconds=fit.seconds,
                        iterations=fit.n_iter,
                        loss_ratio=fit.loss / fit.initial_loss,
                    )
                )
    return pd.DataFrame(rows)


def _learner_times(
    X: np.ndarray, y: np.ndarray, config: Config, runs: fw.SeededRuns, progress: Any
) -> pd.DataFrame:
    from sklearn.svm import SVC

    rows = []
    hp = dict(C=config.C, gamma=config.gamma)
    sizes = list(config.private_sizes)
    total = config.trials * len(sizes)
    done = 0
    for trial in range(config.trials):
        t = li.Trial(config.seed, trial)
        for i, n in enumerate(sizes):
            s = li.split(
                X, y, seed=config.seed, trial=trial, pool_size=config.n_public, n_private=n
            )
            n_used = s.X_private.shape[0]
            base = dict(trial=trial, n_private=n_used)
            a, sec, clf = li.fit_hybrid(
                s,
                t,
                n_public=config.n_public,
                epsilon=config.epsilon,
                n_components=config.n_components,
                noise_key=(1, i),
                runs=runs,
                **hp,
            )
            rows.append(
                dict(
                    base, method="hybrid", seconds=sec, rho_fit_seconds=clf.rho_fit_.seconds, auc=a
                )
            )
            a, sec, _ = li.fit_private(
                s,
                t,
                epsilon=config.epsilon,
                n_components=config.n_components,
                noise_key=(2, i),
                runs=runs,
                **hp,
            )
            rows.append(dict(base, method="private", seconds=sec, auc=a))
            a, sec = li.fit_all_data(s, t, n_components=config.n_components, **hp)
            rows.append(dict(base, method="all-data (random features)", seconds=sec, auc=a))
            if n_used <= config.svc_max_rows:
                svc = SVC(kernel="rbf", gamma=config.gamma, C=config.C / n_used)
                start = time.perf_counter()
                svc.fit(s.X_private, s.y_private)
                sec = time.perf_counter() - start
                a = li.auc(s.y_test, svc.decision_function(s.X_test))
                rows.append(dict(base, method="all-data (exact kernel SVC)", seconds=sec, auc=a))
            done += 1
            if progress is not None:
                progress(done, total, f"trial {trial + 1} n={n_used}")
    return pd.DataFrame(rows)


def run(
    config: Config, out_dir: str | Path, *, progress: fw.Progress | None = None
) -> fw.ExperimentResult:
    """Run the experiment; write ``rho_fit_times.csv``, ``learner_times.csv``,
    ``config.json``, ``time.png``, ``summary.md`` into ``out_dir``."""
    plt = fw.start(config, Config, sklearn=True)
    out = Path(out_dir)
    X, y = li.adult(config.n_rows, config.seed)
    runs = fw.SeededRuns()
    with li.one_thread():
        rho = _rho_fit_times(X, y, config)
        learn = _learner_times(X, y, config, runs, progress)
    rho_med = rho.pivot_table(index="n_public", columns="D", values="seconds", aggfunc="median")
    learn_med = learn.pivot_table(
        index="n_private", columns="method", values="seconds", aggfunc="median"
    )
    order = [
        m
        for m in ("hybrid", "private", "all-data (random features)", "all-data (exact kernel SVC)")
        if m in learn_med.columns
    ]
    learn_med = learn_med[order]
    summary, key = _summary(config, len(X), X.shape[1], rho, rho_med, learn, learn_med, runs)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for D in rho_med.columns:
        axes[0].plot(rho_med.index, rho_med[D], "o-", label=f"D = {D}")
    axes[0].set_xlabel("public rows")
    axes[0].set_ylabel("seconds (median)")
    axes[0].set_title("ρ fit (L-BFGS, analytic gradient)")
    axes[0].legend()
    for m in learn_med.columns:
        axes[1].plot(learn_med.index, learn_med[m], "o-", label=m)
    axes[1].set_xscale("log")
    axes[1].set_yscale("log")
    axes[1].set_xlabel("private training rows")
    axes[1].set_ylabel("seconds (median)")
    axes[1].set_title(f"training, D = {config.n_components}")
    axes[1].legend(fontsize=8)
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fw.write_run(
        ID, config, out, summary, key,
        tables={"rho_fit_times.csv": rho, "learner_times.csv": learn},
        figures={"time.png": lambda path: fw.save_figure(fig, path)},
    )  # fmt: skip


def _summary(
    config: Config,
    n: int,
    d: int,
    rho: pd.DataFrame,
    rho_med: pd.DataFrame,
    learn: pd.DataFrame,
    learn_med: pd.DataFrame,
    runs: fw.SeededRuns,
) -> tuple[str, dict[str, Any]]:
    lines = li.header_lines(
        TITLE,
        ID,
        n,
        d,
        f"Learner timings: ε = {config.epsilon:g}, D = {config.n_components}, "
        f"{config.n_public} public rows; medians over {config.trials} trial(s), one BLAS "
        "thread, on a shared 2-core machine.",
        runs,
        config.n_rows,
    )
    lines += [
        "",
        "## (a) ρ fit: seconds (median) by public rows × D",
        "",
        "| public rows | " + " | ".join(f"D = {D}" for D in rho_med.columns) + " |",
        "|---:|" + "---:|" * len(rho_med.columns),
    ]
    for m, row in rho_med.iterrows():
        lines.append(f"| {m} | " + " | ".join(f"{v:.2f}" for v in row) + " |")
    lines += [
        "",
        f"Kernel error reduced to a median {float(rho.loss_ratio.median()):.1%} of the RFF "
        "start's (mean squared error over public pairs); at most 300 L-BFGS iterations.",
        "",
        "## (b) Training: seconds (median) by private rows",
        "",
        "| private rows | " + " | ".join(learn_med.columns) + " |",
        "|---:|" + "---:|" * len(learn_med.columns),
    ]
    for m, row in learn_med.iterrows():
        lines.append(
            f"| {m:,} | " + " | ".join("–" if pd.isna(v) else f"{v:.2f}" for v in row) + " |"
        )
    hyb = learn[learn.method == "hybrid"]
    lines += [
        "",
        f"The hybrid's time includes its ρ fit (median {float(hyb.rho_fit_seconds.median()):.2f} s "
        f"on {config.n_public} public rows), which does not grow with the private data. The exact "
        f"kernel SVM is run up to {config.svc_max_rows:,} rows (its time grows about as n²).",
        "",
        "## Paper vs ours",
        "",
        "| claim | paper | ours |",
        "|---|---|---|",
        "| fitting ρ on the public sample is affordable | minutes (MATLAB L-BFGS) | "
        f"{float(rho_med.to_numpy().max()):.1f} s at most over the grid (analytic gradient) |",
        "| private and hybrid SVMs scale to the full data | yes | linear in n (random "
        "features + Newton on 2D coefficients) |",
        "",
        "Timings are ours on this machine; the paper's machine and implementation differ.",
        "",
    ]
    key = {
        "rho_fit_max_seconds": float(rho_med.to_numpy().max()),
        "rho_fit_200_D100": float(rho_med.loc[200, 100])
        if 200 in rho_med.index and 100 in rho_med.columns
        else None,
    }
    return "\n".join(lines), key
