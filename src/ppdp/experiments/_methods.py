"""The publishing methods the Jiang et al. experiments compare, behind one small interface.

Each entry of :data:`PUBLISHERS` builds an unfitted publisher from ``(epsilon, schema, k,
random_state)``; :func:`release` fits it on a table and returns the released table and its
encoding. The publishers are imported on first use (they are public API of
:mod:`ppdp.publish`), and tests may swap the table for stand-ins.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ppdp.data import Schema

__all__ = ["LABELS", "PUBLISHERS", "Released", "encode_like", "release", "with_public_counts"]


def _dppca(epsilon: float, schema: Schema, k: int | None, random_state: Any) -> Any:
    from ppdp.publish.pca import DPPCAPublisher

    return DPPCAPublisher(epsilon, k, schema, random_state=random_state)


def _laplace(epsilon: float, schema: Schema, k: int | None, random_state: Any) -> Any:
    from ppdp.publish.baselines import LaplacePublisher

    return LaplacePublisher(epsilon, schema, random_state=random_state)


def _exponential(epsilon: float, schema: Schema, k: int | None, random_state: Any) -> Any:
    from ppdp.publish.baselines import ExponentialPublisher

    return ExponentialPublisher(epsilon, schema, random_state=random_state)


def _dplda(
    epsilon: float, schema: Schema, k: int | None, random_state: Any, class_sizes: str = "public"
) -> Any:
    from ppdp.publish.lda_synth import DPLDASynthesizer

    return DPLDASynthesizer(epsilon, schema, random_state=random_state, class_sizes=class_sizes)


#: Method name -> factory ``(epsilon, schema, k, random_state[, class_sizes]) -> publisher``.
PUBLISHERS: dict[str, Callable[..., Any]] = {
    "DP-PCA": _dppca,
    "LAP": _laplace,
    "EXP": _exponential,
    "DP-LDA": _dplda,
}

#: How the methods are labelled in tables and plots.
LABELS = {
    "DP-PCA": "DP-PCA",
    "LAP": "LAP",
    "EXP": "EXP (per-record reading)",
    "DP-LDA": "DP-LDA",
}


@dataclass(frozen=True)
class Released:
    """A released table (decoded), its encoding (None when not row-aligned) and statistics."""

    data: pd.DataFrame
    encoded: NDArray[np.float64] | None
    statistics: dict[str, Any] = dataclasses.field(default_factory=dict)


def release(
    method: str,
    df: pd.DataFrame,
    schema: Schema,
    *,
    epsilon: float,
    k: int | None,
    random_state: Any,
    class_sizes: str = "public",
) -> Released:
    """Fit ``method`` on ``df`` (no accountant: an experiment on public data) and release.

    A synthesizer whose release holds only statistics is asked for its synthetic rows
    with ``sample``, from a stream independent of the one its noise came from.

    DP-LDA with ``class_sizes="public"`` is given the class sizes of ``df`` as declared
    public counts, as the paper assumes (ALGORITHMS-publishing A.7 (2)): fine for the
    public Adult benchmark, not for private data, where they must be public knowledge or
    released with noise (``class_sizes="noisy"``).
    """
    fit_state, sample_state = random_state, random_state
    if isinstance(random_state, np.random.SeedSequence):
        fit_state, sample_state = random_state.spawn(2)
    if method == "DP-LDA":
        if class_sizes == "public":
            schema = with_public_counts(schema, df)
        publisher = PUBLISHERS[method](epsilon, schema, k, fit_state, class_sizes=class_sizes)
    else:
        publisher = PUBLISHERS[method](epsilon, schema, k, fit_state)
    publisher.fit(df)
    rel = publisher.release_
    data = rel.data
    if data is None:  # a synthesizer that releases statistics: draw the synthetic rows
        data = publisher.sample(random_state=sample_state)
    return Released(
        data=data, encoded=rel.encoded, statistics=dict(getattr(rel, "statistics", {}) or {})
    )


def with_public_counts(schema: Schema, df: pd.DataFrame) -> Schema:
    """``schema`` with the class sizes of ``df`` declared as public (benchmark data only)."""
    assert schema.label is not None
    _, y = schema.encode(df)
    counts = np.bincount(y, minlength=schema.label.n_classes)
    label = dataclasses.replace(schema.label, public_counts=tuple(int(c) for c in counts))
    return dataclasses.replace(schema, label=label)


def encode_like(df: pd.DataFrame, schema: Schema, width: int) -> NDArray[np.float64]:
    """Encode the original table in the space of a release with ``width`` columns."""
    with_label = schema.label is not None and width == schema.layout(include_label=True).n_features
    X, _ = schema.encode(df, include_label=with_label)
    return X
