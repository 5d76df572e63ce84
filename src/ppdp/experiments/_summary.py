"""The pieces every experiment's ``summary.md`` is written from: its head, the seeding note,
the subsample note and markdown tables (the files themselves: :func:`_framework.write_run`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["NOT_COMPARABLE", "WARNED", "head", "seeded_note", "subsample_note", "table"]

#: How the seeded releases' warnings were handled, in the longer words of some summaries.
WARNED = "each warned `InsecureRandomnessWarning`, collected"
#: What :func:`subsample_note` adds in most summaries.
NOT_COMPARABLE = " (test configuration): do not compare numbers with the paper."


def head(title: str, experiment_id: str, setting: str) -> list[str]:
    """The title and the command that reruns the experiment, then ``setting`` (its words)."""
    return [
        f"# {title}",
        "",
        f"Command: `ppdp reproduce {experiment_id}` (config in `config.json`). {setting}",
    ]


def seeded_note(
    seed: int | str | None,
    count: int,
    what: str = "releases",
    how: str = "collected",
    unfit: str = "a real release",
) -> str:
    """The bold line that says the runs are seeded (from root ``seed``, a number or words;
    None: not said): ``count`` seeded ``what`` (their warnings handled as ``how`` says), so
    reproducible and not fit for ``unfit``."""
    root = "" if seed is None else f"root seed {seed}; "
    return (
        f"**Runs are seeded** ({root}{count} seeded {what}, {how}): reproducible, and for that "
        f"reason not fit for {unfit}."
    )


def subsample_note(n_rows: int | None, rest: str = "") -> list[str]:
    """A paragraph saying the run used a subsample of ``n_rows`` rows (none when None)."""
    if n_rows is None:
        return []
    return ["", f"**Subsample of {n_rows} rows{rest}**"]


def table(header: Sequence[Any], rows: Iterable[Sequence[Any]], align: str) -> list[str]:
    """A markdown table: the header, the separator (``align``: ``l`` or ``r`` per column)
    and one line per row (cells already formatted)."""

    def line(cells: Sequence[Any]) -> str:
        return "|" + "".join(f" {c} |" if str(c) else " |" for c in cells)

    sep = "|" + "".join("---:|" if a == "r" else "---|" for a in align)
    return [line(header), sep, *(line(r) for r in rows)]
