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

__all__ = ["TABLE_SUFFIXES", "Run", "Session", "check_table_path"]

#: The tables the UI opens (those ``ppdp publish`` reads into memory).
TABLE_SUFFIXES = (".csv", ".csv.gz", ".parquet")


def check_table_path(text: str) -> Path:
    """The table the user typed: an existing regular file with a table's suffix.

    Only the path typed is looked at (nothing is listed); a relative path is taken from
    the folder ``ppdp ui`` was started in. Raises ``ValueError`` with one line.
    """
    text = text.strip()
    if not text:
        raise ValueError("table: give the path of a CSV or Parquet file on this machine")
    if "\x00" in text:
        raise ValueError("table: the path holds a NUL character")
    path = Path(text).expanduser()
    if not path.name.lower().endswith(TABLE_SUFFIXES):
        allowed = ", ".join(TABLE_SUFFIXES)
        raise ValueError(f"table ({text!r}) must be a file ending in {allowed}")
    path = path.resolve()
    if not path.exists():
        raise ValueError(f"table ({text!r}) does not exist")
    if not path.is_file():
        raise ValueError(f"table ({text!r}) is not a regular file")
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
    commands: dict[str, str] = field(default_factory=dict)
    release: dict[str, Any] = field(default_factory=dict)
    plan: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    report: dict[str, Any] | None = None
    log: list[str] = field(default_factory=list)

    @property
    def schema_path(self) -> Path:
        return self.folder / "schema.json"

    @property
    def draft_path(self) -> Path:
        return self.folder / "schema.draft.json"

    def record(self, step: str, line: str) -> None:
        """Keep ``line`` as the command of ``step`` and rewrite ``commands.sh``."""
        self.commands[step] = line
        self.commands = {k: self.commands[k] for k in _ORDER if k in self.commands}
        lines = [
            "#!/bin/sh",
            "# The commands of this run of 'ppdp ui', in order: rerun them to repeat the release.",
            "# schema.json is the reviewed schema (the draft edited in the UI).",
            "set -e",
        ]
        for key, text in self.commands.items():
            lines.append(f"# {key}" if key != "draft" else "# draft (the UI then edited it):")
            lines.append(f"# {text}" if key == "draft" else text)
        path = self.folder / "commands.sh"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        path.chmod(0o700)

    def say(self, line: str) -> None:
        """A custodian's progress or warning line (the CLI's stderr): kept for the log."""
        self.log.append(line)
        with (self.folder / "log.txt").open("a", encoding="utf-8") as f:
            f.write(line + "\n")


_ORDER = ("draft", "schema", "ledger", "dry-run", "release", "note", "report", "history")


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
