"""Column names a user meant: the hint of a "missing column" error.

A header exported by a spreadsheet often differs from the name a user types in a schema by
spaces around it (``' Age '``), by capitals (``'age'``) or by a typo. Such a mismatch is
refused like any missing column; :func:`near_names` says which name of the data was probably
meant, so the fix is one edit instead of a search through the header.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

__all__ = ["near_names"]

#: How alike two names must be (difflib's ratio) to be offered as a typo's fix.
_TYPO_CUTOFF = 0.8


def _why(wanted: str, found: str) -> str:
    if wanted.strip() == found.strip():
        return "spaces around the name"
    if wanted.casefold() == found.casefold():
        return "other capitals"
    if wanted.strip().casefold() == found.strip().casefold():
        return "other capitals and spaces around the name"
    return "a close spelling"


def near_names(wanted: Sequence[str], available: Iterable[str], *, where: str = "the data") -> str:
    """The names of ``available`` that the ``wanted`` (missing) names probably mean, in words.

    A name matches when it is equal after removing the spaces around it and ignoring
    capitals, or else when difflib finds it close (ratio at least 0.8). Returns ``""`` when
    no wanted name has a match, else a clause to append to an error, e.g.
    ``"; the data has ' Age ' for 'Age' (spaces around the name): use the name exactly as
    the data writes it"``.

    Parameters
    ----------
    wanted : sequence of str
        The names that were not found (in the order to report them).
    available : iterable of str
        The names there are (a header, a schema's columns).
    where : str, default "the data"
        What holds ``available``, as the clause names it ("the schema").
    """
    names = [a for a in available if isinstance(a, str)]
    normal: dict[str, str] = {}
    for name in names:
        normal.setdefault(name.strip().casefold(), name)
    pairs: list[str] = []
    for w in wanted:
        if not isinstance(w, str):
            continue
        found = normal.get(w.strip().casefold())
        if found is None:
            close = difflib.get_close_matches(w, names, n=1, cutoff=_TYPO_CUTOFF)
            found = close[0] if close else None
        if found is not None and found != w:
            pairs.append(f"{found!r} for {w!r} ({_why(w, found)})")
    if not pairs:
        return ""
    return f"; {where} has {', '.join(pairs[:5])}: use the name exactly as {where} writes it"
