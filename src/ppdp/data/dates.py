"""Dates of a date column (``type: numeric`` with ``date: true``): days since 1970-01-01.

A date column is a numeric column whose units are whole days since 1970-01-01 (day 0;
``2021-03-14`` is day 18,700). Its declarations (bounds, cuts, impute) are written as ISO
dates in a schema file and held as day numbers; the data's values are parsed to day
numbers here (:func:`parse_dates`), and released values are written back as ISO dates
(:func:`day_texts`). Every mechanism sees an ordinary integer column.

Times of day are out of scope: a ``datetime64`` value is floored to its day (in its own
time zone), and a text holding a time is not a date.
"""

from __future__ import annotations

import datetime as _dt
import numbers
import re
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ppdp.exceptions import SchemaError

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = [
    "ISO_FORMAT",
    "check_date_format",
    "date_form",
    "day_number",
    "day_text",
    "day_texts",
    "parse_dates",
    "written_as",
]

#: The form of a date in a schema file and, unless a column declares ``date_format``, in
#: the data: ``YYYY-MM-DD``.
ISO_FORMAT = "%Y-%m-%d"

_EPOCH = _dt.date(1970, 1, 1)

#: strftime directives of a time of day, or of a whole date-and-time: not a date's.
_TIME_DIRECTIVES = re.compile(r"%[-#]?[HIMSfpzZcXr]")

#: A day that every directive of a date writes differently (day 3 is no month).
_PROBE = _dt.date(2001, 2, 3)


def check_date_format(col: str, value: Any) -> str:
    """``value`` if it is a strptime format that writes a whole date (day, month, year).

    Raises
    ------
    SchemaError
        Not a string, a format holding a time of day, or one that does not identify a day.
    """
    where = f"column {col!r}: date_format ({value!r})"
    if not isinstance(value, str) or not value.strip():
        raise SchemaError(f"{where} must be a strptime format such as '%d/%m/%Y'")
    if _TIME_DIRECTIVES.search(value):
        raise SchemaError(
            f"{where} holds a time of day; times are out of scope: declare a format of the "
            "date alone, such as '%d/%m/%Y'"
        )
    try:
        back = _dt.datetime.strptime(_PROBE.strftime(value), value).date()
    except ValueError:
        back = None
    if back != _PROBE:
        raise SchemaError(
            f"{where} must name the day, the month and the year (like '%d/%m/%Y', "
            "'%m/%d/%Y' or '%d.%m.%Y')"
        )
    try:
        iso = _dt.datetime.strptime(_PROBE.isoformat(), value).date()
    except ValueError:
        iso = _PROBE
    if iso != _PROBE:
        raise SchemaError(
            f"{where} reads the ISO date {_PROBE.isoformat()} as another day; ISO dates "
            "(YYYY-MM-DD, the form of released dates) are read alongside date_format: "
            "declare a format that cannot be taken for them, such as '%d/%m/%Y'"
        )
    return value


def date_form(date_format: str | None) -> str:
    """How a date column's values must be written, for messages: ``YYYY-MM-DD (ISO, e.g.
    2021-03-14)`` or ``'%d/%m/%Y' as declared by date_format (e.g. 14/03/2021)``."""
    example = _dt.date(2021, 3, 14)
    if date_format is None or date_format == ISO_FORMAT:
        return "YYYY-MM-DD (ISO, e.g. 2021-03-14)"
    return (
        f"{date_format!r} as declared by date_format (e.g. {example.strftime(date_format)}) "
        "or YYYY-MM-DD"
    )


def day_number(col: str, key: str, value: Any) -> float:
    """A declared date (an ISO text ``2015-01-01``, a :class:`datetime.date`, or already a
    day number) as days since 1970-01-01.

    Raises
    ------
    SchemaError
        Naming the column, the key and the value, with the form a date takes.
    """
    if isinstance(value, _dt.datetime):
        if value.time() != _dt.time(0):
            raise SchemaError(
                f"column {col!r}: {key} ({value.isoformat()!r}) holds a time of day; a date "
                "column declares whole days: write it YYYY-MM-DD"
            )
        value = value.date()
    if isinstance(value, _dt.date):
        return float((value - _EPOCH).days)
    if isinstance(value, str):
        try:
            return float((_dt.date.fromisoformat(value.strip()) - _EPOCH).days)
        except ValueError:
            pass
        raise SchemaError(
            f"column {col!r}: {key} ({value!r}) must be a date written YYYY-MM-DD "
            "(e.g. '2021-03-14')"
        )
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)  # a day number (the Python API); checked as a bound after
    raise SchemaError(
        f"column {col!r}: {key} ({value!r}) must be a date written YYYY-MM-DD (e.g. '2021-03-14')"
    )


def day_text(day: float) -> str:
    """Day number ``day`` as ``YYYY-MM-DD`` (rounded to the nearest whole day)."""
    return str(np.datetime64(round(day), "D"))


def day_texts(days: ArrayLike) -> NDArray[np.object_]:
    """Day numbers as ``YYYY-MM-DD`` texts (rounded to whole days), an object array."""
    d = np.rint(np.asarray(days, dtype=np.float64)).astype(np.int64)
    return d.astype("datetime64[D]").astype(str).astype(object)


#: An ISO date inside a released text: a whole value, or a bound of a group's interval.
_ISO_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")


def written_as(values: pd.Series, date_format: str) -> pd.Series:
    """Released ``values`` with every ISO date in them written in ``date_format``.

    A released date (``2021-03-14``) becomes ``14.03.2021`` under ``'%d.%m.%Y'``, and a
    group's interval (``[2015-01-01, 2016-01-01)``) has its two dates rewritten; a value
    that is no text (a missing one) is kept. The result reads back with the same schema,
    since :func:`parse_dates` reads texts in ``date_format``. Each distinct value is
    rewritten once (a date column holds few of them).
    """

    def one(m: re.Match[str]) -> str:
        return _dt.date(int(m[1]), int(m[2]), int(m[3])).strftime(date_format)

    texts = {v: _ISO_DATE.sub(one, v) for v in pd.unique(values) if isinstance(v, str)}
    return values.map(lambda v: texts.get(v, v) if isinstance(v, str) else v)


def _days_of_datetimes(values: pd.Series) -> NDArray[np.float64]:
    """Days since 1970-01-01 of a ``datetime64`` series (floored; NaT becomes NaN)."""
    if getattr(values.dtype, "tz", None) is not None:
        values = values.dt.tz_localize(None)  # the wall-clock day of its own time zone
    arr = values.to_numpy(dtype="datetime64[us]")
    days = arr.astype("datetime64[D]").astype(np.int64).astype(np.float64)
    days[np.isnat(arr)] = np.nan
    return days


def _day_of(value: Any) -> float:
    """Days since 1970-01-01 of one date or date-and-time object (its wall-clock day)."""
    if isinstance(value, np.datetime64):
        return np.nan if np.isnat(value) else float(value.astype("datetime64[D]").astype(np.int64))
    if isinstance(value, _dt.datetime):
        value = value.date()
    return float((value - _EPOCH).days)


def _days_of_objects(values: NDArray[np.object_]) -> NDArray[np.float64]:
    """Days of date, datetime, Timestamp or datetime64 objects: at once when pandas reads
    them as one kind, one by one otherwise (mixed time zones)."""
    try:
        return _days_of_datetimes(pd.to_datetime(pd.Series(values, dtype=object)))
    except (ValueError, TypeError, OverflowError):
        return np.fromiter((_day_of(v) for v in values), dtype=np.float64, count=len(values))


def parse_dates(
    s: pd.Series, date_format: str | None = None
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """A date column's values as day numbers, and where a present value is not a date.

    Accepted: texts written in ``date_format`` or in ISO ``YYYY-MM-DD`` (the form of
    released dates; spaces around them are ignored), :class:`datetime.date` and
    :class:`datetime.datetime` objects, pandas ``Timestamp`` and ``datetime64`` values
    (floored to their day). Missing values
    (``None``, ``NaN``, ``NaT``) give ``NaN`` and are not flagged; anything else (a
    number, a text in another form, a time of day in a text, an impossible date such as
    ``2021-02-30``) gives ``NaN`` and is flagged.

    Parameters
    ----------
    s : Series
        The raw column (missing-value tokens already masked).
    date_format : str, optional
        The strptime format of its texts (``'%d/%m/%Y'``), read alongside ISO
        ``YYYY-MM-DD``; None: ISO alone.

    Returns
    -------
    days : ndarray of float64
        Days since 1970-01-01, ``NaN`` where missing or not a date.
    not_dates : ndarray of bool
        Where a present value is not a date.
    """
    fmt = ISO_FORMAT if date_format is None else date_format
    n = len(s)
    present = s.notna().to_numpy(dtype=bool)
    if pd.api.types.is_datetime64_any_dtype(s.dtype):
        return _days_of_datetimes(s), np.zeros(n, dtype=bool)
    if pd.api.types.is_bool_dtype(s.dtype) or pd.api.types.is_numeric_dtype(s.dtype):
        return np.full(n, np.nan), present  # numbers are no dates; NaN is missing
    days = np.full(n, np.nan)
    values = s.to_numpy(dtype=object, na_value=None)
    is_text = np.fromiter((isinstance(v, str) for v in values), dtype=bool, count=n)
    if is_text.any():
        texts = pd.Series(values[is_text], dtype=object).str.strip()
        found = _days_of_datetimes(pd.to_datetime(texts, format=fmt, errors="coerce"))
        if fmt != ISO_FORMAT and np.isnan(found).any():  # ISO: the form of a release
            iso = pd.to_datetime(texts, format=ISO_FORMAT, errors="coerce")
            found = np.where(np.isnan(found), _days_of_datetimes(iso), found)
        days[is_text] = found
    others = np.flatnonzero(~is_text)
    is_date = np.zeros(n, dtype=bool)
    is_date[others] = [isinstance(v, _dt.date | np.datetime64) for v in values[others]]
    if is_date.any():
        days[is_date] = _days_of_objects(values[is_date])
    not_dates = present & np.isnan(days)
    return days, not_dates
