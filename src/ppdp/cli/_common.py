"""What the commands that write a release share: ``--allow-seeded``, ``--force``, and how a
release's guarantee is printed (its one-line summary; in full with ``-v``)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any


def add_seed_and_force_flags(parser: argparse.ArgumentParser) -> None:
    """``--allow-seeded`` and ``--force``, shared by the commands that write a release."""
    parser.add_argument(
        "--allow-seeded",
        action="store_true",
        help="accept --seed with --ledger (an experiment: the same seed on neighbouring tables "
        "cancels the noise exactly); the ledger records it",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace an existing output file (never one of the inputs)",
    )


def add_table_flags(parser: argparse.ArgumentParser) -> None:
    """``--sep`` and ``--encoding``, for every command that reads a table."""
    parser.add_argument(
        "--sep",
        default=None,
        metavar="CHAR",
        help="column separator of a text table; default: detected from the header line "
        "among , ; tab | (said on stderr when not the extension's default)",
    )
    parser.add_argument(
        "--encoding", default="utf-8", help="text encoding of a text table (e.g. latin-1)"
    )


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
