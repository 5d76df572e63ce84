"""Declarative parameter validation for the estimators (issue 18).

Each estimator (a publisher or a private learner) declares one constraint table: a tuple of
:class:`Rule`, in the order the parameters are checked (so the first error a user sees is
fixed by the table). A rule reads one constructor attribute and returns its validated
value; it may use the values validated before it (a publisher's ``n_components`` needs the
schema's encoded width). :func:`check_table` runs the table once and builds the
estimator's frozen parameter dataclass, which the estimator's methods read instead of
re-validating (see :meth:`ppdp.publish.Publisher._params` and
:meth:`ppdp.learn.PrivateClassifierBase._params`). Before the table, it refuses an
estimator whose ``schema`` is an unreviewed draft (:meth:`ppdp.data.Schema.check_reviewed`):
the one check every publisher and learner shares, run before any data are read or budget
spent.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar, TypeVar

from ppdp._validation import check_bool, check_epsilon

__all__ = [
    "FIT_PARAMS_KEY",
    "Rule",
    "ValidatedParams",
    "check_table",
    "epsilon_rules",
    "table_fields",
]

P = TypeVar("P")


@dataclass(frozen=True)
class Rule:
    """One row of a constraint table.

    Attributes
    ----------
    field : str
        The field of the parameter object this rule fills.
    check : callable
        ``check(raw, checked) -> value``: ``raw`` is the attribute's value, ``checked`` the
        fields validated so far (read-only). Raises the one-line error of a bad value.
    attribute : str, optional
        The constructor attribute read (default: ``field``).
    """

    field: str
    check: Callable[[Any, Mapping[str, Any]], Any]
    attribute: str | None = None

    @property
    def source(self) -> str:
        """The attribute this rule reads."""
        return self.field if self.attribute is None else self.attribute


def epsilon_rules(field: str = "epsilon") -> tuple[Rule, Rule]:
    """The first two rows of most estimators' tables: ``allow_large_epsilon``, then ε.

    ``field`` names ε's field in the parameter object (it always reads ``epsilon``).
    """
    return (
        Rule("allow_large_epsilon", lambda v, _: check_bool("allow_large_epsilon", v)),
        Rule(
            field,
            lambda v, c: check_epsilon("epsilon", v, allow_large=c["allow_large_epsilon"]),
            attribute=None if field == "epsilon" else "epsilon",
        ),
    )


def check_table(obj: Any, table: tuple[Rule, ...], params_type: type[P]) -> P:
    """Run ``table`` on ``obj``'s attributes, in order; return the frozen ``params_type``.

    Parameters
    ----------
    obj : object
        The estimator whose constructor attributes are validated.
    table : tuple of Rule
        Its constraint table; its fields must be exactly those of ``params_type``.
    params_type : type
        A frozen dataclass.

    Returns
    -------
    params_type
        The validated parameters.

    Raises
    ------
    SchemaError
        First of all, when ``obj.schema`` is a draft read from the data
        (:meth:`ppdp.data.Schema.check_reviewed`): its bounds and categories would leak;
        then when it declares an open column and ``obj`` does not select keys privately
        (:meth:`ppdp.data.Schema.check_closed`).
    """
    _refuse_draft_schema(getattr(obj, "schema", None))
    _refuse_privacy_unit(obj, getattr(obj, "schema", None))
    _refuse_open_columns(obj)
    checked: dict[str, Any] = {}
    for rule in table:
        checked[rule.field] = rule.check(getattr(obj, rule.source), _ReadOnly(checked))
    return params_type(**checked)


def _refuse_draft_schema(schema: Any) -> None:
    """Refuse a drafted, unreviewed schema in one line (any other value is the table's)."""
    from ppdp.data.schema import Schema

    if isinstance(schema, Schema):
        schema.check_reviewed()


def _refuse_privacy_unit(obj: Any, schema: Any) -> None:
    """Refuse, in one line, a schema with a privacy unit for an estimator that cannot
    calibrate to a person (``supports_privacy_unit`` false): it never falls back to a
    per-row guarantee (DESIGN.md, contract 7)."""
    from ppdp.data.schema import Schema

    if not isinstance(schema, Schema) or schema.privacy_unit is None:
        return
    if getattr(obj, "supports_privacy_unit", False):
        return
    schema.check_row_level(type(obj).__name__)


def _refuse_open_columns(obj: Any) -> None:
    """Refuse a schema with an open column (its keys would come from the data) unless
    ``obj`` selects keys privately (its class sets ``accepts_open_columns``)."""
    from ppdp.data.schema import Schema

    schema = getattr(obj, "schema", None)
    if isinstance(schema, Schema) and not getattr(type(obj), "accepts_open_columns", False):
        schema.check_closed(type(obj).__name__)


def table_fields(table: tuple[Rule, ...], params_type: type) -> tuple[list[str], list[str]]:
    """``(table fields, dataclass fields)``, for a test that they agree."""
    return [r.field for r in table], [f.name for f in fields(params_type)]


class _ReadOnly(Mapping[str, Any]):
    """A read-only view of the fields validated so far."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Any:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


#: The instance attribute where ``fit`` keeps the parameters it validated (absent outside
#: ``fit``); a copy made inside ``fit`` drops it to be validated afresh.
FIT_PARAMS_KEY = "_fit_params"


class ValidatedParams:
    """Mixin of the publishers' and learners' base classes: a constraint table run once.

    A subclass declares ``_constraints`` (a tuple of :class:`Rule`) and ``_params_type``
    (the frozen dataclass the table builds); its methods read :meth:`_params`, and ``fit``
    (and the budget queries) wrap their work in :meth:`_params_once`.
    """

    _constraints: ClassVar[tuple[Rule, ...]] = ()
    _params_type: ClassVar[type | None] = None

    def _params(self) -> Any:
        """The validated parameters: the constraint table run once per ``fit``.

        Inside :meth:`_params_once` (``fit``, ``privacy_budget``, ``privacy_events``) the
        first call checks the table and later calls return the same frozen object; outside
        it (a direct call, or after ``set_params``) every call checks the current
        attributes.
        """
        cached = self.__dict__.get(FIT_PARAMS_KEY)
        if cached is not None:
            return cached
        if self._params_type is None:
            raise NotImplementedError(f"{type(self).__name__} declares no constraint table")
        params = check_table(self, self._constraints, self._params_type)
        if FIT_PARAMS_KEY in self.__dict__:
            self.__dict__[FIT_PARAMS_KEY] = params
        return params

    @contextlib.contextmanager
    def _params_once(self) -> Iterator[None]:
        """Within the block, :meth:`_params` checks the table once (nested blocks share it);
        nothing stays cached after it, even when it raised."""
        outer = FIT_PARAMS_KEY in self.__dict__
        if not outer:
            self.__dict__[FIT_PARAMS_KEY] = None
        try:
            yield
        finally:
            if not outer:
                self.__dict__.pop(FIT_PARAMS_KEY, None)

    def validated(self) -> contextlib.AbstractContextManager[None]:
        """The block inside which the parameters are validated once, at the outer entry.

        A file workflow (``ppdp publish``, ``ppdp train``) enters it before it asks the cost,
        checks the budget and fits, so that ε and every other parameter are checked once
        per run, as scikit-learn validates once in ``fit``. Nothing stays cached after it.
        """
        return self._params_once()
