"""``ppdp ui``: a thin layer over :func:`ppdp.ui.serve`."""

from __future__ import annotations

import argparse
from pathlib import Path

from ppdp.cli import _common as c

_DESCRIPTION = (
    "Start a local web app that walks from a table on this machine to a release: the drafted "
    "schema as a form, what to release, the budget and its dry run, the release through the "
    "dataset's ledger, the quality report and the ledger's history (docs/ui.md). It listens "
    "on a loopback address and opens the browser on a link with a one-time token; every "
    "screen shows the equivalent ppdp command, written with the schema and the outputs to a "
    "run folder. Needs the server extra: pip install 'ppdp[server]'."
)
# fmt: off
_FLAGS: tuple[c.Flag, ...] = (
    ("--port", {"type": int, "default": 0}, "port to listen on (0: a free one)"),
    ("--host", {"default": "127.0.0.1"},
     "address to listen on; anything but a loopback address needs --allow-remote"),
    ("--allow-remote", {"action": "store_true"},
     "accept a --host other machines can reach (whoever holds the link can release)"),
    ("--no-browser", {"action": "store_true"}, "print the link and open nothing"),
    ("--workdir", {"type": Path, "default": Path("ppdp-ui-runs"), "metavar": "DIR"},
     "where run folders (schema, commands, outputs) are made"),
)
# fmt: on


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``ui`` to the ``ppdp`` parser."""
    what = "a local web app: from a table to a released, reported, ledgered release"
    c.command(subparsers, "ui", what, _DESCRIPTION, *_FLAGS, func=_run)


def _run(args: argparse.Namespace) -> int:
    from ppdp.exceptions import OptionalDependencyError

    try:
        from ppdp.ui import serve
    except ImportError as exc:
        raise OptionalDependencyError(
            f"ppdp ui needs the server extra ({exc.name} is missing): pip install 'ppdp[server]'"
        ) from None

    def say(line: str) -> None:
        print(line, flush=True)  # the link, before the server blocks

    serve(workdir=args.workdir, host=args.host, port=args.port, allow_remote=args.allow_remote,
          open_browser=not args.no_browser, say=say)  # fmt: skip
    return 0
