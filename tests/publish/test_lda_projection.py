"""Unit tests of LDAProjectionPublisher (LDA-DP; ALGORITHMS-publishing B.2; proofs: lda-dp.md)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from ppdp.accounting import Accountant
from ppdp.budget import GuaranteeKind, PrivacyBudget
from ppdp.data import Schema
from ppdp.exceptions import (
    BudgetExceededError,
    DataValidationError,
    LowUtilityWarning,
    NotDifferentiallyPrivateWarning,
    NotFittedError,
    ParameterError,
    ParameterTypeError,
    PrivacyLeakWarning,
    SchemaError,
)
from ppdp.publish import LDAProjectionPublisher
from ppdp.publish.fisher import default_ridge, fisher_directions, lda_noise_plan, noisy_scatter
from ppdp.publish.lda_projection import projection_l1_sensitivity

# Most tests here fit noisy projections at epsilon <= 2, where the per-row noise scale reaches
# the projections' range and fit warns LowUtilityWarning before spending: noise for them; the
# warning itself is tested in test_noisy_projections_warn_low_utility_before_the_spend.
pytestmark = pytest.mark.filterwarnings(
    "ignore:noisy projections at epsilon:ppdp.exceptions.LowUtilityWarning"
)

COLUMNS = [
    {"name": "a", "type": "numeric", "lower": 0, "upper": 10},
    {"name": "b", "type": "numeric", "lower": -1.0, "upper": 1.0},
    {"name": "c", "type": "categorical", "categories": ["x", "y", "z"]},
]


def make_schema(classes=("no", "yes"), public_counts=None) -> Schema:
    label = {"name": "t", "classes": list(classes)}
    if public_counts is not None:
        label["public_counts"] = list(public_counts)
    return Schema.from_dict({"columns": COLUMNS, "label": label})


def make_df(n: int, classes=("no", "yes"), seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    k = rng.integers(0, len(classes), size=n)
    a = np.clip(3.0 + 2.0 * k + rng.normal(size=n), 0, 10)
    b = np.clip(0.3 * (k == 1) - 0.2 + 0.3 * rng.normal(size=n), -1, 1)
    c = np.where(rng.uniform(size=n) < 0.2 + 0.3 * (k == 0), "x", rng.choice(["y", "z"], n))
    return pd.DataFrame({"a": a, "b": b, "c": c, "t": np.array(classes)[k]})


def counts_of(df: pd.DataFrame, classes=("no", "yes")) -> list[int]:
    return [int((df["t"] == c).sum()) for c in classes]


@pytest.fixture(scope="module")
def df() -> pd.DataFrame:
    return make_df(4000)


@pytest.fixture(scope="module")
def schema(df) -> Schema:
    return make_schema(public_counts=counts_of(df))


# ------------------------------------------------------------------ budget and ledger


@pytest.mark.parametrize(
    ("release", "n_charges"),
    [("direction", 2), ("noisy-projections", 3), ("raw-projections", 2)],
)
def test_spends_exactly_the_budget_through_the_ledger(df, schema, release, n_charges) -> None:
    acct = Accountant.in_memory(total=PrivacyBudget(2.0, 1e-5))
    pub = LDAProjectionPublisher(1.0, 1e-6, schema, release=release, random_state=0)
    assert pub.privacy_budget() == PrivacyBudget(1.0, 1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotDifferentiallyPrivateWarning)
        pub.fit(df, accountant=acct, allow_seeded=True)
    assert len(pub.release_.ledger_indices) == n_charges
    assert acct.spent.epsilon == pytest.approx(1.0, rel=1e-12)
    assert acct.spent.epsilon <= 1.0 and acct.spent.delta <= 1e-6
    assert pub.release_.seeded
    g = pub.release_.guarantee
    if release == "raw-projections":
        assert g.kind is GuaranteeKind.NONE and "NOT protected" in str(g)
    else:
        assert g.kind is GuaranteeKind.APPROX and (g.epsilon, g.delta) == (1.0, 1e-6)
        assert "same class" in str(g)


def test_budget_refused_before_the_data_are_read(schema) -> None:
    acct = Accountant.in_memory(total=PrivacyBudget(0.5, 1e-5))

    class Untouchable(pd.DataFrame):
        def __getattr__(self, name):  # pragma: no cover - must not be reached
            raise AssertionError("the data were read")

    pub = LDAProjectionPublisher(1.0, 1e-6, schema)
    with pytest.raises(BudgetExceededError):
        pub.fit(make_df(10), accountant=acct)
    assert acct.spent == PrivacyBudget(0.0)


def test_wrong_class_counts_cost_nothing(df) -> None:
    acct = Accountant.in_memory(total=PrivacyBudget(2.0, 1e-5))
    counts = counts_of(df)
    bad = LDAProjectionPublisher(
        1.0, 1e-6, make_schema(), class_counts=[counts[0] + 1, counts[1] - 1]
    )
    with pytest.raises(DataValidationError, match="class counts"):
        bad.fit(df, accountant=acct)
    assert acct.spent == PrivacyBudget(0.0)


def test_class_counts_are_never_taken_from_the_data(df) -> None:
    with pytest.raises(ParameterError, match="public_counts"):
        LDAProjectionPublisher(1.0, 1e-6, make_schema()).fit(df)
    pub = LDAProjectionPublisher(1.0, 1e-6, make_schema(), class_counts=counts_of(df))
    pub.fit(df)
    np.testing.assert_array_equal(pub.release_.statistics["class_counts"], counts_of(df))


# ------------------------------------------------------------------ parameters


@pytest.mark.parametrize(
    ("kw", "exc", "word"),
    [
        ({"epsilon": 0.0}, ParameterError, "epsilon"),
        ({"epsilon": 20.0}, ParameterError, "epsilon"),
        ({"delta": 0.0}, ParameterError, "delta"),
        ({"delta": 1.0}, ParameterError, "delta"),
        ({"release": "rows"}, ParameterError, "release"),
        ({"calibration": "laplace"}, ParameterError, "calibration"),
        ({"n_components": 2}, ParameterError, "n_components"),
        ({"n_components": 0}, ParameterError, "n_components"),
        ({"projection_share": 1.0}, ParameterError, "projection_share"),
        ({"mean_share": 0.0}, ParameterError, "share"),
        ({"ridge": -1.0}, ParameterError, "ridge"),
        ({"ridge": "big"}, ParameterError, "ridge"),
        ({"ridge": True}, ParameterTypeError, "ridge"),
        ({"class_counts": [10]}, ParameterError, "class_counts"),
        ({"class_counts": [10, 0]}, ParameterError, "class_counts"),
        ({"class_counts": "10"}, ParameterTypeError, "class_counts"),
        ({"allow_large_epsilon": "yes"}, ParameterTypeError, "allow_large_epsilon"),
        ({"remove_constant": 1}, ParameterTypeError, "remove_constant"),
    ],
)
def test_bad_parameters_are_refused_before_anything(df, schema, kw, exc, word) -> None:
    args = {"epsilon": 1.0, "delta": 1e-6, **kw}
    eps, delta = args.pop("epsilon"), args.pop("delta")
    acct = Accountant.in_memory(total=PrivacyBudget(5.0, 1e-5))
    pub = LDAProjectionPublisher(eps, delta, schema, **args)
    with pytest.raises(exc, match=word):
        pub.privacy_budget()
    with pytest.raises(exc, match=word):
        pub.fit(df, accountant=acct)
    assert acct.spent == PrivacyBudget(0.0)


def test_schema_must_have_a_label(df) -> None:
    with pytest.raises(SchemaError, match="label"):
        LDAProjectionPublisher(1.0, 1e-6, make_schema().without_label()).privacy_budget()
    with pytest.raises(ParameterTypeError, match="schema"):
        LDAProjectionPublisher(1.0, 1e-6, {"columns": []}).privacy_budget()  # type: ignore[arg-type]


def test_data_errors(schema) -> None:
    with pytest.raises(DataValidationError):
        LDAProjectionPublisher(1.0, 1e-6, make_schema(public_counts=[1, 0 + 1])).fit(
            make_df(2).assign(a=np.nan)
        )
    with pytest.raises(DataValidationError, match="row"):
        LDAProjectionPublisher(1.0, 1e-6, make_schema(), class_counts=[1, 1]).fit(make_df(1))


# ------------------------------------------------------------------ what is computed


def test_scale_is_the_declared_bound_not_the_data(df, schema) -> None:
    pub = LDAProjectionPublisher(1.0, 1e-6, schema, random_state=0).fit(df)
    R = math.sqrt(2 + 1)  # p1 = 2 numerics, p2 = 1 categorical
    assert pub.scale_ == R * (1 + 2.0**-30)
    assert pub.release_.statistics["scale"][0] == pub.scale_
    X, _ = schema.encode(df)
    assert np.max(np.linalg.norm(X / pub.scale_, axis=1)) < 1.0


def test_direction_equals_fisher_on_the_released_statistics(df, schema) -> None:
    pub = LDAProjectionPublisher(1.0, 1e-6, schema, release="direction", random_state=1).fit(df)
    st = pub.release_.statistics
    assert pub.release_.data is None and "projections" not in st
    counts = counts_of(df)
    S = noisy_scatter(st["second_moment_sum"], st["class_means"], counts)
    np.testing.assert_array_equal(S, st["scatter"])
    block = np.zeros((5, 1))
    block[2:, 0] = 1.0  # the one-hot block of "c"
    W = fisher_directions(st["class_means"], counts, S, ridge=float(st["ridge"][0]), constant=block)
    np.testing.assert_array_equal(W, st["directions"])
    assert abs(float(W[2:, 0].sum())) < 1e-12  # orthogonal to the constant direction
    assert W.shape == (5, 1) and np.linalg.norm(W) == pytest.approx(1.0)
    plan = lda_noise_plan(epsilon=1.0, delta=1e-6, n_features=5, class_counts=counts)
    assert st["ridge"][0] == default_ridge(plan)


def test_large_epsilon_recovers_the_exact_fisher_direction(df, schema) -> None:
    pub = LDAProjectionPublisher(
        1e4,
        1e-6,
        schema,
        release="direction",
        ridge=0.0,
        allow_large_epsilon=True,
        random_state=2,
    ).fit(df)
    X, y = schema.encode(df)
    X = X / pub.scale_
    mu = np.stack([X[y == c].mean(axis=0) for c in range(2)])
    S = noisy_scatter(X.T @ X, mu, counts_of(df))
    block = np.zeros((5, 1))
    block[2:, 0] = 1.0
    w = fisher_directions(mu, counts_of(df), S, ridge=0.0, constant=block)
    assert float(w[:, 0] @ pub.directions_[:, 0]) > 0.9999
    # Without removing the constant direction, the noise along it dominates the direction.
    raw = LDAProjectionPublisher(
        1e4,
        1e-6,
        schema,
        release="direction",
        ridge=0.0,
        allow_large_epsilon=True,
        remove_constant=False,
        random_state=2,
    ).fit(df)
    assert abs(float(raw.directions_[2:, 0].sum())) > 1.0


def test_noise_levels_of_the_release(schema) -> None:
    """The noisy class means deviate from the truth by the plan's σ (40 fits, 5 features)."""
    df = make_df(4000)
    X, y = schema.encode(df)
    pub = LDAProjectionPublisher(1.0, 1e-6, schema, release="direction")
    X = X / pub.scale_
    true = np.stack([X[y == c].mean(axis=0) for c in range(2)])
    plan = lda_noise_plan(epsilon=1.0, delta=1e-6, n_features=5, class_counts=counts_of(df))
    dev = []
    for seed in range(40):
        pub.random_state = seed
        dev.append(
            (pub.fit(df).release_.statistics["class_means"] - true)
            / np.array(plan.mean_sigmas)[:, None]
        )
    z = np.concatenate([d.ravel() for d in dev])  # 400 standard normals if σ is right
    assert np.std(z) == pytest.approx(1.0, abs=0.12)  # 4.5 sigma for 400 draws


def test_noisy_projections_have_laplace_noise_of_scale_2_over_eps3(schema) -> None:
    df = make_df(4000)
    pub = LDAProjectionPublisher(2.0, 1e-6, schema, projection_share=0.25, random_state=3).fit(df)
    Y = pub.release_.statistics["projections"]
    exact = pub.transform(df)
    b = 2.0 / 0.5
    resid = (Y - exact)[:, 0]
    # Laplace(b): mean |Z| = b; sd of |Z| is b, so the mean of 4000 is within 5 b/sqrt(4000).
    assert np.mean(np.abs(resid)) == pytest.approx(b, abs=5 * b / math.sqrt(4000))
    assert list(pub.release_.data.columns) == ["lda_1"]
    assert projection_l1_sensitivity(1) == 2.0


def test_raw_projections_warn_and_are_exact(df, schema) -> None:
    pub = LDAProjectionPublisher(1.0, 1e-6, schema, release="raw-projections", random_state=4)
    with pytest.warns(NotDifferentiallyPrivateWarning, match="NOT"):
        pub.fit(df)
    np.testing.assert_array_equal(pub.release_.encoded, pub.transform(df))
    np.testing.assert_array_equal(pub.release_.data["lda_1"].to_numpy(), pub.transform(df)[:, 0])


def test_three_classes_give_two_directions() -> None:
    classes = ("p", "q", "r")
    df = make_df(3000, classes=classes, seed=5)
    schema = make_schema(classes=classes, public_counts=counts_of(df, classes))
    pub = LDAProjectionPublisher(2.0, 1e-6, schema, random_state=5).fit(df)
    W = pub.directions_
    assert W.shape == (5, 2)
    np.testing.assert_allclose(np.linalg.norm(W, axis=0), 1.0)
    assert pub.release_.data.shape == (3000, 2)
    one = LDAProjectionPublisher(2.0, 1e-6, schema, n_components=1, random_state=5).fit(df)
    assert one.directions_.shape == (5, 1)
    assert one.privacy_budget() == PrivacyBudget(2.0, 1e-6)


def test_paper_calibration_is_noisier(df, schema) -> None:
    g = LDAProjectionPublisher(1.0, 1e-6, schema, release="direction")._params().plan
    p = LDAProjectionPublisher(1.0, 1e-6, schema, release="direction", calibration="paper")
    plan = p._params().plan
    assert plan.calibration == "paper"
    assert plan.scatter_sigma > 2 * g.scatter_sigma
    p.random_state = 6
    assert p.fit(df).directions_.shape == (5, 1)


def test_warnings_from_public_quantities() -> None:
    small = make_df(60, seed=7)
    schema = make_schema(public_counts=counts_of(small))
    with pytest.warns(LowUtilityWarning, match="mostly noise"):
        LDAProjectionPublisher(0.1, 1e-6, schema, random_state=0).fit(small)
    with pytest.warns(PrivacyLeakWarning, match="1/n"), warnings.catch_warnings():
        warnings.simplefilter("ignore", LowUtilityWarning)
        LDAProjectionPublisher(1.0, 0.05, schema, random_state=0).fit(small)


def test_transform_needs_a_fit_and_ignores_the_label(df, schema) -> None:
    pub = LDAProjectionPublisher(1.0, 1e-6, schema, release="direction", random_state=8)
    with pytest.raises(NotFittedError):
        pub.transform(df)
    pub.fit(df)
    np.testing.assert_array_equal(pub.transform(df), pub.transform(df.drop(columns=["t"])))
    assert "LDAProjectionPublisher(" in repr(pub)


def test_lda_rule_from_the_release(df, schema) -> None:
    pub = LDAProjectionPublisher(2.0, 1e-6, schema, release="direction", random_state=9)
    with pytest.raises(NotFittedError):
        pub.predict(df)
    pub.fit(df)
    st = pub.release_.statistics
    scores = pub.decision_function(df)
    assert scores.shape == (len(df),)  # scikit-learn's two-class shape: s_yes - s_no
    # Two classes, one direction: the scalar rule by hand.
    w = st["directions"][:, 0]
    counts = np.asarray(counts_of(df), dtype=float)
    m = st["class_means"] @ w
    s2 = (w @ st["scatter"] @ w + st["ridge"][0]) / (counts.sum() - 2)
    z = pub.transform(df)[:, 0]
    expect = z[:, None] * m / s2 - m**2 / (2 * s2) + np.log(counts / counts.sum())
    np.testing.assert_allclose(scores, expect[:, 1] - expect[:, 0], rtol=1e-9, atol=1e-9)
    predicted = pub.predict(df)
    np.testing.assert_array_equal(predicted, np.where(scores > 0, "yes", "no"))
    assert set(predicted) <= {"no", "yes"}
    accuracy = float(np.mean(predicted == df["t"].to_numpy()))
    majority = max(counts) / counts.sum()
    assert accuracy > majority + 0.1


def test_lda_rule_three_classes() -> None:
    classes = ("p", "q", "r")
    df = make_df(3000, classes=classes, seed=10)
    schema = make_schema(classes=classes, public_counts=counts_of(df, classes))
    pub = LDAProjectionPublisher(2.0, 1e-6, schema, release="direction", random_state=10).fit(df)
    assert pub.decision_function(df).shape == (3000, 3)
    accuracy = float(np.mean(pub.predict(df) == df["t"].to_numpy()))
    assert accuracy > 0.5  # three balanced classes: chance is 1/3


def test_noisy_projections_warn_low_utility_before_the_spend(df, schema) -> None:
    acct = Accountant.in_memory(total=PrivacyBudget(5.0, 1e-5))
    pub = LDAProjectionPublisher(1.0, 1e-6, schema, random_state=3)
    message = pub.low_utility_message()
    assert message is not None and "epsilon above 2.01" in message
    with warnings.catch_warnings():
        warnings.simplefilter("error", LowUtilityWarning)  # stop at the warning
        with pytest.raises(LowUtilityWarning, match=r"noisy projections at epsilon 1\.0"):
            pub.fit(df, accountant=acct, allow_seeded=True)
    assert acct.spent == PrivacyBudget(0.0)  # said before anything was spent
    assert not hasattr(pub, "release_") or pub.__dict__.get("release_") is None
    with pytest.warns(LowUtilityWarning) as caught:
        pub.fit(df, accountant=acct, allow_seeded=True)
    assert [str(w.message) for w in caught if "noisy projections" in str(w.message)] == [message]
    assert acct.spent == PrivacyBudget(1.0, 1e-6)


def test_no_low_utility_warning_at_the_epsilon_it_names_or_for_a_direction(df, schema) -> None:
    import re

    message = LDAProjectionPublisher(1.0, 1e-6, schema).low_utility_message()
    needed = float(re.search(r"epsilon above ([0-9.]+)", message).group(1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", LowUtilityWarning)  # any such warning fails the test
        LDAProjectionPublisher(needed, 1e-6, schema, random_state=4).fit(df)
        LDAProjectionPublisher(0.5, 1e-6, schema, release="direction", random_state=4).fit(df)
    with pytest.warns(LowUtilityWarning, match="noisy projections"):
        LDAProjectionPublisher(needed * 0.99, 1e-6, schema, random_state=4).fit(df)
