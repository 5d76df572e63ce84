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
    "accept --seed with --ledger (an experiment: the same seed on neighbouring tables cancels "
    "the noise exactly); the ledger records it")
FORCE: Flag = ("--force", {"action": "store_true"},
               "replace an existing output file (never one of the inputs)")
SEP: Flag = ("--sep", {"default": None, "metavar": "CHAR"},
    "column separator of a text table; default: detected from the header line among , ; tab | "
    "(said on stderr when not the extension's default)")
ENCODING: Flag = ("--encoding", {"default": "utf-8"},
                  "text encoding of a text table (e.g. latin-1)")
SEED: Flag = ("--seed", {"type": int, "default": None},
    "reproducible noise for experiments (NOT for real releases); refused with --ledger unless "
    "--allow-seeded")
IDEMPOTENCY_KEY: Flag = ("--idempotency-key", {"default": None, "metavar": "KEY"},
    "a key unique to this release request: a retried run with the same key is not charged "
    "again (its output was never written: the write is atomic). Use a fresh key for every new "
    "release")
SCHEDULER: Flag = ("--scheduler", {"default": None, "metavar": "ADDR"},
    "for a Parquet dataset (a folder, a glob, or a .parquet file): where Dask runs the work: "
    "'local' (a cluster on this machine, the default for a folder or a glob), an address such "
    "as tcp://HOST:8786, or 'threads' / 'processes' / 'sync'")
JSON: Flag = ("--json", {"action": "store_true"}, "print JSON instead of text")
CHECKPOINT: Flag = ("--checkpoint", {"metavar": "FILE", "default": None},
                    "a checkpoint kept elsewhere that the ledger must extend")
# fmt: on


def command(
    subparsers: Any, name: str, help: str, description: str, *flags: Flag, **defaults: Any
) -> argparse.ArgumentParser:
    """Add the sub-command ``name`` with its ``flags`` (and ``func=...`` as ``defaults``)."""
    formatter = argparse.ArgumentDefaultsHelpFormatter
    parser = subparsers.add_parser(
        name, help=help, description=description, formatter_class=formatter
    )
    add_flags(parser, *flags)
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


def add_registry_flags(parser: Any, registry: Any) -> None:
    """The method-specific flags of ``registry`` (:class:`ppdp.registry.Registry`), in a
    group of their own, each with its owners' help."""
    kind = registry.kind
    where = parser.add_argument_group(f"{kind}-specific flags (each names the {kind}s taking it)")
    for opt in registry.options():
        where.add_argument(opt.flag, help=registry.help(opt.flag), **opt.spec)


def registry_values(args: argparse.Namespace, registry: Any) -> dict[str, Any]:
    """Each method-specific flag of ``registry`` -> its parsed value (None: not given)."""
    return {opt.flag: getattr(args, opt.dest) for opt in registry.options()}


def add_seed_and_force_flags(parser: argparse.ArgumentParser) -> None:
    """``--allow-seeded`` and ``--force``, shared by the commands that write a release."""
    add_flags(parser, ALLOW_SEEDED, FORCE)


def add_table_flags(parser: argparse.ArgumentParser) -> None:
    """``--sep`` and ``--encoding``, for every command that reads a table."""
    add_flags(parser, SEP, ENCODING)


def pick(args: argparse.Namespace, names: str) -> dict[str, Any]:
    """The parsed values of ``names`` (space-separated), to pass on as keyword arguments."""
    return {name: getattr(args, name) for name in names.split()}


def table_args(args: argparse.Namespace) -> dict[str, Any]:
    """``sep`` and ``encoding`` of a command that reads a table, as keyword arguments."""
    return {"sep": table_separator(args.sep), "encoding": args.encoding}


def table_separator(value: str | None) -> str | None:
    """``--sep`` as given, with ``\\t`` and ``tab`` meaning a tab (shells make a tab awkward)."""
    return "\t" if value in ("\\t", "tab", "TAB") else value


def refuse_seed_with_ledger(seed: int | None, ledger: str | None, allow_seeded: bool) -> None:
    """``--seed`` with ``--ledger`` needs ``--allow-seeded``; checked before anything is read."""
    from ppdp.exceptions import ParameterError

    if seed is not None and ledger is not None and not allow_seeded:
        raise ParameterError(
            f"--seed ({seed}) with --ledger is refused: the same seed on neighbouring tables "
            "cancels the noise exactly; drop --seed for a real release, or add --allow-seeded "
            "for an experiment (the ledger records it)"
        )


def say(prefix: str) -> Callable[[str], None]:
    """A function writing ``PREFIX: message`` lines on stderr (``say("ppdp train")``)."""

    def line(message: str) -> None:
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


def print_guarantee(
    guarantee: Any, *, verbose: int, label: str = "guarantee", full_in: Any = None
) -> None:
    """Print a release's guarantee: its one-line summary, and the full statement with ``-v``.

    A release with no formal guarantee (kind ``none``) always gets its full statement: the
    reason is the message. ``full_in`` names the file that holds the full statement (a
    release's sidecar), said on a second line when the full text is not printed.
    """
    print(f"{label}: {guarantee.summary()}")
    if verbose or not guarantee.is_private:
        print(f"  in full: {guarantee}")
    elif full_in is not None:
        print(f"  in full in {full_in} (or add -v)")


def ledger_entries(indices: Sequence[int]) -> str:
    """``entry 3`` or ``entries 3, 4``: where a release was charged, for its closing line."""
    word = "entry" if len(indices) == 1 else "entries"
    return f"{word} {', '.join(map(str, indices))}"


def ledger_total(acct: Any) -> str:
    """``ledger total ε=2, δ=1e-09 (basic composition)``: everything charged so far, composed
    under the ledger's own composition (read before the accountant is closed)."""
    g = acct.guarantee
    delta = f", δ={g.delta:g}" if g.delta > 0 else ""
    return f"ledger total ε={g.epsilon:.6g}{delta} ({acct.composition} composition)"


def print_release_end(
    ledger: str | None, indices: Sequence[int], *, seeded: bool, state: Any = None
) -> None:
    """A release's closing lines: where it was charged (with the ledger's total from its
    ``state``), and a note when it was seeded."""
    if ledger is not None and indices:
        total = "" if state is None else f"; {ledger_total(state)}"
        print(f"charged in {ledger} ({ledger_entries(indices)}){total}")
    if seeded:
        print(
            "note: --seed was given, so the noise is reproducible and NOT fit for a real release"
            + (" (--allow-seeded is recorded in the ledger)" if ledger else "")
        )


def print_dry_run(*, state: Any = None, **plan: Any) -> None:
    """The ``--dry-run`` summary (:func:`ppdp.accounting.plan.dry_run_lines`) on stdout;
    ``state``: the ledger's state (what it has left), None without a ledger."""
    from ppdp.accounting.plan import dry_run_lines

    plan.setdefault("remaining", None if state is None else state.remaining)
    print("\n".join(dry_run_lines(**plan)))
