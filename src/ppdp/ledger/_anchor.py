"""Anchors: a short signed digest of a ledger's head, to keep somewhere the ledger is not.

A checkpoint beside the ledger catches a lost tail, but not someone who rolls back both
files to an old copy (or deletes both). An *anchor* is a one-line statement "dataset D's
ledger L had N entries ending in head H", signed by a signer pinned in that ledger
(Ed25519, its own domain prefix, so no entry or checkpoint signature is ever accepted as an
anchor signature). Printed by ``ppdp ledger anchor LEDGER``; the line is short enough to
paste into a ticket, an e-mail or a write-once store. A ledger that does not extend an
anchor (another ledger id, fewer entries, or another hash at entry ``N - 1``) fails
verification, and the first missing or differing index is named.

The :class:`AnchorRegistry` keeps the latest anchor of each dataset id in the user's
configuration folder (``$PPDP_ANCHOR_DIR``, default ``~/.config/ppdp/anchors``): a budget
ledger is checked against it whenever an accountant opens it, and a new ledger for a
dataset id with an anchor on record is refused. It lives on the same machine, so it only
raises the bar; only a copy kept elsewhere survives someone who can write both.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

from ppdp._io import atomic_path
from ppdp.exceptions import LedgerIntegrityError, ParameterError, ParameterTypeError
from ppdp.ledger._canonical import canonical_dumps
from ppdp.ledger._chain import ChainState, Entry, utc_now
from ppdp.ledger._keys import Signer, verify_signature

__all__ = ["ANCHOR_DIR_ENV", "Anchor", "AnchorLike", "AnchorRecord", "AnchorRegistry"]

#: Domain separation from entry and checkpoint signatures.
ANCHOR_DOMAIN = b"ppdp-ledger-anchor-v1\x00"
#: The first field of an anchor's text form.
PREFIX = "ppdp-anchor-v1"
#: Environment variable naming the anchor registry folder.
ANCHOR_DIR_ENV = "PPDP_ANCHOR_DIR"
_HEX32 = re.compile(r"[0-9a-f]{32}")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_FORM = f"{PREFIX}:DATASET:LEDGER_ID:LENGTH:HEAD_HASH:SIGNER:SIGNATURE"
_MAX_TEXT = 4096


def _short(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")


@dataclass(frozen=True)
class Anchor:
    """A signed "dataset ``dataset_id``'s ledger ``ledger_id`` had ``length`` entries ending in
    ``head_hash``".

    Make one with :meth:`ppdp.ledger.Ledger.anchor` (or ``ppdp ledger anchor LEDGER``); keep
    its text (``str(anchor)``) away from the ledger; pass it back as ``anchor=`` /
    ``--anchor`` to check that the ledger still extends it. Forging one needs the private
    key of a signer the ledger pins.

    Examples
    --------
    >>> from ppdp.ledger import Ledger, Signer
    >>> led = Ledger.in_memory(signer=Signer.generate("custodian"), dataset_id="adult")
    >>> a = led.anchor()
    >>> (a.dataset_id, a.length)
    ('adult', 1)
    >>> Anchor.from_text(str(a)) == a
    True
    """

    dataset_id: str
    ledger_id: str
    length: int
    head_hash: bytes
    signer: str
    signature: bytes

    def signed_bytes(self) -> bytes:
        """The exact bytes the signature covers (after the domain prefix)."""
        return canonical_dumps(
            {
                "type": "ppdp-ledger-anchor",
                "format": 1,
                "dataset_id": self.dataset_id,
                "ledger_id": self.ledger_id,
                "length": self.length,
                "head_hash": self.head_hash.hex(),
                "signer": self.signer,
            }
        )

    @classmethod
    def sign(cls, state: ChainState, signer: Signer) -> Anchor:
        """An anchor of the current head of ``state``, signed by ``signer``."""
        assert state.ledger_id is not None
        fields = (state.dataset_id, state.ledger_id, state.length, state.head, signer.id)
        unsigned = cls(*fields, b"")
        return cls(*fields, signer.sign(ANCHOR_DOMAIN + unsigned.signed_bytes()))

    def to_text(self) -> str:
        """One line: ``ppdp-anchor-v1:DATASET:LEDGER_ID:LENGTH:HEAD_HASH:SIGNER:SIGNATURE``.

        The dataset and signer ids are percent-encoded; the signature is unpadded base64url.
        """
        sig = base64.urlsafe_b64encode(self.signature).decode("ascii").rstrip("=")
        return ":".join(
            (
                PREFIX,
                quote(self.dataset_id, safe=""),
                self.ledger_id,
                str(self.length),
                self.head_hash.hex(),
                quote(self.signer, safe=""),
                sig,
            )
        )

    def __str__(self) -> str:
        return self.to_text()

    @classmethod
    def from_text(cls, text: str, *, source: str = "anchor") -> Anchor:
        """Parse the text form; a malformed one raises :class:`ParameterError`.

        Only the form is checked here; the signature is checked against a ledger's keys by
        :meth:`check` (an anchor is only meaningful for the ledger it names).
        """
        if not isinstance(text, str):
            raise ParameterTypeError(f"{source} ({text!r}) must be a str")
        line = text.strip()
        parts = line.split(":")
        bad = ParameterError(
            f"{source} ({_short(line)}) must be the line 'ppdp ledger anchor' prints: {_FORM}"
        )
        if len(line) > _MAX_TEXT or len(parts) != 7 or parts[0] != PREFIX:
            raise bad
        _, dataset, ledger_id, length, head, signer, sig = parts
        if not _HEX32.fullmatch(ledger_id) or not _HEX64.fullmatch(head):
            raise bad
        if not length.isdigit() or not length.isascii() or int(length) < 1:
            raise bad
        try:
            signature = base64.urlsafe_b64decode(sig + "=" * (-len(sig) % 4))
            dataset_id, signer_id = unquote(dataset, errors="strict"), unquote(signer)
        except (binascii.Error, ValueError, UnicodeDecodeError):
            raise bad from None
        if len(signature) != 64 or not dataset_id or not signer_id:
            raise bad
        return cls(dataset_id, ledger_id, int(length), bytes.fromhex(head), signer_id, signature)

    @classmethod
    def load(cls, value: AnchorLike, *, name: str = "anchor") -> tuple[Anchor, str]:
        """An anchor from an :class:`Anchor`, its text, or a file holding the text.

        Returns the anchor and a description of where it came from. In a file, blank lines
        and lines starting with ``#`` are skipped; the first other line is the anchor.
        """
        if isinstance(value, Anchor):
            return value, f"the given {name}"
        if isinstance(value, str) and value.strip().startswith(PREFIX + ":"):
            return cls.from_text(value, source=name), f"the given {name}"
        if not isinstance(value, str | os.PathLike):
            raise ParameterTypeError(
                f"{name} ({value!r}) must be an Anchor, its text or a file holding it, "
                f"not {type(value).__name__}"
            )
        path = Path(value)
        if not path.is_file():
            raise FileNotFoundError(
                f"{name} ({_short(os.fspath(value))}) is neither an anchor line "
                f"({PREFIX}:…) nor an existing file"
            )
        with path.open("r", encoding="utf-8", errors="replace") as fh:
            text = fh.read(_MAX_TEXT * 4)
        lines = [ln.strip() for ln in text.splitlines()]
        body = [ln for ln in lines if ln and not ln.startswith("#")]
        if not body:
            raise ParameterError(f"{name} file ({path}) holds no anchor line ({_FORM})")
        return cls.from_text(body[0], source=f"{name} file {path}"), f"anchor {path}"

    def check(self, state: ChainState, entries: list[Entry], *, source: str = "anchor") -> None:
        """Raise :class:`LedgerIntegrityError` unless the verified ledger extends this anchor.

        ``state`` and ``entries`` are the result of replaying the whole ledger. The index
        named is 0 for another ledger, the first missing entry for a shorter ledger, and
        ``length - 1`` for a ledger whose entry there has another hash.
        """
        if self.ledger_id != state.ledger_id or self.dataset_id != state.dataset_id:
            raise LedgerIntegrityError(
                f"entry 0: {source} is of ledger {self.ledger_id} (dataset "
                f"{_short(self.dataset_id)}, {self.length} entries), but this is ledger "
                f"{state.ledger_id} (dataset {_short(state.dataset_id)}): the anchored ledger "
                "was replaced (a ledger created afresh resets its budget)",
                index=0,
            )
        key = state.keys.get(self.signer)
        if key is None or not verify_signature(
            key, self.signature, ANCHOR_DOMAIN + self.signed_bytes()
        ):
            raise LedgerIntegrityError(
                f"{source}: its signature does not verify for signer {_short(self.signer)} of "
                "this ledger (a forged or altered anchor, or the entry pinning that signer "
                "is missing)",
                index=None,
            )
        if state.length < self.length:
            raise LedgerIntegrityError(
                f"entry {state.length}: ledger truncated: it has {state.length} entries but "
                f"{source} records {self.length} (entries {state.length}..{self.length - 1} "
                "are missing: deleted, or rolled back to an old copy with its old checkpoint)",
                index=state.length,
            )
        if entries[self.length - 1].hash != self.head_hash:
            raise LedgerIntegrityError(
                f"entry {self.length - 1}: hash differs from {source} (the ledger was rolled "
                "back to an old copy and rewritten, or forked)",
                index=self.length - 1,
            )


#: An anchor: an :class:`Anchor`, its one-line text, or the path of a file holding it.
AnchorLike = Anchor | str | os.PathLike[str]


@dataclass(frozen=True)
class AnchorRecord:
    """An anchor on record in an :class:`AnchorRegistry`: the anchor, its file, and the
    ledger path it was recorded for (informational)."""

    anchor: Anchor
    path: Path
    ledger_path: str | None


class AnchorRegistry:
    """The latest anchor of each dataset id, one small file per dataset, in one folder.

    Parameters
    ----------
    folder : path
        Where the records live. :meth:`default` reads ``$PPDP_ANCHOR_DIR``, else
        ``$XDG_CONFIG_HOME/ppdp/anchors``, else ``~/.config/ppdp/anchors``.

    Notes
    -----
    The registry is written only by :meth:`record` (``ppdp ledger anchor`` calls it); it
    never moves backwards (a record is replaced only by an anchor of the same ledger that
    is at least as long). It is on the same machine as the ledger: keep the anchor text
    elsewhere too.
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)

    def __repr__(self) -> str:
        return f"AnchorRegistry({os.fspath(self.folder)!r})"

    @classmethod
    def default(cls) -> AnchorRegistry:
        """The user's registry (see the class notes), resolved at each call."""
        env = os.environ.get(ANCHOR_DIR_ENV)
        if env:
            return cls(Path(env).expanduser())
        config = os.environ.get("XDG_CONFIG_HOME")
        base = Path(config).expanduser() if config else Path.home() / ".config"
        return cls(base / "ppdp" / "anchors")

    def path_for(self, dataset_id: str) -> Path:
        """The record file of ``dataset_id`` (named by a hash: any id is a safe name)."""
        digest = hashlib.sha256(dataset_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return self.folder / f"{digest}.anchor"

    def get(self, dataset_id: str) -> AnchorRecord | None:
        """The anchor on record for ``dataset_id``, or None.

        A record that cannot be parsed raises :class:`ParameterError` (naming the file):
        a damaged record is never silently ignored.
        """
        path = self.path_for(dataset_id)
        if not path.is_file():
            return None
        anchor, _ = Anchor.load(path, name="anchor on record")
        if anchor.dataset_id != dataset_id:  # a hash collision of the file name: not ours
            return None
        ledger_path = None
        with contextlib.suppress(OSError, UnicodeDecodeError):
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.startswith("# ledger: "):
                    ledger_path = line[len("# ledger: ") :]
        return AnchorRecord(anchor, path, ledger_path)

    def record(self, anchor: Anchor, *, ledger_path: str | os.PathLike[str] | None = None) -> Path:
        """Record ``anchor`` as its dataset's latest; refuse to move the record backwards.

        Raises
        ------
        LedgerIntegrityError
            The record holds an anchor of another ledger for the same dataset, or a longer
            anchor of the same ledger.
        """
        if not isinstance(anchor, Anchor):
            raise ParameterTypeError(f"anchor ({anchor!r}) must be an Anchor")
        existing = self.get(anchor.dataset_id)
        if existing is not None:
            old = existing.anchor
            if old.ledger_id != anchor.ledger_id:
                raise LedgerIntegrityError(
                    f"the anchor on record {existing.path} is of another ledger "
                    f"({old.ledger_id}) for dataset {_short(anchor.dataset_id)}; "
                    "refusing to replace it",
                    index=0,
                )
            if old.length > anchor.length:
                raise LedgerIntegrityError(
                    f"entry {anchor.length}: the anchor on record {existing.path} records "
                    f"{old.length} entries, this one only {anchor.length}; refusing to move "
                    "the record backwards",
                    index=anchor.length,
                )
        where = "" if ledger_path is None else os.fspath(Path(ledger_path).absolute())
        text = (
            f"# ppdp ledger anchor of dataset {anchor.dataset_id!r}, recorded {utc_now()}\n"
            + (f"# ledger: {where}\n" if where and "\n" not in where else "")
            + f"{anchor.to_text()}\n"
        )
        dest = self.path_for(anchor.dataset_id)
        with atomic_path(dest) as tmp:
            tmp.write_text(text, encoding="utf-8")
        from ppdp.ledger._checkpoint import fsync_dir

        fsync_dir(dest.parent)
        return dest

    def refuse_new_ledger(self, dataset_id: str, path: str | os.PathLike[str]) -> None:
        """Raise if ``dataset_id`` already has an anchored ledger (a new one would reset it).

        Raises
        ------
        ParameterError
            The anchored ledger still exists at the path on record: use it.
        LedgerIntegrityError
            The anchored ledger is gone from the path on record (deleted or moved).
        """
        rec = self.get(dataset_id)
        if rec is None:
            return
        a = rec.anchor
        where = f" at {rec.ledger_path}" if rec.ledger_path else ""
        if rec.ledger_path and Path(rec.ledger_path).exists():
            raise ParameterError(
                f"dataset_id ({_short(dataset_id)}) already has a budget ledger{where} "
                f"(anchored at {a.length} entries, record {rec.path}); a second ledger would "
                "give it a fresh budget: use that ledger"
            )
        raise LedgerIntegrityError(
            f"dataset {_short(dataset_id)} has an anchored ledger on record ({rec.path}: ledger "
            f"{a.ledger_id}, {a.length} entries{where}) that is gone; refusing to create a new "
            f"ledger at {path} (it would reset the budget): restore the anchored ledger",
            index=None,
        )
