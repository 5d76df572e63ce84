"""Issue 12 item 6: no free counting oracle through data-dependent validation errors.

An analyst who chooses the schema or the parameters (a service wrapper, a shared notebook)
reads every error. With the custodian's default (``on_invalid="raise"``) a schema that
omits one category raises "column 'dx': 2 value(s) are not among the declared
categories", wrong declared class counts are refused, a label outside the declared
classes is refused, and nothing is spent: a free count. With the accountant's total mode
(``acct.on_invalid = "mask"``) the *outcome* (success, the ledger entry, the guarantee)
does not depend on the values: two tables that differ only in how many records hold an
undeclared value behave the same. Structural problems and parameters still raise.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ppdp import PrivacyBudget
from ppdp.accounting import Accountant
from ppdp.data import Schema
from ppdp.exceptions import DataValidationError, ParameterError
from ppdp.learn import PrivateLogisticRegression
from ppdp.publish import DPPCAPublisher, LDAProjectionPublisher

# The tables are small on purpose; their releases are mostly noise and say so.
pytestmark = pytest.mark.filterwarnings("ignore::ppdp.exceptions.LowUtilityWarning")

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
            {"name": "dx", "type": "categorical", "categories": ["a", "b"]},
        ],
        "label": {"name": "sick", "classes": ["no", "yes"]},
    }
)


def _table(n_undeclared: int, n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    dx = np.where(rng.uniform(size=n) < 0.5, "a", "b").astype(object)
    dx[:n_undeclared] = "zz"  # a diagnosis code the analyst's schema leaves out
    return pd.DataFrame(
        {
            "age": rng.uniform(0, 100, n),
            "dx": dx,
            "sick": np.where(np.arange(n) % 3 == 0, "yes", "no"),
        }
    )


def _acct(mode: str) -> Accountant:
    acct = Accountant.in_memory(total=PrivacyBudget(10.0, 1e-3))
    acct.on_invalid = mode
    return acct


def _pca() -> DPPCAPublisher:
    return DPPCAPublisher(epsilon=1.0, schema=SCHEMA, n_components=2)


def test_raise_mode_is_a_counting_oracle_and_mask_mode_is_not() -> None:
    # the custodian's default: the error carries the count, nothing is spent
    acct = _acct("raise")
    with pytest.raises(DataValidationError, match="column 'dx': 2 value"):
        _pca().fit(_table(2), accountant=acct)
    assert acct.spent.is_zero
    # total mode: every table gives a release and the same charge, whatever the count
    for k in (0, 2, 7):
        acct = _acct("mask")
        pub = _pca().fit(_table(k), accountant=acct)
        assert pub.release_.data is not None
        assert acct.spent == PrivacyBudget(1.0)


def test_mask_mode_uses_declared_class_counts_without_checking_them() -> None:
    df = _table(0)
    true = [int((df["sick"] == c).sum()) for c in ("no", "yes")]
    shifted = [true[0] - 3, true[1] + 3]  # same n (public), wrong split
    with pytest.raises(DataValidationError, match="class counts"):
        LDAProjectionPublisher(1.0, 1e-6, SCHEMA, class_counts=shifted).fit(
            df, accountant=_acct("raise")
        )
    acct = _acct("mask")
    pub = LDAProjectionPublisher(1.0, 1e-6, SCHEMA, class_counts=shifted, release="direction")
    pub.fit(df, accountant=acct)
    assert np.all(np.isfinite(pub.directions_))
    # n itself is public: a declared total that is not n is refused in both modes
    with pytest.raises(DataValidationError, match="class counts"):
        LDAProjectionPublisher(1.0, 1e-6, SCHEMA, class_counts=[1, 2]).fit(
            df, accountant=_acct("mask")
        )


def test_mask_mode_learners_need_declared_classes_and_mask_labels_and_nan() -> None:
    X = np.random.default_rng(1).uniform(size=(50, 3))
    y = np.array(["no", "yes"] * 25, dtype=object)
    y[:4] = "maybe"
    X[5, 1] = np.nan
    with pytest.raises(DataValidationError):
        PrivateLogisticRegression(data_norm=2.0, classes=["no", "yes"]).fit(
            X, y, accountant=_acct("raise")
        )
    acct = _acct("mask")
    with pytest.raises(ParameterError, match="classes"):  # a parameter: nothing is spent
        PrivateLogisticRegression(data_norm=2.0).fit(X, y, accountant=acct)
    assert acct.spent.is_zero
    clf = PrivateLogisticRegression(data_norm=2.0, classes=["no", "yes"])
    clf.fit(X, y, accountant=acct)
    assert acct.spent == PrivacyBudget(1.0) and np.all(np.isfinite(clf.coef_))


def test_mode_is_the_custodians_and_validated() -> None:
    acct = Accountant.in_memory(total=PrivacyBudget(1.0))
    assert acct.on_invalid == "raise"
    with pytest.raises(ParameterError, match="on_invalid"):
        acct.on_invalid = "ignore"
    with pytest.raises(DataValidationError, match="missing column"):  # structural: still raises
        acct.on_invalid = "mask"
        _pca().fit(_table(0).drop(columns="dx"), accountant=acct)
    assert acct.spent.is_zero
