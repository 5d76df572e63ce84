"""``ppdp publish METHOD``: a thin layer over :func:`ppdp.publish.files.publish_table_file`."""

from __future__ import annotations

import argparse
from typing import Any

from ppdp.cli import _common as c
from ppdp.registry import PUBLISHERS

METHODS = PUBLISHERS.names()

_DESCRIPTION = (
    "Release a differentially private version of a table declared by a schema (methods: "
    "docs/guide.md). The spend is checked against and recorded in --ledger before anything is "
    "released; invalid input writes nothing and spends nothing."
)
# fmt: off
_FLAGS: tuple[c.Flag, ...] = (
    c.INPUT,
    ("-o --output", {"required": True, "metavar": "OUT"},
     "the release (.csv, .parquet, or a folder); its guarantee goes to OUT.guarantee.json"),
    c.SCHEMA, c.EPSILON, c.LEDGER, *c.RELEASE, c.OUTPUT_SEP, c.OUTPUT_DECIMAL,
    c.ALLOW_LARGE_EPSILON, c.DRY_RUN,
    ("--note", {"action": "store_true"},
     "also write a note for recipients beside the release, OUT.note.md (ppdp note): what, how, "
     "the guarantee in words and the accuracy to expect, from public quantities only"),
)
# fmt: on


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``publish`` to the ``ppdp`` parser."""
    what = _summary()
    parser = c.command(subparsers, "publish", what, f"{_DESCRIPTION} 'ppdp publish METHOD --help' "
                       "lists a method's flags.")  # fmt: skip
    c.registry_commands(parser, PUBLISHERS, _DESCRIPTION, *_FLAGS, dest="method", func=_run)


def _summary() -> str:
    """``ppdp --help``'s line: every method, the general-purpose one first."""
    first = "synth (synthetic table, the general-purpose method)"
    rest = [m for m in METHODS if m != "synth"]
    return f"release a private table: {first}, {', '.join(rest)}"


def _note_path(args: argparse.Namespace) -> Any:
    """``OUT.note.md`` when ``--note`` is given, checked before anything is spent."""
    if not getattr(args, "note", False) or args.dry_run:
        return None
    from pathlib import Path

    from ppdp.evaluate.note import check_note_output

    out = Path(args.output)
    path = out.with_name(out.name + ".note.md")
    check_note_output(path, out, force=args.force)
    return path


def _run(args: argparse.Namespace) -> int:
    from ppdp.publish.files import publish_table_file

    note = _note_path(args)
    result = publish_table_file(
        args.method,
        args.input,
        options={o.flag: o.value(getattr(args, o.dest)) for o in PUBLISHERS.options()},
        random_state=args.seed,
        say=c.say("ppdp publish", quiet=args.quiet),
        **c.pick(args, "schema output epsilon ledger allow_seeded allow_large_epsilon force"),
        **c.pick(args, "idempotency_key dry_run scheduler output_sep output_decimal"),
        **c.table_args(args),
    )
    if result.dry_run:
        c.print_dry_run(what=f"publish {args.method}", per_value=False, state=result.ledger,
                        after=result.after, charges=result.charges,
                        schema=result.publisher.schema, report=result.report)  # fmt: skip
        return 0
    rel = result.release
    rows = result.rows_written if result.rows_written is not None else len(result.table)
    print(f"released {rows:,} rows to {result.path}")
    c.print_guarantee(rel.guarantee, verbose=args.verbose, full_in=result.sidecar)
    c.print_release_end(args.ledger, rel.ledger_indices, seeded=rel.seeded, state=result.ledger,
                        replayed=rel.replayed)  # fmt: skip
    if note is not None:
        from ppdp.evaluate.note import release_note

        release_note(result.path, schema=args.schema).write(note, force=args.force)
        print(f"wrote the release note {note} (public quantities only: share it with the release)")
    return 0
