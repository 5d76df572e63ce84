"""The ``ppdp demo`` job: private statistics, tables and models of the shipped Adult data.

The demo shows the whole release path on a real table: a declared schema, a
per-dataset budget ledger, check-then-spend-then-release, secure noise, and a guarantee
stated for every release. Part 1 releases statistics with the basic mechanisms; part 2
publishes the table with DP-PCA and the DP-LDA synthesizer next to the per-record
baselines of Jiang et al. (2013); part 3 publishes a Fisher-LDA projection (LDA-DP, Gu et
al. 2022) and trains a private logistic regression (Chaudhuri et al. 2011) next to their
non-private counterparts. Utility is measured on held-out rows.

Adult is public, so the demo prints the exact values beside the private ones to show
the error; a real release would print only the private values.

The terminal shows one screen per part (:func:`render_demo`): each release with its
one-line guarantee (:meth:`~ppdp.budget.Guarantee.summary`) and its table (the largest
category shares only). The run folder holds the ledger, the released tables and
``demo.log``: every guarantee in full and every table.
"""

from __future__ import annotations

import math
import textwrap
import warnings
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdp._io import atomic_path
from ppdp.accounting import Accountant, Charge, charge, check_charges
from ppdp.budget import Guarantee, Neighbouring, PrivacyBudget, remaining_text
from ppdp.data import Schema
from ppdp.data.stats import SufficientStats, float_sum_error_bound
from ppdp.datasets import load_adult
from ppdp.exceptions import BudgetExceededError, LowUtilityWarning, ParameterError
from ppdp.mechanisms import GaussianMechanism, LaplaceMechanism
from ppdp.random import RandomSource, RandomState, resolve_random_state

__all__ = ["DemoModel", "DemoRelease", "DemoReport", "DemoTable", "render_demo", "run_demo"]

#: Total budget of the demo's ledger: (1, 1e-6) for the statistics of part 1, ε = 1 for
#: each of the five table releases of part 2 (the synthesizer's δ = 1e-9 beside it),
#: (1, 1e-6) for LDA-DP and ε = 1 for the private logistic regression of part 3.
DEMO_TOTAL = PrivacyBudget(8.0, 2.001e-6)
_EPS_TABLE = 1.0
_EPS_MODEL = 1.0
_DELTA_LDA = 1e-6
_DELTA_SYNTH = 1e-9  # TableSynthesizer's default δ
#: DP-PCA's number of components, fixed in advance (never chosen from the data).
_PCA_COMPONENTS = 5
#: The train/test split of part 2 is an evaluation design, not noise: a fixed public seed.
_SPLIT_SEED = 2013
_EPS_COUNTS = 0.25
_EPS_MEANS = 0.5
_EPS_SHARES = 0.25
_DELTA_SHARES = 1e-6
#: The log of a run, in its run folder: every guarantee in full and every table.
LOG_NAME = "demo.log"
#: Width at which the terminal text wraps a long message.
_WIDTH = 96
#: Category shares shown per attribute on the terminal (all of them in the log).
_SHARES_SHOWN = 2


@dataclass(frozen=True)
class DemoRelease:
    """One released statistic: its rows (name, private value, exact value) and guarantee."""

    title: str
    rows: tuple[tuple[str, float, float], ...]
    guarantee: Guarantee
    ledger_index: int


@dataclass(frozen=True)
class DemoTable:
    """One released table of part 2, where it was written, and its measured utility.

    ``utility`` holds ``mse`` (on the encoded table, row-aligned releases only),
    ``accuracy`` and ``auc`` of an LDA classifier trained on the release and tested on the
    held-out original rows (None when scikit-learn is not installed).
    """

    method: str
    path: Path
    n_rows: int
    guarantee: Guarantee
    ledger_indices: tuple[int, ...]
    utility: dict[str, float | None]


@dataclass(frozen=True)
class DemoModel:
    """One private model of part 3, its guarantee and its utility on held-out rows.

    ``utility`` holds ``accuracy`` and ``auc`` on the held-out original rows (None when
    scikit-learn is not installed); ``path`` is the released artefact, when one is written;
    ``other_uses`` the utility of other post-processings of the same release.
    """

    method: str
    guarantee: Guarantee
    ledger_indices: tuple[int, ...]
    utility: dict[str, float | None]
    path: Path | None = None
    other_uses: dict[str, dict[str, float | None]] = field(default_factory=dict)


@dataclass(frozen=True)
class DemoReport:
    """What the demo released, where the ledger is, and the budget left."""

    ledger_path: Path
    n_rows: int
    releases: tuple[DemoRelease, ...]
    tables: tuple[DemoTable, ...]
    reference: dict[str, dict[str, float | None]]
    total: PrivacyBudget
    remaining: PrivacyBudget
    refused: str
    seeded: bool
    models: tuple[DemoModel, ...] = ()
    model_reference: dict[str, dict[str, float | None]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    log_path: Path | None = None

    @property
    def run_dir(self) -> Path:
        """The run folder: the ledger, the released tables and the log."""
        return self.ledger_path.parent


def run_demo(
    *, output_dir: str | Path, random_state: RandomState = None, tables: bool = True
) -> DemoReport:
    """Release private statistics and private tables of Adult through a fresh budget ledger.

    Parameters
    ----------
    output_dir : path
        Folder in which a new run folder with the ledger is created.
    random_state : None, int or Generator
        None (default) draws noise from OS entropy; a seed makes the run reproducible. The
        demo's ledger is a fresh one of its own, so a seeded run passes ``allow_seeded=True``
        to every spend explicitly, and the ledger records each as seeded and allowed.
    tables : bool, default True
        Run parts 2 and 3 (the table and model releases; about ten seconds).

    Returns
    -------
    DemoReport
        The releases with their guarantees, the ledger path, the remaining budget and the
        path of the run's log (``demo.log`` in the run folder: :func:`render_demo` with
        ``full=True``, written once everything else is done).

    Notes
    -----
    Neighbouring relation: replace-one, with the number of rows public (as in every
    source ppdp implements). The releases are

    1. the income-class histogram, Laplace, L1 sensitivity 2 (one replaced record moves one
       unit between two classes), ε = 0.25;
    2. the means of the five numeric attributes, Laplace on the sums of the
       [0, 1]-encoded columns, L1 sensitivity 5 (one per column), ε = 0.5;
    3. the shares of every category of the five categorical attributes, Gaussian (analytic
       calibration) on the one-hot sums, L2 sensitivity √10 (a replaced record moves two
       dummies of each of the five attributes by one), ε = 0.25, δ = 1e-6.

    The class counts are exact integers. The other two releases add noise to float sums,
    which can differ from the real sums by rounding (Casacuberta et al. 2022), so their
    sensitivities are padded by twice the float-sum error bound per coordinate
    (:func:`ppdp.data.stats.float_sum_error_bound`; about 2e-7 for Adult's n).

    Basic composition gives (1.0, 1e-6)-DP for part 1. Part 2 splits Adult into a random
    2/3 (released) and 1/3 (held out, used only to measure utility) and releases the 2/3
    five times, each at ε = 1: the TableSynthesizer (Gaussian marginals under zCDP, δ =
    1e-9), DP-PCA (k = 5), the DP-LDA synthesizer (noisy class sizes), and the LAP and EXP
    per-record baselines. The released tables are written beside the
    ledger. Part 3 uses the same 2/3: LDA-DP at (1, 1e-6) releases a Fisher direction and
    every row's projection on it with Laplace noise (the class counts of the split are
    declared public), and a logistic regression by objective perturbation at ε = 1 is
    trained on the rows divided by the schema's row-norm bound; each is compared with its
    non-private counterpart on the held-out third. The demo then asks for more than what
    remains and shows that the accountant refuses it before touching the data.

    The order is the one every ppdp release follows: check that the plan fits the budget
    (refused before the data are read), validate and encode the data (an error costs
    nothing), record each spend durably, and only then compute and add noise.
    """
    if Path(output_dir).exists() and not Path(output_dir).is_dir():
        raise ParameterError(f"output_dir ({output_dir}) is a file, not a folder")
    source = resolve_random_state(random_state)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S-%f")
    run_dir = Path(output_dir) / f"run-{stamp}"
    run_dir.mkdir(parents=True, exist_ok=False)
    ledger_path = run_dir / "adult-budget.db"

    df, schema = load_adult()
    with Accountant.open(
        ledger_path, dataset_id="adult", total=DEMO_TOTAL, relation=Neighbouring.REPLACE_ONE
    ) as acct:
        report = _release_all(acct, df, schema, ledger_path, source)
        if tables:
            made, reference = _release_tables(acct, df, schema, run_dir, source)
            models, model_reference = _release_models(acct, df, schema, run_dir, source)
            report = replace(
                report,
                tables=made,
                reference=reference,
                models=models,
                model_reference=model_reference,
            )
        # More than what remains: the accountant must refuse it before anything is computed.
        extra = LaplaceMechanism(
            epsilon=acct.remaining.epsilon + 0.1, sensitivity=1.0, relation=Neighbouring.REPLACE_ONE
        )
        try:
            check_charges(acct, Charge(extra.event, extra.name), mechanism="one more release")
            refused = ""
        except BudgetExceededError as exc:
            refused = str(exc)
        report = replace(report, refused=refused, remaining=acct.remaining)
    report = replace(report, log_path=run_dir / LOG_NAME)
    assert report.log_path is not None
    with atomic_path(report.log_path) as tmp:
        tmp.write_text("\n".join(render_demo(report, full=True)) + "\n", encoding="utf-8")
    return report


def render_demo(report: DemoReport, *, full: bool = False) -> list[str]:
    """The demo's text, line by line.

    ``full=False`` (the terminal): one screen per part, at most 40 lines each; every
    release with its one-line guarantee, the two largest category shares per attribute.
    ``full=True`` (``demo.log``, ``ppdp demo -v``): every guarantee in full beneath its
    summary and every table whole. Both end with the remaining budget, the commands to run
    next on one's own data and the path of the log.
    """
    lines = [
        f"ppdp demo: Adult ({report.n_rows:,} rows, Jiang et al. preprocessing), "
        f"total budget {report.total}",
        f"run folder: {report.run_dir}",
    ]
    if report.seeded:
        lines += [
            "note: --seed makes the noise reproducible and NOT fit for a real release; the demo's",
            "own fresh ledger accepts it explicitly (allow_seeded=True, recorded with each spend)",
        ]
    parts = 3 if report.tables or report.models else 1
    lines += ["", *_statistics_lines(report, parts, full)]
    if report.tables:
        lines += ["", *_table_lines(report, parts, full)]
    if report.models:
        lines += ["", *_model_lines(report, parts, full)]
    lines += ["", *_closing_lines(report, full)]
    return lines


def _part_budget(guarantees: list[Guarantee]) -> str:
    total = sum((g.budget or PrivacyBudget(0.0) for g in guarantees), PrivacyBudget(0.0))
    return f"{total} in all"


def _guarantee_lines(guarantee: Guarantee, full: bool, indent: str = "  ") -> list[str]:
    lines = [f"{indent}guarantee: {guarantee.summary()}"]
    if full:
        lines.append(f"{indent}  in full: {guarantee}")
    return lines


def _statistics_lines(report: DemoReport, parts: int, full: bool) -> list[str]:
    budget = _part_budget([r.guarantee for r in report.releases])
    lines = [
        f"Part 1 of {parts}: private statistics of all {report.n_rows:,} rows ({budget})",
        "(Adult is public, so the exact values are shown beside the private ones)",
    ]
    for release in report.releases:
        rows = list(release.rows)
        left_out = 0
        if not full and any("=" in name for name, _, _ in rows):
            rows = _largest_shares(rows, _SHARES_SHOWN)
            left_out = len(release.rows) - len(rows)
        width = max(len(name) for name, _, _ in rows)
        lines += [
            "",
            f"[ledger {release.ledger_index}] {release.title}",
            *_guarantee_lines(release.guarantee, full),
            f"  {'':{width}}  {'private':>12}  {'exact':>12}",
        ]
        lines += [f"  {name:{width}}  {p:12.4f}  {e:12.4f}" for name, p, e in rows]
        if left_out:
            lines.append(
                f"  ({_SHARES_SHOWN} largest released shares per attribute; "
                f"{left_out} more in {LOG_NAME})"
            )
    return lines


def _largest_shares(
    rows: list[tuple[str, float, float]], per_attribute: int
) -> list[tuple[str, float, float]]:
    """The ``per_attribute`` largest released shares of each ``attribute=category`` group."""
    groups: dict[str, list[tuple[str, float, float]]] = {}
    for row in rows:
        groups.setdefault(row[0].split("=", 1)[0], []).append(row)
    kept: list[tuple[str, float, float]] = []
    for group in groups.values():
        kept += sorted(group, key=lambda r: -r[1])[:per_attribute]
    return kept


def _fmt(value: float | None, spec: str) -> str:
    width = int(spec.split(".")[0])
    return f"{'—':>{width}}" if value is None else format(value, spec)


def _table_lines(report: DemoReport, parts: int, full: bool) -> list[str]:
    budget = _part_budget([t.guarantee for t in report.tables])
    n = report.tables[0].n_rows
    lines = [
        f"Part 2 of {parts}: private tables ({budget}), each of a random 2/3 of Adult "
        f"({n:,} rows);",
        "the other 1/3 is held out to measure their utility",
        "",
    ]
    for table in report.tables:
        indices = ", ".join(map(str, table.ledger_indices))
        where = table.path.name if table.path.parent == report.run_dir else str(table.path)
        lines.append(f"[ledger {indices}] {table.method} -> {where}")
        lines += _guarantee_lines(table.guarantee, full)
    lines += ["", f"  {'release (ε = 1 each)':30}  {'MSE':>8}  {'accuracy':>8}   {'AUC':>6}"]
    floor = report.reference.get("majority class", {})
    marked = False
    for name, u in [(t.method, t.utility) for t in report.tables]:
        below = _below(u, floor)
        marked = marked or any(below.values())
        lines.append(_utility_row(name, u, below))
    for name, u in report.reference.items():
        lines.append(_utility_row(name, u, {}))
    lines += [
        "  (MSE on the [0, 1]-encoded table, row-aligned releases only; accuracy and AUC of an",
        "   LDA classifier trained on the release and tested on the held-out original rows)",
    ]
    if marked:
        lines += [
            "  * below the majority class: trained on that release, the classifier does worse than",
            "    always answering the commonest class (accuracy) or ranks worse than chance (AUC",
            "    0.5): that release is unfit for this use",
        ]
    return [*lines, "", *_TABLE_ADVICE]


#: Which of part 2's methods to use, and for what (the rest are there to compare).
_TABLE_ADVICE = (
    "  Which to use: for a table to share or analyse, the synthesizer (ppdp publish synth);",
    "  DP-PCA and DP-LDA (Jiang et al. 2013) and their baselines LAP and EXP are research",
    "  methods shown to compare with that paper, not recommended for a release. For counts",
    "  and means per group: ppdp publish groupby; for a classifier: part 3.",
)


def _below(utility: dict[str, float | None], floor: dict[str, float | None]) -> dict[str, bool]:
    """Which of a release's accuracy and AUC lie below the majority class's (``floor``)."""
    return {
        key: utility.get(key) is not None
        and floor.get(key) is not None
        and utility[key] < floor[key]  # type: ignore[operator]
        for key in ("accuracy", "auc")
    }


def _utility_row(name: str, u: dict[str, float | None], below: dict[str, bool]) -> str:
    """One row of part 2's utility table, ``*`` after a score below the majority class."""

    def mark(key: str) -> str:
        return "*" if below.get(key) else " "

    return (
        f"  {name:30}  {_fmt(u.get('mse'), '8.4f')}  {_fmt(u.get('accuracy'), '8.3f')}"
        f"{mark('accuracy')}  {_fmt(u.get('auc'), '6.3f')}{mark('auc')}"
    ).rstrip()


def _model_lines(report: DemoReport, parts: int, full: bool) -> list[str]:
    budget = _part_budget([m.guarantee for m in report.models])
    lines = [
        f"Part 3 of {parts}: private models ({budget}), trained on the same 2/3, "
        "tested on the rest",
        "",
    ]
    for model in report.models:
        indices = ", ".join(map(str, model.ledger_indices))
        where = ""
        if model.path is not None:
            name = model.path.name if model.path.parent == report.run_dir else str(model.path)
            where = f" -> {name}"
        lines.append(f"[ledger {indices}] {model.method}{where}")
        lines += _guarantee_lines(model.guarantee, full)
    lines += ["", f"  {'model':38}  {'accuracy':>8}  {'AUC':>6}"]
    rows = []
    for m in report.models:
        rows.append((m.method + f" (ε = {m.guarantee.epsilon:g})", m.utility))
        rows += [(f"  {use}", u) for use, u in m.other_uses.items()]
    rows += list(report.model_reference.items())
    for name, u in rows:
        lines.append(
            f"  {name:38}  {_fmt(u.get('accuracy'), '8.3f')}  {_fmt(u.get('auc'), '6.3f')}"
        )
    lines += [
        "  (LDA-DP: the LDA rule built from the released noisy class means and scatter alone;",
        "   below it, a classifier trained on the released noisy projections of the rows:",
        "   per-row Laplace noise of scale 2/ε₃ on values of size at most 1 leaves its",
        "   threshold near the majority class; both rank held-out rows by the released",
        "   direction, hence the same AUC)",
    ]
    return lines


def _closing_lines(report: DemoReport, full: bool) -> list[str]:
    ledger = report.ledger_path
    left = remaining_text(report.remaining, report.total)
    lines = [f"Budget left: {left} of {report.total}."]
    if report.refused:
        refused = report.refused if full else report.refused.split(" Query what remains")[0]
        lines.append("A request for more than remains was refused before touching the data:")
        lines += textwrap.wrap(refused, width=_WIDTH, initial_indent="  ", subsequent_indent="  ")
    lines += [
        f"  check the ledger: ppdp ledger verify {ledger}",
        f"  see the spends:   ppdp budget show {ledger}",
        "",
        "Next, on your own table data.csv:",
        "  ppdp schema draft data.csv --label LABEL -o schema.json   # then review it (bounds "
        "read from the data leak) and delete 'draft: true'",
        "  ppdp budget init budget.db --dataset-id mydata --epsilon 1 --delta 1e-6",
        "  ppdp publish synth data.csv --schema schema.json --epsilon 1 --ledger budget.db \\",
        "      -o synthetic.csv",
        "  ppdp report synthetic.csv --original data.csv --schema schema.json -o report.html"
        "   # what it is worth (for you only)",
    ]
    if report.log_path is not None:
        lines += ["", f"Full log (every guarantee in full, every table): {report.log_path}"]
    return lines


def _release_all(
    acct: Accountant, df: pd.DataFrame, schema: Schema, ledger_path: Path, source: RandomSource
) -> DemoReport:
    seeded = not source.is_secure
    n = len(df)  # public under replace-one
    relation = Neighbouring.REPLACE_ONE
    classes = schema.classes or ()
    numeric = [c for c in schema.numeric_columns]
    categorical = [c for c in schema.categorical_columns]

    n_dummies = sum(len(c.categories) for c in categorical)
    # Per-coordinate slack for float rounding in the sums of [0, 1] entries (n is public).
    rounding = 2.0 * float_sum_error_bound(n, max_term=1.0)
    counts_mech = LaplaceMechanism(
        epsilon=_EPS_COUNTS, sensitivity=2.0, dimension=len(classes), relation=relation
    )
    means_mech = LaplaceMechanism(
        epsilon=_EPS_MEANS,
        sensitivity=len(numeric) * (1.0 + rounding),
        dimension=len(numeric),
        relation=relation,
    )
    shares_mech = GaussianMechanism(
        epsilon=_EPS_SHARES,
        delta=_DELTA_SHARES,
        sensitivity=math.sqrt(2.0 * len(categorical)) + math.sqrt(n_dummies) * rounding,
        dimension=n_dummies,
        relation=relation,
    )

    plan = (
        (counts_mech, "income histogram"),
        (means_mech, "numeric means"),
        (shares_mech, "category shares"),
    )
    charges = [Charge(m.event, m.name, {"query": q}) for m, q in plan]
    # 1. Can the whole plan be afforded? Refused here, the data are never read.
    check_charges(acct, charges, mechanism="demo releases")
    # 2. Validate the data: an error here costs no budget.
    X, y = schema.encode(df)
    # 3. Record every spend durably (typed events); only then compute and release.
    spends = charge(
        acct,
        charges,
        seeded=seeded,
        allow_seeded=seeded,  # the demo's own fresh ledger: stated, and recorded
    )
    stats = SufficientStats.compute(X, y, n_classes=len(classes))

    releases = []
    noisy_counts = counts_mech.randomise(stats.class_counts.astype(float), random_state=source)
    releases.append(
        DemoRelease(
            "Income classes (count of rows)",
            tuple(
                (str(c), float(v), float(t))
                for c, v, t in zip(classes, noisy_counts, stats.class_counts, strict=True)
            ),
            counts_mech.guarantee,
            spends[0].index,
        )
    )

    num_idx = [schema.blocks[c.name].start for c in numeric]
    noisy_sums = means_mech.randomise(stats.sum_x[num_idx], random_state=source)
    rows = []
    for col, noisy_sum, exact_sum in zip(numeric, noisy_sums, stats.sum_x[num_idx], strict=True):
        span = col.upper - col.lower
        noisy_mean = col.lower + span * float(np.clip(noisy_sum / n, 0.0, 1.0))
        rows.append((col.name, noisy_mean, col.lower + span * float(exact_sum) / n))
    releases.append(
        DemoRelease("Numeric attributes (mean)", tuple(rows), means_mech.guarantee, spends[1].index)
    )

    cat_idx = np.concatenate(
        [np.arange(schema.blocks[c.name].start, schema.blocks[c.name].stop) for c in categorical]
    )
    noisy_cat = shares_mech.randomise(stats.sum_x[cat_idx], random_state=source)
    rows = []
    names = [schema.feature_names[i] for i in cat_idx]
    for name, noisy_sum, exact_sum in zip(names, noisy_cat, stats.sum_x[cat_idx], strict=True):
        rows.append((name, float(np.clip(noisy_sum / n, 0.0, 1.0)), float(exact_sum) / n))
    releases.append(
        DemoRelease(
            "Categorical attributes (share of rows)",
            tuple(rows),
            shares_mech.guarantee,
            spends[2].index,
        )
    )

    return DemoReport(
        ledger_path=ledger_path,
        n_rows=n,
        releases=tuple(releases),
        tables=(),
        reference={},
        total=acct.total,
        remaining=acct.remaining,
        refused="",
        seeded=seeded,
    )


def _release_tables(
    acct: Accountant, df: pd.DataFrame, schema: Schema, run_dir: Path, source: RandomSource
) -> tuple[tuple[DemoTable, ...], dict[str, dict[str, float | None]]]:
    """Part 2: five releases of a 2/3 split of Adult, each at ε = 1, and their utility."""
    from ppdp.evaluate import mse
    from ppdp.publish import (
        DPLDASynthesizer,
        DPPCAPublisher,
        ExponentialPublisher,
        LaplacePublisher,
        TableSynthesizer,
    )

    train, test = _split(df)
    original, _ = schema.encode(train, include_label=True)
    synth = TableSynthesizer(_EPS_TABLE, schema, delta=_DELTA_SYNTH, random_state=source)
    publishers = (
        ("synthesizer", synth),
        ("DP-PCA", DPPCAPublisher(_EPS_TABLE, _PCA_COMPONENTS, schema, random_state=source)),
        ("DP-LDA", DPLDASynthesizer(_EPS_TABLE, schema, random_state=source, class_sizes="noisy")),
        ("LAP", LaplacePublisher(_EPS_TABLE, schema, random_state=source)),
        ("EXP", ExponentialPublisher(_EPS_TABLE, schema, random_state=source)),
    )
    made = []
    seeded = not source.is_secure
    for method, publisher in publishers:
        publisher.fit(train, accountant=acct, allow_seeded=seeded)
        release = publisher.release_
        assert release.data is not None
        path = run_dir / f"adult-{method.lower()}.csv"
        with atomic_path(path) as tmp:
            release.data.to_csv(tmp, index=False)
        utility: dict[str, float | None] = {"mse": None}
        if method not in ("DP-LDA", "synthesizer"):  # synthetic rows are not row-aligned
            encoded, _ = schema.encode(release.data, include_label=True)
            utility["mse"] = mse(original, encoded)
        utility.update(_classifier_utility(release.data, test, schema))
        made.append(
            DemoTable(
                method, path, len(release.data), release.guarantee, release.ledger_indices, utility
            )
        )
    reference = {
        "original data (no privacy)": {"mse": 0.0, **_classifier_utility(train, test, schema)},
        "majority class": _majority_utility(train, test, schema),
    }
    return tuple(made), reference


def _classifier_utility(
    release: pd.DataFrame, test: pd.DataFrame, schema: Schema
) -> dict[str, float | None]:
    """Accuracy and AUC of LDA trained on ``release``, tested on ``test`` (None without sklearn)."""
    from ppdp.evaluate import classification_utility
    from ppdp.exceptions import OptionalDependencyError

    try:
        scores = classification_utility(release, test, schema, classifier="lda")
    except OptionalDependencyError:
        return {"accuracy": None, "auc": None}
    return {"accuracy": scores["accuracy"], "auc": scores["auc"]}


def _majority_utility(
    train: pd.DataFrame, test: pd.DataFrame, schema: Schema
) -> dict[str, float | None]:
    from ppdp.evaluate import lowest_achievable

    scores = lowest_achievable(train, test, schema)
    return {"mse": None, "accuracy": scores["accuracy"], "auc": scores["auc"]}


def _split(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The fixed public 2/3 (released) and 1/3 (held out) split of parts 2 and 3."""
    order = np.random.default_rng(_SPLIT_SEED).permutation(len(df))
    cut = (2 * len(df)) // 3
    return (
        df.iloc[order[:cut]].reset_index(drop=True),
        df.iloc[order[cut:]].reset_index(drop=True),
    )


def _release_models(
    acct: Accountant, df: pd.DataFrame, schema: Schema, run_dir: Path, source: RandomSource
) -> tuple[tuple[DemoModel, ...], dict[str, dict[str, float | None]]]:
    """Part 3: LDA-DP projections and a private logistic regression, with their references."""
    from ppdp.publish import LDAProjectionPublisher

    train, test = _split(df)
    label = schema.label
    assert label is not None
    # The split's class counts are declared public (replace-one with public counts).
    counts = [int((train[label.name] == c).sum()) for c in label.classes]
    publisher = LDAProjectionPublisher(
        _EPS_MODEL, _DELTA_LDA, schema, class_counts=counts, random_state=source
    )
    seeded = not source.is_secure
    with warnings.catch_warnings():
        # The demo releases the noisy projections at ε = 1 on purpose, to show how little
        # they keep; its table says so (see _model_lines), so the warning would only repeat it.
        warnings.simplefilter("ignore", LowUtilityWarning)
        publisher.fit(train, accountant=acct, allow_seeded=seeded)
    release = publisher.release_
    assert release.data is not None
    path = run_dir / "adult-lda-dp-projections.csv"
    with atomic_path(path) as tmp:
        release.data.to_csv(tmp, index=False)
    X_train, y_train = schema.encode(train)  # the evaluation's copy; the release encoded its own
    X_test, y_test = schema.encode(test)
    scores = publisher.decision_function(test)  # the LDA rule from the released statistics
    lda = DemoModel(
        "LDA-DP",
        release.guarantee,
        release.ledger_indices,
        _scores(scores, (scores > 0).astype(int), y_test),  # two classes: shape (n,)
        path,
        {
            "classifier on the noisy projections": _scores_1d(
                release.data.to_numpy(), y_train, publisher.transform(test), y_test
            )
        },
    )
    models = [lda]
    reference: dict[str, dict[str, float | None]] = {}
    try:
        from ppdp.learn import PrivateLogisticRegression
    except ImportError:  # the learn extra is missing: part 3 shows LDA-DP only
        return tuple(models), reference
    norm = schema.max_row_l2_norm
    private = PrivateLogisticRegression(
        epsilon=_EPS_MODEL, data_norm=norm, perturbation="objective", random_state=source
    )
    private.fit(X_train, y_train, accountant=acct, allow_seeded=seeded)
    models.append(
        DemoModel(
            "private logistic regression",
            private.guarantee_,
            tuple(private.ledger_indices_),
            _scores(private.decision_function(X_test), private.predict(X_test), y_test),
        )
    )
    reference.update(_nonprivate_models(X_train, y_train, X_test, y_test))
    return tuple(models), reference


def _scores(
    score: np.ndarray, predicted: np.ndarray, y_test: np.ndarray
) -> dict[str, float | None]:
    from sklearn.metrics import roc_auc_score

    return {
        "accuracy": float(np.mean(predicted == y_test)),
        "auc": float(roc_auc_score(y_test, score)),
    }


def _scores_1d(
    z_train: np.ndarray, y_train: np.ndarray, z_test: np.ndarray, y_test: np.ndarray
) -> dict[str, float | None]:
    """A linear classifier on released projections, tested on held-out projections."""
    try:
        from sklearn.linear_model import LogisticRegression
    except ImportError:
        return {"accuracy": None, "auc": None}
    clf = LogisticRegression().fit(z_train, y_train)
    return _scores(clf.decision_function(z_test), clf.predict(z_test), y_test)


def _nonprivate_models(
    X_train: np.ndarray, y_train: np.ndarray, X_test: np.ndarray, y_test: np.ndarray
) -> dict[str, dict[str, float | None]]:
    """Non-private logistic regression and Fisher LDA on the same rows (the reference)."""
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.linear_model import LogisticRegression

    logistic = LogisticRegression(max_iter=1000).fit(X_train, y_train)
    lda = LinearDiscriminantAnalysis().fit(X_train, y_train)
    z_train, z_test = lda.transform(X_train), lda.transform(X_test)
    return {
        "Fisher LDA projections (no privacy)": _scores_1d(z_train, y_train, z_test, y_test),
        "logistic regression (no privacy)": _scores(
            logistic.decision_function(X_test), logistic.predict(X_test), y_test
        ),
    }
