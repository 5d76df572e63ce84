"""What the sub-commands share: flag tables, the flags several commands take, and how a
release's guarantee, its ledger entries and a seeded run are printed.

A command declares its flags as a table of :data:`Flag` rows (names, ``add_argument``
options, help), one row per flag, added in order by :func:`add_flags`.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

#: One flag: its names (``"-o --output"``, or a positional's name), ``add_argument``'s
#: options, and its help.
Flag = tuple[str, dict[str, Any], str]

# fmt: off
ALLOW_SEEDED: Flag = ("--allow-seeded", {"action": "store_true"},
                      "accept --seed with --ledger, for an experiment (the ledger records it)")
FORCE: Flag = ("--force", {"action": "store_true"}, "replace an existing output (never an input)")
SEP: Flag = ("--sep", {"default": None, "metavar": "CHAR"},
             "column separator of a text table (default: detected from the header line)")
ENCODING: Flag = ("--encoding", {"default": "utf-8"}, "text encoding of a text table")
DECIMAL: Flag = ("--decimal", {"default": None, "choices": (",", "."), "metavar": "MARK"},
                 "decimal mark of a text table's numbers, ',' or '.' (default: '.', and ',' "
                 "where every value of a column of a file not separated by ',' is like '12,5')")
OUTPUT_SEP: Flag = ("--output-sep", {"default": ",", "metavar": "CHAR"},
                    "column separator of a CSV output (';' for a spreadsheet in a European "
                    "locale, '\\t' or tab)")
OUTPUT_DECIMAL: Flag = ("--output-decimal", {"default": ".", "choices": (",", "."),
                        "metavar": "MARK"}, "decimal mark of a CSV output's numbers, '.' or ','")
SEED: Flag = ("--seed", {"type": int, "default": None},
              "reproducible noise for experiments (NOT for real releases)")
IDEMPOTENCY_KEY: Flag = ("--idempotency-key", {"default": None, "metavar": "KEY"},
                         "a key unique to this release: a retry after a run that died before "
                         "releasing is not charged again; a key already released, or held by "
                         "a run in progress, is refused")
SCHEDULER: Flag = ("--scheduler", {"default": None, "metavar": "ADDR"},
                   "where Dask reads a Parquet dataset: local, tcp://HOST:PORT, threads, ...")
DASK_TIMEOUT: Flag = ("--dask-timeout", {"type": float, "default": 120.0, "metavar": "SECONDS"},
                      "stop a Dask computation after this long with no worker working and "
                      "nothing changing on the cluster (workers dead): one line, never a hang")
JSON: Flag = ("--json", {"action": "store_true"}, "print JSON instead of text")
CHECKPOINT: Flag = ("--checkpoint", {"metavar": "FILE", "default": None},
                    "a checkpoint kept elsewhere that the ledger must extend")
INPUT: Flag = ("input", {"metavar": "IN"}, "the private table (CSV, Parquet file or dataset)")
SCHEMA: Flag = ("--schema", {"required": True, "metavar": "S"}, "the schema (.json, .yaml)")
EPSILON: Flag = ("--epsilon", {"type": float, "required": True}, "ε spent by this release")
LEDGER: Flag = ("--ledger", {"metavar": "L", "default": None},
                "the dataset's budget ledger ('ppdp budget init' makes one)")
ALLOW_LARGE_EPSILON: Flag = ("--allow-large-epsilon", {"action": "store_true"},
                            "accept epsilon above 10 (a weak guarantee: tell whoever reads it)")
DRY_RUN: Flag = ("--dry-run", {"action": "store_true"},
                 "validate, print the planned charge and the clipped share, then stop (free)")
#: ``-v`` and ``-q``, taken before and after every sub-command.
LEVEL_FLAGS: tuple[Flag, ...] = (
    ("-v --verbose", {"action": "count"}, "print every guarantee in full, and more log output"),
    ("-q --quiet", {"action": "store_true"}, "no progress bars or progress lines on stderr"),
)
#: The flags of every release that reads a table: seeding, retries, text tables, Dask.
RELEASE: tuple[Flag, ...] = (
    SEED, ALLOW_SEEDED, FORCE, IDEMPOTENCY_KEY, SEP, ENCODING, DECIMAL, SCHEDULER, DASK_TIMEOUT
)
# fmt: on


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's ``(default: X)`` only where it says something: not for None, False or an
    empty list, and not when the help already states its default."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if "default" in text or action.default in (None, False, [], argparse.SUPPRESS):
            return text
        return super()._get_help_string(action)


def command(
    subparsers: Any, name: str, help: str, description: str | None, *flags: Flag, **defaults: Any
) -> argparse.ArgumentParser:
    """Add the sub-command ``name`` with its ``flags`` (and ``func=...`` as ``defaults``);
    ``description`` None repeats ``help``.

    ``-v`` and ``-q`` have no default there: one given before the sub-command stands when
    none follows it."""
    formatter = HelpFormatter
    parser = subparsers.add_parser(
        name, help=help, description=description or help, formatter_class=formatter
    )
    add_flags(parser, *flags)
    for names, options, text in LEVEL_FLAGS:
        parser.add_argument(*names.split(), default=argparse.SUPPRESS, help=text, **options)
    parser.set_defaults(**defaults)
    return parser  # type: ignore[no-any-return]


def group(subparsers: Any, name: str, help: str, description: str, dest: str) -> Any:
    """Add the command ``name`` whose ``ACTION`` (stored as ``dest``) is required."""
    sub = command(subparsers, name, help, description).add_subparsers(dest=dest, metavar="ACTION")
    sub.required = True
    return sub


def add_flags(parser: Any, *flags: Flag) -> None:
    """Add each :data:`Flag` row to ``parser`` (or an argument group), in order."""
    for names, options, text in flags:
        parser.add_argument(*names.split(), help=text, **options)


def registry_commands(
    parent: argparse.ArgumentParser,
    registry: Any,
    description: str,
    *flags: Flag,
    dest: str,
    **defaults: Any,
) -> None:
    """One sub-command of ``parent`` per mechanism of ``registry``
    (:class:`ppdp.registry.Registry`), its name stored as ``dest``: the shared ``flags``, then
    the mechanism's own flags in a group of their own, so ``ppdp publish synth --help`` lists
    what synth takes. The other mechanisms' flags are accepted but hidden: one given is
    refused in the registry's words, which name the mechanisms that take it."""
    actions = parent.add_subparsers(dest=dest, metavar=registry.kind.upper(), required=True)
    for entry in registry.entries():
        summary = entry.summary
        what = f"{summary[:1].upper()}{summary[1:]}. {description}"
        parser = command(actions, entry.name, summary, what, *flags, **defaults)
        own = {o.flag: o for o in entry.options}
        group = parser.add_argument_group(f"{entry.name} flags") if own else parser
        for opt in registry.options():
            mine = own.get(opt.flag)
            where, text = (group, mine.help) if mine else (parser, argparse.SUPPRESS)
            where.add_argument(opt.flag, help=text, **(mine or opt).spec)


def pick(args: argparse.Namespace, names: str) -> dict[str, Any]:
    """The parsed values of ``names`` (space-separated), to pass on as keyword arguments."""
    return {name: getattr(args, name) for name in names.split()}


def table_args(args: argparse.Namespace) -> dict[str, Any]:
    """``sep`` and ``encoding`` of a command that reads a table, as keyword arguments.

    ``--decimal`` reaches the table reader through
    :func:`ppdp.data.draft.decimal_mark`, which :func:`ppdp.cli.main` sets around the
    whole command."""
    return {"sep": table_separator(args.sep), "encoding": args.encoding}


def table_separator(value: str | None) -> str | None:
    """``--sep`` as given, with ``\\t`` and ``tab`` meaning a tab (shells make a tab awkward)."""
    return "\t" if value in ("\\t", "tab", "TAB") else value


def say(prefix: str, *, quiet: bool = False) -> Callable[[str], None]:
    """A function writing ``PREFIX: message`` lines on stderr (``say("ppdp train")``);
    ``quiet`` (``-q``) keeps only the warnings (progress lines are dropped)."""

    def line(message: str) -> None:
        if quiet and not message.startswith("warning"):
            return
        sys.stderr.write(f"{prefix}: {message}\n")
        sys.stderr.flush()

    return line


@contextmanager
def seeded_quietly() -> Iterator[None]:
    """No InsecureRandomnessWarning: a seeded run is said in words (or is not a release)."""
    from ppdp.exceptions import InsecureRandomnessWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        yield


def print_guarantee(guarantee: Any, **how: Any) -> None:
    """Print :func:`ppdp.accounting.receipt.guarantee_lines` (``verbose``, ``label``,
    ``full_in``)."""
    from ppdp.accounting.receipt import guarantee_lines

    print(*guarantee_lines(guarantee, **how), sep="\n")


def print_release_end(ledger: Any, indices: Sequence[int], **how: Any) -> None:
    """Print :func:`ppdp.accounting.receipt.receipt_lines` (``seeded``, ``state``)."""
    from ppdp.accounting.receipt import receipt_lines

    for line in receipt_lines(ledger, indices, **how):
        print(line)


def print_dry_run(*, state: Any = None, **plan: Any) -> None:
    """The ``--dry-run`` summary (:func:`ppdp.accounting.plan.dry_run_lines`) on stdout;
    ``state``: the ledger's state (what it has left), None without a ledger."""
    from ppdp.accounting.plan import dry_run_lines

    plan.setdefault("remaining", None if state is None else state.remaining)
    print("\n".join(dry_run_lines(**plan)))
