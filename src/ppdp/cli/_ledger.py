"""``ppdp ledger verify | anchor LEDGER``: check a ledger end to end (exit 1 when tampered);
print a signed anchor of its head to keep elsewhere."""

from __future__ import annotations

import argparse
import json

from ppdp.exceptions import ParameterError
from ppdp.ledger import AnchorRegistry, load_public_key, verify


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``ledger`` and its actions to the ``ppdp`` parser."""
    parser = subparsers.add_parser(
        "ledger",
        help="verify a tamper-evident ledger, or anchor it",
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
    check.add_argument(
        "--anchor",
        metavar="ANCHOR",
        default=None,
        help="an anchor line printed by 'ppdp ledger anchor' (or a file holding it) that the "
        "ledger must extend; the anchor on record for its dataset id is checked as well",
    )
    check.add_argument("--json", action="store_true", help="print JSON instead of text")
    check.set_defaults(func=_verify)
    anchor = actions.add_parser(
        "anchor",
        help="print a short signed digest of the ledger's head, to keep elsewhere",
        description="Verify the ledger, then print one line, 'ppdp-anchor-v1:DATASET:LEDGER_ID:"
        "LENGTH:HEAD_HASH:SIGNER:SIGNATURE', signed with the ledger's key, and record it as "
        "the dataset's latest anchor in the anchor registry ($PPDP_ANCHOR_DIR, default "
        "~/.config/ppdp/anchors). Keep the line somewhere the ledger's writers cannot change "
        "it; 'ppdp ledger verify --anchor LINE' then catches a ledger that was truncated, "
        "rolled back with its checkpoint, or replaced. Exit 1 if the ledger fails "
        "verification.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    anchor.add_argument("ledger", metavar="LEDGER", help="the ledger file")
    anchor.add_argument(
        "--key",
        metavar="FILE",
        default=None,
        help="the signing key (PEM) of a signer the ledger pins (default: LEDGER.key)",
    )
    anchor.add_argument(
        "--checkpoint",
        metavar="FILE",
        default=None,
        help="a checkpoint kept elsewhere that the ledger must extend",
    )
    anchor.add_argument(
        "--anchor",
        metavar="ANCHOR",
        default=None,
        help="an earlier anchor (line or file) that the ledger must extend",
    )
    anchor.add_argument(
        "--no-record", action="store_true", help="do not record the anchor in the registry"
    )
    anchor.set_defaults(func=_anchor)


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
        args.ledger,
        checkpoint=args.checkpoint,
        trusted_keys=_trusted(args.trusted_key),
        anchor=args.anchor,
        anchor_registry=AnchorRegistry.default(),
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
    if not any(
        source.startswith(("the given anchor", "anchor ")) for source, _ in report.checkpoints
    ):
        print("  no anchor kept elsewhere checked (ppdp ledger anchor prints one to keep)")
    return 0


def _anchor(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from ppdp.accounting import key_path_for
    from ppdp.ledger import Ledger, load_private_key

    path = Path(args.ledger)
    if not path.exists():
        raise FileNotFoundError(f"ledger file {path} does not exist")
    key_file = Path(args.key) if args.key else key_path_for(path)
    if not key_file.is_file():
        raise ParameterError(
            f"--key ({key_file}) does not exist; pass the signing key of a signer the ledger pins"
        )
    registry = AnchorRegistry.default()
    with Ledger.open(
        path,
        signer=load_private_key(key_file),
        checkpoint=args.checkpoint,
        anchor=args.anchor,
        anchor_registry=registry,
    ) as led:
        anchor = led.anchor()
    where = "not recorded (--no-record)"
    if not args.no_record:
        where = f"recorded in {registry.record(anchor, ledger_path=path)}"
    print(anchor.to_text())
    sys.stderr.write(
        f"ppdp ledger: anchored dataset {anchor.dataset_id!r} at {anchor.length} entries "
        f"(head {anchor.head_hash.hex()[:16]}…), {where}; keep the line above where the "
        "ledger's writers cannot change it\n"
    )
    return 0
