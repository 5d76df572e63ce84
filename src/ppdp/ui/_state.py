"""The UI's session: the table chosen, the run folder, the schema being reviewed, the plan.

One custodian, one session: the state lives in memory, and everything a release needs
(the schema, the command lines, the outputs) is written to the run folder as the flow goes,
so that the release can be repeated from a script (``commands.sh``).
"""

from __future__ import annotations

import datetime
import secrets
import shlex
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ppdp.exceptions import ParameterError

__all__ = ["TABLE_SUFFIXES", "Run", "Session", "check_table_path"]

#: The tables the UI opens (those ``ppdp publish`` reads into memory).
TABLE_SUFFIXES = (".csv", ".csv.gz", ".parquet")


def check_table_path(text: str) -> Path:
    """The table the user typed: an existing regular file with a table's suffix.

    Only the path typed is looked at (nothing is listed); a relative path is taken from
    the folder ``ppdp ui`` was started in. Raises :class:`~ppdp.exceptions.ParameterError`
    (a ``ValueError``) with one line.
    """
    text = text.strip()
    if not text:
        raise ParameterError("table: give the path of a CSV or Parquet file on this machine")
    if "\x00" in text:
        raise ParameterError("table: the path holds a NUL character")
    path = Path(text).expanduser()
    if not path.name.lower().endswith(TABLE_SUFFIXES):
        allowed = ", ".join(TABLE_SUFFIXES)
        raise ParameterError(f"table ({text!r}) must be a file ending in {allowed}")
    path = path.resolve()
    if not path.exists():
        raise ParameterError(f"table ({text!r}) does not exist")
    if not path.is_file():
        raise ParameterError(f"table ({text!r}) is not a regular file")
    return path


@dataclass
class Run:
    """One table's run: its folder and what the flow has done in it."""

    folder: Path
    data: Path
    label: str | None = None
    schema: dict[str, Any] | None = None
    public: set[str] = field(default_factory=set)
    draft_lines: list[str] = field(default_factory=list)
    #: The columns the draft left out, each with why (``DraftResult.dropped``): the schema
    #: screen names them in one line.
    dropped: dict[str, str] = field(default_factory=dict)
    #: Each drafted column's ``(lower, upper)`` as the draft wrote them: the schema screen
    #: rounds these (and only these) outward while they are unedited.
    drafted_bounds: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    commands: dict[str, str] = field(default_factory=dict)
    released: list[dict[str, str]] = field(default_factory=list)
    release: dict[str, Any] = field(default_factory=dict)
    plan: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    report: dict[str, Any] | None = None
    log: list[str] = field(default_factory=list)
    #: The releases of this run, in order: the file's ``name``, ``kind``, and the names of
    #: its ``note`` and ``report`` (None until made).
    outputs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def schema_path(self) -> Path:
        return self.folder / "schema.json"

    @property
    def draft_path(self) -> Path:
        return self.folder / "schema.draft.json"

    def pages(self) -> set[str]:
        """The names of the notes and reports written in this run (served as pages)."""
        return {o[k] for o in self.outputs for k in ("note", "report") if o.get(k)}

    def record(self, step: str, line: str) -> None:
        """Keep ``line`` as the command of ``step`` and rewrite ``commands.sh``.

        A plan checked after a release starts the next release: the commands of the one
        before (its dry run, release, note and report) stay in the script, in order."""
        if step == "dry-run" and "release" in self.commands:
            self.released.append({k: self.commands.pop(k) for k in _RELEASE if k in self.commands})
        self.commands[step] = line
        self.commands = {k: self.commands[k] for k in _ORDER if k in self.commands}
        lines = [
            "#!/bin/sh",
            "# The commands of this run of 'ppdp ui', in order: rerun them to repeat the release.",
            "# schema.json is the reviewed schema (the draft edited in the UI).",
            "set -e",
        ]
        blocks = [
            {k: v for k, v in self.commands.items() if k not in (*_RELEASE, "history")},
            *self.released,
            {k: v for k, v in self.commands.items() if k in (*_RELEASE, "history")},
        ]
        for key, text in ((k, v) for block in blocks for k, v in block.items()):
            lines.append(f"# {key}" if key != "draft" else "# draft (the UI then edited it):")
            lines.append(f"# {text}" if key == "draft" else text)
        path = self.folder / "commands.sh"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        path.chmod(0o700)

    def free_output(self, name: str) -> Path:
        """``name`` in the run folder, or ``stem-2.suffix``, ... when a release made it
        already: each release of a run has its own file (a release never overwrites)."""
        path = self.folder / name
        stem, dot, suffix = name.partition(".")
        n = 2
        while path.exists():
            path = self.folder / f"{stem}-{n}{dot}{suffix}"
            n += 1
        return path

    def say(self, line: str) -> None:
        """A custodian's progress or warning line (the CLI's stderr): kept for the log."""
        self.log.append(line)
        with (self.folder / "log.txt").open("a", encoding="utf-8") as f:
            f.write(line + "\n")


_ORDER = ("draft", "schema", "ledger", "dry-run", "release", "note", "report", "history")
#: The commands of one release (a run may hold several, one after the other).
_RELEASE = ("dry-run", "release", "note", "report")


@dataclass
class Session:
    """What the UI holds between requests."""

    workdir: Path
    run: Run | None = None
    ledger: Path | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def new_run(self, data: Path) -> Run:
        """A fresh run folder for ``data`` under the work folder."""
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        stem = data.name.split(".")[0] or "table"
        folder = self.workdir / f"{stamp}-{stem}-{secrets.token_hex(2)}"
        folder.mkdir(parents=True)
        self.run = Run(folder=folder, data=data)
        return self.run


def quote(path: Path | str) -> str:
    return shlex.quote(str(path))
