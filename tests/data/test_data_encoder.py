"""SchemaEncoder: the declared schema as a scikit-learn transformer."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

import ppdp.data
from ppdp.data import Schema, SchemaEncoder
from ppdp.exceptions import DataValidationError, ParameterError

SCHEMA = Schema.from_dict(
    {
        "columns": [
            {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
            {"name": "SEX", "type": "categorical", "categories": [1, 2]},
        ],
        "label": {"name": "y", "classes": ["no", "yes"]},
    }
)
DF = pd.DataFrame({"ID": [7, 8], "age": [25, 150], "SEX": [2, 1], "y": ["no", "yes"]})


def test_exported_and_encodes_the_features_only() -> None:
    assert "SchemaEncoder" in ppdp.data.__all__
    X = SchemaEncoder(SCHEMA).fit_transform(DF)
    np.testing.assert_array_equal(X, [[0.25, 0.0, 1.0], [1.0, 1.0, 0.0]])  # 150 clipped to 100
    np.testing.assert_array_equal(
        SchemaEncoder(SCHEMA).fit(None).transform(DF.drop(columns="y")), X
    )


def test_fit_reads_nothing_and_clones() -> None:
    enc = SchemaEncoder(SCHEMA, on_invalid="mask")
    fitted = enc.fit(pd.DataFrame({"unrelated": [1]}))
    assert list(fitted.feature_names_in_) == ["age", "SEX"]
    assert list(fitted.get_feature_names_out()) == ["age", "SEX=1", "SEX=2"]
    twin = clone(enc)
    assert twin.get_params() == {"schema": SCHEMA, "on_invalid": "mask"}


def test_bad_input_is_one_line() -> None:
    with pytest.raises(TypeError, match=r"schema \(dict\) must be a ppdp.data.Schema"):
        SchemaEncoder({"columns": []}).fit(DF)
    with pytest.raises(ParameterError, match=r"on_invalid \('skip'\) must be one of"):
        SchemaEncoder(SCHEMA, on_invalid="skip").fit(DF)
    enc = SchemaEncoder(SCHEMA).fit(DF)
    with pytest.raises(DataValidationError, match="3 columns; the schema declares 2"):
        enc.transform(np.zeros((2, 3)))
    bad = DF.assign(SEX=[3, 1])
    with pytest.raises(DataValidationError, match="SEX"):
        enc.transform(bad)
    masked = SchemaEncoder(SCHEMA, on_invalid="mask").fit(DF).transform(bad)
    assert masked.shape == (2, 3)
