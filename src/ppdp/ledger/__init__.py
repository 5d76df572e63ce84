"""An append-only, tamper-evident ledger: hash-chained, signed, checkpointed, in SQLite.

The ledger records every privacy spend of a dataset (:mod:`ppdp.accounting`) and the
messages of the multi-party publishing protocol. Its guarantees and their limits are in
``docs/proofs/ledger.md``; in short:

- **Entries** are canonical JSON (sorted keys, no whitespace, UTF-8, floats as tagged
  ``float.hex``), so a value has exactly one byte string
  (:func:`canonical_dumps` / :func:`canonical_loads`).
- **Chain**: ``hash_i = SHA-256(prev_hash_i ‖ body_i)``, ``prev_hash_0`` = 32 zero bytes.
  Changing, inserting, deleting or reordering an entry breaks the chain at that index.
- **Signatures**: each entry is signed with Ed25519 by a signer whose public key is pinned
  in the genesis entry (several signers for several parties); ``revoke`` entries stop a
  key, ``add-signer`` entries pin new ones.
- **Checkpoints**: after every append the writer signs (ledger id, length, head hash) into
  ``<ledger>.checkpoint``; a ledger shorter than a checkpoint, or disagreeing with it, was
  truncated, rolled back or forked.
- **Anchors**: :meth:`Ledger.anchor` (``ppdp ledger anchor``) signs a one-line digest
  (dataset id, ledger id, length, head hash) to keep elsewhere; ``anchor=`` checks that a
  ledger is the anchored one and extends it. :class:`AnchorRegistry` keeps the latest
  anchor of each dataset id in the user's configuration folder.
- **Durability**: SQLite in WAL mode with ``synchronous=FULL``; writers serialise with
  ``BEGIN IMMEDIATE``. A committed entry survives a crash; an uncommitted one vanishes whole.

:func:`verify` checks a file end to end and raises
:class:`~ppdp.exceptions.LedgerIntegrityError` with the index of the first bad entry.

Shared with other packages (the federated protocol signs its messages with the same keys
and encoding): :func:`check_signer_id`, :func:`verify_signature`,
:class:`CanonicalFormError`, :class:`ChainState` (a chain's running head), and the
argument types :data:`AnchorLike`, :data:`CheckpointLike`, :data:`PublicKeyLike`.
"""

from ppdp.exceptions import LedgerIOError
from ppdp.ledger._anchor import ANCHOR_DIR_ENV, Anchor, AnchorLike, AnchorRecord, AnchorRegistry
from ppdp.ledger._canonical import CanonicalFormError, canonical_dumps, canonical_loads, json_safe
from ppdp.ledger._chain import ChainState, Entry
from ppdp.ledger._checkpoint import Checkpoint
from ppdp.ledger._keys import (
    PublicKeyLike,
    Signer,
    check_signer_id,
    decode_public_key,
    encode_public_key,
    generate_key,
    key_fingerprint,
    load_private_key,
    load_public_key,
    save_private_key,
    save_public_key,
    verify_signature,
)
from ppdp.ledger._ledger import (
    CheckpointLike,
    Ledger,
    LedgerExistsError,
    LedgerTransaction,
    NotALedgerError,
    checkpoint_path_for,
    refuse_non_ledger,
)
from ppdp.ledger._verify import VerificationReport, verify, verify_entries

__all__ = [
    "ANCHOR_DIR_ENV",
    "Anchor",
    "AnchorLike",
    "AnchorRecord",
    "AnchorRegistry",
    "CanonicalFormError",
    "ChainState",
    "Checkpoint",
    "CheckpointLike",
    "Entry",
    "Ledger",
    "LedgerExistsError",
    "LedgerIOError",
    "LedgerTransaction",
    "NotALedgerError",
    "PublicKeyLike",
    "Signer",
    "VerificationReport",
    "canonical_dumps",
    "canonical_loads",
    "check_signer_id",
    "checkpoint_path_for",
    "decode_public_key",
    "encode_public_key",
    "generate_key",
    "json_safe",
    "key_fingerprint",
    "load_private_key",
    "load_public_key",
    "refuse_non_ledger",
    "save_private_key",
    "save_public_key",
    "verify",
    "verify_entries",
    "verify_signature",
]
