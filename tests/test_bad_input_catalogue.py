"""RELIABILITY.md (c), the bad-input catalogue: one test per row that applies to the foundation,
then the "Bad input" sections of issues 4, 5 and 7 through their public entry points.

Each test runs the public path a user would run (schema → accountant → mechanism) and
checks both halves of the contract: the error is one clear message naming the parameter
(never a private value), and nothing was charged for a release that did not happen.
The second half covers LDA-DP (``LDAProjectionPublisher``), Mul-LDA-DP (``simulate_round``),
the private classifiers (``ppdp.learn``), local perturbation (``ppdp.local`` and its
collector) and their commands (``ppdp publish lda-projection``, ``ppdp train``/``predict``,
``ppdp federate``, ``ppdp local``): on the command line a bad input exits with status 2 and
one stderr line, with no traceback, no output file and nothing charged in the ledger. The
deeper per-module cases (covariance PSD, Markov chains, the HTTP faults) stay with their
modules' tests.
"""

from __future__ import annotations

import math
import os
import warnings

import numpy as np
import pandas as pd
import pytest

from ppdp import PrivacyBudget
from ppdp.accounting import Accountant, budget_report
from ppdp.data import Schema
from ppdp.data.stats import SufficientStats
from ppdp.exceptions import (
    BudgetExceededError,
    DataValidationError,
    LowUtilityWarning,
    ParameterError,
    PPDPError,
    PrivacyLeakWarning,
    SchemaError,
)
from ppdp.mechanisms import ExponentialMechanism, GaussianMechanism, LaplaceMechanism
from ppdp.publish import LDAProjectionPublisher

SECRET = 123456.789  # a private value that must never appear in a message

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "income", "type": "numeric", "lower": 0, "upper": 100},
            {"name": "region", "type": "categorical", "categories": ["n", "s"]},
        ],
        "label": {"name": "sick", "classes": ["no", "yes"]},
    }
)


def _release(acct: Accountant, df: pd.DataFrame) -> float:
    """The release order every ppdp pipeline follows: check, validate, spend, release."""
    mech = LaplaceMechanism(epsilon=0.5, sensitivity=1.0)
    acct.check(mech.budget)
    X, _ = SCHEMA.encode(df)
    acct.spend(mech.budget, mechanism=mech.name, **mech.ledger_details())
    return float(mech.randomise(float(X[:, 0].sum()), random_state=0))


def _frame(income: list[object], region: list[str], sick: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"income": income, "region": region, "sick": sick})


@pytest.fixture
def acct() -> Accountant:
    with Accountant.in_memory(total=PrivacyBudget(1.0)) as a:
        yield a


def test_value_outside_bounds_is_clipped_and_counted_never_printed(caplog):
    df = _frame([SECRET, -5.0, 50.0], ["n", "s", "n"], ["no", "yes", "no"])
    with caplog.at_level("DEBUG", logger="ppdp.custodian"):
        X, _, report = SCHEMA.encode(df, return_report=True)
    assert X[:, 0].tolist() == [1.0, 0.0, 0.5]  # clipped to the declared bounds
    assert report.clipped["income"] == 2
    assert "123456" not in caplog.text and "123456" not in repr(report)


@pytest.mark.parametrize(
    "column",
    [
        {"name": "x", "type": "numeric", "lower": 5, "upper": 5},
        {"name": "x", "type": "numeric", "lower": 5, "upper": 1},
        {"name": "x", "type": "numeric", "lower": -math.inf, "upper": 1},
        {"name": "x", "type": "numeric", "lower": 0, "upper": math.nan},
        {"name": "x", "type": "numeric", "upper": 1},
    ],
)
def test_missing_or_bad_bounds_fail_at_construction(column):
    with pytest.raises(SchemaError, match="column 'x'"):
        Schema.from_dict({"columns": [column]})


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, None])
def test_nan_or_inf_names_the_column_and_charges_nothing(acct, bad):
    df = _frame([SECRET, bad], ["n", "s"], ["no", "yes"])
    with pytest.raises(DataValidationError, match="column 'income'") as info:
        _release(acct, df)
    assert "123456" not in str(info.value)
    assert acct.spent.is_zero and acct.history() == []


def test_empty_declared_class_keeps_its_slot():
    df = _frame([1.0, 2.0], ["n", "s"], ["no", "no"])  # class "yes" absent
    X, y = SCHEMA.encode(df)
    stats = SufficientStats.compute(X, y, n_classes=SCHEMA.n_classes)
    assert stats.class_counts.tolist() == [2, 0]
    assert stats.class_sum_x.shape == (2, X.shape[1])
    assert not stats.class_sum_x[1].any()


def test_undeclared_category_is_an_error_without_other_bucket(acct):
    df = _frame([1.0, 2.0], ["n", "mars"], ["no", "yes"])
    with pytest.raises(DataValidationError, match="column 'region'") as info:
        _release(acct, df)
    assert "mars" not in str(info.value)  # never reveal (or create) an undeclared key
    assert acct.spent.is_zero


def test_undeclared_category_maps_to_a_declared_other_bucket():
    schema = Schema.from_dict(
        {"columns": [{"name": "r", "type": "categorical", "categories": ["n"], "other": "rest"}]}
    )
    X, _ = schema.encode(pd.DataFrame({"r": ["n", "mars"]}))
    assert schema.feature_names == ("r=n", "r=rest")
    assert X.tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_undeclared_label_is_an_error(acct):
    df = _frame([1.0, 2.0], ["n", "s"], ["no", "maybe"])
    with pytest.raises(DataValidationError, match="sick"):
        _release(acct, df)
    assert acct.spent.is_zero


MECHANISMS = [
    lambda eps: LaplaceMechanism(epsilon=eps, sensitivity=1.0),
    lambda eps: GaussianMechanism(epsilon=eps, delta=1e-6, sensitivity=1.0),
    lambda eps: ExponentialMechanism(epsilon=eps, sensitivity=1.0),
]


@pytest.mark.parametrize("make", MECHANISMS)
@pytest.mark.parametrize("eps", [0.0, -1.0, math.nan, math.inf, True, "1", None])
def test_bad_epsilon_fails_at_construction(make, eps):
    with pytest.raises(PPDPError, match=r"epsilon \(") as info:
        make(eps)
    assert isinstance(info.value, ValueError | TypeError)


@pytest.mark.parametrize("make", MECHANISMS)
def test_large_epsilon_needs_explicit_consent(make):
    with pytest.raises(ParameterError, match="allow_large_epsilon"):
        make(11.0)


def test_noise_scale_underflow_or_overflow_is_refused():
    with pytest.raises(ParameterError, match="noise scale"):
        LaplaceMechanism(epsilon=1.0, sensitivity=1e-320)
    with pytest.raises(ParameterError, match="noise scale"):
        LaplaceMechanism(epsilon=1e-300, sensitivity=1e300)


@pytest.mark.parametrize("delta", [-1e-9, 1.0, 2.0, math.nan, 0.0])
def test_bad_delta_for_gaussian(delta):
    with pytest.raises(ParameterError, match=r"delta \("):
        GaussianMechanism(epsilon=1.0, delta=delta, sensitivity=1.0)


def test_delta_at_least_one_over_n_warns_or_fails_in_strict_mode():
    with pytest.warns(PrivacyLeakWarning, match="1/n"):
        GaussianMechanism(epsilon=1.0, delta=1e-3, sensitivity=1.0, n=1000)
    with pytest.raises(ParameterError, match="1/n"):
        GaussianMechanism(epsilon=1.0, delta=1e-3, sensitivity=1.0, n=1000, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        GaussianMechanism(epsilon=1.0, delta=1e-9, sensitivity=1.0, n=1000)


@pytest.mark.parametrize(
    "X, y",
    [
        (np.ones(5), None),  # 1-D
        (np.array([[0.1, 0.2], [0.3]], dtype=object), None),  # ragged / object
        (np.ones((4, 2)), np.zeros(3, dtype=int)),  # len(y) != len(X)
        (np.array([["a", "b"]]), None),  # strings
    ],
)
def test_wrong_shapes_and_dtypes_are_rejected(X, y):
    with pytest.raises((PPDPError, ValueError, TypeError)):
        SufficientStats.compute(X, y, n_classes=2 if y is not None else None)


@pytest.mark.parametrize(
    "value", [[[SECRET, 2.0], [3.0]], str(SECRET), [SECRET, math.nan], [math.inf, SECRET]]
)
def test_mechanism_rejects_malformed_values_without_printing_them(value):
    mech = LaplaceMechanism(epsilon=1.0, sensitivity=1.0, dimension=2)
    with pytest.raises((DataValidationError, ParameterError)) as info:
        mech.randomise(value, random_state=0)
    assert "123456" not in str(info.value)


def test_request_larger_than_remaining_is_refused_before_the_data_is_read(acct):
    acct.spend(PrivacyBudget(0.75), mechanism="earlier release")

    class Untouchable(pd.DataFrame):
        def __getattribute__(self, name: str) -> object:
            raise AssertionError("the data were read")

    with pytest.raises(BudgetExceededError, match=r"remaining ε=0\.25"):
        _release(acct, Untouchable())
    assert acct.spent == PrivacyBudget(0.75)


# ---------------------------------------------------------------------------------------------
# Later layers: the "Bad input" sections of issues 4 (LDA-DP, Mul-LDA-DP), 5 (private
# classifiers) and 7 (local perturbation), through their public entry points. Library: the
# exception is a PPDPError whose message is one line naming the parameter (and its value when
# the value is public) and nothing was charged. CLI: exit 2, exactly one stderr line, no
# traceback, no output file, nothing charged in the ledger.
# ---------------------------------------------------------------------------------------------

TINY = Schema.from_dict(
    {
        "columns": [
            {"name": "x1", "type": "numeric", "lower": 0, "upper": 10},
            {"name": "x2", "type": "numeric", "lower": 0, "upper": 10},
            {"name": "g", "type": "categorical", "categories": ["a", "b"]},
        ],
        "label": {"name": "cls", "classes": ["no", "yes"]},
    }
)
N_TINY = 120


def _tiny_frame(n: int = N_TINY, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)  # test data, not privacy noise
    x1 = rng.uniform(0, 10, n)
    return pd.DataFrame(
        {
            "x1": x1,
            "x2": rng.uniform(0, 10, n),
            "g": np.where(rng.uniform(size=n) < 0.5, "a", "b"),
            "cls": np.where(x1 + rng.normal(0, 2, n) > 5, "yes", "no"),
        }
    )


def _one_line(message: str, *fragments: str) -> None:
    assert "\n" not in message, message
    assert "Traceback" not in message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    assert "123456" not in message  # SECRET never appears


@pytest.fixture
def acct2() -> Accountant:
    with Accountant.in_memory(total=PrivacyBudget(5.0, 1e-4)) as a:
        yield a


# --- LDA-DP (issue 4): LDAProjectionPublisher --------------------------------------------------

TINY_DF = _tiny_frame()
TINY_COUNTS = [int((TINY_DF["cls"] == c).sum()) for c in ("no", "yes")]

LDA_CASES = [
    ({"epsilon": 0.0}, "epsilon (0.0)"),
    ({"epsilon": math.nan}, "epsilon (nan)"),
    ({"epsilon": 11.0}, "allow_large_epsilon"),
    ({"delta": 0.0}, "delta (0.0)"),
    ({"delta": 1.0}, "delta (1.0)"),
    ({"n_components": 0}, "n_components (0)"),
    ({"n_components": 2}, "n_components (2)"),  # two classes: one direction at most
    ({"calibration": "mod-sulq"}, "calibration ('mod-sulq')"),
    ({"release": "rows"}, "release ('rows')"),
    ({"class_counts": [-1, 5]}, "class_counts (-1)"),
    ({"class_counts": [1, 2]}, "class counts"),  # not this table's public sizes
    ({"projection_share": 0.0}, "projection_share (0"),
    ({"ridge": -1.0}, "ridge (-1.0)"),
    ({"mean_share": 1.5}, "mean_share (1.5)"),
]


# ε = 1 with noisy projections also warns LowUtilityWarning (asserted in
# tests/publish/test_lda_projection.py); here only the refusal matters.
@pytest.mark.filterwarnings("ignore::ppdp.exceptions.LowUtilityWarning")
@pytest.mark.parametrize(("override", "fragment"), LDA_CASES)
def test_lda_projection_bad_parameters_one_line_nothing_spent(acct2, override, fragment):
    kw = {"epsilon": 1.0, "delta": 1e-6, "class_counts": TINY_COUNTS, **override}
    pub = LDAProjectionPublisher(kw.pop("epsilon"), kw.pop("delta"), TINY, **kw)
    with pytest.raises(PPDPError) as info:
        pub.fit(TINY_DF, accountant=acct2)
    _one_line(str(info.value), fragment)
    assert acct2.spent.is_zero and acct2.history() == []


@pytest.mark.filterwarnings("ignore::ppdp.exceptions.LowUtilityWarning")  # LDA-DP at ε = 1
def test_lda_projection_nan_names_the_column_not_the_value(acct2):
    df = TINY_DF.copy()
    df.loc[3, "x2"] = math.nan
    df.loc[4, "x1"] = SECRET
    pub = LDAProjectionPublisher(1.0, 1e-6, TINY, class_counts=TINY_COUNTS)
    with pytest.raises(DataValidationError) as info:
        pub.fit(df, accountant=acct2)
    _one_line(str(info.value), "column 'x2'")
    assert acct2.spent.is_zero


# --- Mul-LDA-DP (issue 4): simulate_round --------------------------------------------------------


def _fed_parts() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(1)  # test data
    X = rng.normal(size=(90, 3))
    X /= 1.01 * np.linalg.norm(X, axis=1, keepdims=True)
    y = (X[:, 0] > 0).astype(int)
    return [(X[i::3], y[i::3]) for i in range(3)]


def _nan_part(parts):
    X = parts[0][0].copy()
    X[0, 0] = math.nan
    return [(X, parts[0][1]), *parts[1:]]


def _long_part(parts):
    X = parts[0][0].copy()
    X[0] *= 50.0  # not scaled by the declared bound
    return [(X, parts[0][1]), *parts[1:]]


def _stray_label(parts):
    y = parts[0][1].copy()
    y[0] = int(SECRET)  # a label outside the round's classes: its value is private data
    return [(parts[0][0], y), *parts[1:]]


FED_CASES = [
    ({"epsilon": 0.0}, None, "epsilon (0.0)"),
    ({"delta": 1.0}, None, "delta (1.0)"),
    ({"dealer": "trusted-third-party"}, None, "dealer ('trusted-third-party')"),
    ({"calibration": "x"}, None, "calibration ('x')"),
    ({"release": "rows"}, None, "release ('rows')"),
    ({"n_components": 2}, None, "n_components (2)"),
    ({"mask_scale": -1.0}, None, "mask_scale (-1.0)"),
    ({}, lambda parts: parts[:1], "at least 2"),
    ({}, _nan_part, "NaN"),
    ({}, lambda parts: [(parts[0][0][:, :2], parts[0][1]), *parts[1:]], "columns"),
    ({}, lambda parts: [(parts[0][0], parts[0][1][:-1]), *parts[1:]], "y has shape"),
    ({}, _long_part, "declared bound"),
    ({"classes": [0, 1]}, _stray_label, "y (the labels)"),  # names the column, not the label
]


@pytest.mark.parametrize(("override", "change", "fragment"), FED_CASES)
def test_federated_round_bad_input_one_line_nothing_released(tmp_path, override, change, fragment):
    from ppdp.federated import simulate_round

    parts = _fed_parts()
    if change is not None:
        parts = change(parts)
    kw = {"epsilon": 1.0, "delta": 1e-5, "random_state": 0, "workdir": tmp_path, **override}
    with pytest.raises(PPDPError) as info:
        simulate_round(parts, **kw)
    _one_line(str(info.value), fragment)
    assert not (tmp_path / "result.json").exists()
    ledger = tmp_path / "publisher-ledger.db"
    if ledger.exists():  # opened before the check that failed: it must hold no spend
        assert budget_report(ledger).spent.is_zero


# --- Private classifiers (issue 5): ppdp.learn ---------------------------------------------------

LX, LY = TINY.encode(TINY_DF)
DATA_NORM = TINY.max_row_l2_norm


def _learner(kind: str, **kw):
    from ppdp import learn

    if kind == "logreg":
        return learn.PrivateLogisticRegression(data_norm=DATA_NORM, random_state=0, **kw)
    if kind == "svm":
        return learn.PrivateLinearSVM(data_norm=DATA_NORM, random_state=0, **kw)
    kw = {"n_components": 10, **kw}
    if kind == "rbf":
        return learn.PrivateRBFSVM(random_state=0, **kw)
    public = np.random.default_rng(9).uniform(size=(20, LX.shape[1]))  # disjoint public rows
    return learn.HybridRBFSVM(public, random_state=0, **kw)


def _with_nan(X, y):
    X = X.copy()
    X[2, 1] = math.nan
    return X, y


LEARN_CASES = [
    # labels that are not two classes
    ("logreg", {}, lambda X, y: (X, np.arange(len(y)) % 3), "3 classes"),
    ("svm", {}, lambda X, y: (X, np.zeros_like(y)), "1 class"),
    ("rbf", {}, lambda X, y: (X, np.arange(len(y)) % 3), "3 classes"),
    # Λ ≤ 0 and the other parameters
    ("logreg", {"regularization": 0.0}, None, "regularization (0.0)"),
    ("svm", {"regularization": -1.0}, None, "regularization (-1.0)"),
    ("logreg", {"epsilon": 0.0}, None, "epsilon (0.0)"),
    ("svm", {"perturbation": "input"}, None, "perturbation ('input')"),
    ("rbf", {"C": 0.0}, None, "C (0.0)"),
    ("rbf", {"gamma": -1.0}, None, "gamma (-1.0)"),
    ("hybrid", {"n_components": 0}, None, "n_components (0)"),
    # NaN, too few rows, misaligned labels
    ("logreg", {}, _with_nan, "NaN"),
    ("hybrid", {}, _with_nan, "NaN"),
    ("svm", {}, lambda X, y: (X[:0], y[:0]), "0 sample"),
    ("logreg", {}, lambda X, y: (X[:1], y[:1]), "1 class"),
    ("svm", {}, lambda X, y: (X, y[:-1]), "inconsistent"),
]


@pytest.mark.parametrize(("kind", "kw", "change", "fragment"), LEARN_CASES)
def test_learner_bad_input_one_line_nothing_spent(acct2, kind, kw, change, fragment):
    X, y = (LX, LY) if change is None else change(LX, LY)
    with pytest.raises(PPDPError) as info:
        _learner(kind, **kw).fit(X, y, accountant=acct2, allow_seeded=True)
    _one_line(str(info.value), fragment)
    assert acct2.spent.is_zero and acct2.history() == []


def test_learner_data_norm_must_be_declared(acct2):
    from ppdp.learn import PrivateLogisticRegression

    with pytest.raises(ParameterError, match=r"data_norm \(None\) must be declared"):
        PrivateLogisticRegression(epsilon=1.0).fit(LX, LY, accountant=acct2)
    assert acct2.spent.is_zero


def test_learner_declared_norm_violated_is_clipped_and_counted(acct2, caplog):
    X = LX.copy()
    X[0] *= SECRET  # far outside the declared norm bound
    with caplog.at_level("DEBUG", logger="ppdp.custodian"):
        _learner("logreg", epsilon=0.5).fit(X, LY, accountant=acct2, allow_seeded=True)
    assert acct2.spent == PrivacyBudget(0.5)  # a release, not an error
    assert f"1 of {N_TINY} rows had norm above the declared data_norm" in caplog.text
    assert "123456" not in caplog.text


def test_hybrid_public_rows_identical_to_private_rows_warn(acct2):
    from ppdp.learn import HybridRBFSVM

    with pytest.warns(PrivacyLeakWarning, match="identical to private"):
        HybridRBFSVM(LX[:20], n_components=10, random_state=0).fit(
            LX, LY, accountant=acct2, allow_seeded=True
        )


def test_hybrid_overlap_goes_to_the_custodian_log_in_mask_mode(acct2, caplog):
    """Whether a chosen public row is among the private rows is a membership fact: in
    total mode (an analyst's caller) it reaches the custodian's log, never a warning."""
    import warnings

    from ppdp.learn import HybridRBFSVM

    acct2.on_invalid = "mask"
    with warnings.catch_warnings(), caplog.at_level("WARNING", logger="ppdp.custodian"):
        warnings.simplefilter("error", PrivacyLeakWarning)
        public = TINY_DF.drop(columns="cls").iloc[:20]  # rows of the private table itself
        HybridRBFSVM(public, schema=TINY, n_components=10, random_state=0).fit(
            TINY_DF, accountant=acct2, allow_seeded=True
        )
    assert "20 of 20 public rows are identical to private training rows" in caplog.text


# --- Local perturbation (issue 7): ppdp.local ----------------------------------------------------


def _local_cases():
    from ppdp.local import AdditiveRandomizer, CharacteristicVectorRandomizer

    add = AdditiveRandomizer(noise="laplace", scale=0.5, domain=(0.0, 1.0))
    cv = CharacteristicVectorRandomizer(regions=3, noise="discrete-normal", gamma=0.5, sigma=1.0)
    isq = CharacteristicVectorRandomizer(regions=3, noise="inverse-square")
    return [
        ("value outside the domain", lambda: add.randomise([0.2, SECRET]), "outside the declared"),
        ("NaN value", lambda: add.randomise([0.2, math.nan]), "not finite"),
        ("value not a region", lambda: cv.randomise([0, 3]), "region indices 0..2"),
        ("report of wrong length", lambda: cv.check_report(np.zeros((2, 4), int)), "k=3"),
        ("report off the lattice", lambda: cv.check_report(np.full((2, 3), 0.5)), "lattice"),
        ("ragged reports", lambda: cv.check_report([[1, 2, 3], [1, 2]]), "regular (n, k)"),
        (
            "gamma not 1/m",
            lambda: CharacteristicVectorRandomizer(regions=3, gamma=0.3, sigma=1.0),
            "gamma (0.3)",
        ),
        ("k < 2", lambda: CharacteristicVectorRandomizer(regions=1, sigma=1.0), "regions (1)"),
        (
            "no finite mean with the mean estimator",
            lambda: isq.estimate_from_totals(np.zeros(3, int), 4, estimator="mean"),
            "estimator ('mean')",
        ),
        (
            "noise scale <= 0",
            lambda: AdditiveRandomizer(noise="gaussian", scale=0.0, domain=(0.0, 1.0)),
            "scale (0.0)",
        ),
        (
            "uniform noise width beyond 2**960 (its snapping grid must be a normal float)",
            lambda: AdditiveRandomizer(noise="uniform", scale=1e300, domain=(0.0, 1.0)),
            "scale (1e+300)",
        ),
        (
            "Wu's degenerate U[0, 20]",
            lambda: __import__("ppdp.local", fromlist=["x"]).reconstruct_fourier(
                np.full(10, 0.5),
                AdditiveRandomizer(noise="uniform", scale=20.0, domain=(0.0, 1.0)),
                harmonics=12,
            ),
            "harmonics (12)",
        ),
    ]


@pytest.mark.parametrize("case", range(12))
def test_local_bad_input_one_line(case):
    _name, call, fragment = _local_cases()[case]
    with pytest.raises(PPDPError) as info:
        call()
    _one_line(str(info.value), fragment)


def test_collector_rejects_a_bad_batch_whole_and_keeps_its_totals(tmp_path):
    import json

    from ppdp.ledger import encode_public_key, generate_key
    from ppdp.local import CharacteristicVectorRandomizer
    from ppdp.local.collector import CollectorConfig, create_app
    from ppdp.local.collector._wire import (
        CLIENT_HEADER,
        SIGNATURE_HEADER,
        encode_batch,
        read_headers,
        sign_body,
    )

    with warnings.catch_warnings():  # this starlette asks for httpx2; httpx still works
        warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
        from fastapi.testclient import TestClient

    cv = CharacteristicVectorRandomizer(regions=3, noise="discrete-normal", gamma=0.5, sigma=1.0)
    key = generate_key()
    cfg = {
        "survey": "s",
        "randomizer": cv.to_dict(),
        "store": "store.sqlite",
        "clients": {"app": encode_public_key(key.public_key())},
    }
    (tmp_path / "collector.json").write_text(json.dumps(cfg))

    def post(http, seq, reports):
        body = encode_batch(survey="s", client="app", seq=seq, reports=reports)
        headers = {CLIENT_HEADER: "app", SIGNATURE_HEADER: sign_body(body, key)}
        return http.post("/v1/batches", content=body, headers=headers)

    def totals(http):
        return http.get("/v1/totals", headers=read_headers("app", key, "/v1/totals")).json()

    with TestClient(create_app(CollectorConfig.from_file(tmp_path / "collector.json"))) as http:
        assert post(http, 1, cv.randomise([0, 1, 2], random_state=1).tolist()).status_code == 200
        before = totals(http)
        good = cv.randomise([0, 1], random_state=2).tolist()
        for bad in ([*good, [0, 1]], [*good, [0, 1, 2, 3]], [*good, [0.5, 1, 2]]):
            r = post(http, 2, bad)  # wrong length, wrong length, off the lattice
            assert r.status_code == 422
            _one_line(r.json()["error"])
            assert totals(http) == before


# --- The command line: exit 2, one stderr line, no traceback, no file, nothing spent ----------


@pytest.fixture(scope="module")
def cli_files(tmp_path_factory):
    import json

    from ppdp.cli import main
    from ppdp.learn._model_io import save_model

    root = tmp_path_factory.mktemp("catalogue-cli")
    TINY_DF.to_csv(root / "tiny.csv", index=False)
    TINY.to_file(root / "tiny.json")
    nan = TINY_DF.copy()
    nan.loc[3, "x1"] = math.nan
    nan.to_csv(root / "nan.csv", index=False)
    TINY_DF[TINY_DF["cls"] == "no"].to_csv(root / "one_class.csv", index=False)
    three = TINY.to_dict()
    three["label"]["classes"] = ["no", "yes", "maybe"]
    (root / "three.json").write_text(json.dumps(three))
    lines = (root / "tiny.csv").read_text().splitlines(keepends=True)
    lines[4] = lines[4].rstrip("\n") + ",oops\n"  # line 5: one field more than the header
    (root / "extra.csv").write_text("".join(lines))
    TINY.to_file(root / "tiny.yaml")
    text = (root / "tiny.yaml").read_text()
    (root / "latin1.yaml").write_bytes(text.encode() + b"# caf\xe9\n")
    bomb = ['a0: &a0 ["lol"]'] + [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]"
                                 for i in range(1, 10)]  # fmt: skip
    (root / "bomb.yaml").write_text("\n".join([*bomb, "columns: *a9", ""]))
    argv = ["budget", "init", str(root / "budget.db"), "--dataset-id", "tiny", "--epsilon", "5"]
    assert main([*argv, "--delta", "1e-4"]) == 0
    with Accountant.in_memory(total=PrivacyBudget(1.0)) as a:
        clf = _learner("logreg", epsilon=0.5).fit(LX, LY, accountant=a, allow_seeded=True)
    save_model(clf, root / "model.json", schema=TINY)
    tampered = json.loads((root / "model.json").read_text())
    tampered["model"]["model"]["coef"][0] += 1.0  # checksum unchanged
    (root / "tampered.json").write_text(json.dumps(tampered))
    return root


_LDA = ["publish", "lda-projection", "{root}/tiny.csv", "--schema", "{root}/tiny.json"]
_LDA_OK = [*_LDA, "--epsilon", "1", "--delta", "1e-6", "--class-counts", "{counts}"]
_TRAIN = ["train", "logreg", "{root}/tiny.csv", "--schema", "{root}/tiny.json", "--epsilon", "1"]
_RBF = ["train", "rbf-svm", "{root}/tiny.csv", "--schema", "{root}/tiny.json", "--epsilon", "1"]

CLI_CASES = [
    # ppdp publish lda-projection (issue 4)
    ([*_LDA, "--epsilon", "0", "--delta", "1e-6", "--class-counts", "{counts}"], "epsilon (0.0)"),
    ([*_LDA, "--epsilon", "1", "--delta", "0", "--class-counts", "{counts}"], "delta (0.0)"),
    (
        [*_LDA, "--epsilon", "1", "--delta", "1e-6", "--class-counts", "a,b"],
        "--class-counts ('a,b')",
    ),
    ([*_LDA, "--epsilon", "1", "--delta", "1e-6", "--class-counts", "1,2"], "class counts"),
    ([*_LDA_OK, "--components", "2"], "--components (2)"),
    ([*_LDA_OK, "--delta", "1e-3"], "exceed"),  # more δ than the ledger holds
    ([*_LDA_OK[:2], "{root}/nan.csv", *_LDA_OK[3:]], "column 'x1'"),
    # ppdp train / predict (issue 5)
    ([*_TRAIN[:-1], "0"], "epsilon (0.0)"),
    ([*_TRAIN, "--regularization", "0"], "regularization (0.0)"),
    ([*_TRAIN, "--regularization", "-1"], "regularization (-1.0)"),
    ([*_TRAIN[:2], "{root}/nan.csv", *_TRAIN[3:]], "x1"),
    ([*_TRAIN[:2], "{root}/one_class.csv", *_TRAIN[3:]], "class"),
    ([*_TRAIN[:4], "{root}/three.json", *_TRAIN[5:]], "two"),
    # hostile files (issue 29)
    ([*_TRAIN[:2], "{root}/extra.csv", *_TRAIN[3:]], "line 5 has 5 fields where the header has 4"),
    ([*_TRAIN[:4], "{root}/latin1.yaml", *_TRAIN[5:]], "latin1.yaml') is not UTF-8 text"),
    ([*_TRAIN[:4], "{root}/bomb.yaml", *_TRAIN[5:]], "a YAML alias (*name) repeats"),
    ([*_RBF, "--components", "0"], "--components (0)"),
    ([*_RBF, "--gamma", "0"], "gamma (0.0)"),
    (["train", "hybrid-svm", *_TRAIN[2:]], "--public (not given) is required"),
    (["predict", "{root}/absent.json", "{root}/tiny.csv"], "does not exist"),
    (["predict", "{root}/tampered.json", "{root}/tiny.csv"], "edited or damaged"),
    # ppdp federate (issue 4)
    (["federate", "demo", "--owners", "1", "--workdir", "{out}/w"], "owners (1)"),
    (["federate", "demo", "--epsilon", "0", "--workdir", "{out}/w"], "epsilon (0.0)"),
    (["federate", "demo", "--delta", "1", "--workdir", "{out}/w"], "delta (1.0)"),
    (["federate", "owner", "--config", "{root}/absent.json"], "does not exist"),
    (["federate", "publisher", "--config", "{root}/tiny.json"], "not recognised"),
    # ppdp local (issue 7)
    (["local", "serve", "--config", "{root}/absent.json"], "does not exist"),
    (["local", "serve", "--config", "{root}/tiny.json"], "unknown keys"),
    (["local", "keygen", "{root}/model.json"], "already exists"),
]


@pytest.mark.parametrize(("argv", "fragment"), CLI_CASES)
def test_cli_bad_input_exit_2_one_line_no_file_nothing_spent(
    cli_files, tmp_path, capsys, argv, fragment
):
    from ppdp.cli import main

    root = cli_files

    def listing() -> list[str]:  # SQLite's -wal/-shm files come and go with connections
        return sorted(p.name for p in root.iterdir() if not p.name.endswith(("-wal", "-shm")))

    before = listing()
    fields = {"root": root, "out": tmp_path, "counts": f"{TINY_COUNTS[0]},{TINY_COUNTS[1]}"}
    argv = [a.format(**fields) for a in argv]
    if argv[0] in {"publish", "train", "predict"}:
        argv += ["-o", str(tmp_path / ("out.json" if argv[0] == "train" else "out.csv"))]
    if argv[0] in {"publish", "train"}:
        argv += ["--ledger", str(root / "budget.db")]
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse usage errors
        status = exc.code
    assert status == 2
    lines = capsys.readouterr().err.splitlines()
    progress = ("ppdp publish: ", "ppdp train: ")
    errors = [line for line in lines if not line.startswith(progress)]
    assert len(errors) == 1 and errors[0].startswith("ppdp"), lines
    _one_line(errors[0], fragment)
    assert list(tmp_path.iterdir()) == []  # no output file, no workdir
    assert listing() == before
    assert budget_report(root / "budget.db").spent.is_zero


@pytest.mark.parametrize("ledger", ["tiny.csv", "tiny.json", "."])
def test_cli_ledger_that_is_not_a_ledger_is_named_as_the_flag(cli_files, tmp_path, capsys, ledger):
    """Issue 29: ``--ledger`` on a CSV, a JSON file or a folder said "key (None): ...
    pass key=" (the library's wording for a missing key); now the flag and the path."""
    from ppdp.cli import main

    argv = [a.format(root=cli_files) for a in _TRAIN]
    out = tmp_path / "out.json"
    status = main([*argv, "--ledger", str(cli_files / ledger), "-o", str(out)])
    assert status == 2
    errors = [
        ln for ln in capsys.readouterr().err.splitlines() if not ln.startswith("ppdp train: ")
    ]
    assert len(errors) == 1 and errors[0].startswith("ppdp: error: --ledger ("), errors
    assert "not a ppdp ledger" in errors[0] or "is a folder" in errors[0]
    assert "key" not in errors[0] and not out.exists()


# --- Rows of the catalogue that the later layers make testable -----------------------------------


def test_lda_singular_scatter_and_d_above_n_give_a_finite_direction(acct2):
    """Collinear features and n < d: a public ridge, no data-dependent exception."""
    collinear = TINY_DF.copy()
    collinear["x2"] = collinear["x1"]
    few = TINY_DF.iloc[:3]
    for df in (collinear, few):
        counts = [int((df["cls"] == c).sum()) for c in ("no", "yes")]
        pub = LDAProjectionPublisher(0.2, 1e-6, TINY, class_counts=counts, release="direction")
        with warnings.catch_warnings():  # the direction is mostly noise here, and says so
            warnings.simplefilter("ignore", LowUtilityWarning)
            pub.fit(df, accountant=acct2)
        assert np.all(np.isfinite(pub.directions_))
        assert np.linalg.norm(pub.directions_) == pytest.approx(1.0)


def test_lda_empty_declared_class_is_refused_from_the_public_counts_alone(acct2):
    df = TINY_DF[TINY_DF["cls"] == "no"]
    pub = LDAProjectionPublisher(1.0, 1e-6, TINY, class_counts=[len(df), 0])
    with pytest.raises(ParameterError, match=r"class_counts \(\[\d+, 0\]\)") as info:
        pub.fit(df, accountant=acct2)
    _one_line(str(info.value))
    assert acct2.spent.is_zero


def test_objective_perturbation_with_tiny_lambda_falls_back_instead_of_failing(acct2):
    clf = _learner("logreg", epsilon=0.1, regularization=1e-9).fit(
        LX, LY, accountant=acct2, allow_seeded=True
    )
    assert any("Δ fallback" in a for a in clf.guarantee_.assumptions)
    assert acct2.spent == PrivacyBudget(0.1)


@pytest.mark.parametrize(
    ("kw", "fragment"), [({"gamma": 0.0}, "gamma (0.0)"), ({"n_components": 0}, "n_components (0)")]
)
def test_random_fourier_features_bad_parameters(kw, fragment):
    from ppdp.learn import RandomFourierFeatures

    with pytest.raises(ParameterError) as info:
        RandomFourierFeatures(**kw).fit(LX)
    _one_line(str(info.value), fragment)


def test_local_reconstructions_are_projected_onto_the_simplex():
    """Negative frequency estimates are projected, never returned or refused."""
    from ppdp.local import AdditiveRandomizer, CharacteristicVectorRandomizer, reconstruct_fourier

    add = AdditiveRandomizer(noise="laplace", scale=0.3, domain=(0.0, 1.0))
    cv = CharacteristicVectorRandomizer(regions=5, noise="discrete-normal", gamma=0.5, sigma=3.0)
    with warnings.catch_warnings():  # few reports for these harmonics, and it says so
        warnings.simplefilter("ignore", LowUtilityWarning)
        estimates = [
            reconstruct_fourier(
                add.randomise(np.full(2000, 0.05), random_state=1), add, harmonics=6
            ),
            cv.estimate(cv.randomise(np.zeros(50, dtype=int), random_state=2)),
        ]
    assert min(estimates[0].details["raw_bin_mass"]) < 0  # there was something to project
    for est in estimates:
        assert est.probabilities.min() >= 0.0
        assert est.probabilities.sum() == pytest.approx(1.0)


# --- Mul-LDA-DP under hostile messages (issue 12): an outsider cannot burn a round --------------


def _fed_injections():
    import dataclasses

    from ppdp.federated import Kind, MessageFields, sign
    from ppdp.ledger import Signer

    def other_key(sender):
        return Signer(sender, Signer.generate("x").private_key)

    def forged_abort(m):
        fields = MessageFields(m.session_id, m.sender, m.recipient, m.seq, Kind.ABORT, {"r": 1})
        return sign(fields, other_key(m.sender))

    return {
        "forged signature": lambda m: [sign(m.fields, other_key(m.sender)), m],
        "unsigned": lambda m: [dataclasses.replace(m, signature=bytes(64)), m],
        "unknown sender": lambda m: [
            sign(dataclasses.replace(m.fields, sender="mallory"), Signer.generate("mallory")),
            m,
        ],
        "another session": lambda m: [dataclasses.replace(m, session_id="old-round"), m],
        "replayed": lambda m: [m, m, m],
        "forged abort": lambda m: [forged_abort(m), m],
    }


@pytest.mark.parametrize("case", sorted(_fed_injections()))
@pytest.mark.parametrize("kind", ["commitment", "mean-share", "noisy-means"])
def test_federated_message_injected_mid_round_is_dropped_and_the_round_completes(case, kind):
    """Unauthenticated or replayed messages are dropped (logged), never abort a round: the
    charged round still releases, once (docs/federated.md, "Outsiders and the charge point")."""
    from ppdp.federated.simulate import build_round, run_round

    inject = _fed_injections()[case]
    rnd = build_round(_fed_parts(), epsilon=1.0, delta=1e-5, random_state=0)
    net = run_round(rnd, hook=lambda m: inject(m) if m.kind == kind else [m])
    assert rnd.publisher.state == "done", rnd.publisher.abort_reason
    kinds = [e.kind for e in rnd.publisher.ledger.entries(refresh=False)]
    assert kinds.count("spend") == 1 and kinds[-1] == "release"
    assert net.refusals and all("\n" not in r for r in net.refusals)


def test_federated_round_stopped_before_the_charge_point_spends_nothing():
    """A lost commitment (an on-path outsider, a crashed owner): aborted, nothing spent."""
    from ppdp.federated.simulate import build_round, run_round

    rnd = build_round(_fed_parts(), epsilon=1.0, delta=1e-5, random_state=0)
    run_round(rnd, hook=lambda m: [] if (m.kind, m.sender) == ("commitment", "owner-2") else [m])
    assert rnd.publisher.state == "aborted"
    assert rnd.publisher.accountant.spent.is_zero
    kinds = [e.kind for e in rnd.publisher.ledger.entries(refresh=False)]
    assert kinds == ["genesis", "fed-start", "fed-abort"]  # the attempt, and no spend


def test_federated_dealer_reports_an_aborted_round():
    """The dealer is done only when the round released; after an abort it ends aborted, so
    ``ppdp federate dealer`` exits 3 (tests/hostile/test_federated_rounds.py runs the command)."""
    from ppdp.federated.simulate import build_round, run_round

    rnd = build_round(_fed_parts(), epsilon=1.0, delta=1e-5, random_state=0)
    run_round(rnd, hook=lambda m: [] if m.kind == "scatter-share" else [m])
    assert rnd.publisher.state == "aborted" and rnd.dealer.state == "aborted"
    assert "\n" not in rnd.dealer.abort_reason


# --- Issue 12: ledger resets without the key (anchors), resumable local reporting -------------


def _anchored_ledger(tmp_path, spends=3):
    """A budget ledger with ``spends`` charges, its anchor line, and a copy of it at 2 entries."""
    import shutil
    import sqlite3

    from ppdp.ledger import Ledger, load_private_key

    path = tmp_path / "b.db"
    with Accountant.open(path, dataset_id="cat", total=PrivacyBudget(1.0)) as acct:
        acct.spend(PrivacyBudget(0.1), mechanism="first")
        (tmp_path / "old").mkdir()
        with sqlite3.connect(path) as conn:
            conn.execute("VACUUM INTO ?", (str(tmp_path / "old" / "b.db"),))
        conn.close()
        shutil.copyfile(f"{path}.checkpoint", tmp_path / "old" / "b.db.checkpoint")
        for i in range(spends - 1):
            acct.spend(PrivacyBudget(0.1), mechanism=f"m{i}")
    with Ledger.open(path, signer=load_private_key(f"{path}.key")) as led:
        return path, str(led.anchor())


def _delete_after_genesis(path, tmp_path):
    import os
    import sqlite3

    with sqlite3.connect(path) as conn:
        conn.execute('DELETE FROM entries WHERE "index" > 0')
    conn.close()
    os.unlink(f"{path}.checkpoint")


def _restore_old_copy(path, tmp_path):
    import os
    import shutil

    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{path}{suffix}"):
            os.unlink(f"{path}{suffix}")
    shutil.copyfile(tmp_path / "old" / "b.db", path)
    shutil.copyfile(tmp_path / "old" / "b.db.checkpoint", f"{path}.checkpoint")


def _forge(anchor):
    from ppdp.ledger import Anchor

    a = Anchor.from_text(anchor)
    return str(Anchor(a.dataset_id, a.ledger_id, 1, bytes(32), a.signer, a.signature))


ANCHOR_CASES = [
    # (what the attacker or the user did, the command, exit status, fragment of the one line)
    ("entries after genesis and the checkpoint deleted (the anchor on record)",
     _delete_after_genesis, ["ledger", "verify", "{path}"], 1, "entry 1: ledger truncated"),
    ("the same, checked against the anchor", _delete_after_genesis,
     ["ledger", "verify", "{path}", "--anchor", "{anchor}"], 1, "entry 1: ledger truncated"),
    ("old copy restored with its old checkpoint", _restore_old_copy,
     ["budget", "show", "{path}", "--anchor", "{anchor}"], 1, "entry 2: ledger truncated"),
    ("a forged anchor", None,
     ["ledger", "verify", "{path}", "--anchor", "{forged}"], 1, "signature does not verify"),
    ("a malformed anchor", None,
     ["ledger", "verify", "{path}", "--anchor", "ppdp-anchor-v1:x"], 2, "anchor ('ppdp-anchor"),
    ("budget init over a deleted, anchored ledger", "delete",
     ["budget", "init", "{path}", "--dataset-id", "cat", "--epsilon", "1"], 1, "reset the budget"),
    ("budget init of a second ledger for an anchored dataset", None,
     ["budget", "init", "{tmp}/c.db", "--dataset-id", "cat", "--epsilon", "1"], 2,
     "already has a budget ledger"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "attack", "argv", "status", "fragment"), ANCHOR_CASES)
def test_ledger_reset_without_the_key_is_caught_by_the_anchor(
    tmp_path, monkeypatch, capsys, name, attack, argv, status, fragment
):
    import os

    from ppdp.cli import main

    monkeypatch.setenv("PPDP_ANCHOR_DIR", str(tmp_path / "anchors"))
    path, anchor = _anchored_ledger(tmp_path)
    assert main(["ledger", "anchor", str(path)]) == 0  # on record in the registry too
    capsys.readouterr()
    if attack == "delete":
        for suffix in ("", "-wal", "-shm", ".checkpoint"):
            if os.path.exists(f"{path}{suffix}"):
                os.unlink(f"{path}{suffix}")
    elif attack is not None:
        attack(path, tmp_path)
    fields = {"path": path, "anchor": anchor, "forged": _forge(anchor), "tmp": tmp_path}
    assert main([a.format(**fields) for a in argv]) == status
    err = capsys.readouterr().err.strip()
    _one_line(err, fragment)
    assert not (tmp_path / "c.db").exists()


def _resumable_setup(tmp_path, n=300):
    import json

    from ppdp.ledger import encode_public_key, generate_key, save_private_key
    from ppdp.local import AdditiveRandomizer

    key = generate_key()
    save_private_key(key, tmp_path / "app.key")
    r = AdditiveRandomizer(noise="laplace", scale=0.5, domain=(0.0, 1.0))
    cfg = {
        "survey": "cat",
        "randomizer": r.to_dict(),
        "store": "store.sqlite",
        "clients": {"app": encode_public_key(key.public_key())},
        "client": {"id": "app", "key": "app.key"},
    }
    (tmp_path / "c.json").write_text(json.dumps(cfg))
    values = np.random.default_rng(3).random(n)
    pd.DataFrame({"x": values}).to_csv(tmp_path / "v.csv", index=False)
    return tmp_path / "c.json", values


def test_local_report_interrupted_says_how_many_and_a_rerun_resends_exactly_the_rest(
    tmp_path, capsys, monkeypatch
):
    """Issue 12 item 5: the collector fails mid-upload; one line with the counts (exit 2);
    the rerun sends the rest, perturbing nothing again; other values on the journal: refused."""
    import httpx

    from ppdp.cli import main
    from ppdp.local.collector import CollectorConfig, CollectorStore, create_app

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
        from fastapi.testclient import TestClient

    cfg_path, _ = _resumable_setup(tmp_path)
    config = CollectorConfig.from_file(cfg_path)
    monkeypatch.setattr("time.sleep", lambda s: None)
    argv = ["local", "report", str(tmp_path / "v.csv"), "--config", str(cfg_path),
            "--server", "http://testserver", "--batch-size", "50"]  # fmt: skip
    with TestClient(create_app(config)) as http:
        posts = []
        real_post = http.post

        def dying_post(*a, **kw):
            posts.append(1)
            if len(posts) > 2:
                raise httpx.ConnectError("the collector is gone")
            return real_post(*a, **kw)

        real_client = httpx.Client
        monkeypatch.setattr(http, "post", dying_post)
        monkeypatch.setattr(httpx, "Client", lambda *a, **kw: http)  # the command's client
        monkeypatch.setattr(http, "close", lambda: None)
        assert main(argv) == 2
        lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("ppdp:")]
        assert len(lines) == 1
        _one_line(lines[0], "after 100 of 300 reports were delivered", "200 perturbed reports wait")
        monkeypatch.setattr(http, "post", real_post)  # the collector is back
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert "delivered 300 of 300; the collector now holds 300" in out
        pd.DataFrame({"x": np.full(300, 0.5)}).to_csv(tmp_path / "v.csv", index=False)
        assert main(argv) == 2  # the journal belongs to the first values
        _one_line(capsys.readouterr().err.strip(), "was made for other values")
        monkeypatch.setattr(httpx, "Client", real_client)
    with CollectorStore.open(tmp_path / "store.sqlite", create=False) as store:
        assert store.snapshot().count == 300


# --- Issue 12: outputs checked before the spend; exit statuses (detail in tests/hostile/) --------


def _blocked_sidecar(tmp, monkeypatch):
    (tmp / "out.csv.guarantee.json").mkdir()


def _no_pyarrow(tmp, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow", None)


def _full_disk(tmp, monkeypatch):
    import shutil

    real = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda p: real(p)._replace(free=0))


def _existing(tmp, monkeypatch):
    (tmp / "out.csv").write_text("an earlier release\n")


def _folder(tmp, monkeypatch):
    (tmp / "out.csv").mkdir()


def _deep_schema(tmp, monkeypatch):
    (tmp / "deep.json").write_text("[" * 100_000 + "]" * 100_000)


def _schema_folder(tmp, monkeypatch):
    (tmp / "folder.json").mkdir()


_PUB = ["publish", "laplace", "{root}/tiny.csv", "--schema", "{root}/tiny.json", "--epsilon", "1"]
_LED = ["--ledger", "{root}/budget.db"]
_TRN = ["train", "logreg", "{root}/tiny.csv", "--schema", "{root}/tiny.json", "--epsilon", "1"]

FILE_CASES = [
    # item 3: -o equal to an input, refused before the spend (even with --force)
    ([*_PUB, *_LED, "-o", "{root}/tiny.csv", "--force"], None, "is the data"),
    ([*_TRN, *_LED, "-o", "{root}/tiny.json", "--force"], None, "is the schema"),
    (["predict", "{root}/model.json", "{root}/tiny.csv", "-o", "{root}/tiny.csv"], None, "data"),
    # item 7: every output check before the spend
    ([*_PUB, *_LED, "-o", "{out}/out.parquet"], _no_pyarrow, "needs pyarrow"),
    ([*_PUB, *_LED, "-o", "{out}/out.csv", "--force"], _folder, "is a folder"),
    ([*_PUB, *_LED, "-o", "{out}/nope/out.csv"], None, "does not exist"),
    ([*_PUB, *_LED, "-o", "/proc/ppdp-out.csv"], None, "cannot write in"),
    ([*_PUB, *_LED, "-o", "{out}/out.csv"], _blocked_sidecar, "guarantee file"),
    ([*_PUB, *_LED, "-o", "{out}/out.csv"], _full_disk, "0 bytes free"),
    ([*_PUB, *_LED, "-o", "{out}/out.csv"], _existing, "pass --force"),
    # item 8: one line, exit 2
    ([*_PUB[:4], "{out}/deep.json", *_PUB[5:], *_LED, "-o", "{out}/o.csv"], _deep_schema, "deep"),
    (
        [*_PUB[:4], "{out}/folder.json", *_PUB[5:], *_LED, "-o", "{out}/o.csv"],
        _schema_folder,
        "a folder",
    ),
    # seeds and ledgers
    (
        [*_PUB, *_LED, "-o", "{out}/out.csv", "--seed", "1"],
        None,
        "--seed (1) with a ledger is refused",
    ),
    (
        [*_TRN, *_LED, "-o", "{out}/m.json", "--seed", "1"],
        None,
        "--seed (1) with a ledger is refused",
    ),
]


@pytest.mark.parametrize(("argv", "setup", "fragment"), FILE_CASES)
def test_cli_output_and_exit_cases_exit_2_one_line_input_intact_nothing_spent(
    cli_files, tmp_path, capsys, monkeypatch, argv, setup, fragment
):
    import hashlib

    from ppdp.cli import main

    if "/proc/" in " ".join(argv) and not os.path.isdir("/proc/self"):
        pytest.skip("needs Linux /proc")
    root = cli_files

    def snapshot() -> dict[str, str]:  # SQLite's -wal/-shm files come and go with connections
        return {
            p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.iterdir()
            if p.is_file() and not p.name.endswith(("-wal", "-shm", ".checkpoint"))
        }

    if setup is not None:
        setup(tmp_path, monkeypatch)
    before, made = snapshot(), sorted(p.name for p in tmp_path.iterdir())
    argv = [a.format(root=root, out=tmp_path) for a in argv]
    assert main(argv) == 2
    lines = capsys.readouterr().err.splitlines()
    errors = [line for line in lines if not line.startswith(("ppdp publish: ", "ppdp train: "))]
    assert len(errors) == 1 and errors[0].startswith("ppdp: error: "), lines
    _one_line(errors[0], fragment)
    assert snapshot() == before  # every input intact
    assert sorted(p.name for p in tmp_path.iterdir()) == made  # no output, no .part file
    assert not list(root.glob("*.part")) and not list(root.glob(".*.part"))
    assert budget_report(root / "budget.db").spent.is_zero


def test_cli_disk_full_after_the_spend_says_the_spend_stands(
    cli_files, tmp_path, capsys, monkeypatch
):
    """The one output failure no check can rule out beforehand: one line, exit 2, honest."""
    import errno

    from ppdp.cli import main

    def enospc(self, path, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", enospc)
    ledger = tmp_path / "b.db"
    assert main(["budget", "init", str(ledger), "--dataset-id", "tiny", "--epsilon", "5"]) == 0
    argv = [a.format(root=cli_files) for a in _PUB] + ["--ledger", str(ledger)]
    assert main([*argv, "-o", str(tmp_path / "out.csv")]) == 2
    errors = [e for e in capsys.readouterr().err.splitlines() if e.startswith("ppdp: ")]
    assert len(errors) == 1
    _one_line(errors[0], "no space left", "The spend stands", "nothing was released")
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("b.db")) == []
    assert budget_report(ledger).spent == PrivacyBudget(1.0)  # fail closed: the charge stays


def test_cli_broken_pipe_exits_quietly(cli_files):
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "ppdp", "budget", "show", str(cli_files / "budget.db")]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert (proc.returncode, err) == (141, b"")


# --- Hostile network input (issue 12, items 1 and 8): the collector and a federated owner ----
# Each row drives the real ASGI app in process with a body produced on demand, so it sees how
# many bytes the app pulled; the 100 MB loads are in benchmarks/bench_hostile_http.py and the
# deeper cases in tests/hostile/. The reply is one line and quotes nothing unbounded.

_CAP = 1 << 20
_BIG = 100 * 1024 * 1024


def _asgi(app, method, path, headers=None, *, size=0, body=b"", declare=False):
    """One request to ``app``: ``body``, or ``size`` filler bytes in 64 KB chunks (with a
    ``Content-Length`` when ``declare``). Returns (status, reply text, bytes pulled)."""
    import asyncio
    import json

    chunks = [body] if body else (b"x" * min(65536, size - i) for i in range(0, size, 65536))
    it = iter(chunks)
    pulled = [0]
    nxt = [next(it, None)]

    async def receive():
        cur, nxt[0] = nxt[0], next(it, None)
        pulled[0] += len(cur or b"")
        return {"type": "http.request", "body": cur or b"", "more_body": nxt[0] is not None}

    out = {"body": b""}

    async def send(message):
        if message["type"] == "http.response.start":
            out["status"] = message["status"]
        else:
            out["body"] += message.get("body", b"")

    h = dict(headers or {})
    if declare:
        h["content-length"] = str(size or len(body))
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": method, "scheme": "http", "path": path, "raw_path": path.encode(),
             "query_string": b"", "root_path": "", "client": ("127.0.0.1", 1),
             "server": ("127.0.0.1", 80), "state": {},
             "headers": [(k.lower().encode(), v.encode()) for k, v in h.items()]}  # fmt: skip
    asyncio.run(app(scope, receive, send))
    reply = json.loads(out["body"])
    return out["status"], str(reply.get("error", reply.get("reason"))), pulled[0]


@pytest.fixture(scope="module")
def hostile_apps(tmp_path_factory):
    import json

    from ppdp.federated.http import load_config, prepare_deployment
    from ppdp.federated.http._demo import session_for
    from ppdp.federated.http._parties import build_parts
    from ppdp.ledger import Signer, encode_public_key, generate_key, load_private_key
    from ppdp.local import CharacteristicVectorRandomizer
    from ppdp.local.collector import CollectorConfig
    from ppdp.local.collector import create_app as collector_app

    root = tmp_path_factory.mktemp("hostile")
    key = generate_key()
    cv = CharacteristicVectorRandomizer(regions=3, noise="discrete-normal", gamma=0.5, sigma=1.0)
    cfg = {"survey": "s", "randomizer": cv.to_dict(), "store": str(root / "c.sqlite"),
           "clients": {"app": encode_public_key(key.public_key())},
           "max_body_bytes": _CAP}  # fmt: skip
    (root / "collector.json").write_text(json.dumps(cfg))
    collector = collector_app(CollectorConfig.from_file(root / "collector.json"))
    parts = [_tiny_frame(20, seed) for seed in (1, 2)]
    session = session_for(parts, TINY, session_id="s-1", epsilon=1.0, delta=1e-5,
                          dealer="trusted", release="direction")  # fmt: skip
    dep = prepare_deployment(root / "round", parts=parts, schema=TINY, session=session)
    owner = build_parts(load_config(dep.configs["owner-1"]))
    owner.node.max_body = _CAP
    publisher = Signer("publisher", load_private_key(root / "round" / "keys" / "publisher.key"))
    yield {"collector": collector, "key": key, "owner": owner, "publisher": publisher}
    collector.state.collector.close()
    owner.close()


def _collector_sig(apps, body=b"x"):
    from ppdp.local.collector._wire import CLIENT_HEADER, SIGNATURE_HEADER, sign_body

    return {CLIENT_HEADER: "app", SIGNATURE_HEADER: sign_body(body, apps["key"])}


def _deep_batch():
    head = b'{"v":1,"survey":"s","client":"app","seq":1,"reports":'
    return head + b"[" * 100_000 + b"]" * 100_000 + b"}"


def _bool_batch():
    from ppdp.local.collector._wire import encode_batch

    return encode_batch(survey="s", client="app", seq=1, reports=[[True, 0, 0]])


def _transport(apps, body, *, forged=False):
    from ppdp.federated.http import transport_headers
    from ppdp.ledger import generate_key

    key = generate_key() if forged else apps["publisher"].private_key
    return transport_headers(body, sender="publisher", key=key, session_id="s-1",
                             recipient="owner-1")  # fmt: skip


# (row, request, expected status, fragment of the one-line reply, most bytes the app may pull)
_HOSTILE_ROWS = [
    ("collector: chunked body over the cap",
     lambda a: _asgi(a["collector"], "POST", "/v1/batches", _collector_sig(a), size=_BIG),
     413, "exceeds 1048576 bytes", _CAP + 65536),
    ("collector: declared body over the cap",
     lambda a: _asgi(a["collector"], "POST", "/v1/batches", _collector_sig(a), size=_BIG,
                     declare=True), 413, "exceeds", 0),
    ("collector: unsigned big body",
     lambda a: _asgi(a["collector"], "POST", "/v1/batches", size=_BIG), 401, "X-PPDP-Client", 0),
    ("collector: forged signature, registered id (refused before parsing)",
     lambda a: _asgi(a["collector"], "POST", "/v1/batches", _collector_sig(a, b"other"),
                     body=_deep_batch()), 401, "does not verify", None),
    ("collector: 100k-deep JSON",
     lambda a: _asgi(a["collector"], "POST", "/v1/batches", _collector_sig(a, _deep_batch()),
                     body=_deep_batch()), 400, "deeper than 8", None),
    ("collector: JSON booleans as reports",
     lambda a: _asgi(a["collector"], "POST", "/v1/batches", _collector_sig(a, _bool_batch()),
                     body=_bool_batch()), 400, "true/false", None),
    ("collector: 100 KB client id (not echoed)",
     lambda a: _asgi(a["collector"], "POST", "/v1/batches",
                     {"X-PPDP-Client": "c" * 100_000, "X-PPDP-Signature": "AA=="}),
     401, "(100000 characters)", 0),
    ("collector: GET /v1/totals unauthenticated",
     lambda a: _asgi(a["collector"], "GET", "/v1/totals"), 401, "signed read", 0),
    ("collector: GET /v1/clients/{id} unauthenticated",
     lambda a: _asgi(a["collector"], "GET", "/v1/clients/app"), 401, "operator token", 0),
    ("owner: chunked body over the cap",
     lambda a: _asgi(_party(a), "POST", "/messages", _transport(a, b"x"), size=_BIG),
     413, "too large", _CAP + 65536),
    ("owner: unsigned big body",
     lambda a: _asgi(_party(a), "POST", "/messages", size=_BIG, declare=True),
     401, "X-PPDP-Sender", 0),
    ("owner: forged transport signature (refused before decoding; the round untouched)",
     lambda a: _asgi(_party(a), "POST", "/messages", _transport(a, b"{}", forged=True),
                     body=b"{}"), 401, "does not verify", None),
    ("owner: 100k-deep JSON",
     lambda a: _asgi(_party(a), "POST", "/messages", _transport(a, _deep_batch()),
                     body=_deep_batch()), 400, "nested over 32 deep", None),
    ("owner: 100 KB sender id (not echoed)",
     lambda a: _asgi(_party(a), "POST", "/messages",
                     {"X-PPDP-Sender": "s" * 100_000, "X-PPDP-Body-Signature": "AA=="}),
     401, "(100000 characters)", 0),
]  # fmt: skip


def _party(apps):
    from ppdp.federated.http import create_app

    if "owner_app" not in apps:
        apps["owner_app"] = create_app(apps["owner"].node)
    return apps["owner_app"]


@pytest.mark.parametrize("row", range(len(_HOSTILE_ROWS)), ids=[r[0] for r in _HOSTILE_ROWS])
def test_hostile_http_input_is_bounded_authenticated_and_answered_in_one_line(hostile_apps, row):
    _name, request, status, fragment, max_pulled = _HOSTILE_ROWS[row]
    got, reply, pulled = request(hostile_apps)
    assert got == status, reply
    _one_line(reply, fragment)
    assert len(reply) < 300  # nothing the client sent comes back unbounded
    if max_pulled is not None:
        assert pulled <= max_pulled
    assert hostile_apps["collector"].state.collector.store.snapshot().count == 0
    node = hostile_apps["owner"].node
    assert node.state == "waiting" and node.abort_reason is None and node.stats.received == 0


@pytest.mark.parametrize("server", ["collector", "party"])
def test_plain_http_beyond_loopback_is_refused_without_the_flag(server):
    from ppdp.federated.http import check_plain_http_bind as party_check
    from ppdp.local.collector._guard import check_plain_http_bind as collector_check

    check = collector_check if server == "collector" else party_check
    with pytest.raises(ParameterError) as info:
        check("0.0.0.0", tls=False, insecure_plain_http=False)
    _one_line(str(info.value), "--insecure-plain-http", "0.0.0.0")
    assert "unencrypted" in check("0.0.0.0", tls=False, insecure_plain_http=True)
    assert check("127.0.0.1", tls=False, insecure_plain_http=False) is None
    assert check("0.0.0.0", tls=True, insecure_plain_http=False) is None


def test_cli_missing_column_is_reported_from_the_header_before_any_row(
    cli_files, tmp_path, capsys, monkeypatch
):
    """A 10⁶-column table was read whole (16.7 s, 1.3 GB) before this error; now the header."""
    from ppdp.cli import main

    wide = tmp_path / "wide.csv"
    pad = pd.DataFrame(0, index=TINY_DF.index, columns=[f"pad{i}" for i in range(200)])
    pd.concat([TINY_DF.drop(columns=["x1"]), pad], axis=1).to_csv(wide, index=False)
    monkeypatch.setattr(pd, "read_csv", lambda *a, **k: pytest.fail("a row was read"))
    argv = [a.format(root=cli_files) for a in _PUB]
    argv[2] = str(wide)
    assert (
        main([*argv, *[a.format(root=cli_files) for a in _LED], "-o", str(tmp_path / "o.csv")]) == 2
    )
    errors = [e for e in capsys.readouterr().err.splitlines() if e.startswith("ppdp: ")]
    assert len(errors) == 1
    _one_line(errors[0], "missing column(s) 'x1'", "no row was read")
    assert budget_report(cli_files / "budget.db").spent.is_zero


def test_cli_part_file_of_a_killed_run_is_removed_by_the_next(cli_files, tmp_path):
    import subprocess
    import sys

    from ppdp.cli import main

    out = tmp_path / "out.csv"
    code = (
        "import os, signal, sys\nfrom ppdp._io import atomic_path\n"
        "with atomic_path(sys.argv[1]) as t:\n    t.write_text('half')\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    assert subprocess.run([sys.executable, "-c", code, str(out)], check=False).returncode == -9
    assert len(list(tmp_path.glob(".out.csv.*.part"))) == 1
    ledger = tmp_path / "b.db"
    assert main(["budget", "init", str(ledger), "--dataset-id", "tiny", "--epsilon", "5"]) == 0
    argv = [a.format(root=cli_files) for a in _PUB]
    assert main([*argv, "--ledger", str(ledger), "-o", str(out)]) == 0
    assert list(tmp_path.glob("*.part")) == [] and list(tmp_path.glob(".*.part")) == []
    assert out.exists()


# --- Issue 12 item 6: data-dependent errors are a counting oracle; the total mode -----------------


@pytest.mark.filterwarnings("ignore::ppdp.exceptions.LowUtilityWarning")  # LDA-DP at ε = 1
def test_undeclared_category_is_a_count_by_default_and_nothing_in_total_mode():
    """Default: one line with the count, nothing spent. acct.on_invalid = 'mask': the same
    release and the same charge whatever the count (the count goes to the custodian log)."""
    df = TINY_DF.copy()
    df.loc[:1, "g"] = "zz"  # two records with a category the schema leaves out
    with Accountant.in_memory(total=PrivacyBudget(5.0, 1e-4)) as acct:
        pub = LDAProjectionPublisher(1.0, 1e-6, TINY, class_counts=TINY_COUNTS)
        with pytest.raises(DataValidationError) as info:
            pub.fit(df, accountant=acct)
        _one_line(str(info.value), "column 'g'", "2 value(s)")
        assert acct.spent.is_zero
        acct.on_invalid = "mask"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LowUtilityWarning)
            for k in (0, 2, 5):
                df = TINY_DF.copy()
                df.loc[: k - 1, "g"] = "zz"
                before = acct.spent.epsilon
                pub = LDAProjectionPublisher(1.0, 1e-6, TINY, class_counts=TINY_COUNTS)
                pub.fit(df, accountant=acct)
                assert acct.spent.epsilon - before == pytest.approx(1.0)


def test_total_mode_needs_declared_classes_for_the_learners_nothing_spent():
    with Accountant.in_memory(total=PrivacyBudget(5.0)) as acct:
        acct.on_invalid = "mask"
        with pytest.raises(ParameterError) as info:
            _learner("logreg").fit(LX, LY, accountant=acct, allow_seeded=True)
        _one_line(str(info.value), "classes (None)", "on_invalid='mask'")
        assert acct.spent.is_zero


# --- Issue 15 item 6: the collector's YAML config; a second report of a column --------------------


def _marker_bad_yaml(tmp):
    (tmp / "c.yaml").write_text("survey: cat\nrandomizer: {type: additive\n")
    return ["local", "serve", "--config", str(tmp / "c.yaml")]


def _marker_yaml_list(tmp):
    (tmp / "c.yml").write_text("- survey\n- cat\n")
    return ["local", "serve", "--config", str(tmp / "c.yml")]


def _marker_second_report(tmp):
    (tmp / "w.csv").write_text((tmp / "v.csv").read_text())  # the same column, a new journal
    return ["local", "report", str(tmp / "w.csv")]


def _marker_again_on_finished_journal(tmp):
    return ["local", "report", str(tmp / "v.csv"), "--again"]


def _marker_other_clients_state(tmp):
    import json

    state = tmp / "other.reports.json"
    state.write_text(json.dumps({"format": "ppdp-local-report-state-1", "client": "x",
                                 "reports": []}))  # fmt: skip
    (tmp / "w.csv").write_text((tmp / "v.csv").read_text())
    return ["local", "report", str(tmp / "w.csv"), "--state", str(state)]


MARKER_CASES = {
    "serve: a config that is not YAML": (_marker_bad_yaml, "config file", "not valid YAML"),
    "serve: a YAML config that is not a mapping": (_marker_yaml_list, "must be a mapping of keys"),
    "report: the same column again without --again": (
        _marker_second_report,
        "again (False)",
        "column 'x' of survey 'cat'",
        "--again",
    ),
    "report: --again on a finished journal": (
        _marker_again_on_finished_journal,
        "again (True)",
        "--journal",
    ),
    "report: another client's state file": (_marker_other_clients_state, "belongs to client 'x'"),
}


@pytest.mark.parametrize("case", list(MARKER_CASES))
def test_collector_config_and_report_marker_one_line_exit_2_nothing_sent(
    tmp_path, capsys, monkeypatch, case
):
    """A bad collector config (YAML or JSON) and a second report of a column without --again:
    one line, exit 2, no new journal, nothing sent (the collector's count is unchanged)."""
    import httpx

    from ppdp.cli import main
    from ppdp.local.collector import CollectorConfig, CollectorStore, create_app

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
        from fastapi.testclient import TestClient

    cfg_path, _ = _resumable_setup(tmp_path)
    monkeypatch.setattr("time.sleep", lambda s: None)
    monkeypatch.setattr("uvicorn.run", lambda *a, **kw: pytest.fail("must not serve"))
    make, *fragments = MARKER_CASES[case]
    with TestClient(create_app(CollectorConfig.from_file(cfg_path))) as http:
        monkeypatch.setattr(httpx, "Client", lambda *a, **kw: http)
        monkeypatch.setattr(http, "close", lambda: None)
        server = ["--config", str(cfg_path), "--server", "http://testserver"]
        assert main(["local", "report", str(tmp_path / "v.csv"), *server]) == 0  # the first
        capsys.readouterr()
        argv = make(tmp_path)
        if argv[1] == "report":
            argv += server
        before = sorted(p.name for p in tmp_path.iterdir())
        assert main(argv) == 2
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("ppdp"), lines
        _one_line(lines[0], *fragments)
        assert sorted(p.name for p in tmp_path.iterdir()) == before  # no journal, no state
    with CollectorStore.open(tmp_path / "store.sqlite", create=False) as store:
        assert store.snapshot().count == 300
