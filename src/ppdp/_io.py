"""File output that never leaves a half-written file behind."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path


def _default_mode() -> int:
    """``0o666`` less the process umask: what ``open(path, "w")`` would have given."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], *, mode: int | None = None) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; move it into place only on success.

    The temporary file lives in the destination folder so the final ``os.replace`` is an
    atomic rename on the same file system. On any exception the temporary file is removed
    and ``path`` is left exactly as it was (absent, or its previous content). The file gets
    ``mode`` (default: the usual permissions under the process umask, not the owner-only
    mode of the temporary file).
    """
    dest = Path(path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, _default_mode() if mode is None else mode)
        os.replace(tmp, dest)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
