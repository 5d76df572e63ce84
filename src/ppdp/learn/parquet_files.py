"""Training on and predicting a Parquet dataset or a Dask DataFrame (the ``dask`` extra).

What :func:`ppdp.learn.files.train_model_file` and :func:`ppdp.learn.files.predict_file`
do with a table larger than memory. Training hands the dataset to the learner's own
distributed ``fit`` (``fit(path, scheduler=...)`` with ``schema=``: the gradient and
Hessian are reduced over partitions); predicting encodes and scores partition by
partition and writes a partitioned Parquet folder (``part-00000.parquet``, ... and
``_SUCCESS``) in the input's row order, atomically.
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdp.exceptions import ParameterError

__all__ = ["learner_takes_datasets", "predict_dataset", "predictions_frame"]


def learner_takes_datasets(cls: type) -> bool:
    """Whether a learner class's ``fit`` takes a Parquet dataset or a Dask DataFrame.

    A learner says so with ``supports_distributed = True``; failing that attribute, a
    ``scheduler`` parameter of its ``fit`` does.
    """
    flag = getattr(cls, "supports_distributed", None)
    if flag is not None:
        return bool(flag)
    try:
        params = inspect.signature(cls.fit).parameters  # type: ignore[attr-defined]
    except (TypeError, ValueError):  # pragma: no cover - a builtin fit
        return False
    return "scheduler" in params


def refuse_unsupported(kind: str, cls: type) -> None:
    """One line, before anything is read or spent, for a learner without distributed fit."""
    if not learner_takes_datasets(cls):
        raise ParameterError(
            f"learner ({kind!r}): {cls.__name__} does not take a Parquet dataset or a Dask "
            "DataFrame; give it a CSV file (read into memory)"
        )


def predictions_frame(est: Any, X: Any, classes: Any) -> pd.DataFrame:
    """``prediction`` (class names), ``score`` and, when available, ``probability``."""
    scores = np.asarray(est.decision_function(X), dtype=np.float64)
    predicted = np.asarray(est.predict(X))
    if classes is not None and np.issubdtype(predicted.dtype, np.integer):
        labels: Any = np.asarray(classes, dtype=object)[predicted]  # class codes -> names
    else:
        labels = predicted
    out = pd.DataFrame({"prediction": labels, "score": scores})
    if hasattr(est, "predict_proba"):
        out["probability"] = np.asarray(est.predict_proba(X))[:, 1]
    return out


def model_input(est: Any, features: Any, frame: pd.DataFrame, *, on_invalid: str = "raise") -> Any:
    """What the estimator predicts from: the raw columns when it was trained with
    ``schema=`` (it encodes them itself), else the rows encoded with the model's schema."""
    if getattr(est, "schema", None) is not None:
        return frame[list(features.column_names)].reset_index(drop=True)
    X, _ = features.encode(frame, on_invalid=on_invalid)
    return X


def _predict_part(part: pd.DataFrame, est: Any, features: Any, classes: Any) -> pd.DataFrame:
    if len(part) == 0:
        return pd.DataFrame(
            {
                "prediction": pd.Series([], dtype=object),
                "score": pd.Series([], dtype=np.float64),
                **(
                    {"probability": pd.Series([], dtype=np.float64)}
                    if hasattr(est, "predict_proba")
                    else {}
                ),
            }
        )
    # The scan has refused what "raise" refuses; "mask" cannot raise on values here.
    return predictions_frame(est, model_input(est, features, part, on_invalid="mask"), classes)


def predict_dataset(
    mf: Any,
    data: Any,
    dest: Path,
    *,
    force: bool = False,
    scheduler: Any = None,
) -> tuple[Path, int, tuple[str, ...]]:
    """Predict every partition of ``data`` with the model file's estimator into ``dest``.

    One validating scan first (an undeclared category or a missing value anywhere is
    refused with the whole table's count, before anything is written), then one pass that
    encodes, predicts and writes each partition. Returns ``(folder, rows, columns)``.
    """
    from dask import delayed

    from ppdp.data.distributed import dask_session, open_table, scan_table, write_parquet_dataset
    from ppdp.publish.parquet_files import folder_rows

    features = mf.schema.without_label()
    est = mf.estimator
    local_default = isinstance(data, str | os.PathLike)
    frame = open_table(data, features)  # the files' footers, before a cluster is started
    with dask_session(scheduler, default_local_cluster=local_default) as sched:
        scan_table(frame, features, include_label=False, on_invalid="raise", scheduler=sched)
        parts = [
            delayed(_predict_part, pure=True)(p, est, features, mf.classes)
            for p in frame.to_delayed()
        ]
        write_parquet_dataset(parts, dest, scheduler=sched, overwrite=force)
    columns = ("prediction", "score") + (("probability",) if hasattr(est, "predict_proba") else ())
    return dest, int(folder_rows(dest) or 0), columns
