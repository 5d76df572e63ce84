"""``ppdp ledger verify LEDGER``: check a ledger end to end (exit 1 when tampered)."""

from __future__ import annotations

import argparse
import json

from ppdp.exceptions import ParameterError
from ppdp.ledger import load_public_key, verify


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``ledger`` and its actions to the ``ppdp`` parser."""
    parser = subparsers.add_parser(
        "ledger",
        help="verify a tamper-evident ledger",
        description="Work with ppdp's signed, hash-chained ledgers (budget ledgers and "
        "multi-party publishing ledgers alike).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    actions = parser.add_subparsers(dest="ledger_action", metavar="ACTION")
    actions.required = True
    check = actions.add_parser(
        "verify",
        help="verify hashes, signatures and checkpoints",
        description="Verify every entry (index, hash chain, canonical form, Ed25519 "
        "signature by a pinned unrevoked signer) and the ledger's checkpoints. Exit 0 if "
        "it is intact, 1 with the first bad index if not, 2 on a usage error.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    check.add_argument("ledger", metavar="LEDGER", help="the ledger file")
    check.add_argument(
        "--checkpoint",
        metavar="FILE",
        default=None,
        help="a checkpoint kept elsewhere that the ledger must extend",
    )
    check.add_argument(
        "--trusted-key",
        metavar="ID=FILE",
        action="append",
        default=None,
        help="pin a signer's public key (PEM or base64); repeat for each signer; "
        "the genesis entry must pin exactly these",
    )
    check.add_argument("--json", action="store_true", help="print JSON instead of text")
    check.set_defaults(func=_verify)


def _trusted(pairs: list[str] | None) -> dict[str, object] | None:
    if not pairs:
        return None
    keys: dict[str, object] = {}
    for pair in pairs:
        signer_id, sep, path = pair.partition("=")
        if not sep or not signer_id or not path:
            raise ParameterError(f"--trusted-key ({pair!r}) must look like ID=FILE")
        keys[signer_id] = load_public_key(path)
    return keys


def _verify(args: argparse.Namespace) -> int:
    report = verify(
        args.ledger, checkpoint=args.checkpoint, trusted_keys=_trusted(args.trusted_key)
    )
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
        return 0
    print(str(report))
    print(
        f"  dataset {report.dataset_id!r}, purpose {report.purpose!r}, ledger id {report.ledger_id}"
    )
    print(
        f"  signers: {', '.join(report.signers)}"
        + (f" (revoked: {', '.join(report.revoked)})" if report.revoked else "")
    )
    for source, length in report.checkpoints:
        print(f"  {source}: length {length}, extended by the ledger")
    if not report.checkpoints:
        print("  no checkpoint checked (keep one elsewhere to detect rollback)")
    return 0
