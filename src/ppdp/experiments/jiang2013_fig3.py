"""``jiang2013-fig3``: classifiers trained on private releases of Adult, tested on real rows.

Jiang et al. (2013), Fig. 3: the accuracy (ACA) and AUC of LDA and C4.5 classifiers
trained on a DP-LDA synthetic release of a random 2/3 of Adult and tested on the original
held-out 1/3, over 10 random splits, at ε ∈ {0.1, 0.25, 0.5, 1, 1.25, 1.5}, between two
reference lines: the best achievable (BA, the classifier trained on the original 2/3) and
the lowest achievable (LA, the majority class; AUC 0.5). We add the row-aligned releases
(DP-PCA with a fixed k, LAP, EXP) trained the same way.

The tree is scikit-learn's with the entropy criterion and a leaf minimum of 20 (our stand-in
for C4.5's pruning; see :mod:`ppdp.evaluate.classification`). Every method sees the same
split in a trial.

No peer synthesizer (SmartNoise MST/AIM, PrivBayes) is run: none is installed in this
environment and adding one is not trivial, so the comparison is with the paper's lines.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdp.evaluate import (
    CLASSIFIERS,
    baseline_accuracy,
    classification_utility,
    lowest_achievable,
)
from ppdp.exceptions import ParameterError
from ppdp.experiments import _data
from ppdp.experiments import _framework as fw
from ppdp.experiments import _summary as md
from ppdp.experiments._config import check_common, check_table_releases, set_ints
from ppdp.experiments._methods import LABELS, PUBLISHERS, release

__all__ = ["ID", "PAPER_BA", "PAPER_LA", "TITLE", "Config", "run"]

ID = "jiang2013-fig3"
TITLE = "Classification utility of private releases of Adult (Jiang et al. 2013, Fig. 3)"

#: The paper's reference lines on Adult (accuracy, %), quoted from DiffGen's setting.
PAPER_LA = 75.5
PAPER_BA = 85.3

_EPSILONS = (0.1, 0.25, 0.5, 1.0, 1.25, 1.5)
_METHOD_KEYS = {"DP-LDA": 11, "DP-PCA": 12, "LAP": 13, "EXP": 14}


@dataclass(frozen=True)
class Config:
    """What one run of the experiment does.

    Attributes
    ----------
    epsilons : tuple of float
        The privacy budgets (each release spends one whole ε).
    trials : int
        Random 2/3 - 1/3 splits; every method sees the same split in a trial.
    seed : int
        Root seed of the splits and of every release.
    methods : tuple of str
        Any of "DP-LDA", "DP-PCA", "LAP", "EXP".
    lda_class_sizes : {"public", "noisy"}
        DP-LDA's class sizes: "public" (the paper's assumption; the sizes of the table
        being released are declared public) or "noisy" (released with part of ε).
    pca_components : int
        The k of DP-PCA, fixed in advance (not tuned on the data).
    min_samples_leaf : int
        Leaf minimum of the entropy tree.
    n_rows : int or None
        Use a seeded subsample of Adult (tests only; not comparable with the paper).
    """

    epsilons: tuple[float, ...] = _EPSILONS
    trials: int = 10
    seed: int = 2013
    methods: tuple[str, ...] = ("DP-LDA", "DP-PCA", "LAP", "EXP")
    lda_class_sizes: str = "public"
    pca_components: int = 5
    min_samples_leaf: int = 20
    n_rows: int | None = None

    def __post_init__(self) -> None:
        check_table_releases(self, _METHOD_KEYS)
        set_ints(self, min_samples_leaf=1)
        check_common(self)

    @classmethod
    def full(cls, *, seed: int = 2013) -> Config:
        """The paper's grid: 6 ε × 10 splits, every method."""
        return cls(seed=seed)

    @classmethod
    def quick(cls, *, seed: int = 2013) -> Config:
        """A smoke run (under a minute): 2 ε × 1 split, every method."""
        return cls(epsilons=(0.1, 1.0), trials=1, seed=seed)


def _evaluate(
    data: pd.DataFrame, test: pd.DataFrame, schema: Any, config: Config
) -> dict[str, dict[str, float]]:
    if schema.label.name not in data.columns:  # a release without the label: nothing to train
        return {c: {"accuracy": math.nan, "auc": math.nan} for c in CLASSIFIERS}
    return {
        c: classification_utility(
            data, test, schema, classifier=c, min_samples_leaf=config.min_samples_leaf
        )
        for c in CLASSIFIERS
    }


def _table(results: pd.DataFrame, metric: str, classifier: str, config: Config) -> list[str]:
    sub = results[results.classifier == classifier]

    def cell(m: str, e: float) -> str:
        v = sub[(sub.method == m) & (sub.epsilon == e)][metric] * 100
        return f"{v.mean():.1f} ± {v.std(ddof=1):.1f}" if v.size > 1 else f"{v.mean():.1f}"

    lines = md.table(
        ["ε", *(LABELS[m] for m in config.methods)],
        ([f"{e:g}", *(cell(m, e) for m in config.methods)] for e in config.epsilons),
        "r" * (1 + len(config.methods)),
    )
    for ref in ("BA", "LA"):
        v = sub[sub.method == ref][metric] * 100
        lines.append(f"| {ref} | {v.mean():.1f} (all ε) |" + " |" * (len(config.methods) - 1))
    return lines


def _plot(plt: Any, results: pd.DataFrame, config: Config, path: Path) -> Path:
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), squeeze=False)
    colors = {"DP-LDA": "#4c72b0", "DP-PCA": "#55a868", "LAP": "#c44e52", "EXP": "#8172b2"}
    for col, classifier in enumerate(CLASSIFIERS):
        sub = results[results.classifier == classifier]
        for row, metric in enumerate(("accuracy", "auc")):
            ax = axes[row][col]
            for m in config.methods:
                g = sub[sub.method == m].groupby("epsilon")[metric]
                mean, sd = g.mean() * 100, g.std(ddof=1).fillna(0) * 100
                ax.errorbar(
                    mean.index,
                    mean.values,
                    yerr=sd.values,
                    marker="o",
                    ms=4,
                    capsize=3,
                    color=colors[m],
                    label=LABELS[m],
                )
            for ref, style in (("BA", "--"), ("LA", ":")):
                v = sub[sub.method == ref][metric].mean() * 100
                ax.axhline(v, color="k", ls=style, lw=1, label=f"{ref} ({v:.1f})")
            ax.set_xlabel("ε")
            ax.set_ylabel(("accuracy" if metric == "accuracy" else "AUC") + " (%)")
            name = "LDA" if classifier == "lda" else "entropy tree (C4.5 stand-in)"
            ax.set_title(f"{name}: {'accuracy' if metric == 'accuracy' else 'AUC'}")
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.suptitle(
        f"Trained on releases of 2/3 of Adult, tested on the other 1/3 ({config.trials} splits)"
    )
    fig.tight_layout()
    return fw.save_figure(fig, path)


def _summary(
    config: Config, n: int, results: pd.DataFrame, seeded: fw.SeededRuns
) -> tuple[str, dict[str, Any]]:
    def mean(method: str, classifier: str, metric: str, eps: float | None = None) -> float:
        sel = (results.method == method) & (results.classifier == classifier)
        if eps is not None:
            sel &= results.epsilon == eps
        return float(results[sel][metric].mean() * 100)

    key: dict[str, Any] = {}
    checks = []
    for c in CLASSIFIERS:
        ba, la = mean("BA", c, "accuracy"), mean("LA", c, "accuracy")
        key[f"BA_{c}"], key[f"LA_{c}"] = ba, la
        if "DP-LDA" in config.methods:
            accs = [mean("DP-LDA", c, "accuracy", e) for e in config.epsilons]
            key[f"dplda_accuracy_{c}"] = dict(zip(map(str, config.epsilons), accs, strict=True))
            between = all(la <= a <= ba for a in accs)
            outside = [
                f"{'below LA' if a < la else 'above BA'} at ε = {e:g}"
                for e, a in zip(config.epsilons, accs, strict=True)
                if not la <= a <= ba
            ]
            rising = all(b >= a - 0.5 for a, b in itertools.pairwise(accs))
            gain = accs[-1] - accs[0]
            checks.append((c, between, rising, gain, accs, outside))
    name = {"lda": "LDA", "tree": "entropy tree"}
    setting = (
        f"Adult: n = {n:,} rows; {config.trials} random 2/3 – 1/3 splits; the release is built "
        "from the 2/3 and the classifier is tested on the original 1/3. ε ∈ "
        f"{{{', '.join(f'{e:g}' for e in config.epsilons)}}}; DP-PCA uses "
        f"k = {config.pca_components} (fixed in advance). Tree: entropy criterion, "
        f"min_samples_leaf = {config.min_samples_leaf}."
    )
    lines = [
        *md.head(TITLE, ID, setting),
        "",
        md.seeded_note(config.seed, seeded.count, how="warnings collected"),
        *seeded.notes(),
        *md.subsample_note(config.n_rows, md.NOT_COMPARABLE),
    ]
    for c in CLASSIFIERS:
        for metric, label in (("accuracy", "Accuracy"), ("auc", "AUC")):
            lines += ["", f"## {label} (%) of {name[c]}, mean ± s.d. over splits", ""]
            lines += _table(results, metric, c, config)
    lines += [
        "",
        "Raw results: `results.csv`; plot: `fig3_classification.png`.",
        "",
        "## Paper vs ours",
        "",
        "| quantity | paper (Jiang et al. 2013) | ours |",
        "|---|---|---|",
        f"| LA, accuracy (majority class) | {PAPER_LA} % | {key['LA_lda']:.1f} % |",
        f"| BA, accuracy (C4.5 on original data) | {PAPER_BA} % | "
        f"tree {key['BA_tree']:.1f} %, LDA {key['BA_lda']:.1f} % |",
    ]
    for c, between, rising, gain, accs, outside in checks:
        lines += [
            f"| DP-LDA accuracy ({name[c]}) between LA and BA at every ε | yes | "
            f"{'yes' if between else 'no: ' + ', '.join(outside)} "
            f"({min(accs):.1f} – {max(accs):.1f} %) |",
            f"| DP-LDA accuracy ({name[c]}) rising with ε | yes | "
            f"{'yes' if rising else 'no'} (ε = {config.epsilons[0]:g} → "
            f"{config.epsilons[-1]:g}: {gain:+.1f} points) |",
        ]
        key[f"dplda_between_{c}"] = between
        key[f"dplda_rising_{c}"] = rising
    lines += [
        "",
        "'Rising' allows dips of up to 0.5 points between neighbouring ε (trial noise).",
        "",
        "## Why our numbers differ from the paper's",
        "",
        "- **Safe sensitivities.** DP-LDA's noise uses the proven categorical bound "
        "2(p1 + p2) + p1(p1+1)/2 + 2p1p2 + p2(p2+1) instead of the paper's smaller value "
        "(ALGORITHMS-publishing A.4), so at equal ε our statistics are noisier and accuracy "
        "at small ε may sit lower than the paper's curve.",
        "- **Small ε.** At ε = 0.1 the class sums carry Laplace noise of scale s/ε with "
        "s = 2(p1 + p2) + ... = 115 on Adult's features, about 0.15 per class-mean entry for "
        "the smaller class: the synthetic classes barely differ, and a classifier trained "
        "on them can fall to or below the majority-class line.",
        "- **The sampler's unstated details** (class order, feature order, which noisy mean "
        "linearises z²) are our choices (A.4); they shape the synthetic rows.",
        "- **C4.5 vs scikit-learn's tree**: binary CART splits with the entropy criterion and "
        "a leaf minimum instead of C4.5's multiway splits and pessimistic pruning; BA moves "
        "by about a point with these settings.",
        f"- **Splits**: our {config.trials} random splits are not the paper's; LA and BA "
        "vary by a few tenths of a point with the split.",
        "- **DP-PCA, LAP, EXP** rows are not in the paper's Fig. 3 as far as the text tells; "
        "they are shown for context (EXP is our per-record reading, A.5). Per-record noise "
        "of scale (p1 + 2p2)/ε or more leaves almost no signal in a LAP or EXP release, so "
        "a classifier trained on one learns a nearly random direction; applied to real rows, "
        "whose features do predict the label, such a direction scores an AUC anywhere on "
        "either side of 50 % (values well below 50 % are this, not a bug), and accuracy "
        "can fall below LA.",
        "- No peer synthesizer (MST/AIM/PrivBayes) was run: none is installed here.",
        "",
    ]
    return "\n".join(lines), key


def run(
    config: Config, out_dir: str | Path, *, progress: fw.Progress | None = None
) -> fw.ExperimentResult:
    """Run the experiment and write its outputs into ``out_dir``.

    Writes ``results.csv`` (trial, epsilon, method, classifier, accuracy, auc; BA and LA
    rows have no epsilon), ``config.json``, ``fig3_classification.png`` and ``summary.md``.
    """
    fw.check_config(config, Config)
    plt = fw.import_pyplot()
    fw.require_sklearn()
    for m in config.methods:  # fail before any work if a publisher is missing
        if m not in PUBLISHERS:
            raise ParameterError(f"method {m!r} has no publisher")
    out = Path(out_dir)
    df, schema = _data.adult(config.n_rows, config.seed)
    seeded = fw.SeededRuns()
    total = config.trials * len(config.epsilons) * len(config.methods)
    done = 0
    rows: list[dict[str, Any]] = []
    for trial in range(config.trials):
        train, test = _data.split(df, config.seed, trial)
        for c in CLASSIFIERS:
            ba = baseline_accuracy(
                train, test, schema, classifier=c, min_samples_leaf=config.min_samples_leaf
            )
            la = lowest_achievable(train, test, schema)
            for ref, v in (("BA", ba), ("LA", la)):
                rows.append(
                    {"trial": trial, "epsilon": np.nan, "method": ref, "classifier": c, **v}
                )
        for ei, eps in enumerate(config.epsilons):
            for method in config.methods:
                k = config.pca_components if method == "DP-PCA" else None
                ss = fw.seed_sequence(config.seed, _METHOD_KEYS[method], ei, trial)
                with seeded.collect():
                    rel = release(
                        method,
                        train,
                        schema,
                        epsilon=eps,
                        k=k,
                        random_state=ss,
                        class_sizes=config.lda_class_sizes,
                    )
                for c, v in _evaluate(rel.data, test, schema, config).items():
                    rows.append(
                        {"trial": trial, "epsilon": eps, "method": method, "classifier": c, **v}
                    )
                done += 1
                if progress is not None:
                    progress(done, total, f"eps={eps:g} {LABELS[method]} split {trial + 1}")
    results = pd.DataFrame(rows)
    summary, key = _summary(config, len(df), results, seeded)
    return fw.write_run(
        ID, config, out, summary, key,
        tables={"results.csv": results},
        figures={"fig3_classification.png": lambda path: _plot(plt, results, config, path)},
    )  # fmt: skip
