"""The catalogue of data-dependent outputs (DESIGN.md contract 8, issue 29).

For every registered publisher and learner (read from :mod:`ppdp.registry`, so a new one
fails :func:`test_every_registered_estimator_is_catalogued` until it has cases here), two
neighbouring tables under the estimator's relation — replace-one: row 0 replaced by an
extreme row; add/remove: the extreme row added — are fitted with the same seed at the
caller's worst parameters (small ε, the smallest and largest values the estimator admits),
in the accountant's default mode (the extreme row valid, its values far outside the
declared bounds) and in mask mode (``on_invalid="mask"``, the analyst-facing total mode:
the extreme row's values invalid — missing, undeclared). Everything the caller sees but the
noisy values must be the same on both tables:

- the outcome: released, or the exception's type and message;
- the warnings (category and message), but those computed from the noisy release alone,
  which end in :data:`POST_PROCESSING` (covered by the proof, like the release);
- the ledger entries, less their times, hashes and indices;
- the release's shape: the columns and dtypes of a published table (and its number of
  rows, unless that number is itself a noisy estimate, ``rows_noisy``), the names of its
  statistics (unless the release chooses them with noise, ``noisy_structure``), its
  guarantee's kind and relation; a learner's fitted attributes with their shapes and dtypes.

Seeded: with one seed the noise draws are the same on both tables, so any difference comes
from the data; nothing here is random beyond that, so the catalogue cannot pass or fail by
chance. It extends mask mode's own checks (``tests/data/test_data_encoding.py``), which
compare the encoded tables only.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pytest

from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget
from ppdp.data import Schema
from ppdp.registry import LEARNERS, PUBLISHERS

#: A warning computed from the noisy release alone ends so (post-processing: it may differ
#: between neighbours as the release does).
POST_PROCESSING = "(read from the noisy tables: no privacy cost)"
#: Warnings that say something about the call, not the data (seeded noise, no accountant).
IGNORED = ("InsecureRandomnessWarning", "UnaccountedFitWarning")
N = 40
SEED = 7


def schema(counts: tuple[int, int] = (N // 2, N // 2)) -> Schema:
    """Two numeric columns (one log-scaled), two categorical ones, a binary label whose
    class sizes are declared public (LDA-DP and lda-synth's ``class_sizes="public"``)."""
    return Schema.from_dict(
        {
            "columns": [
                {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
                {"name": "income", "type": "numeric", "lower": 1, "upper": 1e6, "scale": "log"},
                {"name": "sex", "type": "categorical", "categories": ["F", "M"]},
                {"name": "dx", "type": "categorical", "categories": ["flu", "hiv", "none"]},
            ],
            "label": {"name": "y", "classes": ["no", "yes"], "public_counts": list(counts)},
        }
    )


def table(n: int) -> pd.DataFrame:
    """``n`` ordinary rows, classes alternating (so ``n // 2`` of each for an even ``n``)."""
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "age": rng.uniform(20, 60, n),
            "income": 10 ** rng.uniform(1, 5, n),
            "sex": rng.choice(["F", "M"], n),
            "dx": rng.choice(["flu", "none"], n),
            "y": np.array(["no", "yes"])[np.arange(n) % 2],
        }
    )


def extreme_row(label: str, mode: str) -> dict[str, Any]:
    """The row the attacker varies: values far outside the bounds (clipped) in the default
    mode, invalid values (missing, undeclared) in mask mode, where they must not raise."""
    if mode == "mask":
        return {"age": np.nan, "income": -1.0, "sex": None, "dx": "zzz", "y": label}
    return {"age": 1e12, "income": 1e300, "sex": "M", "dx": "hiv", "y": label}


@dataclass(frozen=True)
class Case:
    """One estimator at one set of parameters.

    Attributes
    ----------
    name : str
        The registry name.
    id : str
        What the parameters are.
    params : dict
        Constructor parameters (besides ``schema``, ``random_state``).
    relation : str
        The estimator's (and the ledger's) neighbouring relation.
    n : int
        Rows of the smaller table.
    keep_label : bool
        The replaced row keeps its class (the estimator treats class sizes as public:
        neighbours under its relation never change them).
    rows_noisy : bool
        The released table's row count is a noisy estimate (not compared).
    noisy_structure : bool
        The release's statistics are chosen with noise (their names are not compared).
    xfail : str
        Why this case is expected to fail (strict), for the lead to flip once fixed.
    xfail_modes : tuple of str
        The modes in which it is expected to fail.
    valid_row : bool
        The varied row is the valid extreme row in mask mode too (an analyst may vary a
        valid row in either mode; the invalid one is the default there).
    custodian_note : str
        A value-dependent warning meant for the custodian: not compared in the default mode
        (whose caller is the custodian), compared — so absent — in mask mode.
    """

    name: str
    id: str
    params: dict[str, Any] = field(default_factory=dict)
    relation: str = "replace-one"
    n: int = N
    keep_label: bool = False
    rows_noisy: bool = False
    noisy_structure: bool = False
    xfail: str = ""
    xfail_modes: tuple[str, ...] = ("raise", "mask")
    valid_row: bool = False
    custodian_note: str = ""


#: HybridRBFSVM's overlap check says whether a public row is among the private rows: in the
#: default mode the caller is the custodian (docs/guide.md, "Who sees what") and is warned;
#: in mask mode it goes to the custodian's log only, and the catalogue checks that.
OVERLAP = "public rows are identical to private training rows"
#: The caller's tol that sits between the two neighbours' gradient norms after the
#: caller's Newton steps (found by sweeping tol over np.geomspace(1e-9, 0.1, 33) for these
#: tables): one neighbour certifies, the other is refused.
TOL_BETWEEN_LOGREG = float(np.geomspace(1e-9, 1e-1, 33)[26])
TOL_BETWEEN_SVM = 0.1
_AR = {"relation": "add/remove"}


def _synth(case_id: str, relation: str = "add/remove", n: int = N, **params: Any) -> Case:
    noisy = params.get("method", "auto") != "pairs"
    params = {"delta": 1e-6, **params, "relation": relation}
    return Case("synth", case_id, params, relation, n, rows_noisy=relation == "add/remove",
                noisy_structure=noisy)  # fmt: skip


#: Every registered estimator's cases: the default, the smallest ε and the extremes of
#: the parameters it admits that change what it does.
CASES: dict[str, list[Case]] = {
    "pca": [
        Case("pca", "default", {"epsilon": 1.0, "n_components": 2}),
        Case("pca", "small-eps-all-components", {"epsilon": 0.01, "n_components": 8}),
        Case("pca", "no-clamp", {"epsilon": 1.0, "n_components": 1, "clamp": False}),
    ],
    "lda-synth": [
        Case("lda-synth", "noisy-sizes", {"epsilon": 1.0}),
        Case("lda-synth", "small-eps-tiny-share", {"epsilon": 0.01, "count_share": 1e-3}),
        Case(
            "lda-synth", "public-sizes", {"epsilon": 1.0, "class_sizes": "public"}, keep_label=True
        ),
    ],
    "lda-projection": [
        Case("lda-projection", "projections", {"epsilon": 1.0, "delta": 1e-6}, keep_label=True),
        Case(
            "lda-projection",
            "small-eps-direction-big-delta",
            {"epsilon": 0.01, "delta": 0.5, "release": "direction"},
            keep_label=True,
        ),
        Case(
            "lda-projection",
            "paper-huge-ridge",
            {
                "epsilon": 1.0,
                "delta": 1e-6,
                "calibration": "paper",
                "ridge": 1e6,
                "mean_share": 0.999,
            },
            keep_label=True,
        ),
    ],
    "laplace": [
        Case("laplace", "default", {"epsilon": 1.0}),
        Case("laplace", "small-eps", {"epsilon": 0.01}),
    ],
    "exponential": [
        Case("exponential", "default", {"epsilon": 1.0}),
        Case("exponential", "small-eps", {"epsilon": 0.01}),
    ],
    "synth": [
        _synth("replace-one", relation="replace-one", epsilon=1.0),
        _synth("add-remove", epsilon=1.0),
        _synth("add-remove-small-eps-big-delta", epsilon=0.05, delta=0.5, method="pairs", n_bins=2),
        _synth("add-remove-quantiles", epsilon=1.0, binning="private-quantiles", method="chow-liu"),
        _synth("replace-one-sub-bins", relation="replace-one", epsilon=1.0, decode="sub-bins"),
        _synth("add-remove-empty", n=0, epsilon=1.0),
        _synth("add-remove-one-row-many-bins", n=1, epsilon=1.0, method="tree", n_bins=64),
        _synth("add-remove-keep", epsilon=1.0, method="tree", keep="age:income,sex:dx"),
        _synth(
            "replace-one-keep-whole-tree",
            relation="replace-one",
            epsilon=1.0,
            method="chow-liu",
            keep="age:y,income:y,sex:y,dx:y",
        ),
    ],
    "groupby": [
        Case("groupby", "replace-one", {"epsilon": 1.0, "by": ["sex", "dx"], "means": ["age"]}),
        Case(
            "groupby",
            "add-remove",
            {"epsilon": 1.0, "by": ["dx", "y"], "means": ["age", "income"], **_AR},
            "add/remove",
        ),
        Case(
            "groupby",
            "add-remove-small-eps-tiny-share",
            {"epsilon": 1e-3, "by": ["dx"], "means": ["income"], "count_share": 1e-3, **_AR},
            "add/remove",
        ),
        Case(
            "groupby",
            "add-remove-empty",
            {"epsilon": 1.0, "by": ["dx"], "means": ["age"], **_AR},
            "add/remove",
            n=0,
        ),
        Case(
            "groupby",
            "add-remove-one-row",
            {"epsilon": 1.0, "means": ["age"], **_AR},
            "add/remove",
            n=1,
        ),
    ],
    "logreg": [
        Case("logreg", "default", {"epsilon": 1.0}),
        Case("logreg", "small-eps-output", {"epsilon": 0.01, "perturbation": "output"}),
        Case("logreg", "huge-regularization", {"epsilon": 1.0, "regularization": 1e3}),
        Case("logreg", "tiny-regularization", {"epsilon": 1.0, "regularization": 1e-6}),
        Case("logreg", "tuning", {"epsilon": 1.0, "tuning": (1e-4, 1e-2, 1.0)}),
        Case("logreg", "max-iter-2-objective", {"epsilon": 1.0, "max_iter": 2}),
        Case(
            "logreg",
            "max-iter-1-output-tol-between",
            {"epsilon": 1.0, "perturbation": "output", "max_iter": 1, "tol": TOL_BETWEEN_LOGREG},
        ),
    ],
    "svm": [
        Case("svm", "default", {"epsilon": 1.0}),
        Case("svm", "small-eps-tiny-huber", {"epsilon": 0.01, "huber_h": 1e-3}),
        Case("svm", "output-loose-tol", {"epsilon": 1.0, "perturbation": "output", "tol": 1e-2}),
        Case("svm", "max-iter-1", {"epsilon": 1.0, "max_iter": 1}),
        Case(
            "svm",
            "max-iter-2-output-tol-between",
            {"epsilon": 1.0, "perturbation": "output", "max_iter": 2, "tol": TOL_BETWEEN_SVM},
        ),
    ],
    "rbf-svm": [
        Case("rbf-svm", "default", {"epsilon": 1.0, "n_components": 10}),
        Case("rbf-svm", "small-eps", {"epsilon": 0.01, "n_components": 10, "gamma": 100.0}),
        Case(
            "rbf-svm",
            "private-tuning",
            {
                "epsilon": 1.0,
                "n_components": 10,
                "tuning": "private",
                "param_grid": {"C": [0.1, 10.0]},
            },
        ),
        Case(
            "rbf-svm",
            "huge-C-tiny-huber",
            {"epsilon": 1.0, "n_components": 10, "C": 1e4, "huber_h": 1e-4},
        ),
    ],
    "hybrid-svm": [
        Case(
            "hybrid-svm",
            "default",
            {"epsilon": 1.0, "n_components": 6, "rho_max_iter": 5},
            custodian_note=OVERLAP,
            valid_row=True,
        ),
        Case(
            "hybrid-svm",
            "small-eps-public-tuning",
            {
                "epsilon": 0.01,
                "n_components": 6,
                "rho_max_iter": 5,
                "tuning": "public",
                "param_grid": {"C": [0.1, 10.0]},
            },
            custodian_note=OVERLAP,
            valid_row=True,
        ),
        Case(
            "hybrid-svm",
            "no-overlap-check",
            {"epsilon": 1.0, "n_components": 6, "rho_max_iter": 5, "check_overlap": False},
            valid_row=True,
        ),
    ],
}


def neighbours(case: Case, mode: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The two tables: ``table(n)`` and, under replace-one, row 0 replaced by the extreme
    row; under add/remove, the extreme row added."""
    base = table(case.n)
    mode = "raise" if case.valid_row else mode
    if case.relation == "add/remove":
        row = extreme_row("yes", mode)
        return base, pd.concat([base, pd.DataFrame([row])], ignore_index=True)
    first = str(base.loc[0, "y"])
    label = first if case.keep_label else {"no": "yes", "yes": "no"}[first]
    other = base.astype({"age": float, "income": float, "sex": object, "dx": object})
    other.loc[0] = pd.Series(extreme_row(label, mode))
    return base, other


def public_rows() -> pd.DataFrame:
    """The hybrid SVM's public rows: the extreme row among ordinary ones (a public row equal
    to a private one is what its overlap check looks for)."""
    rows = table(12).drop(columns="y")
    rows.loc[0] = pd.Series(extreme_row("yes", "raise")).drop("y")
    return rows


def estimator(case: Case) -> Any:
    cls = (PUBLISHERS if case.name in PUBLISHERS else LEARNERS).load(case.name)
    params = {**case.params, "schema": schema(), "random_state": SEED}
    if case.name == "hybrid-svm":
        params["public_X"] = public_rows()
        params["public_y"] = np.array(["no", "yes"] * 6)
        params["feature_random_state"] = 1
    if case.name == "rbf-svm":
        params["feature_random_state"] = 1
    if case.name in LEARNERS:
        return cls(**params)
    eps = params.pop("epsilon")
    if case.name == "pca":
        return cls(eps, params.pop("n_components"), params.pop("schema"), **params)
    if case.name == "lda-projection":
        return cls(eps, params.pop("delta"), params.pop("schema"), **params)
    return cls(eps, params.pop("schema"), **params)


def shape_of(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return ("array", value.shape, str(value.dtype))
    if isinstance(value, pd.DataFrame):
        return ("frame", [(c, str(t)) for c, t in value.dtypes.items()])
    return type(value).__name__


def release_shape(case: Case, fitted: Any) -> dict[str, Any]:
    """What the release looks like, without its noisy values."""
    if case.name in LEARNERS:
        names = sorted(k for k in vars(fitted) if k.endswith("_") and not k.startswith("_"))
        return {k: shape_of(getattr(fitted, k)) for k in names}
    release = fitted.release_
    seen: dict[str, Any] = {
        "guarantee": (release.guarantee.kind, release.guarantee.relation),
        "columns": None if release.data is None else shape_of(release.data),
    }
    if not case.rows_noisy:
        seen["rows"] = None if release.data is None else len(release.data)
        seen["encoded"] = None if release.encoded is None else release.encoded.shape
    if not case.noisy_structure:
        seen["statistics"] = {k: np.shape(v) for k, v in release.statistics.items()}
    return seen


def observe(case: Case, df: pd.DataFrame, mode: str) -> dict[str, Any]:
    """Everything the caller of one fit sees but the noisy values."""
    acct = Accountant.in_memory(total=PrivacyBudget(50.0, 0.9), relation=case.relation)
    acct.on_invalid = mode
    est = estimator(case)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            est.fit(df, accountant=acct, allow_seeded=True)
            outcome: Any = release_shape(case, est)
        except Exception as exc:  # whatever comes out is compared
            outcome = (type(exc).__name__, str(exc))
    said = [
        (w.category.__name__, str(w.message))
        for w in caught
        if w.category.__name__ not in IGNORED
        and not str(w.message).endswith(POST_PROCESSING)
        and not (mode == "raise" and case.custodian_note and case.custodian_note in str(w.message))
    ]
    ledger = [
        (r.mechanism, r.budget, r.relation, r.seeded, r.details, r.event) for r in acct.history()
    ]
    return {"outcome": outcome, "warnings": said, "ledger": ledger}


def _params() -> list[Any]:
    out = []
    for cases in CASES.values():
        for case in cases:
            for mode in ("raise", "mask"):
                failing = case.xfail and mode in case.xfail_modes
                marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if failing else []
                out.append(
                    pytest.param(case, mode, id=f"{case.name}-{case.id}-{mode}", marks=marks)
                )
    return out


def test_every_registered_estimator_is_catalogued() -> None:
    """A new publisher or learner needs its cases here before it ships."""
    assert set(CASES) == set(PUBLISHERS.names()) | set(LEARNERS.names())


@pytest.mark.parametrize(("case", "mode"), _params())
def test_neighbours_see_the_same_outputs_but_the_noisy_values(case: Case, mode: str) -> None:
    small, large = neighbours(case, mode)
    first, second = observe(case, small, mode), observe(case, large, mode)
    assert first == second
