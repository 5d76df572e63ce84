"""``ppdp note``: a release note for recipients, over :func:`ppdp.evaluate.release_note`."""

from __future__ import annotations

import argparse

from ppdp.cli import _common as c

_DESCRIPTION = (
    "Write a note for the recipients of a release: what was released, the method, ε, δ, the "
    "neighbouring relation and the unit protected in plain words, and the accuracy to expect "
    "from the noise law and public quantities. Reads only the release's guarantee file and "
    "the released table (no private data): the note may be shared with the release. "
    "OUT ends in .md or .html."
)
# fmt: off
_FLAGS: tuple[c.Flag, ...] = (
    ("release", {"metavar": "RELEASE"},
     "a released table or folder, with its RELEASE.guarantee.json beside it"),
    ("-o --output", {"required": True, "metavar": "NOTE.md|NOTE.html"}, "the note"),
    ("--schema", {"metavar": "S", "default": None},
     "the public schema the release was made with (lists its columns)"),
    c.FORCE,
)
# fmt: on


def register(subparsers: argparse._SubParsersAction) -> None:
    what = "a release note for recipients (public quantities only)"
    c.command(subparsers, "note", what, _DESCRIPTION, *_FLAGS, func=_run)


def _run(args: argparse.Namespace) -> int:
    from ppdp.evaluate.note import check_note_output, release_note

    check_note_output(args.output, args.release, force=args.force)
    note = release_note(args.release, schema=args.schema)
    path = note.write(args.output, force=args.force)
    print(f"wrote {path}: it reads no private data and may be shared with the release")
    return 0
