"""The respondent side's report marker: a second report of the same column is refused.

The report journal (:mod:`ppdp.local.collector._journal`) makes a *rerun* of one upload
resend exactly what was not acknowledged. It cannot see a *new* report of the same
column: other values, a deleted journal, another ``--journal`` path. Each new report
draws fresh noise, and the collector, which keeps only totals, cannot tell it from
another respondent's; the local guarantee of the respondent's answers composes (two
reports of ε each are a 2ε report). So each client keeps a small state file that records,
per survey and column, how many reports it has made and from which journals:

.. code-block:: json

    {"format": "ppdp-local-report-state-1", "client": "app-1",
     "reports": [{"survey": "income-2026", "column": "income", "reports": 1,
                  "values": 400, "journals": ["/home/me/values.csv.report-journal"],
                  "first": "2026-11-25T20:30:00Z", "last": "2026-11-25T20:30:00Z"}]}

It holds no value, no perturbed report and no hash of either: only the survey, the
column's name, counts, journal paths and times (UTC). ``ppdp local report`` keeps it beside
the client's private key (``<key>.reports.json``, mode 0600; ``--state PATH`` for
another place); the library keeps none unless ``report(state=PATH)`` is given.

A run that **resumes** a journal (or finds it finished) is the same report, never a
second one: it is never refused, and only lists the journal if it was missing (a journal
made before the marker existed). A run that would make a **new** journal while the column
has a recorded report is refused before anything is perturbed or sent, unless ``again``
(``--again``) is given; the new report is recorded once its journal exists, before its
first batch is sent.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ppdp.exceptions import ParameterError

__all__ = ["FORMAT", "ReportState", "default_state_path"]

FORMAT = "ppdp-local-report-state-1"
UNNAMED = "(values)"


def default_state_path(key: str | os.PathLike[str]) -> Path:
    """Where ``ppdp local report`` keeps a client's marker: beside its private key."""
    k = Path(key)
    return k.with_name(f"{k.name}.reports.json")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ReportState:
    """One client's marker file: the surveys and columns it has reported, and how often."""

    def __init__(self, path: str | os.PathLike[str], client: str) -> None:
        self.path = Path(path)
        self.client = client
        self._data = self._read()

    def _read(self) -> dict[str, Any]:
        p = self.path
        if p.is_dir():
            raise ParameterError(f"state ({p}) is a folder; give the client's state file")
        if not p.exists():
            return {"format": FORMAT, "client": self.client, "reports": []}
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            data = None
        if (
            not isinstance(data, dict)
            or data.get("format") != FORMAT
            or not isinstance(data.get("reports"), list)
        ):
            raise ParameterError(
                f"state ({p}) is not a ppdp report state file ({FORMAT}); move it away only "
                "if this client has not reported (it records what was reported)"
            )
        if data.get("client") != self.client:
            raise ParameterError(
                f"state ({p}) belongs to client {data.get('client')!r}, not {self.client!r}; "
                "give this client's own state file (--state)"
            )
        return data

    def entry(self, survey: str, column: str | None) -> dict[str, Any] | None:
        """The record of ``survey``/``column``, or None if this client never reported it."""
        name = UNNAMED if column is None else column
        for item in self._data["reports"]:
            if item.get("survey") == survey and item.get("column") == name:
                return item  # type: ignore[no-any-return]
        return None

    def check_new(self, survey: str, column: str | None, *, again: bool) -> int:
        """The number of earlier reports of ``survey``/``column``; refuse a new one without
        ``again`` (one line: the column, the survey, the count and the flag)."""
        item = self.entry(survey, column)
        done = 0 if item is None else int(item.get("reports", 0))
        if done and not again:
            name = UNNAMED if column is None else column
            raise ParameterError(
                f"again (False): client {self.client!r} already reported column {name!r} of "
                f"survey {survey!r} ({done} report(s) since {item['first']}, recorded in "
                f"{self.path}); a new report spends the local guarantee again (the "
                "guarantees compose): pass --again (again=True) to report anyway, or rerun "
                "with the first report's journal to resume it"
            )
        return done

    def record(self, survey: str, column: str | None, *, journal: Path | None, values: int) -> int:
        """Count a report of ``survey``/``column`` made with ``journal`` (a journal already
        listed is the same report: nothing is counted) and save; the column's report count."""
        name = UNNAMED if column is None else column
        item = self.entry(survey, column)
        where = None if journal is None else str(Path(journal).resolve())
        now = _now()
        if item is None:
            item = {"survey": survey, "column": name, "reports": 0, "values": 0,
                    "journals": [], "first": now, "last": now}  # fmt: skip
            self._data["reports"].append(item)
        elif where is not None and where in item["journals"]:
            return int(item["reports"])
        item["reports"] = int(item["reports"]) + 1
        item["values"] = int(values)
        item["last"] = now
        if where is not None:
            item["journals"].append(where)
        self._save()
        return int(item["reports"])

    def _save(self) -> None:
        """Write the file whole (a temporary file, synced, renamed into place), mode 0600."""
        p = self.path
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(f".{p.name}.{uuid.uuid4().hex}.part")
        text = json.dumps(self._data, indent=1, ensure_ascii=False) + "\n"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, p)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        with contextlib.suppress(OSError):
            fd = os.open(p.parent, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
