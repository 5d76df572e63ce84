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

from ppdp.exceptions import DataValidationError, ParameterError

__all__ = [
    "ON_INVALID",
    "learner_takes_datasets",
    "predict_dataset",
    "predict_rows",
    "predictions_frame",
]

#: What :func:`ppdp.learn.files.predict_file` does with a value the model's schema refuses:
#: ``"raise"`` refuses the table, ``"mask"`` predicts every row and flags the masked ones.
ON_INVALID = ("raise", "mask")

#: The output column naming, per row, the columns whose value was masked (``"mask"`` only).
MASKED = "masked"


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


def check_on_invalid(on_invalid: Any) -> str:
    """``on_invalid`` of a prediction, refused in one line when it is not one of ON_INVALID."""
    if not isinstance(on_invalid, str) or on_invalid not in ON_INVALID:
        raise ParameterError(
            f"on_invalid ({on_invalid!r}) must be 'raise' (refuse a table holding a value the "
            "model's schema does not accept) or 'mask' (predict every row, flag the masked ones)"
        )
    return on_invalid


def refuse_invalid(frame: pd.DataFrame, refused: dict[str, np.ndarray]) -> None:
    """One line naming a refused column, a sample of its values and the rows affected."""
    if not refused:
        return
    name, bad = next(iter(refused.items()))
    values = frame[name][bad]
    sample = ["missing" if pd.isna(v) else repr(v) for v in pd.unique(values.astype(object))]
    shown = ", ".join(sample[:5]) + (", ..." if len(sample) > 5 else "")
    n_rows = int(np.count_nonzero(np.logical_or.reduce(list(refused.values()))))
    also = [n for n in refused if n != name]
    more = f"; also column(s) {', '.join(map(repr, also))}" if also else ""
    raise DataValidationError(
        f"data: column {name!r} holds {int(bad.sum())} value(s) the model's schema does not "
        f'accept ({shown}){more}; {n_rows} row(s) affected: pass on_invalid="mask" to '
        f"predict every row anyway (those rows named in a {MASKED!r} column)"
    )


def masked_names(refused: dict[str, np.ndarray], n: int) -> np.ndarray:
    """Per row, the masked columns joined by ``,`` (empty when none)."""
    names = np.full(n, "", dtype=object)
    for name, bad in refused.items():
        names[bad] = [f"{v},{name}" if v else name for v in names[bad]]
    return names


def predict_rows(
    est: Any, features: Any, frame: pd.DataFrame, classes: Any, *, on_invalid: str = "raise"
) -> tuple[pd.DataFrame, dict[str, int]]:
    """Predictions of every row of ``frame`` (:func:`predictions_frame`), and per column the
    missing values filled with the schema's ``impute`` constants (``nan_policy: impute``).

    The rows are encoded once, in the schema's total mode, which also says which rows hold
    a value ``"raise"`` refuses (:func:`ppdp.data.encoding.encode_flagging_rows`: the
    encoder's own rules). ``"raise"`` refuses such a table (:func:`refuse_invalid`), and
    otherwise predicts from that encoding (with nothing refused it is the raise-mode one).
    ``"mask"`` predicts every row from that encoding (a refused value becomes the declared
    value the total mode maps it to) and adds the :data:`MASKED` column naming, per row,
    the masked columns.
    """
    from ppdp.data.encoding import encode_flagging_rows

    X, _, report, refused = encode_flagging_rows(features, frame)
    imputed = dict(report.imputed)
    if on_invalid == "raise":
        refuse_invalid(frame, refused)  # nothing refused: X is the raise-mode encoding
    out = predictions_frame(est, X, classes, encoded=True)
    if on_invalid == "mask":
        out[MASKED] = masked_names(refused, len(frame))
    return out, imputed


def predictions_frame(est: Any, X: Any, classes: Any, *, encoded: bool = False) -> pd.DataFrame:
    """``prediction`` (class names), ``score`` and, when available, ``probability``.

    ``encoded``: ``X`` is encoded even when the learner encodes raw tables itself (trained
    with ``schema=``); its scores are then computed from the encoded rows, the same way.
    """
    probability = None
    if encoded and getattr(est, "schema", None) is not None:
        from scipy.special import expit

        scores = np.asarray(est.encoded_decision_function(X), dtype=np.float64)
        predicted = np.asarray(est.classes_)[(scores > 0).astype(int)]  # as est.predict
        if hasattr(est, "predict_proba"):  # the logistic model's P(classes_[1])
            probability = expit(scores)
    else:
        scores = np.asarray(est.decision_function(X), dtype=np.float64)
        predicted = np.asarray(est.predict(X))
        if hasattr(est, "predict_proba"):
            probability = np.asarray(est.predict_proba(X))[:, 1]
    if classes is not None and np.issubdtype(predicted.dtype, np.integer):
        labels: Any = np.asarray(classes, dtype=object)[predicted]  # class codes -> names
    else:
        labels = predicted
    out = pd.DataFrame({"prediction": labels, "score": scores})
    if probability is not None:
        out["probability"] = probability
    return out


def model_input(est: Any, features: Any, frame: pd.DataFrame, *, on_invalid: str = "raise") -> Any:
    """What the estimator predicts from: the raw columns when it was trained with
    ``schema=`` (it encodes them itself), else the rows encoded with the model's schema."""
    if getattr(est, "schema", None) is not None:
        return frame[list(features.column_names)].reset_index(drop=True)
    X, _ = features.encode(frame, on_invalid=on_invalid)
    return X


def _predict_part(
    part: pd.DataFrame, est: Any, features: Any, classes: Any, on_invalid: str = "raise"
) -> pd.DataFrame:
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
                **({MASKED: pd.Series([], dtype=object)} if on_invalid == "mask" else {}),
            }
        )
    if on_invalid == "mask":
        return predict_rows(est, features, part, classes, on_invalid="mask")[0]
    # The scan has refused what "raise" refuses; "mask" cannot raise on values here.
    return predictions_frame(est, model_input(est, features, part, on_invalid="mask"), classes)


def masked_summary(names: pd.Series, counts: dict[str, int] | None = None) -> tuple[dict, int]:
    """``(rows masked per column, rows with any masked value)`` from a :data:`MASKED` column.

    ``counts`` (a dict) is added to and returned.
    """
    counts = {} if counts is None else counts
    flagged = names[names.notna() & (names != "")]
    for joined, n in flagged.value_counts().items():
        for name in str(joined).split(","):
            counts[name] = counts.get(name, 0) + int(n)
    return counts, len(flagged)


def masked_counts(dest: Path) -> tuple[dict[str, int], int]:
    """:func:`masked_summary` of a written prediction folder, one part file at a time."""
    import pyarrow.parquet as pq

    counts: dict[str, int] = {}
    rows = 0
    for part in sorted(dest.glob("part-*.parquet")):
        _, n = masked_summary(pq.read_table(part, columns=[MASKED]).column(0).to_pandas(), counts)
        rows += n
    return counts, rows


def predict_dataset(
    mf: Any,
    data: Any,
    dest: Path,
    *,
    force: bool = False,
    scheduler: Any = None,
    on_invalid: str = "raise",
) -> tuple[Path, int, tuple[str, ...]]:
    """Predict every partition of ``data`` with the model file's estimator into ``dest``.

    ``"raise"``: one validating scan first (an undeclared category or a missing value
    anywhere is refused with the whole table's count, before anything is written), then
    one pass that encodes, predicts and writes each partition. ``"mask"``: that pass alone,
    each partition as :func:`predict_rows` does (with the :data:`MASKED` column). Returns
    ``(folder, rows, columns)``.
    """
    from dask import delayed

    from ppdp.data.distributed import dask_session, open_table, scan_table, write_parquet_dataset
    from ppdp.publish.parquet_files import folder_rows

    features = mf.schema.without_label()
    est = mf.estimator
    local_default = isinstance(data, str | os.PathLike)
    frame = open_table(data, features)  # the files' footers, before a cluster is started
    with dask_session(scheduler, default_local_cluster=local_default) as sched:
        if on_invalid == "raise":
            try:
                scan_table(frame, features, include_label=False, scheduler=sched)
            except DataValidationError as exc:
                raise DataValidationError(
                    f'{exc}; or pass on_invalid="mask" to predict every row anyway (those '
                    f"rows named in a {MASKED!r} column)"
                ) from None
        parts = [
            delayed(_predict_part, pure=True)(p, est, features, mf.classes, on_invalid)
            for p in frame.to_delayed()
        ]
        write_parquet_dataset(parts, dest, scheduler=sched, overwrite=force)
    columns = ("prediction", "score") + (("probability",) if hasattr(est, "predict_proba") else ())
    columns += (MASKED,) if on_invalid == "mask" else ()
    return dest, int(folder_rows(dest) or 0), columns
