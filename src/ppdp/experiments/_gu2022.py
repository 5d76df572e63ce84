"""What the Gu, Zhang & Zhang (2022) experiments share: tasks, splits, releases, metrics.

Tasks (binary classification; ALGORITHMS-publishing B.1 names the data sets and the SVM
misclassification rate, the task definitions are ours):

- ``adult-salary``: Adult, income > 50K from the other ten attributes (33 encoded columns);
- ``adult-education``: Adult, post-secondary education (``education-num ≥ 10``, i.e. some
  college or more) from the other attributes, ``education-num`` removed and ``income`` used as
  a two-level feature;
- ``nltcs-outside``, ``nltcs-money``, ``nltcs-traveling``, ``nltcs-bathing``: NLTCS, the
  activity "getting about outside", "managing money", "traveling", "bathing" from the other
  fifteen binary activities.

Each repetition splits the rows 2/3 : 1/3 at random. It releases from the training rows
only, and measures the misclassification rate on the held-out rows. The training class
counts are passed as the *declared* public counts that LDA-DP needs (an assumption of its
guarantee, stated in the summaries). The methods are:

- ``non-private``: the exact Fisher direction (same ridge-free solver and one-hot handling),
  with a linear SVM on the exact training projections;
- ``paper-release``: the LDA-DP direction at the whole (ε, δ), with a linear SVM trained on the
  exact projections of the training rows. This is the paper's release: the direction is DP,
  the rows are not (B.5 item 1);
- ``noisy-projections``: ppdp's default DP release, the direction at ε/2 and the rows'
  projections with Laplace noise at ε/2, with a linear SVM trained on those;
- ``lda-rule``: the LDA decision rule built from the DP release alone. It uses the direction,
  the noisy class means and scatter at the whole (ε, δ), and the public class priors, and
  releases nothing per row. It is fully DP;
- ``majority``: always the training majority class.

The linear SVM is scikit-learn's ``LinearSVC`` (hinge loss, C = 1) on the standardised 1-D
projection. The test rows are projected on the released direction: post-processing, since
they are not the protected rows.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ppdp.data import Schema
from ppdp.exceptions import LowUtilityWarning, NotDifferentiallyPrivateWarning, ParameterError
from ppdp.experiments._framework import seed_sequence
from ppdp.publish import LDAProjectionPublisher
from ppdp.publish.fisher import default_ridge, fisher_directions, noisy_scatter

__all__ = [
    "METHODS",
    "TASKS",
    "Prepared",
    "centralised_errors",
    "federated_errors",
    "load_task",
    "non_private_error",
    "prepare",
    "single_thread",
]

#: Task -> (data set, target column, description).
TASKS: dict[str, tuple[str, str, str]] = {
    "adult-salary": ("adult", "income", "Adult: income > 50K"),
    "adult-education": ("adult", "education-num", "Adult: post-secondary education"),
    "nltcs-outside": ("nltcs", "getting about outside", "NLTCS: getting about outside"),
    "nltcs-money": ("nltcs", "managing money", "NLTCS: managing money"),
    "nltcs-traveling": ("nltcs", "traveling", "NLTCS: traveling"),
    "nltcs-bathing": ("nltcs", "bathing", "NLTCS: bathing"),
}

#: Method key -> label in tables and plots.
METHODS: dict[str, str] = {
    "non-private": "no privacy (exact direction, SVM)",
    "paper-release": "LDA-DP direction + SVM on exact projections (paper; rows NOT DP)",
    "noisy-projections": "LDA-DP + SVM on noisy projections (DP)",
    "lda-rule": "LDA-DP rule from the direction and noisy means (DP)",
    "majority": "majority class",
}

DELTA = 1e-6
_SUBSAMPLE_KEY = 940
_SPLIT_KEY = 941


@contextlib.contextmanager
def single_thread() -> Iterator[None]:
    """Run BLAS on one thread. Many small products on a shared machine: threads only contend."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - scikit-learn depends on threadpoolctl
        yield
        return
    with threadpool_limits(limits=1):
        yield


def validate_tasks(tasks: Any) -> tuple[str, ...]:
    """A non-empty tuple of known task names."""
    if isinstance(tasks, str) or not hasattr(tasks, "__iter__"):
        raise ParameterError(f"tasks ({tasks!r}) must be a sequence of task names")
    out = tuple(tasks)
    if not out or any(t not in TASKS for t in out):
        raise ParameterError(f"tasks ({tasks!r}) must be a non-empty subset of " + ", ".join(TASKS))
    return out


def load_task(task: str, n_rows: int | None, seed: int) -> tuple[pd.DataFrame, Schema]:
    """The task's table (features and a two-class label ``target``) and its schema."""
    from ppdp.datasets import load_adult, load_nltcs

    dataset, target, _ = TASKS[task]
    df, base = load_adult() if dataset == "adult" else load_nltcs()
    spec = base.to_dict()
    columns = [c for c in spec["columns"] if c["name"] != target]
    if task == "adult-salary":
        label = df["income"].astype(str)
        classes = ["<=50K", ">50K"]
        data = df.drop(columns=["income"])
    elif task == "adult-education":
        label = pd.Series(np.where(df["education-num"] >= 10, "yes", "no"), index=df.index)
        classes = ["no", "yes"]
        data = df.drop(columns=["education-num"])
        columns = [c for c in columns if c["name"] != "income"]
        assert base.label is not None
        columns.append(
            {"name": "income", "type": "categorical", "categories": list(base.label.classes)}
        )
    else:
        label = pd.Series(np.where(df[target] >= 0.5, "yes", "no"), index=df.index)
        classes = ["no", "yes"]
        data = df.drop(columns=[target])
    data = data.assign(target=label.to_numpy())
    spec.pop("label", None)
    spec["columns"] = columns
    spec["label"] = {"name": "target", "classes": classes}
    schema = Schema.from_dict(spec)
    if n_rows is not None and n_rows < len(data):
        rng = np.random.default_rng(seed_sequence(seed, _SUBSAMPLE_KEY))
        idx = np.sort(rng.choice(len(data), size=n_rows, replace=False))
        data = data.iloc[idx]
    return data.reset_index(drop=True), schema


@dataclass(frozen=True)
class Prepared:
    """One repetition's split, encoded and scaled like the publisher scales it."""

    train: pd.DataFrame
    X_train: NDArray[np.float64]
    y_train: NDArray[np.int64]
    X_test: NDArray[np.float64]
    y_test: NDArray[np.int64]
    counts: tuple[int, ...]
    scale: float
    constant: NDArray[np.float64] | None
    blocks: tuple[tuple[int, ...], ...]


def prepare(df: pd.DataFrame, schema: Schema, seed: int, *keys: int) -> Prepared:
    """A seeded 2/3 : 1/3 split, both parts encoded and divided by the declared bound."""
    rng = np.random.default_rng(seed_sequence(seed, _SPLIT_KEY, *keys))
    perm = rng.permutation(len(df))
    n_train = (2 * len(df)) // 3
    train = df.iloc[np.sort(perm[:n_train])].reset_index(drop=True)
    test = df.iloc[np.sort(perm[n_train:])].reset_index(drop=True)
    probe = LDAProjectionPublisher(1.0, DELTA, schema, class_counts=[1, 1])
    scale = probe.scale_
    X_tr, y_tr = schema.encode(train)
    X_te, y_te = schema.encode(test)
    assert y_tr is not None and y_te is not None
    counts = tuple(int(c) for c in np.bincount(y_tr, minlength=2))
    blocks = tuple(
        tuple(range(schema.blocks[c.name].start, schema.blocks[c.name].stop))
        for c in schema.categorical_columns
    )
    return Prepared(
        train=train,
        X_train=X_tr / scale,
        y_train=y_tr,
        X_test=X_te / scale,
        y_test=y_te,
        counts=counts,
        scale=scale,
        constant=probe._constant(),
        blocks=blocks,
    )


def svm_error(
    z_train: NDArray[np.float64],
    y_train: NDArray[np.int64],
    z_test: NDArray[np.float64],
    y_test: NDArray[np.int64],
) -> float:
    """Misclassification rate of a linear SVM trained on 1-D (or r-D) projections."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    ztr = np.asarray(z_train, dtype=np.float64).reshape(len(y_train), -1)
    zte = np.asarray(z_test, dtype=np.float64).reshape(len(y_test), -1)
    if np.unique(y_train).size < 2:
        return float(np.mean(y_test != y_train[0]))
    clf = make_pipeline(StandardScaler(), LinearSVC(C=1.0, dual=False))
    clf.fit(ztr, y_train)
    return float(np.mean(clf.predict(zte) != y_test))


def lda_rule_error(
    W: NDArray[np.float64],
    means: NDArray[np.float64],
    scatter: NDArray[np.float64],
    counts: tuple[int, ...],
    X_test: NDArray[np.float64],
    y_test: NDArray[np.int64],
    ridge: float,
) -> float:
    """The two-class LDA rule on ``z = wᵀx`` from DP statistics alone (post-processing).

    Class means ``m_c = wᵀμ̃_c``, pooled variance ``s² = wᵀ(S̃_w + λI)w/(n − 2)`` with the
    release's data-independent ridge λ (the matrix the direction was computed from; floored),
    priors ``n_c/n``: predict the class with the larger ``z·m_c/s² − m_c²/(2s²) + ln π_c``.
    """
    w = W[:, 0]
    n = sum(counts)
    m = means @ w
    s2 = max((float(w @ scatter @ w) + ridge) / max(n - 2, 1), 1e-12)
    z = X_test @ w
    score = z[:, None] * m[None, :] / s2 - m[None, :] ** 2 / (2 * s2)
    score = score + np.log(np.asarray(counts, dtype=np.float64) / n)[None, :]
    return float(np.mean(np.argmax(score, axis=1) != y_test))


def majority_error(P: Prepared) -> float:
    """Predict the training majority class everywhere."""
    return float(np.mean(P.y_test != int(np.argmax(P.counts))))


def non_private_error(P: Prepared) -> float:
    """The exact Fisher direction (no noise, no ridge, one-hot constants removed) + SVM."""
    K = len(P.counts)
    means = np.stack([P.X_train[P.y_train == c].mean(axis=0) for c in range(K)])
    S = noisy_scatter(P.X_train.T @ P.X_train, means, P.counts)
    W = fisher_directions(means, P.counts, S, ridge=0.0, constant=P.constant)
    return svm_error(P.X_train @ W, P.y_train, P.X_test @ W, P.y_test)


def centralised_errors(
    P: Prepared, schema: Schema, epsilon: float, seed_a: Any, seed_b: Any
) -> dict[str, float]:
    """Misclassification of the three LDA-DP methods at one ε (two releases)."""
    direction = LDAProjectionPublisher(
        epsilon,
        DELTA,
        schema,
        release="direction",
        class_counts=P.counts,
        random_state=seed_a,
    ).fit(P.train)
    st = direction.release_.statistics
    W = st["directions"]
    with warnings.catch_warnings():
        # The figure measures noisy projections at every ε on purpose, low ones included.
        warnings.simplefilter("ignore", LowUtilityWarning)
        noisy = LDAProjectionPublisher(
            epsilon, DELTA, schema, class_counts=P.counts, random_state=seed_b
        ).fit(P.train)
    Wn = noisy.directions_
    return {
        "paper-release": svm_error(P.X_train @ W, P.y_train, P.X_test @ W, P.y_test),
        "noisy-projections": svm_error(
            noisy.release_.statistics["projections"], P.y_train, P.X_test @ Wn, P.y_test
        ),
        "lda-rule": lda_rule_error(
            W,
            st["class_means"],
            st["scatter"],
            P.counts,
            P.X_test,
            P.y_test,
            float(st["ridge"][0]),
        ),
    }


def owner_parts(P: Prepared, m: int, rng: np.random.Generator) -> tuple[list[Any], NDArray[Any]]:
    """The training rows dealt at random to ``m`` owners; the row order of their concatenation."""
    order = rng.permutation(len(P.y_train))
    chunks = np.array_split(order, m)
    parts = [(P.X_train[idx], P.y_train[idx]) for idx in chunks]
    return parts, np.concatenate(chunks)


def federated_errors(
    P: Prepared,
    epsilon: float,
    m: int,
    seed_a: Any,
    seed_b: Any,
    *,
    joint_view: bool = True,
    methods: tuple[str, ...] = ("paper-release", "noisy-projections", "lda-rule"),
) -> dict[str, float]:
    """The same three methods through a simulated Mul-LDA-DP round with ``m`` owners."""
    from ppdp.federated import simulate_round

    out: dict[str, float] = {}
    kw: dict[str, Any] = {
        "epsilon": epsilon,
        "delta": DELTA,
        "class_counts": list(P.counts),
        "joint_view": joint_view,
        "constant_blocks": [list(b) for b in P.blocks] or None,
    }
    with warnings.catch_warnings():
        # joint_view=False is the paper's per-message split: it warns, on purpose.
        warnings.simplefilter("ignore", NotDifferentiallyPrivateWarning)
        if "paper-release" in methods or "lda-rule" in methods:
            rng = np.random.default_rng(seed_a)
            parts, _ = owner_parts(P, m, rng)
            res = simulate_round(parts, release="direction", random_state=rng, **kw)
            if res.state != "done":  # pragma: no cover - an in-process round does not drop
                raise RuntimeError(f"the simulated round aborted: {res.abort_reason}")
            W = res.direction
            assert W is not None and res.noisy_means is not None
            assert res.noisy_second_moment is not None
            if "paper-release" in methods:
                out["paper-release"] = svm_error(P.X_train @ W, P.y_train, P.X_test @ W, P.y_test)
            if "lda-rule" in methods:
                S = noisy_scatter(res.noisy_second_moment, res.noisy_means, P.counts)
                ridge = default_ridge(res.plan.plan)
                out["lda-rule"] = lda_rule_error(
                    W, res.noisy_means, S, P.counts, P.X_test, P.y_test, ridge
                )
        if "noisy-projections" in methods:
            rng = np.random.default_rng(seed_b)
            parts, order = owner_parts(P, m, rng)
            res = simulate_round(parts, release="noisy-projections", random_state=rng, **kw)
            assert res.direction is not None and res.projections is not None
            out["noisy-projections"] = svm_error(
                res.projections, P.y_train[order], P.X_test @ res.direction, P.y_test
            )
    return out


# ------------------------------------------------------------------ the ε grid (fig1, fig2)


def run_epsilon_grid(
    config: Any,
    *,
    owners: int | None,
    seeded: Any,
    progress: Any = None,
) -> pd.DataFrame:
    """Every (task, repetition, ε) of ``config``: one row per (task, ε, rep, method).

    ``owners=None`` runs the centralised publisher; an integer runs Mul-LDA-DP rounds with
    that many owners (joint-view calibration). ``non-private`` and ``majority`` do not
    depend on ε and are recorded with ``epsilon = NaN``.
    """
    rows: list[dict[str, Any]] = []
    total = len(config.tasks) * config.trials * len(config.epsilons)
    done = 0
    for ti, task in enumerate(config.tasks):
        df, schema = load_task(task, config.n_rows, config.seed)
        for rep in range(config.trials):
            P = prepare(df, schema, config.seed, ti, rep)
            for method, err in (
                ("non-private", non_private_error(P)),
                ("majority", majority_error(P)),
            ):
                rows.append(
                    {
                        "task": task,
                        "epsilon": np.nan,
                        "rep": rep,
                        "method": method,
                        "misclassification": err,
                    }
                )
            for ei, eps in enumerate(config.epsilons):
                sa = seed_sequence(config.seed, 1, ti, rep, ei)
                sb = seed_sequence(config.seed, 2, ti, rep, ei)
                with seeded.collect():
                    if owners is None:
                        errs = centralised_errors(P, schema, eps, sa, sb)
                    else:
                        errs = federated_errors(P, eps, owners, sa, sb)
                for method, err in errs.items():
                    rows.append(
                        {
                            "task": task,
                            "epsilon": eps,
                            "rep": rep,
                            "method": method,
                            "misclassification": err,
                        }
                    )
                done += 1
                if progress is not None:
                    progress(done, total, f"{task} rep {rep + 1} eps={eps:g}")
    return pd.DataFrame(rows)


def aggregate(results: pd.DataFrame) -> pd.DataFrame:
    """Mean, standard deviation and count of the misclassification per (task, method, ε)."""
    g = results.groupby(["task", "method", "epsilon"], dropna=False).misclassification
    out = g.agg(["mean", "std", "count"]).reset_index()
    return out.rename(columns={"mean": "mean_error", "std": "sd_error", "count": "reps"})


def plot_grid(
    plt: Any,
    agg: pd.DataFrame,
    config: Any,
    title: str,
    path: Any,
    *,
    peer: pd.DataFrame | None = None,
    peer_label: str = "peer",
) -> Any:
    """One panel per task: misclassification vs ε, flat lines for the ε-free methods.

    ``peer`` (columns ``task, epsilon, mean_error, se_error``, see :func:`aggregate_peer`)
    adds one more line per task, with standard-error bars.
    """
    from ppdp.experiments._framework import save_figure

    tasks = list(config.tasks)
    ncol = min(3, len(tasks))
    nrow = -(-len(tasks) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.8 * ncol, 3.5 * nrow), squeeze=False)
    styles = {
        "paper-release": ("o-", "#4c72b0"),
        "noisy-projections": ("s-", "#c44e52"),
        "lda-rule": ("^-", "#55a868"),
    }
    for ax, task in zip(axes.flat, tasks, strict=False):
        sub = agg[agg.task == task]
        for method, (style, colour) in styles.items():
            s = sub[sub.method == method].sort_values("epsilon")
            if s.empty:
                continue
            ax.errorbar(
                s.epsilon,
                s.mean_error,
                yerr=s.sd_error,
                fmt=style,
                color=colour,
                ms=4,
                capsize=2,
                label=METHODS[method],
            )
        if peer is not None:
            p = peer[peer.task == task].sort_values("epsilon")
            if not p.empty:
                ax.errorbar(
                    p.epsilon,
                    p.mean_error,
                    yerr=p.se_error.fillna(0.0),
                    fmt="D-",
                    color="#8172b2",
                    ms=4,
                    capsize=2,
                    label=peer_label,
                )
        for method, colour in (("non-private", "black"), ("majority", "grey")):
            s = sub[sub.method == method]
            if not s.empty:
                ax.axhline(
                    float(s.mean_error.iloc[0]), color=colour, ls="--", lw=1, label=METHODS[method]
                )
        ax.set_xscale("log")
        ax.set_title(TASKS[task][2])
        ax.set_xlabel("ε")
        ax.set_ylabel("misclassification rate")
    for ax in list(axes.flat)[len(tasks) :]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        loc="lower center",
        ncol=2,
        fontsize=8,
        bbox_to_anchor=(0.5, -0.02 - 0.04 * (2 if nrow == 1 else 1)),
    )
    if peer is not None:
        title = f"{title}\nerror bars: standard deviation (ppdp's methods), standard error (peer)"
    fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, path)


def aggregate_peer(peer: pd.DataFrame) -> pd.DataFrame:
    """Mean, standard error and count of a peer's misclassification per (task, ε).

    ``peer`` has one row per release: columns ``task``, ``epsilon``, ``rep`` and
    ``misclassification`` (the CSV of ``benchmarks/peer_datasynthesizer_gu2022.py``).
    """
    missing = {"task", "epsilon", "rep", "misclassification"} - set(peer.columns)
    if missing:
        raise ParameterError(
            f"peer results ({sorted(peer.columns)}) must have the columns task, epsilon, rep "
            f"and misclassification; missing {sorted(missing)}"
        )
    g = peer.groupby(["task", "epsilon"]).misclassification
    out = g.agg(["mean", "std", "count"]).reset_index()
    out["se_error"] = out["std"] / np.sqrt(out["count"])
    return out.rename(columns={"mean": "mean_error", "std": "sd_error", "count": "reps"})


def grid_table(
    agg: pd.DataFrame,
    config: Any,
    *,
    peer: pd.DataFrame | None = None,
    peer_label: str = "peer",
) -> list[str]:
    """Markdown: per task, the mean (sd) misclassification of each method at each ε.

    ``peer`` (from :func:`aggregate_peer`) adds a row per task: mean ± standard error.
    """
    lines: list[str] = []
    eps_cols = list(config.epsilons)
    for task in config.tasks:
        sub = agg[agg.task == task]
        flat = {
            m: sub[sub.method == m].mean_error.iloc[0]
            for m in ("non-private", "majority")
            if not sub[sub.method == m].empty
        }
        lines += [
            "",
            f"### {TASKS[task][2]}",
            "",
            f"No privacy: {flat.get('non-private', float('nan')):.4f}; majority class: "
            f"{flat.get('majority', float('nan')):.4f}.",
            "",
            "| method | " + " | ".join(f"ε = {e:g}" for e in eps_cols) + " |",
            "|---|" + "---:|" * len(eps_cols),
        ]
        for method in ("paper-release", "lda-rule", "noisy-projections"):
            cells = []
            for e in eps_cols:
                s = sub[(sub.method == method) & (sub.epsilon == e)]
                cells.append(
                    f"{s.mean_error.iloc[0]:.4f} ({s.sd_error.iloc[0]:.4f})" if len(s) else "–"
                )
            lines.append(f"| {METHODS[method]} | " + " | ".join(cells) + " |")
        if peer is not None:
            cells = []
            for e in eps_cols:
                p = peer[(peer.task == task) & np.isclose(peer.epsilon, e)]
                cells.append(
                    f"{p.mean_error.iloc[0]:.4f} ± {p.se_error.iloc[0]:.4f} s.e. "
                    f"(n = {int(p.reps.iloc[0])})"
                    if len(p)
                    else "–"
                )
            lines.append(f"| {peer_label} | " + " | ".join(cells) + " |")
    return lines
