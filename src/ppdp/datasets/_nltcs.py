"""NLTCS: 16 binary disability items of the National Long Term Care Survey."""

from __future__ import annotations

import pandas as pd

from ppdp.data.schema import LabelSpec, NumericColumn, Schema
from ppdp.datasets._files import open_bytes
from ppdp.exceptions import ParameterError

#: Column names in file order (StatLib items Y1..Y16).
COLUMNS = (
    "eating",
    "getting in/out of bed",
    "getting around inside",
    "dressing",
    "bathing",
    "using toilet",
    "heavy house work",
    "light house work",
    "laundry",
    "cooking",
    "grocery shopping",
    "getting about outside",
    "traveling",
    "managing money",
    "taking medicine",
    "telephoning",
)
#: PrivBayes-style prediction targets (outside, money, bathing, traveling).
TARGETS = ("getting about outside", "managing money", "bathing", "traveling")


def nltcs_schema(label: str | None = None) -> Schema:
    """The declared schema: every item an integer column on ``[0, 1]`` (1 = disabled).

    ``[0, 1]`` is the items' public domain (each person is classified disabled or healthy),
    not an observed range. With ``label``, that item becomes the label with classes
    ``0, 1`` and the 15 others stay features.
    """
    if label is not None and label not in COLUMNS:
        raise ParameterError(
            f"label ({label!r}) must be one of the NLTCS columns, e.g. {TARGETS[0]!r}"
        )
    cols = tuple(NumericColumn(c, 0, 1, integer=True) for c in COLUMNS if c != label)
    lab = LabelSpec(label, (0, 1)) if label is not None else None
    return Schema(columns=cols, label=lab)


def load_nltcs(*, label: str | None = None) -> tuple[pd.DataFrame, Schema]:
    """Load NLTCS (21,574 rows x 16 binary columns) with its declared schema.

    Parameters
    ----------
    label : str, optional
        An item to declare as the label (the data has no fixed label; PrivBayes-style
        targets are ``"getting about outside"``, ``"managing money"``, ``"bathing"`` and
        ``"traveling"``). The table is the same either way.

    Returns
    -------
    df : DataFrame
        21,574 rows, 16 int64 columns with values 0/1. Row order is the source's random
        shuffle and carries no meaning.
    schema : Schema
        See :func:`nltcs_schema`.

    Notes
    -----
    Research use only. Any publication must cite: "The NLTCS (National Long Term Care
    Study) is sponsored by the National Institute of Aging and conducted by the Duke
    University Center for Demographic Studies under Grant No. U01-AG007198". Full terms:
    :func:`ppdp.datasets.dataset_info` ``("nltcs")``.

    Examples
    --------
    >>> df, schema = load_nltcs(label="getting about outside")
    >>> df.shape, schema.n_features, schema.classes
    ((21574, 16), 15, (0, 1))
    """
    schema = nltcs_schema(label)
    df = pd.read_csv(open_bytes("nltcs/nltcs.csv.gz"), compression="gzip", dtype="int64")
    return df[list(COLUMNS)], schema
