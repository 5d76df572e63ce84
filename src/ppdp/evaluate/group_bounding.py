"""What a GroupBy release's group caps dropped, for the report (custodian only).

A GroupBy release under a privacy unit states ``max_groups`` (L0) and ``max_rows_per_group``
(L∞) in its guarantee's ``privacy_unit`` and its ``by`` columns. This module recomputes the
release's bounding with the library's own :func:`ppdp.data.contribution.bound_table` on the
original table, so the report gives the rows dropped by each cap.

Which groups and rows a person keeps is drawn with the release's secret keys, which are not
stored. ``max_rows_per_group`` and missing ids drop a number of rows that no draw changes;
``max_groups`` and ``max_rows`` do too unless some person has more than ``max_groups``
groups of different sizes (each size after ``max_rows_per_group``). Then the block says
``exact: false`` and gives one draw with the report's own fixed keys ("about").
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pandas as pd

from ppdp.data import Schema
from ppdp.data.columns import PrivacyUnit
from ppdp.data.contribution import BoundingCounts, ContributionBounds, bound_table
from ppdp.data.encoding import encode

__all__ = ["REPORT_KEYS", "bounded_rows", "group_bounding", "group_caps", "release_plan"]

#: The report's own SipHash keys for a draw of the bounding (the release's are secret).
REPORT_KEYS = ("70706470726570f1", "70706470726570f2")

_METHOD_EXACT = (
    "bound_table (ppdp.data.contribution) on the original with the guarantee's caps and by "
    "columns: every person's kept row count is the same whichever rows the keys choose, so "
    "the counts are the release's exactly"
)
_METHOD_ABOUT = (
    "bound_table (ppdp.data.contribution) on the original with the guarantee's caps and by "
    "columns, one draw with the report's own fixed keys (the release's keys are secret): "
    "max_rows_per_group and missing ids are exact; max_groups and max_rows depend on which "
    "groups of unequal size a person with more than max_groups groups keeps, so they are about"
)


def group_caps(details: dict[str, Any]) -> dict[str, Any] | None:
    """``{"by", "max_groups", "max_rows_per_group", "keys"}`` of a guarantee's details when
    the release states a group cap under a privacy unit, else None."""
    unit = details.get("privacy_unit")
    if not isinstance(unit, dict) or not isinstance(details.get("by"), list):
        return None
    l0, linf = unit.get("max_groups"), unit.get("max_rows_per_group")
    if l0 is None and linf is None:
        return None
    return {
        "by": list(details["by"]),
        "max_groups": l0,
        "max_rows_per_group": linf,
        "keys": details.get("keys", "declared"),
    }


def release_plan(
    schema: Schema, guarantee: Any, *, variances: Any = (), quantiles: Any = (), q: Any = (0.5,)
) -> Any:
    """The :class:`~ppdp.publish.groupby.GroupByPublisher` a GroupBy guarantee describes
    (its ``by``, ``means``, caps, keys and relation; public parameters only), with the
    ``variances`` and ``quantiles`` its table holds. Its ``plan()`` groups the rows as
    the release did."""
    from ppdp.publish.groupby import GroupByPublisher

    details = guarantee.details
    caps = group_caps(details) or {}
    extra: dict[str, Any] = {}
    if details.get("keys") == "private":
        sel = details.get("selection") or {}
        extra = {"keys": "private", "delta": guarantee.delta}
        if sel.get("selection"):
            extra["selection"] = sel["selection"]
    if details.get("relation"):
        extra["relation"] = details["relation"]
    return GroupByPublisher(
        epsilon=float(guarantee.epsilon),
        schema=schema,
        by=list(details.get("by") or []),
        means=list(details.get("means") or []),
        max_groups=caps.get("max_groups"),
        max_rows_per_group=caps.get("max_rows_per_group"),
        variances=variances,
        quantiles=quantiles,
        q=q,
        allow_large_epsilon=True,
        **extra,
    )


def _bounds(
    schema: Schema, caps: dict[str, Any], guarantee: Any, max_rows: int
) -> tuple[ContributionBounds, Any]:
    """The release's :class:`ContributionBounds` and its ``(frame, X, y) -> codes``."""
    from ppdp.publish.groupby import group_codes, key_groups

    private = caps["keys"] == "private"
    plan = release_plan(schema, guarantee).plan()
    unit = schema.privacy_unit
    assert unit is not None
    if unit.max_rows != max_rows:  # an auto unit: the cap the release chose and stated
        unit = PrivacyUnit(unit.column, max_rows) if unit.auto is None else unit.resolved(max_rows)
    if private:
        frame_fn = functools.partial(key_groups, schema, plan)
        bounds = ContributionBounds(
            unit,
            max_groups=caps["max_groups"],
            max_rows_per_group=caps["max_rows_per_group"],
            frame_group_fn=frame_fn,
        )
        return bounds, lambda f, X, y: frame_fn(f, X, y)[0]
    code_fn = functools.partial(group_codes, schema, plan)
    bounds = ContributionBounds(
        unit,
        max_groups=caps["max_groups"],
        max_rows_per_group=caps["max_rows_per_group"],
        group_fn=code_fn,
    )
    return bounds, lambda f, X, y: code_fn(X, y)


def _exact(
    original: pd.DataFrame, schema: Schema, bounds: ContributionBounds, codes_of: Any
) -> bool:
    """Whether no draw of the keys changes the counts: every person with more than
    ``max_groups`` groups has them all of one size after ``max_rows_per_group``."""
    if bounds.max_groups is None:
        return True
    column = bounds.unit.column
    valid = original.loc[original[column].notna()]
    X, y, _ = encode(schema, valid, include_label=False, log=False, on_invalid="mask")
    pairs = pd.DataFrame(
        {"p": valid[column].astype(str).to_numpy(), "g": np.asarray(codes_of(valid, X, y))}
    )
    sizes = pairs.groupby(["p", "g"]).size()
    if bounds.max_rows_per_group is not None:
        sizes = sizes.clip(upper=bounds.max_rows_per_group)
    per = sizes.groupby(level="p").agg(["size", "min", "max"])
    over = per[per["size"] > bounds.max_groups]
    return bool((over["min"] == over["max"]).all())


def group_bounding(
    original: pd.DataFrame, schema: Schema, guarantee: Any, block: dict[str, Any]
) -> dict[str, Any]:
    """``block`` (:func:`ppdp.data.contribution.dropped_share`'s, for ``max_rows``) with the
    group caps' counts of the release that ``guarantee`` describes, per cap.

    Adds ``max_groups``, ``max_rows_per_group``, ``exact`` and ``method``; ``by_cap`` then
    holds the rows dropped by ``max_rows_per_group``, ``max_groups``, ``max_rows`` (after
    the group caps, as the release applies them) and missing ids. Custodian only.
    """
    if group_caps(guarantee.details) is None:
        return block
    return bounded_rows(original, schema, guarantee, block)[0]


def bounded_rows(
    original: pd.DataFrame, schema: Schema, guarantee: Any, block: dict[str, Any]
) -> tuple[dict[str, Any], pd.DataFrame, BoundingCounts]:
    """:func:`group_bounding`'s block, the rows of ``original`` one draw of the GroupBy
    release's bounding keeps (with :data:`REPORT_KEYS`; without group caps, ``max_rows``
    alone) and the draw's counts. Custodian only.

    The kept rows are the release's own exactly when the draw drops no row by a cap
    (``counts.by_rows_per_group``, ``by_groups`` and ``by_rows`` all 0): the keys choose
    nothing then."""
    caps = group_caps(guarantee.details) or {
        "by": list(guarantee.details.get("by") or []),
        "max_groups": None,
        "max_rows_per_group": None,
        "keys": guarantee.details.get("keys", "declared"),
    }
    bounds, codes_of = _bounds(schema, caps, guarantee, int(block["max_rows"]))
    kept, counts = bound_table(original, schema, bounds, REPORT_KEYS, on_invalid="mask", log=False)
    if group_caps(guarantee.details) is None:
        return block, kept, counts
    exact = _exact(original, schema, bounds, codes_of)
    dropped = counts.rows - counts.kept
    return (
        {
            **block,
            "max_groups": bounds.max_groups,
            "max_rows_per_group": bounds.max_rows_per_group,
            "kept": counts.kept,
            "dropped": dropped,
            "share_dropped": 0.0 if counts.rows == 0 else dropped / counts.rows,
            "by_cap": {
                "max_rows_per_group": counts.by_rows_per_group,
                "max_groups": counts.by_groups,
                "max_rows": counts.by_rows,
                "missing_ids": counts.missing_ids,
            },
            "exact": exact,
            "method": _METHOD_EXACT if exact else _METHOD_ABOUT,
        },
        kept,
        counts,
    )
