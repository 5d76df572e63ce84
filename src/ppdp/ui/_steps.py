"""The steps of the UI's flow: each is one ``ppdp`` command line and the library call behind it.

Every step is built from one mapping of parameters, from which both the command line
shown on the page (:meth:`Step.argv`) and the library call (:meth:`Step.run`) are made, so
that the two cannot drift apart: the UI has no logic of its own, and a release through it
equals the release of the command line it shows (``tests/ui/test_ui_same_as_cli.py``).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "METHODS",
    "Step",
    "budget_show_step",
    "draft_step",
    "init_ledger_step",
    "note_step",
    "release_step",
    "report_step",
    "schema_check_step",
    "schema_data_check_step",
]

#: What can be released from the UI: the ``ppdp`` command and its method or learner.
METHODS: dict[str, tuple[str, str]] = {
    "synth": ("publish", "synth"),
    "groupby": ("publish", "groupby"),
    "model": ("train", "logreg"),
}


@dataclass(frozen=True)
class Step:
    """One command of the flow.

    Attributes
    ----------
    words : tuple of str
        The command's words after ``ppdp`` (``("publish", "synth")``).
    positional : tuple of str
        Its positional arguments.
    flags : tuple of (str, object)
        ``(flag, value)`` in order; ``True`` is a switch, ``None`` and ``False`` are left out.
    call : callable
        The library function of the command, called by :meth:`run` with ``kwargs``.
    kwargs : dict
        The keyword arguments of ``call``.
    """

    words: tuple[str, ...]
    positional: tuple[str, ...]
    flags: tuple[tuple[str, Any], ...]
    call: Callable[..., Any]
    kwargs: dict[str, Any] = field(default_factory=dict)

    def argv(self) -> list[str]:
        """The command line's arguments after ``ppdp``."""
        out = [*self.words, *self.positional]
        for flag, value in self.flags:
            if value is None or value is False:
                continue
            out += [flag] if value is True else [flag, str(value)]
        return out

    def line(self) -> str:
        """The command line, quoted for a POSIX shell."""
        return shlex.join(["ppdp", *self.argv()])

    def run(self) -> Any:
        """Call the library function behind the command."""
        return self.call(**self.kwargs)


def _comma(values: list[str]) -> str | None:
    return ",".join(values) if values else None


def draft_step(
    data: Path, output: Path, *, label: str | None, missing: list[str], exclude: list[str]
) -> Step:
    """``ppdp schema draft DATA -o OUT``: :func:`ppdp.data.schema_files.draft_schema_file`."""
    from ppdp.data.schema_files import draft_schema_file

    flags: list[tuple[str, Any]] = [("-o", output), ("--force", True), ("--label", label)]
    flags += [("--missing-value", m) for m in missing] + [("--exclude", x) for x in exclude]
    kwargs = {"output": output, "force": True, "label": label, "missing_values": missing,
              "exclude": exclude}  # fmt: skip
    return Step(("schema", "draft"), (str(data),), tuple(flags),
                lambda **kw: draft_schema_file(data, **kw), kwargs)  # fmt: skip


def schema_check_step(schema: Path) -> Step:
    """``ppdp schema check S`` (without ``--data``: nothing read from the data)."""
    from ppdp.data.schema import Schema
    from ppdp.data.schema_files import describe_schema

    def check(path: Path) -> list[str]:
        return describe_schema(Schema.from_file(path))

    return Step(("schema", "check"), (str(schema),), (), check, {"path": schema})


def schema_data_check_step(schema: Path, data: Path) -> Step:
    """``ppdp schema check S --data D``: :func:`ppdp.data.schema_files.check_table`, the
    custodian's own view of what a release would make of the data (values outside the
    declared categories, clipping, refusals); its result is a ``TableCheck``."""
    from ppdp.data.schema import Schema
    from ppdp.data.schema_files import check_table

    def check(path: Path, data: Path) -> Any:
        return check_table(Schema.from_file(path), data)

    return Step(("schema", "check"), (str(schema),), (("--data", data),), check,
                {"path": schema, "data": data})  # fmt: skip


def init_ledger_step(
    ledger: Path, *, dataset_id: str, epsilon: Any, delta: Any, relation: str
) -> Step:
    """``ppdp budget init``: :func:`ppdp.accounting.files.init_budget_ledger`."""
    from ppdp.accounting.files import init_budget_ledger

    flags = (("--dataset-id", dataset_id), ("--epsilon", epsilon), ("--delta", delta),
             ("--relation", relation))  # fmt: skip
    kwargs = {"dataset_id": dataset_id, "epsilon": epsilon, "delta": delta, "relation": relation}
    return Step(("budget", "init"), (str(ledger),), flags,
                lambda **kw: init_budget_ledger(ledger, **kw), kwargs)  # fmt: skip


def release_step(
    kind: str,
    data: Path,
    *,
    schema: Path,
    output: Path,
    epsilon: Any,
    ledger: Path,
    options: dict[str, Any],
    seed: int | None,
    dry_run: bool,
    say: Callable[[str], None],
) -> Step:
    """``ppdp publish synth|groupby`` (:func:`ppdp.publish.files.publish_table_file`) or
    ``ppdp train logreg`` (:func:`ppdp.learn.files.train_model_file`).

    ``options``: the method's own flags (``"--delta"``, ``"--by"``, ...) and their values
    as the command line takes them (None: not given)."""
    command, method = METHODS[kind]
    flags: list[tuple[str, Any]] = [("--schema", schema), ("--epsilon", epsilon),
                                    ("--ledger", ledger), ("-o", output)]  # fmt: skip
    flags += list(options.items())
    flags += [("--seed", seed), ("--allow-seeded", seed is not None), ("--dry-run", dry_run)]
    common = {"schema": schema, "output": output, "epsilon": epsilon, "ledger": ledger,
              "random_state": seed, "allow_seeded": seed is not None, "dry_run": dry_run,
              "say": say}  # fmt: skip
    if command == "publish":
        from ppdp.publish.files import publish_table_file

        kwargs = {**common, "options": options}
        call: Callable[..., Any] = lambda **kw: publish_table_file(method, data, **kw)  # noqa: E731
    else:
        from ppdp.learn.files import train_model_file
        from ppdp.publish.files import say_corrections
        from ppdp.registry import LEARNERS

        # as ``ppdp train``: the values clipped or filled are said to the custodian's log
        kwargs = {
            **common,
            "options": LEARNERS.parameters(method, options),
            "on_report": lambda schema, report: say_corrections(schema, report, say),
        }
        call = lambda **kw: train_model_file(method, data, **kw)  # noqa: E731
    return Step((command, method), (str(data),), tuple(flags), call, kwargs)


def report_step(
    release: Path, *, original: Path, schema: Path, output: Path, target: str | None
) -> Step:
    """``ppdp report``: :func:`ppdp.evaluate.files.report_file` (custodian only)."""
    from ppdp.evaluate.files import report_file

    flags = (("--original", original), ("--schema", schema), ("--target", target),
             ("-o", output), ("--force", True))  # fmt: skip
    kwargs = {"original": original, "schema": schema, "target": target, "output": output,
              "force": True}  # fmt: skip
    return Step(("report",), (str(release),), flags,
                lambda **kw: report_file(release, **kw), kwargs)  # fmt: skip


def note_step(release: Path, *, output: Path, schema: Path) -> Step:
    """``ppdp note RELEASE -o OUT --schema S --force``: :func:`ppdp.evaluate.note.release_note`,
    its output checked first as the CLI does (public quantities only: the note may be shared).

    ``--force``: the note describes the release beside it, so a rerun of the script, which
    makes a new release, replaces the old release's note (as it does the report)."""
    from ppdp.evaluate.note import check_note_output, release_note

    def write(output: Path, schema: Path, force: bool) -> Path:
        check_note_output(output, release, force=force)
        return release_note(release, schema=schema).write(output, force=force)

    flags = (("-o", output), ("--schema", schema), ("--force", True))
    kwargs = {"output": output, "schema": schema, "force": True}
    return Step(("note",), (str(release),), flags, write, kwargs)


def budget_show_step(ledger: Path) -> Step:
    """``ppdp budget show L -v``: :func:`ppdp.accounting.budget_report`; its result is a
    mapping of ``text``, as the CLI prints it (:func:`ppdp.accounting.files.
    format_budget_report`), ``rows``, the same history one row per release
    (:func:`ppdp.accounting.files.release_history`), and the ledger's ``total`` and
    ``remaining``."""
    from ppdp.accounting import budget_report
    from ppdp.accounting.files import format_budget_report, release_history

    def show(path: Path) -> dict[str, Any]:
        report = budget_report(path)
        return {"text": format_budget_report(report, verbose=True),
                "rows": release_history(report), "total": report.total,
                "remaining": report.remaining}  # fmt: skip

    return Step(("budget", "show"), (str(ledger),), (("-v", True),), show, {"path": ledger})
