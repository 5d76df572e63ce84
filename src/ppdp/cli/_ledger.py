"""``ppdp ledger verify | anchor LEDGER``: thin layers over :mod:`ppdp.ledger.views` and
:func:`ppdp.accounting.files.anchor_ledger`."""

from __future__ import annotations

import argparse
import json
import sys

from ppdp.cli import _common as c

_VERIFY = (
    "Verify every entry (hash chain, canonical form, signature by a pinned signer) and the "
    "checkpoints. Exit 0 if intact, 1 with the first bad index if not."
)
_ANCHOR = (
    "Verify the ledger, print a signed one-line digest of its head and record it in the anchor "
    "registry; keep the line where the ledger's writers cannot change it (docs/guide.md)."
)
_ANCHOR_HELP = "an anchor line from 'ppdp ledger anchor' (or its file) that the ledger must extend"
# fmt: off
_VERIFY_FLAGS: tuple[c.Flag, ...] = (
    ("ledger", {"metavar": "LEDGER"}, "the ledger file"), c.CHECKPOINT,
    ("--trusted-key", {"metavar": "ID=FILE", "action": "append", "default": None},
     "pin a signer's public key (PEM or base64), once per signer the genesis entry pins"),
    ("--anchor", {"metavar": "ANCHOR", "default": None}, _ANCHOR_HELP), c.JSON,
)
_ANCHOR_FLAGS: tuple[c.Flag, ...] = (
    ("ledger", {"metavar": "LEDGER"}, "the ledger file"),
    ("--key", {"metavar": "FILE", "default": None},
     "the signing key (PEM) of a signer the ledger pins (default: LEDGER.key)"),
    c.CHECKPOINT, ("--anchor", {"metavar": "ANCHOR", "default": None}, _ANCHOR_HELP),
    ("--no-record", {"action": "store_true"}, "do not record the anchor in the registry"),
)
# fmt: on


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``ledger`` and its actions to the ``ppdp`` parser."""
    short = "verify a tamper-evident ledger (budget or multi-party), or anchor it"
    actions = c.group(subparsers, "ledger", short, None, "ledger_action")
    short = "verify hashes, signatures and checkpoints"
    c.command(actions, "verify", short, _VERIFY, *_VERIFY_FLAGS, func=_verify)
    short = "print a short signed digest of the ledger's head, to keep elsewhere"
    c.command(actions, "anchor", short, _ANCHOR, *_ANCHOR_FLAGS, func=_anchor)


def _verify(args: argparse.Namespace) -> int:
    from ppdp.ledger.views import verify_ledger_file, verify_lines

    keys = c.pick(args, "checkpoint anchor")
    report = verify_ledger_file(args.ledger, trusted_keys=args.trusted_key, **keys)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(*verify_lines(report), sep="\n")
    return 0


def _anchor(args: argparse.Namespace) -> int:
    from ppdp.accounting.files import anchor_ledger

    keys = c.pick(args, "key checkpoint anchor")
    anchor, where = anchor_ledger(args.ledger, record=not args.no_record, **keys)
    print(anchor.to_text())
    sys.stderr.write(
        f"ppdp ledger: anchored dataset {anchor.dataset_id!r} at {anchor.length} entries "
        f"(head {anchor.head_hash.hex()[:16]}…), {where}; keep the line above where the "
        "ledger's writers cannot change it\n"
    )
    return 0
