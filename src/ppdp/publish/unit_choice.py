"""``max_rows: auto`` in a release run: the choice's charge, the choice, and its guarantee.

A schema's privacy unit may leave ``max_rows`` to the data (``max_rows: auto``,
:class:`ppdp.data.AutoMaxRows`). Every release made with it then

1. plans one more charge, before the data are read: the exponential mechanism at
   ``auto.epsilon`` (:func:`choice_charge`), with the release's own charges planned for the
   worst case ``max_rows = auto.upper``;
2. after the checks, reads each person's number of rows (one value per person) and draws
   ``k`` from ``1..auto.upper`` (:func:`choose_max_rows`), then
   bounds and calibrates every statistic to ``k`` (:func:`resolve`);
3. charges the choice and the release together, and states both in the guarantee
   (:func:`with_choice`: ε adds; under zCDP the choice adds ``ε²/8``, the exponential
   mechanism being ε-bounded-range).

The proof is ``docs/proofs/privacy-unit.md`` §5.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ppdp.accounting import Charge
from ppdp.accounting.events import Exponential
from ppdp.budget import Guarantee, GuaranteeKind, Neighbouring
from ppdp.data import AutoMaxRows, PrivacyUnit, Schema
from ppdp.data.contribution import auto_utilities, rows_per_person
from ppdp.mechanisms import ExponentialMechanism
from ppdp.random import RandomSource

__all__ = [
    "CHOICE_MECHANISM",
    "choice_charge",
    "choose_max_rows",
    "is_choice",
    "resolve",
    "with_choice",
]

#: The suffix of the choice's mechanism name in the ledger.
CHOICE_MECHANISM = "max_rows auto (exponential mechanism)"


def auto_unit(schema: Any) -> PrivacyUnit | None:
    """The schema's unit when its ``max_rows`` is ``auto`` (chosen or not), else None."""
    unit = getattr(schema, "privacy_unit", None)
    return unit if unit is not None and unit.auto is not None else None


def choice_charge(schema: Schema, name: str, relation: Neighbouring) -> list[Charge]:
    """``[the choice's charge]`` for an ``auto`` unit, ``[]`` otherwise.

    Its details name the unit (the ledger pins the unit's column from the first charge of
    a release) and how ``k`` is chosen; the chosen ``k`` is in the release's own charges.
    """
    unit = auto_unit(schema)
    if unit is None:
        return []
    spec = unit.auto
    assert spec is not None
    details = {
        "query": f"max_rows: the {spec.quantile:g}-quantile of rows per person in "
        f"1..{spec.upper} (one value per person)",
        "sensitivity": 1.0,
        "norm": "utility",
        "relation": relation.value,
        "privacy_unit": {"column": unit.column, "max_rows": "auto", "auto": spec.to_dict()},
    }
    return [Charge(Exponential(epsilon=spec.epsilon), f"{name}: {CHOICE_MECHANISM}", details)]


def is_choice(charge: Charge) -> bool:
    """The charge is an ``auto`` choice's (:func:`choice_charge`)."""
    return charge.mechanism.endswith(CHOICE_MECHANISM)


def choose_max_rows(
    sizes: Any, spec: AutoMaxRows, source: RandomSource, *, relation: Neighbouring | str
) -> int:
    """``max_rows`` chosen by the exponential mechanism (ε = ``spec.epsilon``, utility
    sensitivity 1) among ``1..spec.upper`` (:func:`ppdp.data.contribution.auto_utilities`)."""
    mech = ExponentialMechanism(epsilon=spec.epsilon, sensitivity=1.0, relation=relation)
    return 1 + int(mech.randomise(auto_utilities(sizes, spec), source))


def resolve(
    schema: Schema,
    ids: Any,
    source: RandomSource,
    *,
    relation: Neighbouring,
    on_invalid: str,
    scheduler: Any = None,
) -> Schema:
    """``schema`` with its ``auto`` unit's ``max_rows`` chosen under DP from ``ids`` (the
    unit's column: a pandas or Dask Series), drawn from ``source``."""
    unit = schema.privacy_unit
    assert unit is not None and unit.is_auto and unit.auto is not None
    sizes = rows_per_person(ids, unit, on_invalid=on_invalid, scheduler=scheduler)
    k = choose_max_rows(sizes, unit.auto, source, relation=relation)
    return dataclasses.replace(schema, privacy_unit=unit.resolved(k))


def with_choice(guarantee: Guarantee, unit: PrivacyUnit) -> Guarantee:
    """The release's guarantee with the choice of ``max_rows`` composed in (basic
    composition: ε adds; under ρ-zCDP the ε-bounded-range choice adds ``ε²/8``)."""
    spec = unit.auto
    assert spec is not None and unit.chosen
    eps = spec.epsilon
    note = (
        f"max_rows chosen under DP: {unit.max_rows} (exponential mechanism, ε = {eps:g}, "
        f"on the {spec.quantile:g}-quantile of rows per person in 1..{spec.upper}"
    )
    details = dict(guarantee.details)
    current = details.get("privacy_unit")
    details["privacy_unit"] = {**(current or {}), **unit.ledger_dict()}
    if guarantee.kind in (GuaranteeKind.PURE, GuaranteeKind.APPROX):
        return dataclasses.replace(
            guarantee,
            epsilon=(guarantee.epsilon or 0.0) + eps,
            assumptions=(*guarantee.assumptions, note + "; included in ε)"),
            details=details,
        )
    if guarantee.kind is GuaranteeKind.ZCDP:
        return dataclasses.replace(
            guarantee,
            rho=(guarantee.rho or 0.0) + eps**2 / 8.0,
            assumptions=(*guarantee.assumptions, note + "; included in ρ as ε²/8)"),
            details=details,
        )
    raise AssertionError(f"a {guarantee.kind} guarantee cannot compose a max_rows choice")
