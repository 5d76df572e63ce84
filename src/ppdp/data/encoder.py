"""A scikit-learn transformer that encodes a raw table with a declared :class:`Schema`.

:class:`SchemaEncoder` lets a declared schema sit at the head of a scikit-learn
``Pipeline`` or inside a ``ColumnTransformer``. Its ``fit`` reads nothing from the data: the
bounds and categories are declared, so fitting only checks the parameters and records the
schema's column names. ``transform`` is :meth:`Schema.encode` on the feature columns (the
label column, when present, is ignored). Needs scikit-learn (the ``learn`` extra).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ppdp.data.encoding import ON_INVALID
from ppdp.data.schema import Schema
from ppdp.exceptions import DataValidationError, ParameterError, ParameterTypeError

__all__ = ["SchemaEncoder"]


class SchemaEncoder(TransformerMixin, BaseEstimator):  # type: ignore[misc]
    """Encode the schema's feature columns into ``[0, 1]`` features and one-hot blocks.

    Parameters
    ----------
    schema : Schema
        The declared schema. Its label, if any, is not encoded (use it as ``y``).
    on_invalid : {"raise", "mask"}, default "raise"
        As :func:`ppdp.data.encode`: ``"mask"`` is the total mode, in which no
        value-dependent condition raises.

    Attributes
    ----------
    n_features_in_ : int
        Number of the schema's feature columns.
    feature_names_in_ : ndarray of str
        The schema's feature column names (declared, not read from the data).

    Examples
    --------
    >>> import pandas as pd
    >>> from ppdp.data import Schema, SchemaEncoder
    >>> schema = Schema.from_dict({"columns": [
    ...     {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
    ...     {"name": "job", "type": "categorical", "categories": ["a", "b"]}]})
    >>> enc = SchemaEncoder(schema).fit(None)
    >>> enc.transform(pd.DataFrame({"age": [50], "job": ["b"]})).tolist()
    [[0.5, 0.0, 1.0]]
    >>> list(enc.get_feature_names_out())
    ['age', 'job=a', 'job=b']
    """

    def __init__(self, schema: Schema | None = None, *, on_invalid: str = "raise") -> None:
        self.schema = schema
        self.on_invalid = on_invalid

    def _features(self) -> Schema:
        if not isinstance(self.schema, Schema):
            raise ParameterTypeError(
                f"schema ({type(self.schema).__name__}) must be a ppdp.data.Schema"
            )
        if self.on_invalid not in ON_INVALID:
            raise ParameterError(
                f"on_invalid ({self.on_invalid!r}) must be one of "
                f"{', '.join(map(repr, ON_INVALID))}"
            )
        return self.schema.without_label()

    def fit(self, X: Any = None, y: Any = None) -> SchemaEncoder:
        """Check the parameters; read nothing from ``X`` (the schema is declared)."""
        names = self._features().column_names
        self.n_features_in_ = len(names)
        self.feature_names_in_ = np.asarray(names, dtype=object)
        return self

    def transform(self, X: Any) -> NDArray[np.float64]:
        """The encoded features of ``X`` (a DataFrame holding the schema's feature columns)."""
        check_is_fitted(self, "n_features_in_")
        features = self._features()
        if isinstance(X, np.ndarray) and X.ndim == 2 and X.shape[1] != self.n_features_in_:
            raise DataValidationError(
                f"X has {X.shape[1]} columns; the schema declares {self.n_features_in_} "
                "feature column(s)"
            )
        Xe, _ = features.encode(X, on_invalid=self.on_invalid)
        return Xe

    def get_feature_names_out(self, input_features: Any = None) -> NDArray[Any]:
        """The encoded column names (``age``, ``job=a``, ``job=b``, ...)."""
        return np.asarray(self._features().feature_names, dtype=object)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.requires_fit = False
        tags.input_tags.two_d_array = True
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.input_tags.allow_nan = True
        return tags
