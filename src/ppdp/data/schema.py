"""Declared schemas: the public facts about a table that every mechanism relies on.

A :class:`Schema` lists the table's columns with their *declared* domains: numeric columns
with public bounds, categorical columns with their full list of categories, and optionally
the label with its classes. Sensitivities are computed from these declarations only, never
from the data (``DESIGN.md``, contract 1). A schema is read from JSON or YAML, validated on
construction (:class:`~ppdp.exceptions.SchemaError` naming the column and the problem), and
frozen.

The file format (JSON shown; YAML has the same keys)::

    {
      "schema_version": 1,
      "columns": [
        {"name": "age", "type": "numeric", "lower": 17, "upper": 90, "integer": true},
        {"name": "sex", "type": "categorical", "categories": ["Female", "Male"]}
      ],
      "label": {"name": "income", "classes": ["<=50K", ">50K"]},
      "missing_values": ["?"],
      "nan_policy": "error",
      "row_norm_bound": null,
      "privacy_unit": {"column": "patient_id", "max_rows": 5}
    }

``privacy_unit`` (optional) makes every guarantee protect a person's whole set of rows
instead of one row (:class:`~ppdp.data.PrivacyUnit`).

A schema written by ``ppdp schema draft`` (:func:`ppdp.data.draft_schema`) also holds
``"draft": true``: its bounds and categories were read from the data, and every release
refuses it (:meth:`Schema.check_reviewed`) until a person has reviewed them against public
knowledge and deleted that key.

See ``docs/schema.md`` for the full reference.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import numbers
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ppdp._io import atomic_path
from ppdp.data.columns import (
    AutoMaxRows,
    CategoricalColumn,
    Category,
    Column,
    LabelSpec,
    NumericColumn,
    OpenCategoricalColumn,
    PrivacyUnit,
    ReadOnlyMapping,
    check_category,
)
from ppdp.exceptions import SchemaError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from numpy.typing import ArrayLike, NDArray

    from ppdp.data.encoding import EncodeReport

__all__ = [
    "DRAFT_COMMENT",
    "SCHEMA_VERSION",
    "AutoMaxRows",
    "CategoricalColumn",
    "Category",
    "LabelSpec",
    "Layout",
    "NumericColumn",
    "OpenCategoricalColumn",
    "PrivacyUnit",
    "Schema",
]

#: Version of the file format written by :meth:`Schema.to_dict`.
SCHEMA_VERSION = 1

#: The comment above ``draft: true`` in a YAML draft: what to do before any release.
DRAFT_COMMENT = (
    "# DRAFT: review every bound and category against public knowledge (a code list, a\n"
    "# questionnaire's range, a regulation), then delete the next line; releases refuse a draft.\n"
)

#: The comment above a drafted ``privacy_unit``: a proposal read from the data.
UNIT_PROPOSAL_COMMENT = (
    "# PROPOSED: this column repeats like a person's identifier; every release then protects\n"
    "# each person's rows (at most max_rows of them, read from the data: choose it from public\n"
    "# knowledge, or write max_rows: auto to have each release choose it under DP, a noisy\n"
    "# 90th percentile of rows per person charged to its budget). Delete privacy_unit if each\n"
    "# row is a different person.\n"
)

NanPolicy = Literal["error", "impute"]
_NAN_POLICIES = ("error", "impute")


@dataclass(frozen=True)
class Layout:
    """Where each column lands in the encoded matrix, and the facts sensitivities need.

    Attributes
    ----------
    feature_names : tuple of str
        One name per encoded column: ``"age"`` for a numeric column, ``"sex=Male"`` for a
        dummy of a categorical block.
    blocks : mapping of str to slice
        The slice of encoded columns of each schema column (label included when it is).
    p1 : int
        Number of numeric columns (each one encoded column in ``[0, 1]``).
    p2 : int
        Number of categorical variables (each one one-hot block); the label counts when its
        block is included.
    max_row_l2_norm : float
        Largest L2 norm of an encoded row: ``sqrt(p1 + p2)`` for the ``[0,1]``/one-hot
        encoding, or the declared ``row_norm_bound`` (rows are clipped to it) when smaller.
    includes_label : bool
        Whether the label's one-hot block is part of the encoding.
    """

    feature_names: tuple[str, ...]
    blocks: Mapping[str, slice]
    p1: int
    p2: int
    max_row_l2_norm: float
    includes_label: bool

    @property
    def n_features(self) -> int:
        """Number of encoded columns."""
        return len(self.feature_names)


@dataclass(frozen=True)
class Schema:
    """A declared table schema: column domains, the label, and how to treat bad values.

    Parameters
    ----------
    columns : sequence of NumericColumn or CategoricalColumn
        The feature columns, in encoding order. At least one; names unique.
    label : LabelSpec or None
        The label and its classes, if the table has one.
    row_norm_bound : float or None
        Declared bound ``R`` on the L2 norm of an encoded feature row. When ``R`` is smaller
        than the natural bound ``sqrt(p1 + p2)``, :meth:`encode` scales longer rows down to
        norm ``R`` (counted in the custodian's log).
    missing_values : sequence of str or int
        Tokens that mean "missing" in the data (e.g. ``["?"]``), besides ``NaN``/``None``.
    nan_policy : {"error", "impute"}
        ``"error"`` (default): a missing or non-finite value raises
        :class:`~ppdp.exceptions.DataValidationError` naming the column.
        ``"impute"``: it is replaced by the column's declared ``impute`` constant (every
        feature column must declare one). A missing label is always an error.
    keep : sequence of (str, str), default ()
        Pairs of columns (features or the label) whose association a synthetic release must
        keep: :class:`~ppdp.publish.TableSynthesizer` always measures their joint table
        (``keep: [[los, cost], [age, los]]`` in a file). Each pair names two different
        declared columns, once. Public, like every declaration.
    privacy_unit : PrivacyUnit, optional
        The unit every guarantee protects, when it is not one row: a person's identifier
        column and the most rows of one person a release reads (``max_rows``). The column
        is read only to bound contributions (:mod:`ppdp.data.contribution`): it is neither a
        feature nor the label, is never encoded and never released. Publishers that cannot
        calibrate to a person refuse such a schema in one line.
    per_person : sequence of str, default ()
        Feature columns constant within a person (sex, birth year), with a privacy unit
        only: :class:`~ppdp.publish.TableSynthesizer` then synthesises persons, drawing these
        columns once per synthetic person (``per_person: true`` on a column in a file). Kept
        in column order; the label and the unit's column cannot be per person.
    open_columns : sequence of OpenCategoricalColumn, default ()
        Categorical columns declared ``open: true`` (their categories are not all
        declared). They are not encoded; only a release that selects group keys privately
        reads them (:class:`~ppdp.publish.GroupByPublisher` with ``keys="private"``), and
        every other publisher or learner refuses the schema in one line
        (:meth:`check_closed`).
    draft : bool, default False
        True for a schema drafted from the data (:func:`ppdp.data.draft_schema`): its bounds
        and categories are the data's own, and every release refuses it
        (:meth:`check_reviewed`) until it is reviewed (:meth:`reviewed`, or deleting
        ``draft: true`` from its file).
    source : str, optional
        The file it was read from (set by :meth:`from_file`; named in errors, never
        written, not compared).

    Notes
    -----
    Everything here must be public knowledge: bounds, categories and classes enter the
    sensitivity of every statistic computed from the encoding. Reading them from the private
    data (see :func:`ppdp.data.draft_schema`) leaks.

    Examples
    --------
    >>> s = Schema.from_dict({"columns": [
    ...     {"name": "age", "type": "numeric", "lower": 0, "upper": 100},
    ...     {"name": "sex", "type": "categorical", "categories": ["F", "M"]}]})
    >>> s.feature_names
    ('age', 'sex=F', 'sex=M')
    >>> s.max_row_l2_norm  # sqrt(p1 + p2)
    1.4142135623730951
    """

    columns: tuple[Column, ...]
    label: LabelSpec | None = None
    row_norm_bound: float | None = None
    missing_values: tuple[Category, ...] = ()
    nan_policy: NanPolicy = "error"
    keep: tuple[tuple[str, str], ...] = field(default=(), kw_only=True)
    privacy_unit: PrivacyUnit | None = field(default=None, kw_only=True)
    per_person: tuple[str, ...] = field(default=(), kw_only=True)
    open_columns: tuple[OpenCategoricalColumn, ...] = field(default=(), kw_only=True)
    draft: bool = field(default=False, kw_only=True)
    source: str | None = field(default=None, kw_only=True, compare=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.columns, str | bytes) or not isinstance(self.columns, Iterable):
            raise SchemaError("columns must be a list of column declarations")
        cols = tuple(self.columns)
        opened = self._check_open_columns()
        if not cols and not opened:
            raise SchemaError("columns must declare at least one feature column")
        seen: set[str] = set()
        for c in (*cols, *opened):
            if not isinstance(c, NumericColumn | CategoricalColumn | OpenCategoricalColumn):
                raise SchemaError(
                    f"columns must hold NumericColumn or CategoricalColumn, not {type(c).__name__}"
                )
            if c.name in seen:
                raise SchemaError(f"column {c.name!r} is declared twice")
            seen.add(c.name)
        object.__setattr__(self, "columns", cols)
        if self.label is not None:
            if not isinstance(self.label, LabelSpec):
                raise SchemaError(f"label must be a LabelSpec, not {type(self.label).__name__}")
            if self.label.name in seen:
                raise SchemaError(
                    f"label {self.label.name!r} has the same name as a feature column"
                )
        object.__setattr__(self, "keep", _check_keep(self.keep, cols, self.label))
        names = tuple(c.name for c in cols)
        per_person = _check_per_person(self.per_person, names, self.label, self.privacy_unit)
        object.__setattr__(self, "per_person", per_person)
        _check_unit(self.privacy_unit, seen, self.label)
        if self.row_norm_bound is not None:
            r = self.row_norm_bound
            if (
                isinstance(r, bool)
                or not isinstance(r, numbers.Real)
                or not (math.isfinite(r) and r > 0)
            ):
                raise SchemaError(f"row_norm_bound ({r!r}) must be a finite number > 0")
            object.__setattr__(self, "row_norm_bound", float(r))
        mv = self.missing_values
        if isinstance(mv, str | bytes) or not isinstance(mv, Iterable):
            raise SchemaError(f"missing_values ({mv!r}) must be a list of tokens")
        tokens = tuple(check_category("missing_values", t) for t in mv)
        object.__setattr__(self, "missing_values", tokens)
        if not isinstance(self.draft, bool):
            raise SchemaError(
                f"draft ({self.draft!r}) must be true or false (true: drafted from the data, "
                "not yet reviewed)"
            )
        if self.nan_policy not in _NAN_POLICIES:
            raise SchemaError(f"nan_policy ({self.nan_policy!r}) must be one of 'error', 'impute'")
        if self.nan_policy == "impute":
            lacking = [c.name for c in cols if c.impute is None]
            if lacking:
                names = ", ".join(repr(n) for n in lacking)
                raise SchemaError(
                    f"nan_policy is 'impute' but {len(lacking)} column(s) declare no 'impute' "
                    f"constant: {names}; give each one (a public value within the bounds, or "
                    "one of the categories)"
                )
        for c in cols:
            if isinstance(c, CategoricalColumn):
                clash = [t for t in tokens if t in c.categories]
                if clash:
                    raise SchemaError(
                        f"column {c.name!r}: category {clash[0]!r} is also a missing-value token"
                    )

    def _check_open_columns(self) -> tuple[OpenCategoricalColumn, ...]:
        value = self.open_columns
        if isinstance(value, str | bytes) or not isinstance(value, Iterable):
            raise SchemaError("open_columns must be a list of OpenCategoricalColumn")
        opened = tuple(value)
        for c in opened:
            if not isinstance(c, OpenCategoricalColumn):
                raise SchemaError(
                    f"open_columns must hold OpenCategoricalColumn, not {type(c).__name__}"
                )
        object.__setattr__(self, "open_columns", opened)
        return opened

    # ------------------------------------------------------------------ open columns
    @property
    def open_column_names(self) -> tuple[str, ...]:
        """Names of the columns declared ``open: true`` (read from the data only by a
        release that selects keys privately)."""
        return tuple(c.name for c in self.open_columns)

    def open_column(self, name: str) -> OpenCategoricalColumn:
        """The declaration of open column ``name``."""
        for c in self.open_columns:
            if c.name == name:
                return c
        raise KeyError(name)

    def check_closed(self, user: str) -> None:
        """Refuse a schema with an open column, in one line naming it and ``user``.

        Every publisher and learner runs it when its parameters are validated
        (:func:`ppdp._params.check_table`), unless it selects keys privately.
        """
        if self.open_columns:
            name = self.open_columns[0].name
            raise SchemaError(
                f"column {name!r} is declared open (open: true, no full category list): "
                f"{user} cannot use it; declare its categories, delete it from the schema, "
                "or group by it with ppdp publish groupby --keys private"
            )

    # ------------------------------------------------------------------ draft
    def draft_refusal(self) -> str | None:
        """The one line every release says of a draft (``None`` for a reviewed schema)."""
        if not self.draft:
            return None
        where = f"schema {self.source!r}" if self.source else "schema (draft=True)"
        fix = (
            "delete 'draft: true'"
            if self.source
            else "use schema.reviewed(), or delete 'draft: true' from its file"
        )
        return (
            f"{where} is a draft read from the data (its bounds and categories are the "
            f"data's own, which a release would leak): review it and {fix}"
        )

    def check_reviewed(self) -> None:
        """Refuse a draft: raise :class:`~ppdp.exceptions.SchemaError` in one line.

        Every publisher and learner runs it first when its parameters are validated
        (:func:`ppdp._params.check_table`), before any data are read or budget spent.
        """
        refusal = self.draft_refusal()
        if refusal is not None:
            raise SchemaError(refusal)

    def check_row_level(self, method: str) -> None:
        """Refuse a privacy unit, in one line, for a ``method`` that protects single rows
        only: it never falls back to a per-row guarantee (DESIGN.md, contract 7)."""
        unit = self.privacy_unit
        if unit is None:
            return
        raise SchemaError(
            f"schema declares privacy_unit (column {unit.column!r}, max_rows "
            f"{'auto' if unit.is_auto else unit.max_rows}); "
            f"{method} protects single rows only and cannot honour a person-level unit yet: "
            "use GroupByPublisher or TableSynthesizer, or remove privacy_unit only if every "
            "person has one row"
        )

    def reviewed(self) -> Schema:
        """The same schema with ``draft=False``: call it once you have reviewed every
        bound and category against public knowledge (the Python way of deleting
        ``draft: true``)."""
        return dataclasses.replace(self, draft=False)

    # ------------------------------------------------------------------ introspection
    @property
    def numeric_columns(self) -> tuple[NumericColumn, ...]:
        """Declarations of the numeric columns, in order (``c.name``, ``c.lower``, ...)."""
        return tuple(c for c in self.columns if isinstance(c, NumericColumn))

    @property
    def categorical_columns(self) -> tuple[CategoricalColumn, ...]:
        """Declarations of the categorical columns, in order (the label excluded)."""
        return tuple(c for c in self.columns if isinstance(c, CategoricalColumn))

    @property
    def column_names(self) -> tuple[str, ...]:
        """Names of every column the data must have: the features, then the label."""
        names = tuple(c.name for c in self.columns)
        return (*names, self.label.name) if self.label is not None else names

    @property
    def data_columns(self) -> tuple[str, ...]:
        """Names of every column a release reads: :attr:`column_names`, then the privacy
        unit's identifier column when one is declared (read only to bound contributions)."""
        unit = self.privacy_unit
        return self.column_names if unit is None else (*self.column_names, unit.column)

    @property
    def classes(self) -> tuple[Category, ...] | None:
        """The label's declared classes (``None`` without a label)."""
        return self.label.classes if self.label is not None else None

    @property
    def n_classes(self) -> int | None:
        """Number of declared classes (``None`` without a label)."""
        return self.label.n_classes if self.label is not None else None

    def column(self, name: str) -> Column:
        """The declaration of feature column ``name``."""
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)

    @cached_property
    def _layouts(self) -> dict[bool, Layout]:
        return {}

    def _build_layout(self, include_label: bool) -> Layout:
        names: list[str] = []
        blocks: dict[str, slice] = {}
        p1 = p2 = 0
        for c in self.columns:
            start = len(names)
            if isinstance(c, NumericColumn):
                names.append(c.name)
                p1 += 1
            else:
                names.extend(f"{c.name}={v}" for v in c.categories)
                p2 += 1
            blocks[c.name] = slice(start, len(names))
        natural = math.sqrt(p1 + p2)
        norm = natural if self.row_norm_bound is None else min(natural, self.row_norm_bound)
        if include_label:
            if self.label is None:
                raise SchemaError("include_label=True needs a schema with a label")
            start = len(names)
            names.extend(f"{self.label.name}={v}" for v in self.label.classes)
            blocks[self.label.name] = slice(start, len(names))
            p2 += 1
            norm = math.sqrt(norm * norm + 1.0)
        return Layout(
            feature_names=tuple(names),
            blocks=ReadOnlyMapping(blocks),
            p1=p1,
            p2=p2,
            max_row_l2_norm=norm,
            includes_label=include_label,
        )

    def layout(self, *, include_label: bool = False) -> Layout:
        """The encoding layout, with or without the label's one-hot block.

        For Adult with Jiang et al.'s preprocessing, ``layout(include_label=True).n_features``
        is 35.
        """
        key = bool(include_label)
        if key not in self._layouts:
            self._layouts[key] = self._build_layout(key)
        return self._layouts[key]

    @property
    def feature_names(self) -> tuple[str, ...]:
        """Encoded column names (label block excluded)."""
        return self.layout().feature_names

    @property
    def n_features(self) -> int:
        """Number of encoded columns (label block excluded)."""
        return self.layout().n_features

    @property
    def blocks(self) -> Mapping[str, slice]:
        """Slice of encoded columns per schema column (label block excluded)."""
        return self.layout().blocks

    @property
    def p1(self) -> int:
        """Number of numeric columns (ALGORITHMS-publishing A.3)."""
        return self.layout().p1

    @property
    def p2(self) -> int:
        """Number of categorical variables, the label excluded (ALGORITHMS-publishing A.3)."""
        return self.layout().p2

    @property
    def max_row_l2_norm(self) -> float:
        """Largest L2 norm of an encoded feature row (label block excluded)."""
        return self.layout().max_row_l2_norm

    def without_label(self) -> Schema:
        """The same schema with no label (to encode feature-only data)."""
        return Schema(
            columns=self.columns,
            label=None,
            row_norm_bound=self.row_norm_bound,
            missing_values=self.missing_values,
            nan_policy=self.nan_policy,
            keep=tuple(p for p in self.keep if self.label is None or self.label.name not in p),
            privacy_unit=self.privacy_unit,
            per_person=self.per_person,
            open_columns=self.open_columns,
            draft=self.draft,
            source=self.source,
        )

    # ------------------------------------------------------------------ encoding
    def encode(
        self,
        data: pd.DataFrame | Mapping[str, ArrayLike] | NDArray[Any],
        *,
        include_label: bool = False,
        return_report: bool = False,
        on_invalid: str = "raise",
    ) -> (
        tuple[NDArray[np.float64], NDArray[np.int64] | None]
        | tuple[NDArray[np.float64], NDArray[np.int64] | None, EncodeReport]
    ):
        """Encode a table into ``[0, 1]`` features and integer class codes.

        See :func:`ppdp.data.encoding.encode` for the full contract; ``on_invalid="mask"``
        is the total mode, in which no value-dependent condition raises.
        """
        from ppdp.data.encoding import encode

        X, y, report = encode(
            self,
            data,
            include_label=include_label,
            on_invalid=on_invalid,  # type: ignore[arg-type]
        )
        return (X, y, report) if return_report else (X, y)

    def decode(self, X: ArrayLike, y: ArrayLike | None = None) -> pd.DataFrame:
        """Map an encoded matrix back to a table (post-processing; no privacy cost).

        See :func:`ppdp.data.encoding.decode`.
        """
        from ppdp.data.encoding import decode

        return decode(self, X, y)

    # ------------------------------------------------------------------ (de)serialisation
    def to_dict(self) -> dict[str, Any]:
        """The schema as plain JSON/YAML-compatible data."""
        d: dict[str, Any] = {"draft": True} if self.draft else {}
        d["schema_version"] = SCHEMA_VERSION
        d["columns"] = [c.to_dict() for c in (*self.columns, *self.open_columns)]
        for col in d["columns"]:
            if col["name"] in self.per_person:
                col["per_person"] = True
        if self.label is not None:
            d["label"] = self.label.to_dict()
        if self.missing_values:
            d["missing_values"] = list(self.missing_values)
        d["nan_policy"] = self.nan_policy
        if self.row_norm_bound is not None:
            d["row_norm_bound"] = self.row_norm_bound
        if self.keep:
            d["keep"] = [list(p) for p in self.keep]
        if self.privacy_unit is not None:
            d["privacy_unit"] = self.privacy_unit.to_dict()
        return d

    def to_json(self) -> str:
        """The schema as indented JSON text."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    def to_yaml(self) -> str:
        """The schema as YAML text (a draft's first line, ``draft: true``, under
        :data:`DRAFT_COMMENT`)."""
        import yaml

        text = yaml.safe_dump(
            self.to_dict(), sort_keys=False, allow_unicode=True, default_flow_style=None, width=100
        )
        if self.draft and self.privacy_unit is not None:
            proposal = "\n" + UNIT_PROPOSAL_COMMENT + "privacy_unit:"
            text = text.replace("\nprivacy_unit:", proposal, 1)
        return DRAFT_COMMENT + text if self.draft else text

    def __str__(self) -> str:
        """The schema as its YAML file reads (``print(schema)``; ``repr`` keeps the fields)."""
        return self.to_yaml()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython and Jupyter show the YAML form: a drafted schema of 40 columns is one
        unreadable line as a dataclass repr."""
        printer.text("Schema(...)" if cycle else str(self))

    def to_file(self, path: str | os.PathLike[str]) -> Path:
        """Write the schema to ``path`` (``.json``, ``.yaml`` or ``.yml``), atomically."""
        dest = Path(path)
        text = self._text_for_suffix(dest)
        with atomic_path(dest) as tmp:
            tmp.write_text(text, encoding="utf-8")
        return dest

    def _text_for_suffix(self, path: Path) -> str:
        suffix = path.suffix.lower()
        if suffix == ".json":
            return self.to_json()
        if suffix in (".yaml", ".yml"):
            return self.to_yaml()
        raise SchemaError(f"schema path ({str(path)!r}) must end in .json, .yaml or .yml")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str | None = None) -> Schema:
        """Build and validate a schema from parsed JSON/YAML data.

        Unknown keys are errors (a typo such as ``"lowr"`` must not silently drop a bound).
        ``source`` names where the data came from, in errors (:meth:`from_file` sets it).
        """
        if not isinstance(data, Mapping):
            raise SchemaError(f"a schema must be a mapping, not {type(data).__name__}")
        _refuse_boolean_categories(data)
        _check_keys(
            "schema",
            data,
            {
                "draft",
                "schema_version",
                "columns",
                "label",
                "row_norm_bound",
                "missing_values",
                "nan_policy",
                "keep",
                "privacy_unit",
            },
        )
        version = data.get("schema_version", SCHEMA_VERSION)
        if version != SCHEMA_VERSION:
            raise SchemaError(f"schema_version ({version!r}) must be {SCHEMA_VERSION}")
        raw_cols = data.get("columns")
        if not isinstance(raw_cols, Sequence) or isinstance(raw_cols, str | bytes):
            raise SchemaError("schema: 'columns' must be a list of column declarations")
        raw_cols, per_person = _per_person_from_dicts(raw_cols)
        declared = [_column_from_dict(i, c) for i, c in enumerate(raw_cols)]
        columns = tuple(c for c in declared if not isinstance(c, OpenCategoricalColumn))
        opened = tuple(c for c in declared if isinstance(c, OpenCategoricalColumn))
        label = None
        if data.get("label") is not None:
            raw = data["label"]
            if not isinstance(raw, Mapping):
                raise SchemaError("schema: 'label' must be a mapping with 'name' and 'classes'")
            _check_keys("label", raw, {"name", "classes", "public_counts"})
            if "classes" not in raw:
                raise SchemaError(f"label {raw.get('name')!r}: 'classes' is missing")
            label = LabelSpec(
                name=raw.get("name"),  # type: ignore[arg-type]
                classes=raw["classes"],
                public_counts=raw.get("public_counts"),
            )
        return cls(
            columns=columns,
            label=label,
            row_norm_bound=data.get("row_norm_bound"),
            missing_values=data.get("missing_values") or (),
            nan_policy=data.get("nan_policy", "error"),
            keep=data.get("keep") or (),
            privacy_unit=_unit_from_dict(data.get("privacy_unit")),
            per_person=per_person,
            open_columns=opened,
            draft=data.get("draft", False),
            source=source,
        )

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Schema:
        """Read a schema from a ``.json``, ``.yaml`` or ``.yml`` file."""
        p = Path(path)
        suffix = p.suffix.lower()
        if suffix not in (".json", ".yaml", ".yml"):
            raise SchemaError(f"schema path ({str(p)!r}) must end in .json, .yaml or .yml")
        if p.is_dir():
            raise SchemaError(f"schema path ({str(p)!r}) is a folder, not a file")
        if not p.exists():
            raise FileNotFoundError(f"schema file ({str(p)!r}) does not exist")
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise SchemaError(
                f"schema file ({str(p)!r}) is not UTF-8 text: byte {exc.start} "
                f"(0x{exc.object[exc.start]:02x}) cannot be decoded; save it as UTF-8"
            ) from None
        import yaml

        too_deep = f"schema file ({str(p)!r}) is nested too deeply to be a schema"
        booleans = 0
        try:
            if suffix == ".json":
                data = json.loads(text)
            else:
                data, booleans = _load_yaml(text)
        except (ValueError, yaml.YAMLError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise SchemaError(
                f"schema file ({str(p)!r}) is not valid {suffix[1:]}: {first}"
            ) from exc
        except RecursionError:
            raise SchemaError(too_deep) from None
        try:
            if booleans:
                _refuse_boolean_categories(data)
                data = _plain_booleans(data)
            return cls.from_dict(data, source=str(p))
        except RecursionError:
            raise SchemaError(too_deep) from None


class _YamlBool:
    """A YAML boolean with its spelling (``no``, ``yes``, ``on``...): said in the error."""

    __slots__ = ("text", "value")

    def __init__(self, value: bool, text: str) -> None:
        self.value = value
        self.text = text


def _yaml_bool(loader: Any, node: Any) -> _YamlBool:
    loader.booleans = getattr(loader, "booleans", 0) + 1
    return _YamlBool(bool(loader.construct_yaml_bool(node)), str(node.value))


def _load_yaml(text: str) -> tuple[Any, int]:
    """The document ``text`` read with :func:`_yaml_loader` (YAML booleans keep their
    spelling until the categories are checked), and how many booleans it holds."""
    loader = _yaml_loader()(text)
    try:
        return loader.get_single_data(), getattr(loader, "booleans", 0)
    finally:
        loader.dispose()


@functools.cache
def _yaml_loader() -> type:
    """ppdp's YAML loader (no aliases) whose booleans are :class:`_YamlBool` (spelling kept)."""
    from ppdp import _yaml

    return _yaml.loader_with("tag:yaml.org,2002:bool", _yaml_bool)


def _plain_booleans(data: Any) -> Any:
    """``data`` with every :class:`_YamlBool` replaced by its ``bool``."""
    if isinstance(data, _YamlBool):
        return data.value
    if isinstance(data, Mapping):
        return {_plain_booleans(k): _plain_booleans(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_plain_booleans(v) for v in data]
    return data


def _declared_value_lists(data: Mapping[str, Any]) -> Iterator[tuple[str, list[Any]]]:
    """``(what, values)`` for each place of a raw schema that declares category values."""
    raw_cols = data.get("columns")
    if isinstance(raw_cols, list):
        for raw in raw_cols:
            if not isinstance(raw, Mapping) or raw.get("type") != "categorical":
                continue
            name = raw.get("name")
            where = repr(name) if isinstance(name, str) else "a column"
            for key in ("categories", "other", "impute"):
                value = raw.get(key)
                if value is not None:
                    yield f"{key} of {where}", value if isinstance(value, list) else [value]
    label = data.get("label")
    if isinstance(label, Mapping) and isinstance(label.get("classes"), list):
        name = label.get("name")
        where = repr(name) if isinstance(name, str) else "the label"
        yield f"classes of label {where}", label["classes"]
    if isinstance(data.get("missing_values"), list):
        yield "missing_values", data["missing_values"]


def _refuse_boolean_categories(data: Any) -> None:
    """Refuse booleans among declared categories, classes and missing-value tokens.

    YAML reads ``no``/``yes`` (and ``on``/``off``, ``true``/``false``) as booleans, which
    then never match the words in the data. One line names every place and the fix.
    """
    if not isinstance(data, Mapping):
        return
    found = [p for what, values in _declared_value_lists(data) if (p := _booleans(what, values))]
    if len(found) == 1:
        raise SchemaError(found[0][0])
    if found:
        places = "; ".join(fragment for _, fragment in found)
        raise SchemaError(
            f"{len(found)} declarations contain booleans (YAML reads no/yes, off/on, "
            f"true/false as booleans): {places}"
        )


def _booleans(what: str, values: list[Any]) -> tuple[str, str] | None:
    """``(message, fragment)`` when ``values`` hold booleans: the one-line error of this
    place alone, and its part of an error naming several places."""
    flags = [v for v in values if isinstance(v, bool | _YamlBool)]
    if not flags:
        return None
    shown = ", ".join(str(_plain_booleans(v)).lower() for v in flags)
    spelled = [v.text for v in flags if isinstance(v, _YamlBool)]
    if spelled and any(t.lower() not in ("true", "false") for t in spelled):
        quoted = [v.text if isinstance(v, _YamlBool) else v for v in values]
        return (
            f"{what} contain booleans ({shown}): YAML reads {'/'.join(spelled)} as "
            f"booleans; quote them: {quoted!r}",
            f"{what} ({shown}): quote them: {quoted!r}",
        )
    return (
        f"{what} contain booleans ({shown}); declared values must be strings or "
        "integers: declare 0 and 1 for a True/False column (True matches 1), or quote "
        "the words the data holds, e.g. ['false', 'true']",
        f"{what} ({shown}): declare 0 and 1, or quote the words the data holds",
    )


def _check_keys(where: str, data: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = sorted(str(k) for k in data if k not in allowed)
    if unknown:
        raise SchemaError(
            f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})"
        )


def _column_from_dict(index: int, raw: Any) -> Column | OpenCategoricalColumn:
    if not isinstance(raw, Mapping):
        raise SchemaError(f"columns[{index}] must be a mapping, not {type(raw).__name__}")
    name = raw.get("name")
    where = f"column {name!r}" if isinstance(name, str) else f"columns[{index}]"
    kind = raw.get("type")
    if kind == "numeric":
        keys = {"name", "type", "lower", "upper", "integer", "impute", "decimals", "cuts", "scale"}
        _check_keys(where, raw, keys | {"date", "date_format"})
        for key in ("lower", "upper"):
            if raw.get(key) is None:
                raise SchemaError(
                    f"{where}: '{key}' is missing; declare public bounds (never read them "
                    "from the private data)"
                )
        if raw.get("date") is True:
            return _date_column_from_dict(where, raw)
        return NumericColumn(
            name=name,  # type: ignore[arg-type]
            lower=raw["lower"],
            upper=raw["upper"],
            integer=raw.get("integer", False),
            impute=raw.get("impute"),
            decimals=raw.get("decimals"),
            cuts=raw.get("cuts"),
            scale=raw.get("scale", "linear"),
            date=raw.get("date", False),
            date_format=raw.get("date_format"),
        )
    if kind == "categorical":
        keys = {"name", "type", "categories", "other", "impute", "groups", "open"}
        _check_keys(where, raw, keys)
        is_open = raw.get("open", False)
        if not isinstance(is_open, bool):
            raise SchemaError(f"{where}: open ({is_open!r}) must be true or false")
        if is_open:
            open_keys = {"name", "type", "categories", "impute", "open"}
            _check_keys(f"{where} (open: true)", raw, open_keys)
            return OpenCategoricalColumn(
                name=name,  # type: ignore[arg-type]
                categories=raw.get("categories") or (),
                impute=raw.get("impute"),
            )
        if "categories" not in raw:
            raise SchemaError(
                f"{where}: 'categories' is missing; declare them, or declare the column "
                "open: true (its keys then come from the data, through private selection only)"
            )
        return CategoricalColumn(
            name=name,  # type: ignore[arg-type]
            categories=raw["categories"],
            other=raw.get("other"),
            impute=raw.get("impute"),
            groups=raw.get("groups"),
        )
    raise SchemaError(f"{where}: type ({kind!r}) must be 'numeric' or 'categorical'")


def _date_column_from_dict(where: str, raw: Mapping[str, Any]) -> NumericColumn:
    """A ``date: true`` numeric column: its dates written as dates, whole days implied."""
    import datetime

    def dates(key: str, values: list[Any]) -> None:
        for v in values:
            if not isinstance(v, str | datetime.date):
                raise SchemaError(
                    f"{where}: {key} ({v!r}) must be a date written YYYY-MM-DD (e.g. "
                    "'2021-03-14'); a date column declares its dates as dates"
                )

    for key in ("lower", "upper", "impute"):
        if raw.get(key) is not None:
            dates(key, [raw[key]])
    cuts = raw.get("cuts")
    if isinstance(cuts, list):
        dates("cuts", cuts)
    if raw.get("integer", True) is not True:
        raise SchemaError(
            f"{where}: integer ({raw['integer']!r}) cannot go with date: true (a date column "
            "holds whole days); drop integer"
        )
    return NumericColumn(
        name=raw.get("name"),  # type: ignore[arg-type]
        lower=raw["lower"],
        upper=raw["upper"],
        impute=raw.get("impute"),
        decimals=raw.get("decimals"),
        cuts=cuts,
        scale=raw.get("scale", "linear"),
        date=True,
        date_format=raw.get("date_format"),
    )


def _unit_from_dict(raw: Any) -> PrivacyUnit | None:
    """The ``privacy_unit`` of a schema file (None when absent)."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise SchemaError(
            f"privacy_unit ({raw!r}) must be a mapping, e.g. {{column: patient_id, max_rows: 5}}"
        )
    _check_keys("privacy_unit", raw, {"column", "max_rows", "auto"})
    for key in ("column", "max_rows"):
        if key not in raw:
            raise SchemaError(
                f"privacy_unit: '{key}' is missing; declare the person's identifier column "
                "and the most rows of one person, e.g. {column: patient_id, max_rows: 5}"
            )
    auto = raw.get("auto")
    if auto is not None:
        if not isinstance(auto, Mapping):
            raise SchemaError(
                f"privacy_unit: auto ({auto!r}) must be a mapping, e.g. "
                "{upper: 100, quantile: 0.9, epsilon: 0.1}"
            )
        _check_keys("privacy_unit: auto", auto, {"upper", "quantile", "epsilon"})
        auto = AutoMaxRows(**auto)
    return PrivacyUnit(column=raw["column"], max_rows=raw["max_rows"], auto=auto)


def _check_unit(unit: Any, features: set[str], label: LabelSpec | None) -> None:
    """The privacy unit is a :class:`PrivacyUnit` whose column is neither a feature nor
    the label (it is read only to bound contributions, never encoded)."""
    if unit is None:
        return
    if not isinstance(unit, PrivacyUnit):
        raise SchemaError(f"privacy_unit must be a PrivacyUnit, not {type(unit).__name__}")
    if unit.column in features or (label is not None and unit.column == label.name):
        what = "the label" if unit.column not in features else "a feature column"
        raise SchemaError(
            f"privacy_unit: column ({unit.column!r}) is also {what}; the identifier is read "
            "only to bound each person's rows and is never a feature: remove it from the "
            "columns"
        )


def _per_person_from_dicts(raw_cols: Sequence[Any]) -> tuple[list[Any], tuple[str, ...]]:
    """The column declarations without their ``per_person`` key, and the names that set it
    true (a value that is not true or false refused in one line)."""
    cleaned: list[Any] = []
    names: list[str] = []
    for index, raw in enumerate(raw_cols):
        if isinstance(raw, Mapping) and "per_person" in raw:
            flag = raw["per_person"]
            name = raw.get("name")
            where = f"column {name!r}" if isinstance(name, str) else f"columns[{index}]"
            if not isinstance(flag, bool):
                raise SchemaError(f"{where}: per_person ({flag!r}) must be true or false")
            if flag:
                names.append(name)  # type: ignore[arg-type]
            raw = {k: v for k, v in raw.items() if k != "per_person"}
        cleaned.append(raw)
    return cleaned, tuple(names)


def _check_per_person(
    value: Any, names: tuple[str, ...], label: LabelSpec | None, unit: PrivacyUnit | None
) -> tuple[str, ...]:
    """``per_person`` as declared feature names in column order: a privacy unit is needed,
    and neither the unit's column nor the label can be constant "per person" columns."""
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise SchemaError(
            f"per_person ({value!r}) must be a list of column names, e.g. [sex, birth_year]"
        )
    wanted = list(value)
    if not wanted:
        return ()
    if unit is None:
        raise SchemaError(
            f"per_person ({', '.join(map(str, wanted))}) needs a privacy_unit: a column is "
            "constant within a person only when rows name their person; declare "
            "privacy_unit: {column, max_rows} or drop per_person"
        )
    for name in wanted:
        if isinstance(unit, PrivacyUnit) and name == unit.column:
            raise SchemaError(
                f"per_person names {name!r}, the privacy unit's identifier column: it is read "
                "only to group rows, never synthesised (the output carries synthetic ids); "
                "drop it from per_person"
            )
        if label is not None and name == label.name:
            raise SchemaError(
                f"per_person names {name!r}, the label; only feature columns can be per person"
            )
        if name not in names:
            raise SchemaError(
                f"per_person names {name!r}, which is not a declared feature column "
                f"(declared: {', '.join(names)})"
            )
    if len(set(wanted)) != len(wanted):
        twice = next(n for n in wanted if wanted.count(n) > 1)
        raise SchemaError(f"per_person names {twice!r} twice")
    return tuple(n for n in names if n in wanted)


def _check_keep(
    keep: Any, columns: tuple[Column, ...], label: LabelSpec | None
) -> tuple[tuple[str, str], ...]:
    """``keep`` as a tuple of name pairs, each naming two different declared columns, once."""
    if isinstance(keep, str | bytes) or not isinstance(keep, Iterable):
        raise SchemaError(
            f"keep ({keep!r}) must be a list of column pairs, e.g. [[los, cost], [age, los]]"
        )
    names = [c.name for c in columns] + ([label.name] if label is not None else [])
    pairs: list[tuple[str, str]] = []
    for raw in keep:
        pair = tuple(raw) if isinstance(raw, Sequence) and not isinstance(raw, str) else None
        if pair is None or len(pair) != 2 or not all(isinstance(v, str) for v in pair):
            raise SchemaError(
                f"keep: each entry ({raw!r}) must be a pair of column names, e.g. [los, cost]"
            )
        a, b = pair
        unknown = [v for v in pair if v not in names]
        if unknown:
            raise SchemaError(
                f"keep: pair [{a}, {b}] names {unknown[0]!r}, which is not a declared column; "
                f"declared: {', '.join(names)}"
            )
        if a == b:
            raise SchemaError(f"keep: pair [{a}, {b}] names the same column twice")
        if {a, b} in [set(p) for p in pairs]:
            raise SchemaError(f"keep: pair [{a}, {b}] is declared twice")
        pairs.append((a, b))
    return tuple(pairs)
