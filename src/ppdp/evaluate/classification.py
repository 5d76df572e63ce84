"""Classification utility of a release: train on the release, test on held-out original rows.

Jiang et al. (2013) measure a published table by the accuracy (ACA) and AUC of a
classifier trained on it and tested on original rows that took no part in the release,
next to two reference lines: the same classifier trained on the original training rows
(BA, the best achievable) and the majority class (LA, the lowest achievable; every
attribute generalised away, as in DiffGen).

Every function here reads original data (the test rows, and the training rows for BA and
LA), so the numbers are for evaluating a method, not for release. Training on a release
is post-processing and costs no budget.

Classifiers (scikit-learn, the ``learn`` extra, imported on first use):

* ``"lda"``: :class:`sklearn.discriminant_analysis.LinearDiscriminantAnalysis` with its
  default SVD solver, as the paper's LDA. One-hot blocks are collinear (each sums to 1);
  the SVD solver handles that, and its "Variables are collinear" warning is silenced.
* ``"tree"``: :class:`sklearn.tree.DecisionTreeClassifier` with ``criterion="entropy"``
  (information gain, as C4.5) and ``min_samples_leaf=20`` by default. scikit-learn's trees
  are CART: binary splits and no pessimistic-error pruning, so the leaf minimum stands in
  for C4.5's pruning (without it a fully grown tree overfits Adult by several points).
  Splits tie-break with ``random_state`` (0 by default), so results are deterministic.

Features are the schema's encoded features (numeric columns in ``[0, 1]`` from the declared
bounds, one-hot categoricals; the label excluded); targets are the label's class codes.
"""

from __future__ import annotations

import warnings
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy.stats import rankdata

from ppdp._validation import check_int, check_option
from ppdp.data import Schema
from ppdp.evaluate._optional import import_sklearn
from ppdp.exceptions import DataValidationError, ParameterTypeError, SchemaError

__all__ = [
    "CLASSIFIERS",
    "DEFAULT_MIN_SAMPLES_LEAF",
    "baseline_accuracy",
    "classification_utility",
    "lowest_achievable",
    "roc_auc",
]

Classifier = Literal["lda", "tree"]
#: The classifiers :func:`classification_utility` knows.
CLASSIFIERS: tuple[str, ...] = ("lda", "tree")
#: Default leaf minimum of the entropy tree (our stand-in for C4.5's pruning).
DEFAULT_MIN_SAMPLES_LEAF = 20


def roc_auc(y_true: ArrayLike, scores: ArrayLike) -> float:
    """Area under the ROC curve of binary labels against real scores (ties count one half).

    The Mann-Whitney form: the probability that a random positive scores above a random
    negative, ties counted ½. Constant scores give exactly 0.5.

    Parameters
    ----------
    y_true : array-like of bool or {0, 1}, shape (n,)
        True for the positive class. Both classes must occur.
    scores : array-like of float, shape (n,)
        Higher means more likely positive.

    Returns
    -------
    float

    Examples
    --------
    >>> roc_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    >>> roc_auc([0, 1, 1], [0.5, 0.5, 0.5])
    0.5
    """
    y = np.asarray(y_true).astype(bool)
    s = np.asarray(scores, dtype=np.float64)
    if y.ndim != 1 or s.shape != y.shape:
        raise DataValidationError(
            f"y_true {y.shape} and scores {s.shape} must be 1-D arrays of the same length"
        )
    n_pos = int(y.sum())
    n_neg = y.size - n_pos
    if n_pos == 0 or n_neg == 0:
        raise DataValidationError(
            f"roc_auc needs both classes in y_true; got {n_pos} positive(s) and {n_neg} negative(s)"
        )
    if not np.isfinite(s).all():
        raise DataValidationError("scores must be finite")
    ranks = rankdata(s)  # average ranks: ties count one half
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def _check_schema(schema: Schema) -> None:
    if not isinstance(schema, Schema):
        raise ParameterTypeError(f"schema ({type(schema).__name__}) must be a ppdp.data.Schema")
    if schema.label is None:
        raise SchemaError("classification utility needs a schema with a label")


def _encode(name: str, df: pd.DataFrame, schema: Schema) -> tuple[NDArray[np.float64], Any]:
    if not isinstance(df, pd.DataFrame):
        raise ParameterTypeError(f"{name} ({type(df).__name__}) must be a pandas DataFrame")
    if len(df) == 0:
        raise DataValidationError(f"{name} has no rows")
    X, y = schema.encode(df)
    return X, y


def _make(classifier: str, min_samples_leaf: int, random_state: int | None) -> Any:
    import_sklearn()
    if classifier == "lda":
        from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

        return LinearDiscriminantAnalysis()
    from sklearn.tree import DecisionTreeClassifier

    return DecisionTreeClassifier(
        criterion="entropy", min_samples_leaf=min_samples_leaf, random_state=random_state
    )


def _scores(model: Any, X: NDArray[np.float64], n_classes: int) -> NDArray[np.float64]:
    """Per-class scores on the declared classes (columns of absent classes are zero)."""
    present = np.asarray(model.classes_, dtype=np.int64)
    proba = np.zeros((X.shape[0], n_classes))
    if n_classes == 2 and hasattr(model, "decision_function"):
        # LDA: the decision function ranks like predict_proba but does not saturate.
        d = np.asarray(model.decision_function(X), dtype=np.float64)
        proba[:, 1] = d
        proba[:, 0] = -d
        return proba
    proba[:, present] = model.predict_proba(X)
    return proba


def _auc(y_test: NDArray[np.int64], scores: NDArray[np.float64], n_classes: int) -> float:
    if n_classes == 2:
        if len(np.unique(y_test)) < 2:
            return float("nan")
        return roc_auc(y_test == 1, scores[:, 1])
    aucs = [
        roc_auc(y_test == k, scores[:, k])
        for k in range(n_classes)
        if 0 < int((y_test == k).sum()) < y_test.size
    ]
    return float(np.mean(aucs)) if aucs else float("nan")


def classification_utility(
    release_df: pd.DataFrame,
    test_df: pd.DataFrame,
    schema: Schema,
    *,
    classifier: Classifier = "lda",
    min_samples_leaf: int = DEFAULT_MIN_SAMPLES_LEAF,
    random_state: int | None = 0,
) -> dict[str, float]:
    """Accuracy and AUC of a classifier trained on a release, tested on original rows.

    Parameters
    ----------
    release_df : DataFrame
        The released (or synthetic) table with the schema's columns and the label.
    test_df : DataFrame
        Held-out *original* rows that took no part in the release.
    schema : Schema
        The declared schema; must have a label.
    classifier : {"lda", "tree"}, default "lda"
        See the module docstring.
    min_samples_leaf : int, default 20
        Leaf minimum of the entropy tree (ignored by LDA).
    random_state : int or None, default 0
        Tie-breaking seed of the tree (evaluation only; no privacy role).

    Returns
    -------
    dict
        ``{"accuracy": ..., "auc": ...}``. AUC is the ROC area of the positive (second
        declared) class for two classes, the unweighted mean of one-vs-rest areas over the
        classes present in ``test_df`` for more. If the release holds a single class, the
        "classifier" predicts it for every row: accuracy is that class's share of the
        test rows and AUC is 0.5. AUC is NaN when ``test_df`` holds a single class.

    Notes
    -----
    Evaluation only: the result depends on original rows and is not private.

    References
    ----------
    X. Jiang et al. Differential-private data publishing through component analysis.
    *Transactions on Data Privacy* 6(1):19-34, 2013. N. Mohammed, R. Chen, B. C. M. Fung,
    P. S. Yu. Differentially private data release for data mining. *KDD* 2011.
    """
    _check_schema(schema)
    check_option("classifier", classifier, CLASSIFIERS)
    leaf = check_int("min_samples_leaf", min_samples_leaf, minimum=1)
    X_tr, y_tr = _encode("release_df", release_df, schema)
    X_te, y_te = _encode("test_df", test_df, schema)
    n_classes = int(schema.n_classes or 0)
    present = np.unique(y_tr)
    if present.size < 2:
        only = int(present[0])
        accuracy = float(np.mean(y_te == only))
        auc = 0.5 if len(np.unique(y_te)) > 1 else float("nan")
        return {"accuracy": accuracy, "auc": auc}
    model = _make(classifier, leaf, random_state)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Variables are collinear")
        model.fit(X_tr, y_tr)
        predicted = model.predict(X_te)
        scores = _scores(model, X_te, n_classes)
    accuracy = float(np.mean(predicted == y_te))
    return {"accuracy": accuracy, "auc": _auc(y_te, scores, n_classes)}


def baseline_accuracy(
    train_df: pd.DataFrame,
    test_df: pd.DataFrame,
    schema: Schema,
    *,
    classifier: Classifier = "lda",
    min_samples_leaf: int = DEFAULT_MIN_SAMPLES_LEAF,
    random_state: int | None = 0,
) -> dict[str, float]:
    """BA: the same classifier trained on the original training rows (no privacy).

    :func:`classification_utility` with the original ``train_df`` as the "release": the
    line a private release can at best approach. Evaluation only.
    """
    return classification_utility(
        train_df,
        test_df,
        schema,
        classifier=classifier,
        min_samples_leaf=min_samples_leaf,
        random_state=random_state,
    )


def lowest_achievable(
    train_df: pd.DataFrame, test_df: pd.DataFrame, schema: Schema
) -> dict[str, float]:
    """LA: predict the training rows' majority class for every test row (AUC 0.5).

    Every attribute generalised away, as DiffGen's lowest-achievable line: accuracy is the
    share of ``test_df`` in the majority class of ``train_df`` (ties: the first declared
    class). Evaluation only.

    Examples
    --------
    >>> from ppdp.data import Schema
    >>> s = Schema.from_dict({"columns": [{"name": "a", "type": "numeric", "lower": 0,
    ...     "upper": 1}], "label": {"name": "y", "classes": ["no", "yes"]}})
    >>> train = pd.DataFrame({"a": [0.1, 0.2, 0.3], "y": ["no", "no", "yes"]})
    >>> test = pd.DataFrame({"a": [0.5, 0.5, 0.5, 0.5], "y": ["no", "yes", "yes", "yes"]})
    >>> lowest_achievable(train, test, s)
    {'accuracy': 0.25, 'auc': 0.5}
    """
    _check_schema(schema)
    _, y_tr = _encode("train_df", train_df, schema)
    _, y_te = _encode("test_df", test_df, schema)
    counts = np.bincount(y_tr, minlength=int(schema.n_classes or 0))
    majority = int(np.argmax(counts))
    return {"accuracy": float(np.mean(y_te == majority)), "auc": 0.5}
