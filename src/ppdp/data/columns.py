"""Column declarations of a schema: numeric bounds, categorical domains, the label.

Each declaration is a frozen value object validated on construction; a problem raises
:class:`~ppdp.exceptions.SchemaError` naming the column and what is wrong.
"""

from __future__ import annotations

import datetime
import itertools
import math
import numbers
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ppdp.exceptions import SchemaError

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = [
    "SCALES",
    "AutoMaxRows",
    "CategoricalColumn",
    "Category",
    "Column",
    "LabelSpec",
    "NumericColumn",
    "OpenCategoricalColumn",
    "PrivacyUnit",
    "ReadOnlyMapping",
]

#: A category or class value: JSON/YAML scalars other than floats (floats do not compare
#: reliably and ``NaN`` is never equal to itself).
Category = str | int | bool


def _check_name(where: str, name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise SchemaError(f"{where}: name ({name!r}) must be a non-empty string")
    return name


def _check_bound(col: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        hint = ""
        if isinstance(value, datetime.date) or (
            isinstance(value, str) and re.fullmatch(r"\s*\d{4}-\d{1,2}-\d{1,2}\s*", value)
        ):
            hint = " (a date: declare date: true for a date column)"
        raise SchemaError(f"column {col!r}: {key} ({value!r}) must be a finite number{hint}")
    v = float(value)
    if not math.isfinite(v):
        raise SchemaError(f"column {col!r}: {key} ({v!r}) must be a finite number")
    return v


#: Most cut points a numeric column may declare (each adds a code to every table it is in).
MAX_CUTS = 255


def _check_cuts(col: str, value: Any, lower: float, upper: float) -> tuple[float, ...]:
    where = f"column {col!r}: cuts"
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise SchemaError(f"{where} ({value!r}) must be a list of numbers")
    cuts = tuple(_check_bound(col, "cuts", v) for v in value)
    if not 1 <= len(cuts) <= MAX_CUTS:
        raise SchemaError(f"{where} has {len(cuts)} values; declare 1 to {MAX_CUTS}")
    for a, b in itertools.pairwise(cuts):
        if not a < b:
            raise SchemaError(f"{where} must increase strictly ({a!r} then {b!r})")
    if not lower < cuts[0] or not cuts[-1] < upper:
        raise SchemaError(
            f"{where} ({cuts[0]!r} … {cuts[-1]!r}) must lie strictly inside the bounds "
            f"({lower!r}, {upper!r})"
        )
    return cuts


#: Most decimals a numeric column may declare (float64 holds about 15-17 significant digits).
MAX_DECIMALS = 12


def _check_decimals(col: str, value: Any) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or not 0 <= value <= MAX_DECIMALS
    ):
        raise SchemaError(
            f"column {col!r}: decimals ({value!r}) must be an integer from 0 to {MAX_DECIMALS}"
        )
    return int(value)


#: The scales a numeric column may declare: how its values map to the encoded ``[0, 1]``.
SCALES = ("linear", "log")


def _check_scale(col: str, value: Any) -> str:
    if not isinstance(value, str) or value not in SCALES:
        raise SchemaError(
            f"column {col!r}: scale ({value!r}) must be one of {', '.join(map(repr, SCALES))}"
        )
    return value


def check_category(where: str, value: Any) -> Category:
    if isinstance(value, str | bool) or (
        isinstance(value, numbers.Integral) and not isinstance(value, float)
    ):
        return value if isinstance(value, str | bool) else int(value)
    raise SchemaError(
        f"{where}: category {value!r} must be a string or an integer (not "
        f"{type(value).__name__}); in a schema file, quote it: '{value}'"
    )


def _check_categories(where: str, values: Any, what: str = "categories") -> tuple[Category, ...]:
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise SchemaError(f"{where}: {what} must be a list, not {type(values).__name__}")
    cats = tuple(check_category(where, v) for v in values)
    if not cats:
        raise SchemaError(f"{where}: {what} must be a non-empty list")
    seen: set[Any] = set()
    for c in cats:
        # True == 1 and hash alike; pandas would match them alike too, so they clash.
        key = (isinstance(c, str), c)
        if key in seen:
            raise SchemaError(f"{where}: {what} has the duplicate {c!r}")
        seen.add(key)
    return cats


@dataclass(frozen=True, slots=True)
class NumericColumn:
    """A numeric column with public bounds ``lower < upper``.

    Parameters
    ----------
    name : str
        Column name in the data.
    lower, upper : float
        Declared bounds, finite, ``lower < upper``. Values outside are clipped on encoding
        (and counted in the custodian's log). The bounds must be public knowledge: every
        sensitivity is computed from them.
    integer : bool, default False
        Decoded values are rounded to integers.
    impute : float or None
        Constant that replaces a missing value when the schema's ``nan_policy`` is
        ``"impute"``; must lie within the bounds.
    decimals : int or None
        Public precision of the column's values: the number of decimals, 0 to 12. Decoded
        values are rounded to it (then kept within the bounds), so a synthetic release
        prints ``27.9`` rather than ``27.889309762269264``. Like the bounds it is a
        declaration, never read from the private data in a release; not together with
        ``integer`` (which already rounds to whole numbers). ``None`` (default): no
        rounding.
    cuts : sequence of float or None
        Public cut points strictly inside ``(lower, upper)``, increasing: where
        :class:`~ppdp.publish.TableSynthesizer` cuts the column into bins instead of its
        equal-width ones, e.g. income brackets ``[5000, 10000, 20000, 50000, 100000]`` for
        a skewed income on ``[0, 1e6]``. A declaration like the bounds (a public code list,
        tax brackets), never read from the private data. ``None`` (default): equal widths.
    scale : {"linear", "log"}, default "linear"
        How values map to the encoded ``[0, 1]`` that every mechanism works on (see
        :meth:`to_unit`). ``"linear"``: ``(v - lower) / (upper - lower)``. ``"log"``:
        ``log1p(v - lower) / log1p(upper - lower)``, for a skewed column such as an income
        declared on ``[0, 1e6]`` whose values are mostly 5,000 to 80,000: linearly they
        crowd near 0, on the log scale they spread over the encoded range, so learners,
        projections and the synthesizer's equal-width bins keep their differences. The
        log acts on the column's units above ``lower``: it spreads values over orders of
        magnitude above one unit, and does nearly nothing for a column whose values lie
        within one unit of ``lower`` (fractions, rates): declare such a column in smaller
        units (per cent, per mille) first. A public declaration like the bounds, never
        read from the private data; it changes no sensitivity (encoded values stay in
        ``[0, 1]``).
    date : bool, default False
        A date column: its units are whole days since 1970-01-01 (``integer`` is implied).
        ``lower``, ``upper``, ``impute`` and ``cuts`` may be given as ISO dates
        (``"2015-01-01"``) or :class:`datetime.date` objects (or day numbers) and are held
        as day numbers; a schema file writes them as ISO dates. The data's values are ISO
        texts (or texts in ``date_format``), dates or ``datetime64`` values (floored to
        their day); decoded values are ISO texts ``YYYY-MM-DD``. Not with ``decimals`` nor
        ``scale="log"`` (days above a lower bound rarely span orders of magnitude: declare
        ``cuts`` for uneven periods). Times of day are out of scope.
    date_format : str or None
        With ``date=True``: the strptime format of the data's date texts when they are not
        ISO, e.g. ``"%d/%m/%Y"`` for a spreadsheet export writing ``14/03/2021``. ISO
        texts are read too (releases write dates ISO, so a release reads back with the
        schema). A format with a time of day, or one that reads an ISO date as another
        day (``"%Y-%d-%m"``), is refused. ``None`` (default): ``YYYY-MM-DD`` only.
    """

    name: str
    lower: float
    upper: float
    integer: bool = False
    impute: float | None = None
    decimals: int | None = None
    cuts: tuple[float, ...] | None = None
    scale: Literal["linear", "log"] = "linear"
    date: bool = False
    date_format: str | None = None

    def __post_init__(self) -> None:
        _check_name("numeric column", self.name)
        if not isinstance(self.date, bool):
            raise SchemaError(f"column {self.name!r}: date ({self.date!r}) must be a boolean")
        if self.date:
            self._days_from_dates()
        elif self.date_format is not None:
            raise SchemaError(
                f"column {self.name!r}: date_format ({self.date_format!r}) goes with date: "
                "true only"
            )
        lo = _check_bound(self.name, "lower", self.lower)
        hi = _check_bound(self.name, "upper", self.upper)
        if not lo < hi:
            raise SchemaError(f"column {self.name!r}: lower ({lo!r}) must be < upper ({hi!r})")
        if not math.isfinite(hi - lo):
            raise SchemaError(
                f"column {self.name!r}: upper - lower ({hi!r} - {lo!r}) overflows float64"
            )
        if not isinstance(self.integer, bool):
            raise SchemaError(f"column {self.name!r}: integer ({self.integer!r}) must be a boolean")
        if self.integer and not (lo.is_integer() and hi.is_integer()):
            raise SchemaError(
                f"column {self.name!r}: an integer column needs integer bounds "
                f"(lower {lo!r}, upper {hi!r})"
            )
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)
        if self.impute is not None:
            v = _check_bound(self.name, "impute", self.impute)
            if not lo <= v <= hi:
                raise SchemaError(
                    f"column {self.name!r}: impute ({v!r}) must lie within [{lo!r}, {hi!r}]"
                )
            object.__setattr__(self, "impute", v)
        if self.decimals is not None:
            object.__setattr__(self, "decimals", _check_decimals(self.name, self.decimals))
            if self.integer:
                raise SchemaError(
                    f"column {self.name!r}: decimals ({self.decimals!r}) cannot go with "
                    "integer: true (integer already rounds to whole numbers); drop one"
                )
        if self.cuts is not None:
            object.__setattr__(self, "cuts", _check_cuts(self.name, self.cuts, lo, hi))
        _check_scale(self.name, self.scale)

    def _days_from_dates(self) -> None:
        """A date column's declarations as day numbers; ``integer`` set; what cannot go
        with a date refused."""
        from ppdp.data.dates import check_date_format, day_number

        name = self.name
        if self.date_format is not None:
            check_date_format(name, self.date_format)
        if self.decimals is not None:
            raise SchemaError(
                f"column {name!r}: decimals ({self.decimals!r}) cannot go with date: true (a "
                "date column holds whole days); drop decimals"
            )
        if self.scale != "linear":
            raise SchemaError(
                f"column {name!r}: scale ({self.scale!r}) cannot go with date: true (only "
                "'linear'); declare public cuts for uneven periods"
            )
        object.__setattr__(self, "integer", True)

        def whole_day(key: str, value: Any) -> float:
            day = day_number(name, key, value)
            if math.isfinite(day) and not day.is_integer():
                raise SchemaError(
                    f"column {name!r}: {key} ({value!r}) must be a whole day (a date, or an "
                    "integer number of days since 1970-01-01)"
                )
            return day

        for key in ("lower", "upper", "impute"):
            value = getattr(self, key)
            if value is not None:
                object.__setattr__(self, key, whole_day(key, value))
        if self.cuts is not None:
            cuts = self.cuts
            if isinstance(cuts, str | bytes) or not isinstance(cuts, Iterable):
                raise SchemaError(f"column {name!r}: cuts ({cuts!r}) must be a list of dates")
            object.__setattr__(self, "cuts", tuple(whole_day("cuts", c) for c in cuts))

    def to_unit(
        self, values: ArrayLike, *, out: NDArray[np.float64] | None = None
    ) -> NDArray[np.float64]:
        """Encoded values in ``[0, 1]``: the map of :func:`ppdp.data.encode`.

        Each value is clipped into ``[lower, upper]``, then mapped by the column's scale:
        ``(v - lower) / (upper - lower)`` (linear) or ``log1p(v - lower) / log1p(upper -
        lower)`` (log). Every result lies in ``[0, 1]`` exactly, whatever the rounding
        (sensitivities rely on it); ``NaN`` stays ``NaN``.

        Parameters
        ----------
        values : array-like of float
        out : ndarray of float64, optional
            Where to write the result (same shape as ``values``; may be ``values`` itself).

        Returns
        -------
        ndarray of float64
            Same shape as ``values``.
        """
        v = np.asarray(values, dtype=np.float64)
        return self._to_unit_into(v, np.empty_like(v) if out is None else out, clip=True)

    def _to_unit_into(
        self, v: NDArray[np.float64], out: NDArray[np.float64], *, clip: bool
    ) -> NDArray[np.float64]:
        """:meth:`to_unit` into ``out``; ``clip=False`` only for values known to lie within
        the bounds (the encoder has counted them: it skips a pass over the column)."""
        if clip:
            np.clip(v, self.lower, self.upper, out=out)
            out -= self.lower
        else:
            np.subtract(v, self.lower, out=out)
        if self.scale == "linear":
            # Rounding is monotone, so lower <= v <= upper gives 0 <= fl(v - lower) <=
            # fl(upper - lower) and the quotient lands in [0, 1] exactly: no second clip.
            out /= self.upper - self.lower
            return out
        np.log1p(out, out=out)
        out /= math.log1p(self.upper - self.lower)
        # log1p is not guaranteed monotone under rounding: keep [0, 1] exact.
        return np.clip(out, 0.0, 1.0, out=out)

    def from_unit(self, u: ArrayLike) -> NDArray[np.float64]:
        """Values of the column from encoded ones: the inverse of :meth:`to_unit`.

        ``u`` is clipped into ``[0, 1]``, mapped back by the column's scale (``lower + u ·
        (upper - lower)``, or ``lower + expm1(u · log1p(upper - lower))``) and clipped into
        ``[lower, upper]``. No rounding: :func:`ppdp.data.decode` rounds for ``integer``
        and ``decimals`` afterwards.

        Parameters
        ----------
        u : array-like of float

        Returns
        -------
        ndarray of float64
            Same shape as ``u``, within ``[lower, upper]`` (``NaN`` stays ``NaN``).
        """
        x = np.clip(np.asarray(u, dtype=np.float64), 0.0, 1.0)
        span = self.upper - self.lower
        if self.scale == "linear":
            v = self.lower + x * span
        else:
            # Near the largest floats expm1 or the sum may round past them: the clip
            # below brings such a value back to the upper bound.
            with np.errstate(over="ignore"):
                v = self.lower + np.expm1(x * math.log1p(span))
            # expm1(log1p(span)) may miss span by an ulp: 1 decodes to the upper bound.
            v = np.where(x == 1.0, self.upper, v)
        return np.clip(v, self.lower, self.upper)

    def to_dict(self) -> dict[str, Any]:
        """The column as it appears in a schema file (a date column's dates as ISO texts)."""
        if self.date:
            return self._date_dict()
        d: dict[str, Any] = {"name": self.name, "type": "numeric"}
        d["lower"] = int(self.lower) if self.integer and self.lower.is_integer() else self.lower
        d["upper"] = int(self.upper) if self.integer and self.upper.is_integer() else self.upper
        if self.integer:
            d["integer"] = True
        if self.impute is not None:
            d["impute"] = (
                int(self.impute) if self.integer and self.impute.is_integer() else self.impute
            )
        if self.decimals is not None:
            d["decimals"] = self.decimals
        if self.cuts is not None:
            d["cuts"] = [int(c) if c.is_integer() else c for c in self.cuts]
        if self.scale != "linear":
            d["scale"] = self.scale
        return d

    def _date_dict(self) -> dict[str, Any]:
        from ppdp.data.dates import day_text

        d: dict[str, Any] = {"name": self.name, "type": "numeric", "date": True}
        if self.date_format is not None:
            d["date_format"] = self.date_format
        d["lower"], d["upper"] = day_text(self.lower), day_text(self.upper)
        if self.impute is not None:
            d["impute"] = day_text(self.impute)
        if self.cuts is not None:
            d["cuts"] = [day_text(c) for c in self.cuts]
        return d


@dataclass(frozen=True, slots=True)
class CategoricalColumn:
    """A categorical column with its full, declared list of categories.

    Parameters
    ----------
    name : str
        Column name in the data.
    categories : sequence of str or int
        Every category, in the order of the one-hot block; non-empty, no duplicates.
        Declare the whole domain, including categories that may have no rows: the output
        shape must never depend on which values occur.
    other : str, int or None
        Name of a bucket that undeclared values map to (counted in the custodian's log).
        When it is not already among ``categories`` it is appended as the last one.
        Without it, an undeclared value is an error.
    impute : str, int or None
        Category that replaces a missing value when ``nan_policy`` is ``"impute"``.
    groups : mapping of str to sequence of categories, or None
        A declared (public) hierarchy above the codes, e.g. each ICD-10 code under its
        chapter: every category in exactly one group (the ``other`` bucket, when not listed,
        forms a group of its own). Synthesizers measure rare codes at the group level
        instead of alone.
    """

    name: str
    categories: tuple[Category, ...]
    other: Category | None = None
    impute: Category | None = None
    groups: tuple[tuple[str, tuple[Category, ...]], ...] | None = None

    def __post_init__(self) -> None:
        _check_name("categorical column", self.name)
        where = f"column {self.name!r}"
        cats = _check_categories(where, self.categories)
        if self.other is not None:
            other = check_category(where, self.other)
            if other not in cats:
                cats = (*cats, other)
            object.__setattr__(self, "other", other)
        object.__setattr__(self, "categories", cats)
        if self.impute is not None:
            imp = check_category(where, self.impute)
            if imp not in cats:
                raise SchemaError(f"{where}: impute ({imp!r}) must be one of the categories")
            object.__setattr__(self, "impute", imp)
        if self.groups is not None:
            object.__setattr__(self, "groups", _check_groups(where, self.groups, cats, self.other))

    def group_codes(self) -> tuple[int, ...] | None:
        """The group index of each category, in category order (None: no groups declared)."""
        if self.groups is None:
            return None
        index = {(isinstance(c, str), c): g for g, (_, cs) in enumerate(self.groups) for c in cs}
        return tuple(index[(isinstance(c, str), c)] for c in self.categories)

    def to_dict(self) -> dict[str, Any]:
        """The column as it appears in a schema file."""
        d: dict[str, Any] = {
            "name": self.name,
            "type": "categorical",
            "categories": list(self.categories),
        }
        if self.other is not None:
            d["other"] = self.other
        if self.impute is not None:
            d["impute"] = self.impute
        if self.groups is not None:
            d["groups"] = {g: list(cs) for g, cs in self.groups}
        return d


@dataclass(frozen=True, slots=True)
class OpenCategoricalColumn:
    """A categorical column whose categories are not all declared (``open: true``).

    Its keys come from the data, so only a release that selects keys privately may read it
    (:class:`~ppdp.publish.GroupByPublisher` with ``keys="private"``); every other
    publisher and learner refuses a schema that declares one, in one line, until its
    categories are declared. It is not encoded: it has no one-hot block.

    Parameters
    ----------
    name : str
        Column name in the data.
    categories : sequence of str or int, default ()
        Categories known in public (optional): these keys are always released, empty
        ones included; any other value of the column is a candidate for private selection.
    impute : str or int or None
        Key that replaces a missing value when ``nan_policy`` is ``"impute"``.
    """

    name: str
    categories: tuple[Category, ...] = ()
    impute: Category | None = None

    def __post_init__(self) -> None:
        _check_name("categorical column", self.name)
        where = f"column {self.name!r}"
        cats = self.categories
        if isinstance(cats, str | bytes) or not isinstance(cats, Iterable):
            raise SchemaError(f"{where}: categories ({cats!r}) must be a list")
        cats = _check_categories(where, cats) if len(tuple(cats)) else ()
        object.__setattr__(self, "categories", cats)
        if self.impute is not None:
            object.__setattr__(self, "impute", check_category(where, self.impute))

    @property
    def open(self) -> bool:
        """Always True: the column's keys are not all declared."""
        return True

    def to_dict(self) -> dict[str, Any]:
        """The column as it appears in a schema file."""
        d: dict[str, Any] = {"name": self.name, "type": "categorical", "open": True}
        if self.categories:
            d["categories"] = list(self.categories)
        if self.impute is not None:
            d["impute"] = self.impute
        return d


def _check_groups(
    where: str, groups: Any, categories: tuple[Category, ...], other: Category | None
) -> tuple[tuple[str, tuple[Category, ...]], ...]:
    """Declared groups as ``((name, categories), ...)``: each category in exactly one group."""
    if isinstance(groups, Mapping):
        items = list(groups.items())
    elif isinstance(groups, Iterable) and not isinstance(groups, str | bytes):
        items = list(groups)
        if not all(isinstance(it, tuple | list) and len(it) == 2 for it in items):
            raise SchemaError(
                f"{where}: groups must map each group name to its categories, e.g. "
                "{'circulatory': ['I10', 'I20']}"
            )
    else:
        raise SchemaError(
            f"{where}: groups ({type(groups).__name__}) must map each group name to its "
            "categories, e.g. {'circulatory': ['I10', 'I20']}"
        )
    declared = {(isinstance(c, str), c) for c in categories}
    seen: dict[tuple[bool, Any], str] = {}
    out: list[tuple[str, tuple[Category, ...]]] = []
    for name, members in items:
        if not isinstance(name, str) or not name:
            raise SchemaError(f"{where}: group name {name!r} must be a non-empty string")
        cats = _check_categories(where, members, f"group {name!r}")
        for c in cats:
            key = (isinstance(c, str), c)
            if key not in declared:
                raise SchemaError(
                    f"{where}: group {name!r} lists {c!r}, which is not among the categories"
                )
            if key in seen:
                raise SchemaError(
                    f"{where}: {c!r} is in groups {seen[key]!r} and {name!r}; each category "
                    "must be in exactly one group"
                )
            seen[key] = name
        out.append((name, cats))
    if other is not None and (isinstance(other, str), other) not in seen:
        out.append((str(other), (other,)))
        seen[(isinstance(other, str), other)] = str(other)
    missing = [c for c in categories if (isinstance(c, str), c) not in seen]
    if missing:
        shown = ", ".join(repr(c) for c in missing[:3]) + (", ..." if len(missing) > 3 else "")
        raise SchemaError(
            f"{where}: groups do not cover {len(missing)} categor"
            f"{'y' if len(missing) == 1 else 'ies'} ({shown}); each category must be in "
            "exactly one group"
        )
    if len({n for n, _ in out}) != len(out):
        raise SchemaError(f"{where}: groups repeat a group name; each name once")
    return tuple(out)


@dataclass(frozen=True, slots=True)
class LabelSpec:
    """The label column and its declared classes.

    Parameters
    ----------
    name : str
        Column name in the data.
    classes : sequence of str or int
        At least two classes, no duplicates; class ``k`` is encoded as the integer ``k``.
        Every statistic per class has one slot per declared class, even an empty one.
    public_counts : sequence of int or None
        Class sizes, when they are public knowledge (the replace-one analyses of the
        sources treat them as public). ``None`` (default) means they are private.
    """

    name: str
    classes: tuple[Category, ...]
    public_counts: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        _check_name("label", self.name)
        where = f"label {self.name!r}"
        classes = _check_categories(where, self.classes, "classes")
        if len(classes) < 2:
            raise SchemaError(f"{where}: classes ({list(classes)!r}) must list at least 2 classes")
        object.__setattr__(self, "classes", classes)
        if self.public_counts is not None:
            counts = self.public_counts
            if isinstance(counts, str | bytes) or not isinstance(counts, Iterable):
                raise SchemaError(f"{where}: public_counts must be a list of integers")
            counts = tuple(counts)
            if len(counts) != len(classes) or not all(
                isinstance(c, numbers.Integral) and not isinstance(c, bool) and c >= 0
                for c in counts
            ):
                raise SchemaError(
                    f"{where}: public_counts ({list(counts)!r}) must be {len(classes)} "
                    "integers >= 0, one per class"
                )
            object.__setattr__(self, "public_counts", tuple(int(c) for c in counts))

    @property
    def n_classes(self) -> int:
        """Number of declared classes."""
        return len(self.classes)

    def to_dict(self) -> dict[str, Any]:
        """The label as it appears in a schema file."""
        d: dict[str, Any] = {"name": self.name, "classes": list(self.classes)}
        if self.public_counts is not None:
            d["public_counts"] = list(self.public_counts)
        return d


def check_cap(param: str, value: Any, allowed: str = "an integer >= 1") -> int:
    """A contribution cap (``max_rows``, ``max_groups``, ...): an integer >= 1, else one line."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise SchemaError(f"{param} ({value!r}) must be {allowed}")
    if value < 1:
        raise SchemaError(f"{param} ({value!r}) must be {allowed}")
    return int(value)


#: The default public upper cap on ``max_rows: auto``: the exponential mechanism's error
#: grows as ``log(upper)`` only, and a release's noise is at most ``upper`` times the
#: per-row noise whatever the data; declare ``auto: {upper: ...}`` when some persons
#: legitimately hold more (a panel of 30 years, daily records).
AUTO_UPPER = 100
#: The default quantile of rows per person ``max_rows: auto`` aims at: keeps every row of
#: about 9 persons in 10, and caps the rest.
AUTO_QUANTILE = 0.9
#: The default ε of the choice (charged beside the release, stated in its guarantee).
AUTO_EPSILON = 0.1


def _auto_error(key: str, value: Any, allowed: str) -> SchemaError:
    return SchemaError(f"privacy_unit: auto: {key} ({value!r}) must be {allowed}")


@dataclass(frozen=True)
class AutoMaxRows:
    """How ``max_rows: auto`` is chosen: a DP ``quantile`` of rows per person in ``1..upper``.

    The choice is the exponential mechanism at ``epsilon`` (each person contributes one value,
    their number of rows: utility sensitivity 1), drawn in the release's run before any
    bounding and charged in the same plan (``docs/proofs/privacy-unit.md`` §5).

    Parameters
    ----------
    upper : int, default 100
        The public upper cap on ``max_rows`` (the candidates are ``1..upper``).
    quantile : float, default 0.9
        The share of persons whose every row should be kept, in (0, 1].
    epsilon : float, default 0.1
        ε of the choice, in (0, 1]; added to the release's ε in its guarantee.
    """

    upper: int = AUTO_UPPER
    quantile: float = AUTO_QUANTILE
    epsilon: float = AUTO_EPSILON

    def __post_init__(self) -> None:
        up = self.upper
        if isinstance(up, bool) or not isinstance(up, numbers.Integral) or not 1 <= up <= 10_000:
            raise _auto_error("upper", up, "an integer in 1..10000 (the most rows of one person)")
        object.__setattr__(self, "upper", int(up))
        for key, lo_open in (("quantile", "a number in (0, 1]"), ("epsilon", "a number in (0, 1]")):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0 < float(v) <= 1:
                raise _auto_error(key, v, lo_open)
            object.__setattr__(self, key, float(v))

    def to_dict(self) -> dict[str, Any]:
        """The spec as a schema file writes it."""
        return {"upper": self.upper, "quantile": self.quantile, "epsilon": self.epsilon}


@dataclass(frozen=True)
class PrivacyUnit:
    """The unit a guarantee protects: every row of one person, at most ``max_rows`` of them.

    Declared in a schema as ``privacy_unit: {column: patient_id, max_rows: 5}``. The column
    holds a person's identifier; it is read only to bound each person's contribution
    (:mod:`ppdp.data.contribution`), never encoded, never released. Each release keeps at
    most ``max_rows`` rows per person, chosen uniformly at random, and is calibrated so that
    neighbouring tables differ by one person's whole set of rows (up to ``max_rows``).

    Parameters
    ----------
    column : str
        The identifier column (not a feature, not the label).
    max_rows : int or "auto"
        The most rows of one person a release reads (an integer >= 1; public, like every
        declaration: choose it from what the custodian knows of the collection, e.g. "at most
        5 stays a year"), or ``"auto"``: each release chooses it under DP, as a noisy
        quantile of rows per person (:class:`AutoMaxRows`), charged in the same plan and
        stated in its guarantee. Until chosen, an ``auto`` unit reads as
        ``max_rows = auto.upper`` (the worst case every plan before the data is made for).
    auto : AutoMaxRows, optional
        How ``auto`` chooses (default ``AutoMaxRows()``); only with ``max_rows="auto"``.
    chosen : bool, default False
        Set by the release run on the unit it made with the chosen ``max_rows``
        (:meth:`resolved`); never declared.
    """

    column: str
    max_rows: int
    auto: AutoMaxRows | None = None
    chosen: bool = False

    def __post_init__(self) -> None:
        _check_name("privacy_unit", self.column)
        if isinstance(self.max_rows, str) and self.max_rows.strip().lower() == "auto":
            spec = AutoMaxRows() if self.auto is None else self.auto
            if not isinstance(spec, AutoMaxRows):
                raise SchemaError(
                    f"privacy_unit: auto ({spec!r}) must be an AutoMaxRows or a mapping of "
                    "upper, quantile, epsilon"
                )
            if self.chosen:
                raise SchemaError("privacy_unit: chosen is set by the release, never declared")
            object.__setattr__(self, "auto", spec)
            object.__setattr__(self, "max_rows", spec.upper)
            return
        cap = check_cap(
            "privacy_unit: max_rows", self.max_rows, "an integer >= 1 (rows per person) or auto"
        )
        object.__setattr__(self, "max_rows", cap)
        if self.auto is not None and not self.chosen:
            raise SchemaError(f"privacy_unit: auto is only for max_rows: auto (max_rows is {cap})")

    @property
    def is_auto(self) -> bool:
        """``max_rows: auto``, not chosen yet (reads as ``auto.upper`` until then)."""
        return self.auto is not None and not self.chosen

    def resolved(self, max_rows: int) -> PrivacyUnit:
        """This ``auto`` unit with ``max_rows`` chosen under DP (the release run's)."""
        if self.auto is None:
            raise SchemaError("privacy_unit: only a max_rows: auto unit is resolved")
        return PrivacyUnit(self.column, max_rows, auto=self.auto, chosen=True)

    def to_dict(self) -> dict[str, Any]:
        """The unit as it appears in a schema file (a chosen unit: its chosen ``max_rows``)."""
        if self.is_auto:
            assert self.auto is not None
            return {"column": self.column, "max_rows": "auto", "auto": self.auto.to_dict()}
        return {"column": self.column, "max_rows": self.max_rows}

    def ledger_dict(self) -> dict[str, Any]:
        """What a ledger entry and a guarantee record of the unit: :meth:`to_dict`, and for
        a chosen ``max_rows`` how it was chosen (``max_rows_chosen_under_dp``)."""
        d = self.to_dict()
        if self.chosen and self.auto is not None:
            d["max_rows_chosen_under_dp"] = self.auto.to_dict()
        return d

    def describe(self) -> str:
        """``per person (patient_id, ≤ 5 rows each)``: how a guarantee names the unit."""
        if self.is_auto:
            return (
                f"per person ({self.column}, ≤ max_rows rows each, max_rows chosen under DP "
                f"in 1..{self.max_rows})"
            )
        if self.chosen:
            return (
                f"per person ({self.column}, ≤ {self.max_rows} rows each, "
                f"max_rows chosen under DP: {self.max_rows})"
            )
        return f"per person ({self.column}, ≤ {self.max_rows} rows each)"


Column = NumericColumn | CategoricalColumn


class ReadOnlyMapping(Mapping[str, Any]):
    """A small read-only mapping that, unlike ``MappingProxyType``, pickles (Dask ships it)."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        self._data = dict(data or {})

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return repr(self._data)

    def __eq__(self, other: object) -> bool:
        return dict(self.items()) == dict(other.items()) if isinstance(other, Mapping) else False

    def __getstate__(self) -> dict[str, Any]:
        return self._data

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._data = dict(state)
