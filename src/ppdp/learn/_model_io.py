"""Model files: a fitted private classifier as JSON, with its guarantee and nothing private.

A model file holds what the learner *released* (the noisy coefficients; for kernel models
the random or publicly fitted frequencies, which are not derived from the private data),
the hyperparameters, the guarantee, the declared schema the features were encoded with (a
public declaration) and its fingerprint, and the ppdp version. It never holds training
rows or statistics of them: no class counts, no solver objective or residual, no clipping
counts, no validation mistakes of private tuning (those describe the private data and go
to the custodian's log only). The one number about the training data it may hold is the
row count ``n``, inside the guarantee: every learner here is ε-DP for replace-one
neighbours, under which ``n`` is public.

The file format (``format_version`` 1)::

    {
      "format": "ppdp-model",
      "format_version": 1,
      "ppdp_version": "0.4.0",
      "estimator": "PrivateLogisticRegression",
      "model": {...},                  # estimator.to_model_dict(): released state + params
      "guarantee": {...},              # Guarantee.to_dict() of the release
      "schema": {...} or null,         # Schema.to_dict(), when the model was trained on one
      "schema_fingerprint": "sha256:..." or null,
      "feature_names": [...] or null,  # encoded feature names of the schema
      "classes": [...] or null,        # the label's classes, in class-code order
      "sha256": "..."                  # of the canonical JSON of every other key
    }

Loading rebuilds the estimator with its class's ``from_model_dict``; the class is looked
up by name in a fixed list of ppdp learners (:data:`ppdp.registry.LEARNERS`), never
imported from a name read in the file. Training and predicting from files live in
:mod:`ppdp.learn.files` (importable from here too, as before).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ppdp._io import atomic_path
from ppdp._version import __version__
from ppdp.budget import Guarantee
from ppdp.data.schema import Schema
from ppdp.exceptions import (
    DataValidationError,
    NotFittedError,
    ParameterError,
    ParameterTypeError,
)
from ppdp.registry import LEARNERS as LEARNER_REGISTRY

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "ModelFile",
    "load_model",
    "read_model",
    "save_model",
    "schema_fingerprint",
]

FORMAT = "ppdp-model"
FORMAT_VERSION = 1

#: The learners a model file may hold: class name -> module. A name read from a file is
#: only ever looked up here.
ESTIMATORS: dict[str, str] = {e.class_name: e.module for e in LEARNER_REGISTRY.entries()}

#: Keys that describe the private training data. A model dict holding any of them (at any
#: depth) is refused: they are for the custodian's log, not for a released file.
PRIVATE_KEYS = frozenset(
    {
        "X",
        "y",
        "class_counts",
        "n_clipped",
        "n_clipped_",
        "rows_clipped",
        "objective",
        "objective_value",
        "gradient_norm",
        "n_iter",
        "n_iter_",
        "solver_info",
        "solver_info_",
        "encode_report",
        "mistakes",
        "tuning_mistakes",
        "tuning_mistakes_",
    }
)

_KEYS = (
    "format",
    "format_version",
    "ppdp_version",
    "estimator",
    "model",
    "guarantee",
    "schema",
    "schema_fingerprint",
    "feature_names",
    "classes",
)


def _canonical(obj: Any) -> str:
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def schema_fingerprint(schema: Schema) -> str:
    """``"sha256:<hex>"`` of the schema's canonical JSON (:meth:`Schema.to_dict`).

    Two schemas have the same fingerprint exactly when they declare the same columns,
    domains, label, missing-value tokens, NaN policy and row-norm bound.

    Examples
    --------
    >>> from ppdp.data import NumericColumn, Schema
    >>> fp = schema_fingerprint(Schema(columns=(NumericColumn("a", 0, 1),)))
    >>> fp.startswith("sha256:") and len(fp) == 7 + 64
    True
    """
    if not isinstance(schema, Schema):
        raise ParameterTypeError(f"schema ({type(schema).__name__}) must be a ppdp Schema")
    return "sha256:" + hashlib.sha256(_canonical(schema.to_dict()).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ModelFile:
    """A model file as read back: the estimator and what was stored beside it.

    Attributes
    ----------
    estimator : object
        The fitted learner, rebuilt with ``from_model_dict``; ``predict`` and
        ``decision_function`` work, ``fit`` would train (and spend) anew.
    estimator_name : str
        Its class name.
    guarantee : Guarantee or None
        The guarantee the release states.
    schema : Schema or None
        The declared schema the features were encoded with, if the model was saved with one.
    schema_fingerprint : str or None
    feature_names : tuple of str or None
        Encoded feature names of the schema (the model's input columns).
    classes : tuple or None
        The label's classes in class-code order (code ``k`` is ``classes[k]``).
    ppdp_version : str
        The version that wrote the file.
    """

    estimator: Any
    estimator_name: str
    guarantee: Guarantee | None
    schema: Schema | None
    schema_fingerprint: str | None
    feature_names: tuple[str, ...] | None
    classes: tuple[Any, ...] | None
    ppdp_version: str


def _estimator_name(estimator: Any) -> str:
    name = type(estimator).__name__
    if name not in ESTIMATORS or not hasattr(estimator, "to_model_dict"):
        raise ParameterTypeError(
            f"estimator ({name}) must be one of the ppdp learners {', '.join(ESTIMATORS)}, fitted"
        )
    return name


def _check_released(where: str, value: Any) -> None:
    """Refuse private keys and non-JSON values anywhere in the model dict."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ParameterTypeError(f"{where}: key {k!r} must be a string")
            if k in PRIVATE_KEYS:
                raise ParameterError(
                    f"{where}: key {k!r} describes the private training data and must not be "
                    "written to a model file"
                )
            _check_released(f"{where}.{k}", v)
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _check_released(f"{where}[{i}]", v)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ParameterError(f"{where} ({value!r}) must be a finite number")
    elif value is not None and not isinstance(value, str | int | bool):
        raise ParameterTypeError(
            f"{where} ({type(value).__name__}) must be JSON data (numbers, strings, lists, maps)"
        )


def _plain(value: Any) -> Any:
    """numpy arrays and scalars as lists and Python numbers; tuples as lists; a private
    tuning grid as its list of Λ (what the learners accept back)."""
    grid = getattr(value, "regularization_grid", None)
    if grid is not None and not isinstance(value, Mapping):
        return [float(v) for v in grid]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist") and callable(value.tolist):  # numpy array or scalar
        return _plain(value.tolist())
    return value


def _guarantee_of(estimator: Any, model: Mapping[str, Any]) -> dict[str, Any] | None:
    g = getattr(estimator, "guarantee_", None)
    if isinstance(g, Guarantee):
        return g.to_dict()
    raw = model.get("guarantee")
    return dict(raw) if isinstance(raw, Mapping) else None


def save_model(
    estimator: Any,
    path: str | os.PathLike[str],
    *,
    schema: Schema | None = None,
) -> Path:
    """Write a fitted private classifier to ``path`` as JSON, atomically.

    Parameters
    ----------
    estimator : PrivateLogisticRegression, PrivateLinearSVM, PrivateRBFSVM or HybridRBFSVM
        Fitted. Its ``to_model_dict()`` gives the released parameters and hyperparameters.
    path : path
        Destination; must end in ``.json``. Written through a temporary file and renamed, so
        it is either complete or untouched.
    schema : Schema, optional
        The declared schema the training features were encoded with (stored, with its
        fingerprint, so that ``ppdp predict`` encodes new data the same way). Its encoded
        width must match the model's input width when the model states one. For a learner
        fitted with ``schema=`` it defaults to that schema (another one is refused).

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    NotFittedError
        The estimator has not been fitted (there is nothing released to save).
    ParameterError
        The model dict holds a key that describes the private data (see
        :data:`PRIVATE_KEYS`), a non-finite number, or the path does not end in ``.json``.

    Notes
    -----
    Saving is post-processing of a release: no privacy cost. The file holds only what the
    learner released (see the module docstring); a schema is a public declaration.
    """
    dest = Path(path)
    if dest.suffix.lower() != ".json":
        raise ParameterError(f"model path ({str(dest)!r}) must end in .json")
    name = _estimator_name(estimator)
    if schema is not None and not isinstance(schema, Schema):
        raise ParameterTypeError(f"schema ({type(schema).__name__}) must be a ppdp Schema")
    try:
        model = estimator.to_model_dict()
    except (NotFittedError, AttributeError) as exc:
        raise NotFittedError(
            f"estimator ({name}) is not fitted: fit it before saving; nothing to save"
        ) from exc
    if not isinstance(model, Mapping):
        raise ParameterTypeError(f"{name}.to_model_dict() must return a mapping")
    model = _plain(model)
    _check_released("model", model)
    n_in = model.get("n_features_in")
    if n_in is None:
        n_in = getattr(estimator, "n_features_in_", None)
    own = getattr(estimator, "schema", None)  # a learner fitted with schema= takes raw columns
    if isinstance(own, Schema):
        if schema is None:
            schema = own
        elif schema_fingerprint(schema) != schema_fingerprint(own):
            raise ParameterError(
                "schema (given) must be the learner's own schema= (or be left out to use it)"
            )
        expected = len(own.without_label().column_names)
    else:
        expected = schema.n_features if schema is not None else None
    if expected is not None and n_in is not None and int(n_in) != expected:
        assert schema is not None
        raise ParameterError(
            f"schema encodes {schema.n_features} feature columns but the model takes {n_in}"
        )
    fitted = model.get("classes")
    if schema is not None and schema.classes is not None and fitted is not None:
        codes = list(range(len(schema.classes)))
        if list(fitted) not in (codes, list(schema.classes)):
            raise ParameterError(
                f"the model's classes ({list(fitted)!r}) are neither the schema's class codes "
                f"{codes} nor its classes {list(schema.classes)!r}"
            )
    body: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "ppdp_version": __version__,
        "estimator": name,
        "model": model,
        "guarantee": _guarantee_of(estimator, model),
        "schema": schema.to_dict() if schema is not None else None,
        "schema_fingerprint": schema_fingerprint(schema) if schema is not None else None,
        "feature_names": list(schema.feature_names) if schema is not None else None,
        "classes": list(schema.classes) if schema is not None and schema.classes else None,
    }
    body["sha256"] = hashlib.sha256(_canonical(body).encode("utf-8")).hexdigest()
    text = json.dumps(body, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    with atomic_path(dest) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return dest


def _bad(path: Path, what: str) -> DataValidationError:
    return DataValidationError(f"model file ({str(path)!r}) {what}")


def read_model(path: str | os.PathLike[str]) -> ModelFile:
    """Read a model file written by :func:`save_model`.

    Raises
    ------
    FileNotFoundError
        No such file.
    DataValidationError
        Not JSON, not a ppdp model file, a newer format version, an unknown estimator, or
        contents that do not match the stored checksum (the file was edited or damaged).
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"model file ({str(p)!r}) does not exist")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise _bad(p, f"is not valid JSON: {first}") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise _bad(p, 'is not a ppdp model file (no "format": "ppdp-model")')
    version = data.get("format_version")
    if version != FORMAT_VERSION:
        raise _bad(
            p, f"has format_version {version!r}; this ppdp ({__version__}) reads {FORMAT_VERSION}"
        )
    missing = [k for k in (*_KEYS, "sha256") if k not in data]
    if missing:
        raise _bad(p, f"lacks the key(s) {', '.join(repr(m) for m in missing)}")
    body = {k: data[k] for k in _KEYS}
    try:
        digest = hashlib.sha256(_canonical(body).encode("utf-8")).hexdigest()
    except ValueError as exc:
        raise _bad(p, "holds a non-finite number") from exc
    if digest != data["sha256"]:
        raise _bad(p, "does not match its sha256: it was edited or damaged")
    name = data["estimator"]
    if name not in ESTIMATORS:
        raise _bad(p, f"holds an unknown estimator {name!r} (known: {', '.join(ESTIMATORS)})")
    cls = getattr(importlib.import_module(ESTIMATORS[name]), name)
    estimator = cls.from_model_dict(data["model"])
    schema = Schema.from_dict(data["schema"]) if data["schema"] is not None else None
    if schema is not None and schema_fingerprint(schema) != data["schema_fingerprint"]:
        raise _bad(p, "holds a schema that does not match its fingerprint")
    g = data["guarantee"]
    return ModelFile(
        estimator=estimator,
        estimator_name=name,
        guarantee=Guarantee.from_dict(g) if g is not None else None,
        schema=schema,
        schema_fingerprint=data["schema_fingerprint"],
        feature_names=tuple(data["feature_names"]) if data["feature_names"] is not None else None,
        classes=tuple(data["classes"]) if data["classes"] is not None else None,
        ppdp_version=str(data["ppdp_version"]),
    )


def load_model(path: str | os.PathLike[str]) -> Any:
    """The fitted estimator stored in a model file (see :func:`read_model` for the rest).

    Loading is free post-processing: predictions of the loaded model equal those of the
    saved one exactly (the coefficients round-trip through JSON's shortest float repr).
    """
    return read_model(path).estimator
