"""Issue 15's new-user walk in Python: a semicolon-separated bank table with an ID column and
integer-coded categories, the learners taking the raw DataFrame (``schema=``), a
``SchemaEncoder`` pipeline, ``cross_val_score`` through an accountant, LDA-DP scores for
``roc_auc_score``."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import Pipeline

import ppdp.learn._base as _base
from ppdp.accounting import Accountant
from ppdp.budget import PrivacyBudget
from ppdp.data import Schema, SchemaEncoder
from ppdp.exceptions import BudgetExceededError, DataValidationError, ParameterError
from ppdp.learn import (
    HybridRBFSVM,
    PrivateLinearSVM,
    PrivateLogisticRegression,
    PrivateRBFSVM,
    UnaccountedFitWarning,
    load_model,
    read_model,
    save_model,
)
from ppdp.publish import LDAProjectionPublisher

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "age", "type": "numeric", "lower": 18, "upper": 95},
            {"name": "balance", "type": "numeric", "lower": -5000, "upper": 50000},
            {"name": "job", "type": "categorical", "categories": ["admin", "management", "blue"]},
            # integer-coded categories (SEX 1/2, EDUCATION 1-4), declared categorical
            {"name": "SEX", "type": "categorical", "categories": [1, 2]},
            {"name": "EDUCATION", "type": "categorical", "categories": [1, 2, 3, 4]},
        ],
        "label": {"name": "y", "classes": ["no", "yes"]},
    }
)


def _bank_csv(n: int = 4000, seed: int = 0) -> str:
    """A ``;``-separated table with an ``ID`` column the schema leaves out."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n)
    balance = rng.normal(3000, 6000, n).round()
    job = rng.choice(["admin", "management", "blue"], n)
    sex = rng.integers(1, 3, n)
    edu = rng.integers(1, 5, n)
    score = 0.04 * (age - 50) + 1.2 * (job == "management") + 0.6 * (edu - 2.5) - 0.5
    yes = rng.random(n) < 1 / (1 + np.exp(-2 * score))
    df = pd.DataFrame(
        {
            "ID": np.arange(100_000, 100_000 + n),
            "age": age,
            "balance": balance,
            "job": job,
            "SEX": sex,
            "EDUCATION": edu,
            "y": np.where(yes, "yes", "no"),
        }
    )
    return df.to_csv(sep=";", index=False)


@pytest.fixture(scope="module")
def bank() -> pd.DataFrame:
    return pd.read_csv(io.StringIO(_bank_csv()), sep=";")


def test_learner_with_schema_takes_the_raw_table_and_predicts_class_names(bank) -> None:
    train, test = bank.iloc[:3000], bank.iloc[3000:]
    acct = Accountant.in_memory(total=PrivacyBudget(1.0))
    # Seeded (allowed explicitly) so that the utility check below is deterministic.
    clf = PrivateLogisticRegression(epsilon=1.0, schema=SCHEMA, random_state=0)
    clf.fit(train.drop(columns="y"), train["y"], accountant=acct, allow_seeded=True)
    assert acct.spent.epsilon == 1.0
    assert clf.fit_intercept is True
    assert list(clf.feature_names_in_) == ["age", "balance", "job", "SEX", "EDUCATION"]
    assert clf.n_features_in_ == 5
    assert list(clf.classes_) == ["no", "yes"]
    assert clf.guarantee_.details["n"] == 3000
    # The norm bound is the schema's declared one.
    assert f"data_norm={SCHEMA.max_row_l2_norm:g}" in " ".join(clf.guarantee_.assumptions)
    predicted = clf.predict(test.drop(columns="y"))  # no label column at prediction
    assert set(predicted) <= {"no", "yes"}
    assert clf.predict(test).tolist() == predicted.tolist()  # extra columns (ID, y) ignored
    auc = roc_auc_score(test["y"] == "yes", clf.decision_function(test))
    assert auc > 0.6
    # y may also come from the table's label column.
    acct2 = Accountant.in_memory(total=PrivacyBudget(1.0))
    clf2 = PrivateLogisticRegression(epsilon=1.0, schema=SCHEMA).fit(train, accountant=acct2)
    assert list(clf2.classes_) == ["no", "yes"]


def test_schema_fit_equals_the_encoded_fit(bank) -> None:
    X, y = SCHEMA.encode(bank)
    names = np.asarray(["no", "yes"])[y]
    raw = PrivateLinearSVM(schema=SCHEMA, random_state=3).fit(bank.drop(columns="y"), bank["y"])
    enc = PrivateLinearSVM(data_norm=SCHEMA.max_row_l2_norm, random_state=3).fit(X, names)
    np.testing.assert_array_equal(raw.coef_, enc.coef_)
    np.testing.assert_array_equal(raw.decision_function(bank), enc.decision_function(X))


def test_encoding_errors_cost_nothing_and_mask_mode_is_honoured(bank) -> None:
    bad = bank.copy()
    bad.loc[bad.index[:3], "job"] = "student"  # undeclared, no 'other' bucket
    acct = Accountant.in_memory(total=PrivacyBudget(1.0))
    with pytest.raises(DataValidationError, match="job"):
        PrivateLogisticRegression(schema=SCHEMA).fit(bad, accountant=acct)
    assert acct.spent.epsilon == 0.0
    acct.on_invalid = "mask"
    PrivateLogisticRegression(schema=SCHEMA).fit(bad, accountant=acct)
    assert acct.spent.epsilon == 1.0
    # Budget refused before the table is read: even a broken table costs nothing.
    with pytest.raises(BudgetExceededError):
        PrivateLogisticRegression(schema=SCHEMA).fit(bad.drop(columns="age"), accountant=acct)


def test_schema_parameter_errors_are_one_line() -> None:
    three = Schema.from_dict(
        {
            "columns": [{"name": "a", "type": "numeric", "lower": 0, "upper": 1}],
            "label": {"name": "t", "classes": ["p", "q", "r"]},
        }
    )
    df = pd.DataFrame({"a": [0.1, 0.9], "t": ["p", "q"]})
    with pytest.raises(ParameterError, match=r"schema \(label with 3 classes\)"):
        PrivateLogisticRegression(schema=three).fit(df)
    with pytest.raises(ParameterError, match="classes"):
        PrivateLogisticRegression(schema=SCHEMA, classes=["yes", "no"]).fit(df)
    with pytest.raises(TypeError, match="schema"):
        PrivateLogisticRegression(schema={"columns": []}).fit(df)


def test_pipeline_with_schema_encoder(bank) -> None:
    train, test = bank.iloc[:3000], bank.iloc[3000:]
    acct = Accountant.in_memory(total=PrivacyBudget(1.0))
    pipe = Pipeline(
        [
            ("enc", SchemaEncoder(SCHEMA)),
            (
                "clf",
                PrivateLogisticRegression(
                    epsilon=1.0,
                    data_norm=SCHEMA.max_row_l2_norm,
                    classes=SCHEMA.classes,
                    random_state=0,
                ),
            ),
        ]
    )
    pipe.fit(train, train["y"], clf__accountant=acct, clf__allow_seeded=True)
    assert acct.spent.epsilon == 1.0
    assert set(pipe.predict(test)) <= {"no", "yes"}
    assert list(pipe[:-1].get_feature_names_out()) == list(SCHEMA.feature_names)
    assert roc_auc_score(test["y"] == "yes", pipe.decision_function(test)) > 0.6


def test_schema_encoder_is_a_declared_transformer(bank) -> None:
    enc = SchemaEncoder(SCHEMA)
    X = enc.fit_transform(bank)
    np.testing.assert_array_equal(X, SCHEMA.encode(bank)[0])
    assert enc.n_features_in_ == 5
    # fit reads nothing: fitting on other data changes nothing.
    np.testing.assert_array_equal(SchemaEncoder(SCHEMA).fit(bank.iloc[:2]).transform(bank), X)
    out = SchemaEncoder(SCHEMA).set_output(transform="pandas").fit_transform(bank)
    assert list(out.columns) == list(SCHEMA.feature_names)
    # Inside a ColumnTransformer, next to a passthrough of the ID.
    ct = ColumnTransformer(
        [("enc", SchemaEncoder(SCHEMA), ["age", "balance", "job", "SEX", "EDUCATION"])],
        remainder="drop",
    )
    np.testing.assert_array_equal(ct.fit_transform(bank), X)
    assert list(ct.get_feature_names_out()) == [f"enc__{n}" for n in SCHEMA.feature_names]
    with pytest.raises(DataValidationError, match="missing column"):
        enc.transform(bank.drop(columns="job"))
    with pytest.raises(ParameterError, match="on_invalid"):
        SchemaEncoder(SCHEMA, on_invalid="skip").fit(bank)


def test_cross_val_score_through_an_accountant(bank) -> None:
    acct = Accountant.in_memory(total=PrivacyBudget(3.0))
    clf = PrivateLogisticRegression(epsilon=1.0, schema=SCHEMA)
    scores = cross_val_score(
        clf, bank, bank["y"], cv=3, scoring="roc_auc", params={"accountant": acct}
    )
    assert scores.shape == (3,)
    assert acct.spent.epsilon == pytest.approx(3.0)  # every fold is a spend
    with pytest.raises(BudgetExceededError):  # a fourth fit is refused
        clf.fit(bank, accountant=acct)


def test_unaccounted_fit_warns_once_per_process(bank, monkeypatch) -> None:
    monkeypatch.setattr(_base, "_warned_unaccounted", False)
    with pytest.warns(UnaccountedFitWarning, match="cross_val_score"):
        cross_val_score(PrivateLogisticRegression(schema=SCHEMA), bank, bank["y"], cv=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PrivateLogisticRegression(schema=SCHEMA).fit(bank)  # shown once per process
    # Suppressible with an ordinary warnings filter.
    monkeypatch.setattr(_base, "_warned_unaccounted", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=UnaccountedFitWarning)
        PrivateLogisticRegression(schema=SCHEMA).fit(bank)


def test_rbf_learners_take_the_raw_table(bank) -> None:
    train, test = bank.iloc[:3000], bank.iloc[3000:]
    svm = PrivateRBFSVM(schema=SCHEMA, n_components=20, random_state=0, feature_random_state=0)
    svm.fit(train)
    assert set(svm.predict(test.drop(columns="y"))) <= {"no", "yes"}
    assert list(svm.feature_names_in_) == ["age", "balance", "job", "SEX", "EDUCATION"]
    public = bank.iloc[3800:].drop(columns="y")
    hyb = HybridRBFSVM(
        public, schema=SCHEMA, n_components=10, rho_max_iter=20, random_state=0, check_overlap=False
    ).fit(train)
    assert hyb.rho_.shape == (10, SCHEMA.n_features)
    assert set(hyb.predict(test)) <= {"no", "yes"}


def test_model_file_keeps_the_schema(bank) -> None:
    clf = PrivateLogisticRegression(schema=SCHEMA, random_state=1).fit(bank)
    back = type(clf).from_model_dict(clf.to_model_dict())
    assert back.schema == SCHEMA
    np.testing.assert_array_equal(back.decision_function(bank), clf.decision_function(bank))
    assert back.predict(bank).tolist() == clf.predict(bank).tolist()


def test_lda_decision_function_feeds_roc_auc(bank) -> None:
    counts = [int((bank["y"] == c).sum()) for c in SCHEMA.classes]
    pub = LDAProjectionPublisher(
        1.0, 1e-6, SCHEMA, class_counts=counts, release="direction", random_state=0
    ).fit(bank)
    scores = pub.decision_function(bank)
    assert scores.shape == (len(bank),)
    assert roc_auc_score(bank["y"] == "yes", scores) > 0.6
    np.testing.assert_array_equal(pub.predict(bank), np.where(scores > 0, "yes", "no"))


def test_save_model_of_a_schema_learner(bank, tmp_path) -> None:
    clf = PrivateLogisticRegression(schema=SCHEMA, random_state=1).fit(bank)
    path = save_model(clf, tmp_path / "m.json")  # the learner's schema is stored
    mf = read_model(path)
    assert mf.schema == SCHEMA
    assert mf.feature_names == SCHEMA.feature_names
    assert load_model(path).predict(bank).tolist() == clf.predict(bank).tolist()
    save_model(clf, tmp_path / "m2.json", schema=SCHEMA)
    other = Schema.from_dict({**SCHEMA.to_dict(), "row_norm_bound": 1.0})
    with pytest.raises(ParameterError, match="schema= "):
        save_model(clf, tmp_path / "m3.json", schema=other)


def test_a_schema_without_a_two_class_label_says_what_to_declare() -> None:
    """A features-only schema said 'label with 0 classes'; a 23-class label (KDD Cup's
    attack types) gave no hint that one class against the rest is the way."""
    cols = [{"name": "a", "type": "numeric", "lower": 0, "upper": 1}]
    none = Schema.from_dict({"columns": cols})
    many = Schema.from_dict({"columns": cols, "label": {"name": "t", "classes": list("pqr")}})
    df = pd.DataFrame({"a": [0.1, 0.9], "t": ["p", "q"]})
    with pytest.raises(ParameterError, match=r"schema \(no label\) must declare the label"):
        PrivateLogisticRegression(schema=none).fit(df[["a"]], df["t"])
    with pytest.raises(ParameterError, match=r"one class against the rest, e.g. 'p' or not"):
        PrivateLogisticRegression(schema=many).fit(df)
