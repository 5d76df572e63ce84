"""Declared schemas, encoding, and sufficient statistics.

* :class:`Schema` — the public facts about a table (bounds, categories, classes), read from
  JSON or YAML; :meth:`Schema.encode` / :meth:`Schema.decode` map a table to ``[0, 1]``
  features plus one-hot blocks and back.
* :func:`draft_schema` — propose a schema from data (warns: bounds read from private data leak).
* :class:`SufficientStats` — ``n``, class counts, ``Σx`` and ``Σxxᵀ`` pooled and per class, in
  one pass, on numpy, pandas or Dask.

Dask is imported lazily: this package imports without the ``dask`` extra.
"""

from ppdp.data.draft import draft_schema, draft_schema_from_file, read_table
from ppdp.data.encoding import CUSTODIAN_LOGGER, EncodeReport, decode, encode
from ppdp.data.schema import (
    CategoricalColumn,
    LabelSpec,
    Layout,
    NumericColumn,
    Schema,
)
from ppdp.data.stats import SufficientStats, float_sum_error_bound

__all__ = [
    "CUSTODIAN_LOGGER",
    "CategoricalColumn",
    "EncodeReport",
    "LabelSpec",
    "Layout",
    "NumericColumn",
    "Schema",
    "SufficientStats",
    "decode",
    "draft_schema",
    "draft_schema_from_file",
    "encode",
    "float_sum_error_bound",
    "read_table",
]
