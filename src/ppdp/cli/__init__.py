"""The ``ppdp`` command: a thin layer over library functions.

Each sub-command lives in its own module exposing ``register(subparsers)``, which adds its
parser and sets ``func``: a callable taking the parsed namespace and returning an exit code.
A user-caused failure is one line on stderr and exit 2; exit statuses, ``-v`` and ``-q``
are described in docs/guide.md (sections 11 and 12).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from ppdp import _progress
from ppdp._version import __version__
from ppdp.cli._common import LEVEL_FLAGS, HelpFormatter
from ppdp.exceptions import LedgerIntegrityError, ParameterError, PPDPError

#: Sub-command modules, in the order they appear in ``ppdp --help``.
_COMMANDS = (
    "demo",
    "schema",
    "budget",
    "ledger",
    "audit",
    "publish",
    "report",
    "note",
    "reproduce",
)
_COMMAND_MODULES = tuple(
    f"ppdp.cli._{n}" for n in (*_COMMANDS, "correlated", "train", "federate", "local", "ui")
)

EXIT_OK = 0
EXIT_INTEGRITY = 1
EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what the shell reports for a process killed by it


class _Parser(argparse.ArgumentParser):
    """argparse prints usage on error; we print one line and exit 2 like every other user error.

    No abbreviated long flags (``--eps`` for ``--epsilon``): a typo must not run. Every
    sub-command's parser is this class too (``add_subparsers`` passes it on)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{"allow_abbrev": False, **kwargs})

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"ppdp: error: {message} (see '{self.prog} --help')\n")
        raise SystemExit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (exposed for documentation and tests)."""
    parser = _Parser(
        prog="ppdp",
        description="Privacy-preserving data publishing: releases with a stated guarantee, "
        "secure noise and a tamper-evident budget ledger.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"ppdp {__version__}")
    for (flag, options, text), default in zip(LEVEL_FLAGS, (0, False), strict=True):
        parser.add_argument(*flag.split(), default=default, help=text, **options)
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
    args, extra = parser.parse_known_args(argv)
    if extra:  # said by the sub-command's parser: its --help lists what it takes
        _deepest(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
    level = logging.WARNING - 10 * min(args.verbose, 2)
    handler = logging.StreamHandler()
    handler.setFormatter(_LogFormatter())
    # Libraries that set their own loggers' level (distributed logs at INFO) would otherwise
    # reach stderr through the root handler whatever -v says.
    handler.setLevel(level)
    dask_logs = _DaskLogs(show=args.verbose >= 2)
    handler.addFilter(dask_logs)
    logging.basicConfig(level=level, handlers=[handler])
    previous = _progress.get_progress()
    # Bars on stderr when it is a terminal; the library's own default (off) is restored after.
    _progress.set_progress(False if args.quiet else "auto")
    try:
        return _dispatch(args, _flag_names(_deepest(parser, args)))
    finally:
        _progress.set_progress(previous)
        handler.removeFilter(dask_logs)
        dask_logs.summarise()


#: Loggers of Dask and the libraries under it: their lines (worker restarts, tracebacks of
#: the cluster's own machinery) are not ppdp's to print.
_DASK_LOGGERS = frozenset({"distributed", "dask", "tornado", "bokeh", "asyncio"})


class _DaskLogs(logging.Filter):
    """Keep Dask's own log records off stderr (shown with ``-vv``); count its warnings.

    A failure that matters ends the command in ppdp's one line (a stalled cluster, lost
    workers); what Dask logged on the way is summed up in one line at the end, with no
    message text (a task's failure can quote its arguments).
    """

    def __init__(self, *, show: bool) -> None:
        super().__init__()
        self.show = show
        self.count = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if self.show or record.name.split(".")[0] not in _DASK_LOGGERS:
            return True
        if record.levelno >= logging.WARNING:
            self.count += 1
        return False

    def summarise(self) -> None:
        if self.count:
            _error(
                f"ppdp: note: Dask logged {self.count} warning(s) or error(s) of its own "
                "(worker restarts, lost connections); -vv shows them",
                {},
            )


def _with_decimal(args: argparse.Namespace) -> int:
    """Run the command with ``--decimal`` (and ``--dask-timeout``) in effect throughout."""
    decimal = getattr(args, "decimal", None)
    with contextlib.ExitStack() as stack:
        if decimal is not None:
            from ppdp.data.draft import decimal_mark

            stack.enter_context(decimal_mark(decimal))
        timeout = getattr(args, "dask_timeout", None)
        if timeout is not None:
            from ppdp.data.distributed import dask_deadline

            stack.enter_context(dask_deadline(None if timeout == 0 else timeout))
        return int(args.func(args) or EXIT_OK)


def _deepest(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Any:
    """The parser of the (sub-)sub-command that ``args`` ran (``ppdp budget init``)."""
    while True:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        chosen = getattr(args, subs[0].dest, None) if subs else None
        if chosen is None or chosen not in subs[0].choices:
            return parser
        parser = subs[0].choices[chosen]


class _LogFormatter(logging.Formatter):
    """Warnings read like every other CLI warning (``ppdp: warning: ...``); ``-v`` detail
    keeps the logger's name, which says where it came from."""

    _detail = logging.Formatter("%(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        if record.levelno < logging.WARNING:
            return self._detail.format(record)
        text = f"ppdp: {record.levelname.lower()}: {record.getMessage()}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


def _dispatch(args: argparse.Namespace, names: dict[str, str]) -> int:
    try:
        status = _with_decimal(args)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return status
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except LedgerIntegrityError as exc:
        if isinstance(exc, ParameterError):  # NotALedgerError: a wrong path, not a failure
            _error(f"ppdp: error: {exc}", names)
            return EXIT_USAGE
        _error(f"ppdp: ledger integrity failure: {exc}", names)
        return EXIT_INTEGRITY
    except (PPDPError, ValueError, TypeError) as exc:
        _error(f"ppdp: error: {exc}", names)
        return EXIT_USAGE
    except OSError as exc:  # a missing file, a folder for a file, a full disk, EIO, ...
        _error(f"ppdp: error: {_os_error(exc)}", names)
        return EXIT_USAGE
    except RecursionError:
        _error(
            "ppdp: error: an input is nested too deeply to read (a schema, a theta or a "
            "config file): flatten it",
            names,
        )
        return EXIT_USAGE
    except KeyboardInterrupt:
        _error("ppdp: interrupted", names)
        return 130


#: Python advice in library messages that no flag name says, and what fixes it on the
#: command line (parameter names are replaced by :func:`_flag_names`).
_CLI_ADVICE = (
    ("pass class_counts=[...]", "pass --class-counts N1,N2,..."),
    ("use method='tree' or 'chow-liu'", "use --method tree or chow-liu"),
    ("method='chow-liu'", "--method chow-liu"),
    (
        "convert the mechanism's guarantee, or use a ledger for that relation",
        "use a ledger for that relation, or pass --relation with the ledger's",
    ),
    ("(PrivacyBudget(epsilon, delta); --delta)", "(--delta)"),
    ("under composition 'pld'", "under --composition pld"),
    ("under composition 'rdp'", "under --composition rdp"),
    ("Query what remains with Accountant.remaining or `", "Query what remains with `"),
    (
        "Accountant.open(path, dataset_id=..., total=...)",
        "ppdp budget init LEDGER --dataset-id ID --epsilon E",
    ),
)


def _flag_names(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each Python parameter the command's flags set, and its long flag: the flag's own
    ``dest`` (``dataset_id``: ``--dataset-id``) and a registry option's parameter
    (``n_components``: ``--components``); ``random_state`` is ``--seed``."""
    from ppdp.registry import LEARNERS, PUBLISHERS

    names = {
        a.dest: next(o for o in a.option_strings if o.startswith("--"))
        for a in parser._actions
        if any(o.startswith("--") for o in a.option_strings) and a.dest != "help"
    }
    for option in (*PUBLISHERS.options(), *LEARNERS.options()):
        if option.dest in names:
            names.setdefault(option.param, option.flag)
    if "seed" in names:  # the releases' random_state
        names.setdefault("random_state", names["seed"])
    return names


def _cli_words(text: str, names: dict[str, str]) -> str:
    """The library's Python words in the CLI's: ``pass allow_seeded=True`` becomes ``add
    --allow-seeded``, ``dataset_id ('')`` ``--dataset-id ('')`` and ``class_counts (None)``
    ``--class-counts (not given)``. A name with an underscore becomes its flag wherever it
    stands; an English word (``epsilon``) only as the subject the message opens with."""
    for python, cli in _CLI_ADVICE:
        text = text.replace(python, cli)
    if not names:
        return text
    subject = text.find("error: ") + len("error: ")
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    pattern = rf"(?<![\w.'\"-])(pass )?({alternatives})(?![\w-])(=True| \(None\)| \()?"

    def flag(match: re.Match[str]) -> str:
        switch, name, after = match.groups()
        if "_" not in name and not (match.start() == subject and after):
            return match.group(0)  # an English word in a sentence, not a parameter
        if switch and after == "=True":
            return f"add {names[name]}"
        tail = {None: "", "=True": "=True", " (None)": " (not given)", " (": " ("}[after]
        return f"{switch or ''}{names[name]}{tail}"

    return re.sub(pattern, flag, text)


def _error(line: str, names: dict[str, str]) -> None:
    """Write one line on stderr (a message with several lines is joined into one), in the
    command's flag ``names`` (:func:`_cli_words`)."""
    text = _cli_words(" ".join(line.split("\n")), names)
    try:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):  # stderr closed too: nothing left to tell
        pass


def _os_error(exc: OSError) -> str:
    """``path: reason`` for an OSError (its own text when it has no file name)."""
    if exc.filename is None or not exc.strerror:
        return str(exc) or type(exc).__name__
    where = repr(os.fsdecode(exc.filename))
    if exc.filename2 is not None:
        where += f" -> {os.fsdecode(exc.filename2)!r}"
    return f"{where}: {exc.strerror}"


def _silence_stdout() -> None:
    """After EPIPE on stdout: point it at /dev/null so the exit flush raises nothing."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # pragma: no cover - stdout without a file descriptor
        pass


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
