"""Every ppdp warning points at the user's line, however deep in ppdp it was raised."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from ppdp.data import Schema, draft_schema
from ppdp.exceptions import (
    InsecureRandomnessWarning,
    LowUtilityWarning,
    PrivacyLeakWarning,
    user_stacklevel,
)
from ppdp.learn import PrivateLogisticRegression
from ppdp.publish import TableSynthesizer


def _skewed() -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"income": rng.lognormal(9, 0.5, 3000), "y": rng.choice(["a", "b"], 3000)})
    schema = Schema.from_dict(
        {
            "columns": [{"name": "income", "type": "numeric", "lower": 0, "upper": 1e6}],
            "label": {"name": "y", "classes": ["a", "b"]},
        }
    )
    return df, schema


def test_a_warning_from_inside_a_fit_names_the_fit_line():
    df, schema = _skewed()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # equal widths: the default binning="auto" re-cuts the crowded bin (no warning)
        TableSynthesizer(5.0, schema, random_state=0, binning="equal-width").fit(df)
    kinds = {w.category: w.filename for w in caught}
    # Before: LowUtilityWarning pointed at ppdp/publish/_base.py.
    assert kinds[LowUtilityWarning] == __file__
    assert kinds[InsecureRandomnessWarning] == __file__


def test_a_learners_seeded_fit_and_a_draft_name_the_callers_line():
    df, schema = _skewed()
    with pytest.warns(InsecureRandomnessWarning) as record:
        PrivateLogisticRegression(epsilon=1.0, schema=schema, random_state=0).fit(df)
    assert {w.filename for w in record} == {__file__}
    with pytest.warns(PrivacyLeakWarning) as record:
        draft_schema(df)
    assert {w.filename for w in record if w.category is PrivacyLeakWarning} == {__file__}


def test_user_stacklevel_outside_ppdp_is_the_calling_frame():
    assert user_stacklevel() == 1
