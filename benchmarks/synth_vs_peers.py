"""Issue 13: ppdp's synthetic tables on the issue's two tasks, beside the peers' numbers.

Tasks (exactly as issue 13 states them):

* **Adult**: ``load_adult("train")`` (30,162 rows, 10 attributes and the label) is
  synthesised; each numeric column of the synthetic rows and of the real test split
  (``load_adult("test")``, 15,060 rows) is cut into 16 equal-width bins over its declared
  bounds; ``LinearSVC(C=1)`` is trained on the one-hot codes of the synthetic rows and its
  misclassification measured on the test split. ε ∈ {0.1, 0.5, 1, 2}.
* **NLTCS**: ``train_test_split(load_nltcs(), test_size=0.2, random_state=0)``; one
  synthetic table of the training rows, then for each target (outside, money, traveling,
  bathing) a ``LinearSVC(C=1)`` on the other 15 items, tested on the real 20 %.
  ε ∈ {0.4, 0.8, 1.6}. DPLDASynthesizer needs a label, so it is fitted once per target at
  the full ε (4ε in all), as in the issue's table.

Methods: ``TableSynthesizer`` (ppdp's default: ``method="auto"``, δ = 1e-9, replace-one)
and ``DPLDASynthesizer`` (pure ε, replace-one, ``class_sizes="noisy"``), 5 seeds per cell
(``--seeds``). Also measured: the mean total-variation distance between the synthetic and
the real training rows over every 1-way and every 2-way marginal of the binned columns
(label included), the fit + sample time, and two extra cases for TableSynthesizer: Adult
without its label, and Adult with ``relationship`` (6 classes) as the label and ``income``
as a feature (its LinearSVC misclassification predicting ``relationship``).

The peers' numbers (MST and AIM from smartnoise-synth, PrivBayes from DataSynthesizer) are
the issue's, printed beside ours; ``--peers`` runs MST here (one seed per cell, as shipped)
in its git-ignored virtualenv (``benchmarks/.peer-venv-smartnoise``, see
``../shared/PEERS.md``). The full peer runs (MST and AIM each sampled as shipped and with a
fixed sampler, PrivBayes; 5 seeds) come from ``benchmarks/synth/peers_device.py``, run on a
many-core machine; ``--device-results peers_results.csv`` merges its rows into
``results.csv`` and the report (a section per task: each peer beside TableSynthesizer and
the best peer per ε). Privacy is not equal at the same ε: ppdp's publishers hold under
replace-one neighbours (a count table has L2 sensitivity √2), MST/AIM under add/remove
(sensitivity 1), and DataSynthesizer's ε is add/remove (about 1.5ε replace-one).

Output: ``benchmarks/synth/results.csv`` (one row per task, method, ε, seed, target),
``benchmarks/synth/results.md`` (the tables) and ``benchmarks/synth/results.png``.

Run::

    nice .venv/bin/python benchmarks/synth_vs_peers.py              # about 10 minutes
    nice .venv/bin/python benchmarks/synth_vs_peers.py --seeds 2 --methods table
    nice .venv/bin/python benchmarks/synth_vs_peers.py --peers --peer-seeds 1   # + MST
    .venv/bin/python benchmarks/synth_vs_peers.py --report-only --device-results \
        benchmarks/synth/peers_results.csv                   # + the device's peer rows
"""

from __future__ import annotations

import argparse
import itertools
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ppdp.data import Schema
from ppdp.datasets import load_adult, load_nltcs
from ppdp.datasets._nltcs import COLUMNS as NLTCS_COLUMNS
from ppdp.publish import DPLDASynthesizer, TableSynthesizer

OUT = Path(__file__).resolve().parent / "synth"
ADULT_EPS = (0.1, 0.5, 1.0, 2.0)
NLTCS_EPS = (0.4, 0.8, 1.6)
NLTCS_TARGETS = {
    "outside": "getting about outside",
    "money": "managing money",
    "traveling": "traveling",
    "bathing": "bathing",
}
BINS = 16
#: TableSynthesizer with ``method="chow-liu"`` (MST's model), beside the default.
CHOW_LIU = "TableSynthesizer (chow-liu)"
#: The default and chow-liu under the peers' guarantee (``relation="add/remove"``).
ADD_REMOVE = "TableSynthesizer (add/remove)"
CHOW_LIU_AR = "TableSynthesizer (chow-liu, add/remove)"
#: Every TableSynthesizer variant: one synthetic table per fit, whatever the task.
TABLE_METHODS = {
    "TableSynthesizer": {},
    CHOW_LIU: {"method": "chow-liu"},
    ADD_REMOVE: {"relation": "add/remove"},
    CHOW_LIU_AR: {"method": "chow-liu", "relation": "add/remove"},
}

#: Issue 13's peer numbers (misclassification; None where the issue has none).
PEERS_ADULT = {
    "MST (3 seeds)": {0.1: 0.263, 0.5: 0.212, 1.0: 0.198, 2.0: 0.202},
    "PrivBayes k=2": {0.1: 0.229, 0.5: 0.200, 1.0: 0.166, 2.0: 0.235},
    "AIM": {0.1: 0.273, 0.5: 0.319, 1.0: 0.237, 2.0: None},
}
PEERS_NLTCS = {
    ("PrivBayes", 0.4): (0.209, 0.156, 0.188, 0.227),
    ("PrivBayes", 1.6): (0.195, 0.149, 0.196, 0.232),
    ("MST", 0.4): (0.247, 0.216, 0.272, 0.323),
}


# -- binning and metrics -------------------------------------------------------------------


def binned(df: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """Integer codes: numerics in 16 equal-width bins over the declared bounds, else levels."""
    out = {}
    for col in schema.columns:
        v = df[col.name]
        if hasattr(col, "categories"):
            out[col.name] = pd.Categorical(v, categories=list(col.categories)).codes
        else:
            u = (v.to_numpy(float) - col.lower) / (col.upper - col.lower)
            out[col.name] = np.clip(np.floor(u * BINS), 0, BINS - 1).astype(int)
    if schema.label is not None:
        lab = schema.label
        out[lab.name] = pd.Categorical(df[lab.name], categories=list(lab.classes)).codes
    return pd.DataFrame(out)


def sizes_of(schema: Schema) -> dict[str, int]:
    sizes = {
        c.name: len(c.categories) if hasattr(c, "categories") else BINS for c in schema.columns
    }
    if schema.label is not None:
        sizes[schema.label.name] = schema.label.n_classes
    return sizes


def mean_tvd(real: pd.DataFrame, synth: pd.DataFrame) -> tuple[float, float]:
    """Mean TVD over all 1-way and over all 2-way marginals of two binned tables."""

    def dist(t: pd.DataFrame, cols: list[str]) -> pd.Series:
        return t.groupby(cols).size() / len(t)

    one = [0.5 * dist(real, [c]).sub(dist(synth, [c]), fill_value=0).abs().sum() for c in real]
    two = [
        0.5 * dist(real, list(p)).sub(dist(synth, list(p)), fill_value=0).abs().sum()
        for p in itertools.combinations(real.columns, 2)
    ]
    return float(np.mean(one)), float(np.mean(two))


def onehot(codes: pd.DataFrame, sizes: dict[str, int], cols: list[str]) -> np.ndarray:
    blocks = []
    for c in cols:
        block = np.zeros((len(codes), sizes[c]))
        block[np.arange(len(codes)), codes[c].to_numpy()] = 1.0
        blocks.append(block)
    return np.hstack(blocks)


def svm_error(train: pd.DataFrame, test: pd.DataFrame, sizes, features, target) -> float:
    from sklearn.svm import LinearSVC

    y = train[target].to_numpy()
    if np.unique(y).size < 2:  # a synthetic table with one class: predict it
        return float(np.mean(test[target].to_numpy() != y[0]))
    clf = LinearSVC(C=1.0).fit(onehot(train, sizes, features), y)
    return float(np.mean(clf.predict(onehot(test, sizes, features)) != test[target].to_numpy()))


# -- runs ----------------------------------------------------------------------------------


def fit_sample(method: str, eps: float, schema: Schema, df: pd.DataFrame, seed: int):
    t = time.perf_counter()
    if method in TABLE_METHODS:
        kw = TABLE_METHODS[method]
        synth = TableSynthesizer(eps, schema, random_state=seed, **kw).fit(df)
    else:
        synth = DPLDASynthesizer(eps, schema, random_state=seed, class_sizes="noisy").fit(df)
    data = synth.release_.data
    return data, time.perf_counter() - t


def run_adult(methods, seeds, rows):
    train, schema = load_adult("train")
    test, _ = load_adult("test")
    sizes = sizes_of(schema)
    real, real_test = binned(train, schema), binned(test, schema)
    feats = list(schema.column_names[:-1])
    label = schema.label.name
    rows.append(
        {
            "task": "adult",
            "method": "real rows",
            "epsilon": np.nan,
            "seed": 0,
            "target": label,
            "error": svm_error(real, real_test, sizes, feats, label),
        }
    )
    for method, eps, seed in itertools.product(methods, ADULT_EPS, range(seeds)):
        data, secs = fit_sample(method, eps, schema, train, seed)
        syn = binned(data, schema)
        t1, t2 = mean_tvd(real, syn)
        rows.append(
            {
                "task": "adult",
                "method": method,
                "epsilon": eps,
                "seed": seed,
                "target": label,
                "error": svm_error(syn, real_test, sizes, feats, label),
                "tvd1": t1,
                "tvd2": t2,
                "seconds": secs,
            }
        )
        print(f"adult {method} eps={eps} seed={seed}: {rows[-1]['error']:.4f} ({secs:.1f} s)")


def run_adult_extra(seeds, rows):
    """TableSynthesizer on Adult without a label, and with a 6-class label."""
    train, schema = load_adult("train")
    test, _ = load_adult("test")
    nolabel = schema.without_label()
    d = schema.to_dict()
    rel = next(c for c in d["columns"] if c["name"] == "relationship")
    d["columns"] = [c for c in d["columns"] if c["name"] != "relationship"]
    d["columns"].append({"name": "income", "type": "categorical", "categories": ["<=50K", ">50K"]})
    d["label"] = {"name": "relationship", "classes": rel["categories"]}
    six = Schema.from_dict(d)
    order = list(six.column_names)
    for case, sch, frame in (
        ("adult-no-label", nolabel, train.drop(columns="income")),
        ("adult-relationship-6-classes", six, train[order]),
    ):
        real = binned(frame, sch)
        for eps, seed in itertools.product(ADULT_EPS, range(seeds)):
            data, secs = fit_sample("TableSynthesizer", eps, sch, frame, seed)
            syn = binned(data, sch)
            t1, t2 = mean_tvd(real, syn)
            row = {
                "task": case,
                "method": "TableSynthesizer",
                "epsilon": eps,
                "seed": seed,
                "tvd1": t1,
                "tvd2": t2,
                "seconds": secs,
            }
            if sch.label is not None:
                feats = list(sch.column_names[:-1])
                row["target"] = sch.label.name
                row["error"] = svm_error(
                    syn, binned(test[order], sch), sizes_of(sch), feats, sch.label.name
                )
            rows.append(row)
            print(f"{case} eps={eps} seed={seed}: tvd2 {t2:.4f} ({secs:.1f} s)")


def run_nltcs(methods, seeds, rows):
    from sklearn.model_selection import train_test_split

    df, schema = load_nltcs()
    train, test = train_test_split(df, test_size=0.2, random_state=0)
    real = binned(train, schema)

    # The LinearSVC runs on the other 15 items as 0/1 values: the 16 bins of [0, 1]
    # put 0 in bin 0 and 1 in bin 15, so use the raw items.
    def err(syn: pd.DataFrame, target: str) -> float:
        return _nltcs_error(syn, test, target)

    for short, target in NLTCS_TARGETS.items():
        rows.append(
            {
                "task": "nltcs",
                "method": "real rows",
                "epsilon": np.nan,
                "seed": 0,
                "target": short,
                "error": err(train, target),
            }
        )
    for method, eps, seed in itertools.product(methods, NLTCS_EPS, range(seeds)):
        if method in TABLE_METHODS:
            data, secs = fit_sample(method, eps, schema, train, seed)
            t1, t2 = mean_tvd(real, binned(data, schema))
            for short, target in NLTCS_TARGETS.items():
                rows.append(
                    {
                        "task": "nltcs",
                        "method": method,
                        "epsilon": eps,
                        "seed": seed,
                        "target": short,
                        "error": err(data, target),
                        "tvd1": t1,
                        "tvd2": t2,
                        "seconds": secs,
                    }
                )
        else:
            for short, target in NLTCS_TARGETS.items():
                _, sch = load_nltcs(label=target)
                data, secs = fit_sample(method, eps, sch, train[list(sch.column_names)], seed)
                data = data[list(NLTCS_COLUMNS)]
                rows.append(
                    {
                        "task": "nltcs",
                        "method": method,
                        "epsilon": eps,
                        "seed": seed,
                        "target": short,
                        "error": err(data, target),
                        "seconds": secs,
                    }
                )
        print(f"nltcs {method} eps={eps} seed={seed} done")


# -- peers ---------------------------------------------------------------------------------

PEER_VENV = Path(__file__).resolve().parent / ".peer-venv-smartnoise"
PEER_DELTA = 1e-9


def run_mst(task: str, train_codes: pd.DataFrame, eps: float, seed: int):
    """MST (smartnoise-synth 1.0.8, as shipped) on the binned training codes, in its venv."""
    import subprocess
    import tempfile

    py = PEER_VENV / "bin" / "python"
    if not py.exists():
        raise SystemExit(
            f"--peers needs {PEER_VENV}: python3 -m venv {PEER_VENV} && "
            f"{PEER_VENV}/bin/pip install smartnoise-synth==1.0.8"
        )
    with tempfile.TemporaryDirectory() as tmp:
        inp, out = Path(tmp) / "in.csv", Path(tmp) / "out.csv"
        train_codes.to_csv(inp, index=False)
        cmd = [str(py), str(OUT / "peer_mst.py"), str(inp), str(out)]
        cmd += ["--epsilon", str(eps), "--delta", str(PEER_DELTA), "--seed", str(seed)]
        t = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
        wall = time.perf_counter() - t
        syn = pd.read_csv(out)[list(train_codes.columns)].astype(int)
    print(f"{task} MST eps={eps} seed={seed}: fit+sample {proc.stdout.strip()} s ({wall:.1f} s)")
    return syn, float(proc.stdout.strip())


def run_peers(seeds: int, rows: list[dict], tasks: list[str]) -> None:
    from sklearn.model_selection import train_test_split

    if "adult" in tasks:
        train, schema = load_adult("train")
        test, _ = load_adult("test")
        sizes = sizes_of(schema)
        real, real_test = binned(train, schema), binned(test, schema)
        feats, label = list(schema.column_names[:-1]), schema.label.name
        for eps, seed in itertools.product(ADULT_EPS, range(seeds)):
            syn, secs = run_mst("adult", real, eps, seed)
            t1, t2 = mean_tvd(real, syn)
            rows.append(
                {
                    "task": "adult",
                    "method": "MST (run here)",
                    "epsilon": eps,
                    "seed": seed,
                    "target": label,
                    "error": svm_error(syn, real_test, sizes, feats, label),
                    "tvd1": t1,
                    "tvd2": t2,
                    "seconds": secs,
                }
            )
    if "nltcs" in tasks:
        df, schema = load_nltcs()
        train, test = train_test_split(df, test_size=0.2, random_state=0)
        real = binned(train, schema)
        for eps, seed in itertools.product(NLTCS_EPS, range(seeds)):
            syn, secs = run_mst("nltcs", real, eps, seed)
            t1, t2 = mean_tvd(real, syn)
            items = (syn // (BINS - 1)).astype(int)  # bin 15 is the item's value 1
            for short, target in NLTCS_TARGETS.items():
                rows.append(
                    {
                        "task": "nltcs",
                        "method": "MST (run here)",
                        "epsilon": eps,
                        "seed": seed,
                        "target": short,
                        "error": _nltcs_error(items, test, target),
                        "tvd1": t1,
                        "tvd2": t2,
                        "seconds": secs,
                    }
                )


def _nltcs_error(syn: pd.DataFrame, test: pd.DataFrame, target: str) -> float:
    from sklearn.svm import LinearSVC

    others = [c for c in NLTCS_COLUMNS if c != target]
    y = syn[target].to_numpy()
    if np.unique(y).size < 2:
        return float(np.mean(test[target].to_numpy() != y[0]))
    clf = LinearSVC(C=1.0).fit(syn[others].to_numpy(float), y)
    return float(np.mean(clf.predict(test[others].to_numpy(float)) != test[target].to_numpy()))


# -- report --------------------------------------------------------------------------------


def _ms(s: pd.Series) -> str:
    return f"{s.mean():.3f} ± {s.std(ddof=1):.3f}" if len(s) > 1 else f"{s.mean():.3f}"


def report(res: pd.DataFrame) -> str:
    lines = ["# Issue 13: ppdp's synthetic tables against the issue's peer numbers", ""]
    lines += [
        "Misclassification (mean ± sd over seeds; lower is better). ppdp: replace-one",
        "neighbours, TableSynthesizer at δ = 1e-9; peers: the issue's numbers (add/remove).",
        "",
    ]
    a = res[res.task == "adult"]
    real = a[a.method == "real rows"].error.iloc[0]
    head = (
        "| ε | "
        + " | ".join(PEERS_ADULT)
        + " | DPLDASynthesizer | TableSynthesizer | TVD 2-way (ours) |"
    )
    lines += ["## Adult", "", head, "|" + "---:|" * (head.count("|") - 1)]
    for eps in ADULT_EPS:
        cells = [f"{eps:g}"]
        cells += ["—" if p[eps] is None else f"{p[eps]:.3f}" for p in PEERS_ADULT.values()]
        for m in ("DPLDASynthesizer", "TableSynthesizer"):
            s = a[(a.method == m) & (a.epsilon == eps)].error
            cells.append(_ms(s) if len(s) else "—")
        t = a[(a.method == "TableSynthesizer") & (a.epsilon == eps)].tvd2
        cells.append(f"{t.mean():.4f}" if len(t) else "—")
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Real training rows: {real:.3f}.", ""]
    n = res[res.task == "nltcs"]
    if len(n):
        lines += [
            "## NLTCS",
            "",
            "| method | ε | outside | money | traveling | bathing | TVD 2-way |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for (m, eps), errs in PEERS_NLTCS.items():
            lines.append(
                f"| {m} (issue) | {eps:g} | " + " | ".join(f"{e:.3f}" for e in errs) + " | — |"
            )
        for m in ("DPLDASynthesizer", "TableSynthesizer"):
            for eps in NLTCS_EPS:
                sub = n[(n.method == m) & (n.epsilon == eps)]
                if not len(sub):
                    continue
                cells = [_ms(sub[sub.target == t].error) for t in NLTCS_TARGETS]
                tv = sub.tvd2.dropna()
                tag = " (one fit per target, 4ε)" if m == "DPLDASynthesizer" else ""
                tvd = f"{tv.mean():.4f}" if len(tv) else "—"
                lines.append(f"| {m}{tag} | {eps:g} | " + " | ".join(cells) + f" | {tvd} |")
        r = n[n.method == "real rows"].set_index("target").error
        lines.append(
            "| real rows | — | " + " | ".join(f"{r[t]:.3f}" for t in NLTCS_TARGETS) + " | — |"
        )
        lines.append("")
    lines += [
        "## Marginal TVD (TableSynthesizer; mean over all 1-way / 2-way binned marginals)",
        "",
        "| case | ε | TVD 1-way | TVD 2-way | error | fit + sample (s) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    ours = res[res.method == "TableSynthesizer"]
    for (task, eps), sub in ours.groupby(["task", "epsilon"]):
        err = sub.error.dropna()
        e = _ms(err) if task != "nltcs" and len(err) else "—"
        lines.append(
            f"| {task} | {eps:g} | {sub.tvd1.mean():.4f} | {sub.tvd2.mean():.4f} | {e} | "
            f"{sub.seconds.median():.2f} |"
        )
    mst = res[res.method == "MST (run here)"]
    if len(mst):
        lines += [
            "",
            "## MST run here (smartnoise-synth 1.0.8 as shipped, δ = 1e-9, add/remove)",
            "",
            "| task | ε | seeds | MST error | MST TVD 2-way | ours TVD 2-way | MST s | ours s |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for (task, eps), sub in mst.groupby(["task", "epsilon"]):
            o = ours[(ours.task == task) & (ours.epsilon == eps)]
            order = [t for t in [*NLTCS_TARGETS, "income"] if t in set(sub.target)]
            e = sub.groupby("target").error.mean().reindex(order).round(3).astype(str)
            lines.append(
                f"| {task} | {eps:g} | {sub.seed.nunique()} | {' / '.join(e.tolist())} | "
                f"{sub.tvd2.mean():.4f} | {o.tvd2.mean():.4f} | {sub.seconds.median():.1f} | "
                f"{o.seconds.median():.2f} |"
            )
    d = res[res.method == "DPLDASynthesizer"]
    if len(d):
        lines += ["", f"DPLDASynthesizer fit + sample: median {d.seconds.median():.1f} s."]
    if "status" in res.columns and res.method.isin(DEVICE_PEERS).any():
        lines += device_report(res)
        if res.method.isin([ADD_REMOVE, CHOW_LIU_AR]).any():
            lines += equal_guarantee_report(res)
    return "\n".join(lines) + "\n"


def equal_guarantee_report(res: pd.DataFrame) -> list[str]:
    """Markdown: TableSynthesizer under add/remove (the peers' relation) against the best peer.

    Per task, ε and target: the best peer (lowest mean error over the peers' rows), each
    add/remove variant's mean ± standard error, and Welch's two-sided p against the best
    peer's seeds; the 2-way TVD against MST's (fixed sampler).
    """
    from scipy.stats import ttest_ind

    lines = [
        "",
        '## At the peers\' guarantee: TableSynthesizer with `relation="add/remove"`',
        "",
        "Same ε, same δ = 1e-9, same neighbouring relation as MST and AIM. p: Welch's",
        "two-sided test of the difference in mean error against the best peer's seeds.",
        "",
        "| task | target | ε | best peer | ours (default) | p | ours (chow-liu) | p | "
        "TVD 2-way default / chow-liu / MST-fixed |",
        "|---|---|---:|---|---:|---:|---:|---:|---|",
    ]
    num = pd.to_numeric
    for task in ("adult", "nltcs"):
        t = res[res.task == task]
        ours = t[t.method == ADD_REMOVE]
        for eps in sorted(ours.epsilon.dropna().unique()):
            for tg in [x for x in [*NLTCS_TARGETS, "income"] if x in set(ours.target)]:
                at = t[(t.epsilon == eps) & (t.target == tg)]
                peers = at[at.method.isin(DEVICE_PEERS)]
                peers = peers[num(peers.error, errors="coerce").notna()]
                if not len(peers):
                    continue
                means = peers.groupby("method").error.apply(lambda e: num(e).mean())
                best = means.idxmin()
                best_err = num(peers[peers.method == best].error)
                cells = [f"{best} {best_err.mean():.4f}"]
                for m in (ADD_REMOVE, CHOW_LIU_AR):
                    e = num(at[at.method == m].error)
                    if len(e) < 2:
                        cells += ["—", "—"]
                        continue
                    se = e.std(ddof=1) / np.sqrt(len(e))
                    p = np.nan
                    if len(best_err) > 1:
                        p = ttest_ind(e, best_err, equal_var=False).pvalue
                    cells += [f"{e.mean():.4f} ± {se:.4f} ({len(e)})", f"{p:.2f}"]
                tv = [
                    num(t[(t.method == m) & (t.epsilon == eps)].drop_duplicates("seed").tvd2)
                    for m in (ADD_REMOVE, CHOW_LIU_AR, "MST (fixed sampler)")
                ]
                cells.append(" / ".join(f"{v.mean():.4f}" if len(v) else "—" for v in tv))
                lines.append(f"| {task} | {tg} | {eps:g} | " + " | ".join(cells) + " |")
    return lines


#: The methods of ``benchmarks/synth/peers_device.py``'s CSV (``--device-results``).
DEVICE_PEERS = ("MST", "MST (fixed sampler)", "AIM", "AIM (fixed sampler)", "PrivBayes k=2")


def _statuses(sub: pd.DataFrame) -> str:
    """The fits' statuses in a few words (one per seed, not per target)."""
    st = sub.drop_duplicates("seed").status.fillna("").astype(str)
    got = st.str.extract(r"stopped at [\d.]+ s: (\d+) rounds, (\d+) % of rho spent").astype(float)
    st = st.str.replace(r"complete \(\d+ rounds\)", "complete", regex=True)
    st = st.str.replace(r"stopped at .*", "stopped", regex=True)
    parts = []
    for k, n in st.value_counts().items():
        if k == "stopped":
            r, q = got[0].dropna(), got[1].dropna()
            k += f" (after {_span(r)} rounds, {_span(q)} % of ρ spent)"
        parts.append(f"{n} {k}")
    return ", ".join(parts)


def _span(x: pd.Series) -> str:
    lo, hi = x.min(), x.max()
    return f"{lo:.0f}" if lo == hi else f"{lo:.0f}–{hi:.0f}"


def device_report(res: pd.DataFrame) -> list[str]:
    """Markdown: the peers run by ``peers_device.py`` beside TableSynthesizer, per task and ε."""
    lines = [
        "",
        "## Peers run in full (`benchmarks/synth/peers_device.py`, one process per fit)",
        "",
        "MST and AIM: smartnoise-synth 1.0.8 (mbi 1.1.0), (ε, δ = 1e-9)-DP under add/remove",
        "neighbours, transformer fitted on the declared domain only; each fitted model is",
        "sampled as shipped and with a junction-tree sampler (post-processing; mbi 1.1.0's",
        "sampler is wrong, see PEERS.md). AIM has a time limit per fit: when it stops early it",
        "releases the model of the measurements taken so far (the note says where).",
        "PrivBayes: DataSynthesizer 0.1.13, k = 2, declared domain, ε-DP under add/remove",
        "(about 1.5ε under replace-one). ppdp: replace-one neighbours (TableSynthesizer at",
        "δ = 1e-9). Best peer: the lowest mean error among the peers' rows, sampler fixed or not.",
        "",
    ]
    dev = res[res.method.isin(DEVICE_PEERS)]
    for task in ("adult", "nltcs"):
        t = dev[dev.task == task]
        if not len(t):
            continue
        targets = (
            [res[(res.task == "adult")].target.dropna().iloc[0]]
            if task == "adult"
            else list(NLTCS_TARGETS)
        )
        head = (
            "| method | ε | seeds | "
            + " | ".join(targets)
            + " | TVD 1-way | TVD 2-way | fit s | fits |"
        )
        lines += [
            f"### {task}",
            "",
            head,
            "|---|---:|---:|" + "---:|" * (len(targets) + 3) + "---|",
        ]
        for eps in sorted(t.epsilon.dropna().unique()):
            best = {}
            for m in DEVICE_PEERS:
                sub = t[(t.method == m) & (t.epsilon == eps)]
                if not len(sub):
                    continue
                ok = sub[pd.to_numeric(sub.error, errors="coerce").notna()]
                cells = []
                for tg in targets:
                    e = pd.to_numeric(ok[ok.target == tg].error)
                    cells.append(_ms(e) if len(e) else "—")
                    if len(e):
                        best[tg] = min(best.get(tg, np.inf), e.mean())
                tv1 = pd.to_numeric(ok.drop_duplicates("seed").tvd1)
                tv2 = pd.to_numeric(ok.drop_duplicates("seed").tvd2)
                secs = pd.to_numeric(ok.drop_duplicates("seed").seconds)
                lines.append(
                    f"| {m} | {eps:g} | {ok.seed.nunique()} | "
                    + " | ".join(cells)
                    + " | "
                    + (
                        f"{tv1.mean():.4f} | {tv2.mean():.4f} | {secs.median():.0f} | "
                        if len(ok)
                        else "— | — | — | "
                    )
                    + _statuses(sub)
                    + " |"
                )
            for name in TABLE_METHODS:
                o = res[(res.method == name) & (res.task == task) & (res.epsilon == eps)]
                if not len(o):
                    continue
                cells = [
                    _ms(o[o.target == tg].error) if len(o[o.target == tg]) else "—"
                    for tg in targets
                ]
                lines.append(
                    f"| **{name}** | {eps:g} | {o.seed.nunique()} | "
                    + " | ".join(cells)
                    + f" | {o.tvd1.mean():.4f} | {o.tvd2.mean():.4f} | {o.seconds.median():.2f} | |"
                )
            if best:
                cells = [f"{best[tg]:.3f}" if tg in best else "—" for tg in targets]
                lines.append(f"| best peer | {eps:g} | | " + " | ".join(cells) + " | | | | |")
        lines.append("")
    return lines


def plot(res: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    a = res[res.task == "adult"]
    ax = axes[0]
    for m, style in (("TableSynthesizer", "o-"), ("DPLDASynthesizer", "s-")):
        g = a[a.method == m].groupby("epsilon").error
        if len(a[a.method == m]):
            ax.errorbar(g.mean().index, g.mean(), yerr=g.std(), fmt=style, label=m, capsize=3)
    dev = a[a.method.isin(DEVICE_PEERS)].copy()
    if len(dev):
        dev["error"] = pd.to_numeric(dev.error, errors="coerce")
        for m, sub in dev.dropna(subset=["error"]).groupby("method"):
            g = sub.groupby("epsilon").error
            ax.errorbar(g.mean().index, g.mean(), yerr=g.std(), fmt="^:", label=m, capsize=2)
    else:
        for name, vals in PEERS_ADULT.items():
            xs = [e for e, v in vals.items() if v is not None]
            ax.plot(xs, [vals[e] for e in xs], "x--", label=f"{name} (issue)")
    ax.axhline(a[a.method == "real rows"].error.iloc[0], color="k", lw=0.8, label="real rows")
    ax.set(xscale="log", xlabel="ε", ylabel="misclassification", title="Adult, LinearSVC")
    ax.legend(fontsize=7)
    ax = axes[1]
    n = res[(res.task == "nltcs") & (res.method == "TableSynthesizer")]
    for t in NLTCS_TARGETS:
        g = n[n.target == t].groupby("epsilon").error.mean()
        ax.plot(g.index, g, "o-", label=f"{t} (ours)")
    devn = res[(res.task == "nltcs") & res.method.isin(DEVICE_PEERS)].copy()
    if len(devn):
        devn["error"] = pd.to_numeric(devn.error, errors="coerce")
        devn = devn.dropna(subset=["error"])
        # the best peer per (ε, target): the lowest mean error over the peers' methods
        best = (
            devn.groupby(["epsilon", "target", "method"])
            .error.mean()
            .groupby(["epsilon", "target"])
            .min()
        )
        for t in NLTCS_TARGETS:
            if t in best.index.get_level_values("target"):
                b = best.xs(t, level="target")
                ax.plot(b.index, b, "x:", color="grey")
        title = "NLTCS (x: best peer per target)"
    else:
        for (m, eps), errs in PEERS_NLTCS.items():
            if m == "PrivBayes":
                ax.scatter([eps] * 4, errs, marker="x", color="grey")
        title = "NLTCS (x: PrivBayes, issue)"
    ax.set(xscale="log", xlabel="ε", ylabel="misclassification", title=title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def merge_device(res: pd.DataFrame, path: Path) -> pd.DataFrame:
    """``res`` with the peer rows of ``path`` (peers_device.py's CSV) in place of its own."""
    dev = pd.read_csv(path)
    unknown = sorted(set(dev.method) - set(DEVICE_PEERS))
    if unknown:
        raise SystemExit(
            f"--device-results {path}: unknown methods {unknown}; allowed {DEVICE_PEERS}"
        )
    keep = ~res.method.isin(set(dev.method))
    return pd.concat([res[keep], dev], ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--peer-seeds", type=int, default=1, help="seeds per MST cell")
    parser.add_argument(
        "--report-only", action="store_true", help="rewrite the table and plot from results.csv"
    )
    parser.add_argument(
        "--merge",
        action="store_true",
        help="keep the rows of results.csv for the (task, method) pairs this run does not redo",
    )
    parser.add_argument(
        "--methods",
        choices=("all", "table", "chow-liu", "add-remove"),
        default="all",
        help="all: TableSynthesizer and DPLDASynthesizer; table: TableSynthesizer; "
        "chow-liu: TableSynthesizer(method='chow-liu') only; add-remove: the default and "
        "chow-liu with relation='add/remove', the peers' guarantee (use the last two with "
        "--merge)",
    )
    parser.add_argument("--tasks", default="adult,nltcs,extra")
    parser.add_argument(
        "--peers", action="store_true", help="also run MST (smartnoise-synth) in its peer venv"
    )
    parser.add_argument(
        "--device-results",
        metavar="CSV",
        help="merge benchmarks/synth/peers_device.py's peers_results.csv into results.csv "
        "(replacing its rows of the same methods) and report them; with --report-only, no run",
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if args.report_only:
        res = pd.read_csv(OUT / "results.csv")
        if args.device_results:
            res = merge_device(res, Path(args.device_results))
            res.to_csv(OUT / "results.csv", index=False)
        (OUT / "results.md").write_text(report(res), encoding="utf-8")
        plot(res, OUT / "results.png")
        print(report(res))
        return
    methods = ["TableSynthesizer"] + (["DPLDASynthesizer"] if args.methods == "all" else [])
    if args.methods == "chow-liu":
        methods = [CHOW_LIU]
    if args.methods == "add-remove":
        methods = [ADD_REMOVE, CHOW_LIU_AR]
    rows: list[dict] = []
    tasks = args.tasks.split(",")
    if "adult" in tasks:
        run_adult(methods, args.seeds, rows)
    if "nltcs" in tasks:
        run_nltcs(methods, args.seeds, rows)
    if "extra" in tasks:
        run_adult_extra(args.seeds, rows)
    if args.peers:
        run_peers(args.peer_seeds, rows, tasks)
    res = pd.DataFrame(rows)
    OUT.mkdir(exist_ok=True)
    if args.merge and (OUT / "results.csv").exists():
        old = pd.read_csv(OUT / "results.csv")
        redone = set(zip(res.task, res.method, strict=True))
        keep = [(t, m) not in redone for t, m in zip(old.task, old.method, strict=True)]
        res = pd.concat([old[keep], res], ignore_index=True)
    if args.device_results:
        res = merge_device(res, Path(args.device_results))
    res.to_csv(OUT / "results.csv", index=False)
    text = report(res)
    (OUT / "results.md").write_text(text, encoding="utf-8")
    if "adult" in set(res.task):
        plot(res, OUT / "results.png")
    print(text)


if __name__ == "__main__":
    main()
