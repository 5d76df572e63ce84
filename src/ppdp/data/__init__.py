"""Declared schemas, encoding, and sufficient statistics.

* :class:`Schema` — the public facts about a table (bounds, categories, classes), read from
  JSON or YAML; :meth:`Schema.encode` / :meth:`Schema.decode` map a table to ``[0, 1]``
  features plus one-hot blocks and back.
* :func:`draft_schema` — propose a schema from data (warns: bounds read from private data leak).
* :class:`SchemaEncoder` — the schema as a scikit-learn transformer (``Pipeline``,
  ``ColumnTransformer``); needs scikit-learn and is imported on first use.
* :class:`SufficientStats` — ``n``, class counts, ``Σx`` and ``Σxxᵀ`` pooled and per class, in
  one pass, on numpy, pandas or Dask.

Dask is imported lazily: this package imports without the ``dask`` extra.
"""

from ppdp.data.draft import draft_schema, draft_schema_from_file, read_table
from ppdp.data.encoding import CUSTODIAN_LOGGER, EncodeReport, decode, encode
from ppdp.data.schema import (
    AutoMaxRows,
    CategoricalColumn,
    LabelSpec,
    Layout,
    NumericColumn,
    OpenCategoricalColumn,
    PrivacyUnit,
    Schema,
)
from ppdp.data.stats import SufficientStats, float_sum_error_bound

__all__ = [
    "CUSTODIAN_LOGGER",
    "AutoMaxRows",
    "CategoricalColumn",
    "EncodeReport",
    "LabelSpec",
    "Layout",
    "NumericColumn",
    "OpenCategoricalColumn",
    "PrivacyUnit",
    "Schema",
    "SchemaEncoder",
    "SufficientStats",
    "decode",
    "draft_schema",
    "draft_schema_from_file",
    "encode",
    "float_sum_error_bound",
    "read_table",
]


def __getattr__(name: str) -> object:
    if name == "SchemaEncoder":  # scikit-learn is optional: import it on first use
        from ppdp.data.encoder import SchemaEncoder

        return SchemaEncoder
    raise AttributeError(f"module 'ppdp.data' has no attribute {name!r}")
