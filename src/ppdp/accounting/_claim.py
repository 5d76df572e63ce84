"""An exclusive, crash-safe lease on an idempotency key (see :func:`~ppdp.accounting.claim_key`).

One lease per (ledger, key): a kernel advisory lock (``flock``) on a small file beside the
ledger, ``.<ledger name>.claims/<hash>.lock``, so the kernel drops it when the holding
process dies, however it dies. The file holds who took it (pid, host, since) for the one-line
refusal of a concurrent run. Within a process a registry makes the lease re-entrant for the
thread that holds it (a CLI flow holds it around the publisher's own ``fit``) and exclusive
for every other thread; an in-memory ledger needs nothing more.

A holder removes its file before it unlocks: a run that opened the old file and locks it
after that sees that the path no longer names it and takes the lease afresh (the usual
flock-then-stat check), so the folder keeps only the files of runs in progress or killed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ppdp.exceptions import KeyInUseError, LedgerIOError, ParameterError

__all__ = ["Lease", "holds_lease", "take_lease"]

#: Attempts to lock a file that the path still names (each retry follows a holder's removal).
_ATTEMPTS = 64


@dataclass
class Lease:
    """A held lease: ``release`` it exactly once (the registry counts re-entries)."""

    slot: tuple[str, ...]
    key: str
    handle: Any = None  # the locked file; None in memory or for a re-entry
    path: Path | None = None
    reentry: bool = False

    def release(self) -> None:
        """Give the lease up (a re-entry only counts down)."""
        with _REGISTRY:
            held = _HELD.get(self.slot)
            if held is not None and held.pid == os.getpid():
                held.depth -= 1
                if held.depth > 0:
                    return
                del _HELD[self.slot]
        if self.handle is not None:
            # Removed while still locked: see the module docstring.
            if self.path is not None:
                with contextlib.suppress(OSError):
                    os.unlink(self.path)
            self.handle.close()  # closing the file drops the kernel lock
            self.handle = None


@dataclass
class _Held:
    pid: int
    thread: int
    depth: int
    holder: dict[str, Any]


_REGISTRY = threading.Lock()
_HELD: dict[tuple[str, ...], _Held] = {}


def _slot(ledger: Any, key: str) -> tuple[tuple[str, ...], Path | None]:
    """The registry key and the lock file of ``key`` on ``ledger`` (no file in memory)."""
    digest = hashlib.sha256(f"{ledger.ledger_id}\0{key}".encode()).hexdigest()[:40]
    if ledger.path is None:
        return ("memory", ledger.ledger_id, digest), None
    where = Path(ledger.path).resolve()
    lock = where.with_name(f".{where.name}.claims") / f"{digest}.lock"
    return (str(lock),), lock


def _holder() -> dict[str, Any]:
    since = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return {"pid": os.getpid(), "host": socket.gethostname(), "since": since}


def _in_use(key: str, holder: dict[str, Any] | None) -> KeyInUseError:
    who = (
        f"pid {holder['pid']} on host {holder['host']} since {holder['since']}"
        if holder
        else "its holder is still starting"
    )
    return KeyInUseError(
        f"idempotency_key ({key!r}) is held by a run in progress ({who}): nothing charged, "
        "nothing released; retry when it ends"
    )


def _read_holder(path: Path) -> dict[str, Any] | None:
    """Who holds the file's lock, as it wrote (None while it has not written yet)."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(found, dict) or not {"pid", "host", "since"} <= found.keys():
        return None
    return found


def _fcntl() -> Any:
    try:
        import fcntl
    except ImportError:  # Windows
        return None
    return fcntl


def _lock_file(path: Path, key: str) -> Any:
    """The locked, still-linked lock file at ``path``; :class:`KeyInUseError` if held."""
    fcntl = _fcntl()
    if fcntl is None:
        raise ParameterError(
            f"idempotency_key ({key!r}) needs an OS file lock (fcntl), which this platform "
            "lacks: nothing charged, nothing released; release without a key"
        )
    try:
        path.parent.mkdir(mode=0o700, exist_ok=True)
    except OSError as exc:
        raise LedgerIOError(
            f"idempotency_key ({key!r}) needs the folder {path.parent} beside the ledger, "
            f"which cannot be created ({exc.strerror or exc}): nothing charged, nothing released"
        ) from exc
    for _ in range(_ATTEMPTS):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise LedgerIOError(
                f"idempotency_key ({key!r}) needs the lock file {path}, which cannot be "
                f"opened ({exc.strerror or exc}): nothing charged, nothing released"
            ) from exc
        handle = os.fdopen(fd, "r+b")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise _in_use(key, _read_holder(path)) from None
        except BaseException:
            handle.close()
            raise
        try:
            if os.path.samestat(os.stat(path), os.fstat(fd)):
                return handle
        except FileNotFoundError:
            pass
        handle.close()  # its holder removed it before unlocking: take the path afresh
    raise _in_use(key, _read_holder(path))


def take_lease(ledger: Any, key: str) -> Lease:
    """Take the lease on ``key`` for this thread, or raise :class:`KeyInUseError` (one line).

    Re-entrant for the thread that holds it; exclusive for every other thread and process.
    """
    slot, path = _slot(ledger, key)
    me = threading.get_ident()
    with _REGISTRY:
        held = _HELD.get(slot)
        if held is not None and held.pid == os.getpid():  # an entry copied by fork is stale
            if held.thread != me:
                raise _in_use(key, held.holder)
            held.depth += 1
            return Lease(slot, key, reentry=True)
        handle = _lock_file(path, key) if path is not None else None
        holder = _holder()
        if handle is not None:
            try:
                if os.fstat(handle.fileno()).st_size:  # a killed holder's note
                    handle.truncate(0)  # (only then: on ext4 it flushes at close)
                handle.write(json.dumps(holder).encode())
                handle.flush()
            except OSError:  # the note is for a refused run's message; the lock is what counts
                pass
        _HELD[slot] = _Held(os.getpid(), me, 1, holder)
    return Lease(slot, key, handle, path)


def holds_lease(ledger: Any, key: str) -> bool:
    """Whether this thread holds the lease on ``key``."""
    slot, _ = _slot(ledger, key)
    with _REGISTRY:
        held = _HELD.get(slot)
        return held is not None and held.pid == os.getpid() and held.thread == threading.get_ident()
