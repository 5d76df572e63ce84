"""Ledger verification for a reader: what ``ppdp ledger verify`` does and prints.

:func:`verify_ledger_file` verifies a ledger against signer keys given as ``ID=FILE``
pairs, a checkpoint, an anchor and the default anchor registry; :func:`verify_lines` is
the text printed for its report.

Examples
--------
>>> from ppdp.ledger.views import verify_ledger_file, verify_lines
>>> print("\\n".join(verify_lines(verify_ledger_file("adult.ledger"))))  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ppdp.exceptions import ParameterError

__all__ = ["parse_trusted_keys", "verify_ledger_file", "verify_lines"]


def parse_trusted_keys(pairs: Sequence[str] | None) -> dict[str, Any] | None:
    """``["custodian=key.pem", ...]`` -> signer id -> public key (None when none given)."""
    from ppdp.ledger import load_public_key

    if not pairs:
        return None
    keys: dict[str, Any] = {}
    for pair in pairs:
        signer_id, sep, path = pair.partition("=")
        if not sep or not signer_id or not path:
            raise ParameterError(f"--trusted-key ({pair!r}) must look like ID=FILE")
        keys[signer_id] = load_public_key(path)
    return keys


def verify_ledger_file(
    path: str | os.PathLike[str],
    *,
    checkpoint: str | os.PathLike[str] | None = None,
    trusted_keys: Sequence[str] | None = None,
    anchor: str | None = None,
) -> Any:
    """Verify the ledger at ``path`` end to end; return its verification report.

    ``trusted_keys``: ``ID=FILE`` pairs pinning each signer's public key. The anchor on
    record for the ledger's dataset in the default anchor registry is checked as well.
    Raises :class:`~ppdp.exceptions.LedgerIntegrityError` on the first bad entry.
    """
    from ppdp.ledger import AnchorRegistry, verify

    return verify(
        path,
        checkpoint=checkpoint,
        trusted_keys=parse_trusted_keys(trusted_keys),
        anchor=anchor,
        anchor_registry=AnchorRegistry.default(),
    )


def verify_lines(report: Any) -> list[str]:
    """What ``ppdp ledger verify`` prints for a verification report, one line per item."""
    revoked = f" (revoked: {', '.join(report.revoked)})" if report.revoked else ""
    lines = [
        str(report),
        f"  dataset {report.dataset_id!r}, purpose {report.purpose!r}, "
        f"ledger id {report.ledger_id}",
        f"  signers: {', '.join(report.signers)}{revoked}",
    ]
    lines += [f"  {src}: length {n}, extended by the ledger" for src, n in report.checkpoints]
    if not any(src.startswith(("the given anchor", "anchor ")) for src, _ in report.checkpoints):
        lines.append("  no anchor kept elsewhere checked (ppdp ledger anchor prints one to keep)")
    return lines
