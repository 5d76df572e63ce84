"""``gu2022-fig3``: misclassification of Mul-LDA-DP vs the number of owners at ε = 0.2, Adult.

Gu, Zhang & Zhang (2022), Fig. 3: the misclassification rate as the training rows are spread
over m = 2, 4, 6, 8, 10 owners, at ε = 0.2. Issue 4's target is that Mul-LDA-DP stays
within one percentage point of centralised LDA-DP for every m.

Each repetition uses one split and releases:

- the centralised LDA-DP direction;
- for every m, a Mul-LDA-DP round calibrated for the joint view (ppdp's default);
- for every m, a round with the paper's per-message split (``joint_view=False``: exactly the
  centralised noise, but private message by message only; it warns, and the warning is
  silenced here).

All are evaluated the same way: a linear SVM on the exact projections of the training rows
on the released direction (the paper's release, ``paper-release``), and the DP LDA rule
(``lda-rule``). The differences from the centralised release are paired: same split, same
test rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ppdp._validation import check_epsilon
from ppdp.experiments import _framework as fw
from ppdp.experiments import _gu2022 as gu
from ppdp.experiments import _summary as md
from ppdp.experiments._config import check_common, int_grid, set_checked

__all__ = ["ID", "TITLE", "Config", "run"]

ID = "gu2022-fig3"
TITLE = "Mul-LDA-DP: misclassification vs number of owners, ε = 0.2, Adult (Gu et al. 2022, Fig. 3)"
_METHODS = ("paper-release", "lda-rule")
_TARGET_PP = 1.0


@dataclass(frozen=True)
class Config:
    """What one run does.

    Attributes
    ----------
    owners : tuple of int
        Numbers of data owners m (each ≥ 2).
    epsilon : float
        The budget of every release (δ = 1e-6).
    task : str
        An Adult task of :data:`ppdp.experiments._gu2022.TASKS`.
    trials : int
        Repetitions (new split, new noise).
    seed : int
    n_rows : int or None
        Seeded subsample (tests only).
    """

    owners: tuple[int, ...] = (2, 4, 6, 8, 10)
    epsilon: float = 0.2
    task: str = "adult-salary"
    trials: int = 50
    seed: int = 2022
    n_rows: int | None = None

    def __post_init__(self) -> None:
        set_checked(self, int_grid, "owners", minimum=2)
        set_checked(self, check_epsilon, "epsilon")
        object.__setattr__(self, "task", gu.validate_tasks((self.task,))[0])
        check_common(self)

    @classmethod
    def full(cls, *, seed: int = 2022) -> Config:
        """m = 2, 4, 6, 8, 10 at ε = 0.2, Adult salary, 50 repetitions."""
        return cls(seed=seed)

    @classmethod
    def quick(cls, *, seed: int = 2022) -> Config:
        """A smoke run (seconds): m = 2, 4 on a 3,000-row subsample, two repetitions."""
        return cls(owners=(2, 4), trials=2, seed=seed, n_rows=3000)


def _paired(results: pd.DataFrame) -> pd.DataFrame:
    """Per (setting, m, method): mean error, and the paired difference from centralised."""
    central = results[results.setting == "centralised"].set_index(["rep", "method"])
    rows = []
    fed = results[results.setting != "centralised"]
    for (setting, m, method), g in fed.groupby(["setting", "owners", "method"]):
        c = central.loc[[(r, method) for r in g.rep]].misclassification.to_numpy()
        diff = g.misclassification.to_numpy() - c
        sd = float(diff.std(ddof=1)) if diff.size > 1 else math.nan
        half = 1.96 * sd / math.sqrt(diff.size) if diff.size > 1 else math.nan
        rows.append(
            {
                "setting": setting,
                "owners": int(m),
                "method": method,
                "mean_error": float(g.misclassification.mean()),
                "central_error": float(c.mean()),
                "mean_diff": float(diff.mean()),
                "ci95_low": float(diff.mean() - half),
                "ci95_high": float(diff.mean() + half),
                "reps": int(diff.size),
            }
        )
    return pd.DataFrame(rows)


def _plot(plt: Any, paired: pd.DataFrame, results: pd.DataFrame, path: Path) -> Path:
    fig, axes = plt.subplots(1, len(_METHODS), figsize=(5.2 * len(_METHODS), 3.6), squeeze=False)
    for ax, method in zip(axes.flat, _METHODS, strict=True):
        for setting, style in (("joint-view", "o-"), ("paper-split", "s--")):
            s = paired[(paired.setting == setting) & (paired.method == method)]
            s = s.sort_values("owners")
            ax.plot(s.owners, s.mean_error, style, ms=4, label=f"Mul-LDA-DP ({setting})")
        c = results[(results.setting == "centralised") & (results.method == method)]
        ce = float(c.misclassification.mean())
        ax.axhline(ce, color="black", lw=1, label="centralised LDA-DP")
        ax.axhspan(ce - 0.01, ce + 0.01, color="grey", alpha=0.2, label="±1 point")
        for ref, colour in (("non-private", "green"), ("majority", "grey")):
            r = results[results.method == ref]
            if len(r):
                ax.axhline(float(r.misclassification.mean()), color=colour, ls=":", lw=1, label=ref)
        ax.set_xlabel("number of owners m")
        ax.set_ylabel("misclassification rate")
        ax.set_title(gu.METHODS[method], fontsize=8)
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(TITLE, fontsize=9)
    fig.tight_layout()
    return fw.save_figure(fig, path)


def run(
    config: Config, out_dir: str | Path, *, progress: fw.Progress | None = None
) -> fw.ExperimentResult:
    """Run the experiment; write ``results.csv``, ``paired.csv``, ``config.json``, ``fig.png``
    and ``summary.md`` into ``out_dir``.

    Parameters
    ----------
    config : Config
    out_dir : path
    progress : callable, optional
        ``progress(done, total, message)`` after each repetition and m.
    """
    plt = fw.start(config, Config, sklearn=True)
    out = Path(out_dir)
    seeded = fw.SeededRuns()
    df, schema = gu.load_task(config.task, config.n_rows, config.seed)
    rows: list[dict[str, Any]] = []
    total = config.trials * len(config.owners)
    done = 0
    eps = config.epsilon

    def add(setting: str, m: int | None, rep: int, errs: dict[str, float]) -> None:
        for method, err in errs.items():
            rows.append(
                {
                    "setting": setting,
                    "owners": m,
                    "rep": rep,
                    "method": method,
                    "misclassification": err,
                }
            )

    with gu.single_thread():
        for rep in range(config.trials):
            P = gu.prepare(df, schema, config.seed, 0, rep)
            add("reference", None, rep, {"non-private": gu.non_private_error(P)})
            add("reference", None, rep, {"majority": gu.majority_error(P)})
            sa = fw.seed_sequence(config.seed, 1, rep)
            with seeded.collect():
                central = gu.centralised_errors(
                    P, schema, eps, sa, fw.seed_sequence(config.seed, 2, rep)
                )
            add("centralised", None, rep, {k: central[k] for k in _METHODS})
            for mi, m in enumerate(config.owners):
                for vi, (setting, joint) in enumerate(
                    (("joint-view", True), ("paper-split", False))
                ):
                    s = fw.seed_sequence(config.seed, 3, rep, mi, vi)
                    with seeded.collect():
                        errs = gu.federated_errors(
                            P, eps, m, s, s, joint_view=joint, methods=_METHODS
                        )
                    add(setting, m, rep, errs)
                done += 1
                if progress is not None:
                    progress(done, total, f"rep {rep + 1} m={m}")
    results = pd.DataFrame(rows)
    results["owners"] = results["owners"].astype("Int64")
    paired = _paired(results)
    summary, key = _summary(config, results, paired, seeded)
    return fw.write_run(
        ID, config, out, summary, key,
        tables={"results.csv": results, "paired.csv": paired},
        figures={"fig.png": lambda path: _plot(plt, paired, results, path)},
    )  # fmt: skip


def _summary(
    config: Config, results: pd.DataFrame, paired: pd.DataFrame, seeded: fw.SeededRuns
) -> tuple[str, dict[str, Any]]:
    def ref(method: str) -> float:
        return float(results[results.method == method].misclassification.mean())

    intro = (
        f"Task: "
        f"{gu.TASKS[config.task][2]}; ε = {config.epsilon:g}, δ = {gu.DELTA:g}; "
        f"{config.trials} repetitions, each with a new 2/3 : 1/3 split, the training rows "
        "dealt at random to m owners. One row per release in `results.csv`; paired "
        "differences in `paired.csv`; plot `fig.png`."
    )
    lines = [
        *md.head(TITLE, ID, intro),
        "",
        md.seeded_note(config.seed, seeded.count),
        *seeded.notes(),
        *md.subsample_note(config.n_rows, " (test configuration): not comparable with the paper."),
        "",
        f"References: no privacy {ref('non-private'):.4f}, majority class {ref('majority'):.4f}.",
        "",
        "## Misclassification and paired difference from centralised LDA-DP",
        "",
        "| method | setting | m | Mul-LDA-DP | centralised | difference (95 % CI), points |",
        "|---|---|---:|---:|---:|---:|",
    ]
    within = {}
    for method in _METHODS:
        for setting in ("joint-view", "paper-split"):
            s = paired[(paired.method == method) & (paired.setting == setting)]
            s = s.sort_values("owners")
            ok = bool((s.mean_diff.abs() <= _TARGET_PP / 100).all())
            within[f"{method}/{setting}"] = ok
            for r in s.itertuples():
                lines.append(
                    f"| {gu.METHODS[method]} | {setting} | {r.owners} | {r.mean_error:.4f} | "
                    f"{r.central_error:.4f} | {100 * r.mean_diff:+.2f} "
                    f"[{100 * r.ci95_low:+.2f}, {100 * r.ci95_high:+.2f}] |"
                )
    worst = float(paired.mean_diff.abs().max()) if len(paired) else math.nan
    lines += [
        "",
        "## Target and paper vs ours",
        "",
        "| claim | paper / issue 4 | ours |",
        "|---|---|---|",
        f"| Mul-LDA-DP within {_TARGET_PP:g} point of centralised for every m | target | "
        + "; ".join(f"{k}: {'yes' if v else 'no'}" for k, v in within.items())
        + f" (largest absolute mean difference {100 * worst:.2f} points) |",
        "| misclassification stable in m | Fig. 3 (values not recoverable) | see the table above |",
        "| exact values | not recoverable: our copy of the paper has no tables, and "
        "ALGORITHMS-publishing.md records none | tables above |",
        "",
        "Why they agree: the aggregate noise of a Mul-LDA-DP round has the centralised law. "
        "With the paper's split this is exact. With ppdp's joint-view calibration it holds "
        "up to a factor of 1 + O(10⁻⁵), because the dealer's masks are large and cancel "
        "exactly. Both releases apply the same post-processing (`ppdp.publish.fisher`). Only "
        "the order of the float summation differs.",
        "",
        "Every m is compared with the *same* centralised release of each repetition, so the "
        "differences are correlated across m. A common sign of the differences says more about "
        "those 50 centralised draws than about m.",
        "",
    ]
    key: dict[str, Any] = {
        "within_target": within,
        "max_abs_diff_points": 100 * worst,
        "centralised_paper_release": float(
            results[
                (results.setting == "centralised") & (results.method == "paper-release")
            ].misclassification.mean()
        ),
    }
    return "\n".join(lines), key
