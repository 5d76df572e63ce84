"""The ``ppdp`` command: a thin layer over library functions.

Each sub-command lives in its own module exposing ``register(subparsers)``; the module
adds its parser and sets ``func`` to a callable taking the parsed namespace and returning
an exit code. User errors (any :class:`~ppdp.exceptions.PPDPError`, ``ValueError``,
``TypeError``, ``FileNotFoundError``) print one line on stderr and exit with status 2,
without a traceback; integrity failures exit with status 1.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from ppdp._version import __version__
from ppdp.exceptions import LedgerIntegrityError, PPDPError

#: Sub-command modules, in the order they appear in ``ppdp --help``.
_COMMAND_MODULES = (
    "ppdp.cli._demo",
    "ppdp.cli._schema",
    "ppdp.cli._budget",
    "ppdp.cli._ledger",
    "ppdp.cli._audit",
    "ppdp.cli._publish",
    "ppdp.cli._reproduce",
    "ppdp.cli._correlated",
    "ppdp.cli._train",
    "ppdp.cli._federate",
    "ppdp.cli._local",
)

EXIT_OK = 0
EXIT_INTEGRITY = 1
EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """argparse prints usage on error; we print one line and exit 2 like every other user error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"ppdp: error: {message} (see '{self.prog} --help')\n")
        raise SystemExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (exposed for documentation and tests)."""
    parser = _Parser(
        prog="ppdp",
        description="Privacy-preserving data publishing: releases with a stated guarantee, "
        "secure noise and a tamper-evident budget ledger.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"ppdp {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:  # a module of a later issue, or a missing extra
            if exc.name == name:
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ppdp`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING - 10 * min(args.verbose, 2),
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.func(args) or EXIT_OK)
    except LedgerIntegrityError as exc:
        sys.stderr.write(f"ppdp: ledger integrity failure: {exc}\n")
        return EXIT_INTEGRITY
    except (PPDPError, ValueError, TypeError, FileNotFoundError, PermissionError) as exc:
        sys.stderr.write(f"ppdp: error: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("ppdp: interrupted\n")
        return 130


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
