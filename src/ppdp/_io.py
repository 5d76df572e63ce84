"""File output that never leaves a half-written file behind, checked before anything is spent.

Two halves:

* :func:`check_output` runs every check that can be run on an output path *before* the
  budget is spent: the format is supported (Parquet needs pyarrow), the path is not a
  folder, its folder exists and is writable, it is not any of the command's inputs (data,
  schema, ledger and the ledger's companion files, ...), it does not exist unless
  ``force``, and the same for its sidecars (``OUT.guarantee.json``). It also removes the
  partial files that a killed run left beside the output (:func:`clean_orphans`).
* :func:`atomic_path` / :func:`atomic_paths` write through temporary files
  (``.OUT.<host>.<pid>-<random>.part``) in the destination folder and rename them into
  place only on success (fsync of the file and of the folder), so a reader sees the old
  file or the new one, never half of one.

What cannot be checked beforehand is the disk filling up (or an I/O error) while the
release is written, after the spend: :func:`write_error` turns it into one line that says
the spend stands (DESIGN.md contract 6 is honoured for everything else).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from ppdp.exceptions import OptionalDependencyError, ParameterError, PPDPError

__all__ = [
    "OutputWriteError",
    "atomic_path",
    "atomic_paths",
    "check_csv_format",
    "check_output",
    "check_output_folder",
    "clean_folder",
    "clean_orphans",
    "host_tag",
    "ledger_files",
    "pid_alive",
    "write_error",
    "writer_gone",
]

logger = logging.getLogger(__name__)

#: Suffix of the temporary files; their names are ``.NAME.<host>.<pid>-<random>.part``.
PART_SUFFIX = ".part"
#: Below this many free bytes in the output's file system a release is refused before the
#: spend (a nearly full disk would fail the write after it).
MIN_FREE_BYTES = 1 << 20

PathLike = str | os.PathLike[str]


class OutputWriteError(PPDPError, OSError):
    """Writing a release failed after its spend (disk full, I/O error): the spend stands."""


def _default_mode() -> int:
    """``0o666`` less the process umask: what ``open(path, "w")`` would have given."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def host_tag() -> str:
    """A short tag of this machine for partial-file names (folders may be shared over NFS)."""
    tag = "".join(c for c in socket.gethostname() if c.isascii() and c.isalnum())[:16]
    return tag or "host"


def _part_prefix(dest: Path) -> str:
    return f".{dest.name}.{host_tag()}.{os.getpid()}-"


def _fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (best effort where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without O_RDONLY folders
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_paths(*paths: PathLike, mode: int | None = None) -> Iterator[tuple[Path, ...]]:
    """Yield one temporary path per destination; move them all into place only on success.

    The temporary files live in their destinations' folders (``.NAME.<host>.<pid>-<rnd>.part``)
    so each final ``os.replace`` is an atomic rename on one file system. They are renamed
    in the order given, so put the main file last: once it is visible, its sidecars are.
    On any exception every temporary file is removed and every destination is left exactly
    as it was (absent, or its previous content). The files get ``mode`` (default: the usual
    permissions under the process umask, not the owner-only mode of a temporary file).
    """
    dests = [Path(p) for p in paths]
    tmps: list[Path] = []
    try:
        for dest in dests:
            dest.parent.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(
                prefix=_part_prefix(dest), suffix=PART_SUFFIX, dir=dest.parent
            )
            os.close(fd)
            tmps.append(Path(name))
        yield tuple(tmps)
        for tmp in tmps:
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            os.chmod(tmp, _default_mode() if mode is None else mode)
        for tmp, dest in zip(tmps, dests, strict=True):
            os.replace(tmp, dest)
        for folder in {dest.parent for dest in dests}:
            _fsync_dir(folder)
    finally:
        for tmp in tmps:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()


@contextlib.contextmanager
def atomic_path(path: PathLike, *, mode: int | None = None) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; move it into place only on success.

    See :func:`atomic_paths` (this is the one-file case).
    """
    with atomic_paths(path, mode=mode) as (tmp,):
        yield tmp


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` on this machine may still run (unknown or not ours: True)."""
    if pid <= 0:
        return True  # not ours to judge
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: a live process of another user
        return True
    return True


def writer_gone(host: str, pid: int | None) -> bool:
    """Whether the writer a hidden file's name records (``<host>.<pid>``) is known dead:
    a process of this machine that no longer runs. Another machine's, or no pid: unknown."""
    return pid is not None and host == host_tag() and not pid_alive(pid)


_PART_NAME = re.compile(
    r"^\.(?P<name>.+)\.(?P<host>[A-Za-z0-9]+)\.(?P<pid>[0-9]+)-[a-z0-9_]+\.part$"
)


def _sweep(folder: Path, names: Iterable[str]) -> tuple[list[Path], list[Path]]:
    removed: list[Path] = []
    kept: list[Path] = []
    for name in names:
        path = folder / name
        if path.is_symlink() or not path.is_file():
            continue
        m = _PART_NAME.match(name)
        if m is None or not writer_gone(m["host"], int(m["pid"])):
            kept.append(path)
            continue
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        except OSError:
            kept.append(path)
            continue
        removed.append(path)
    return removed, kept


def clean_orphans(dest: PathLike) -> tuple[list[Path], list[Path]]:
    """Remove the partial files a killed run left beside ``dest``; name the others.

    A partial file ``.NAME.<host>.<pid>-<random>.part`` written on this machine by a process
    that no longer exists is removed (a SIGKILL or power loss between its creation and the
    rename). Partial files of a live process (another ppdp writing the same output right
    now), of another machine (a shared folder) or of an unknown writer (another naming) are
    left alone and returned, for a warning.

    Returns
    -------
    (removed, kept) : lists of paths
    """
    d = Path(dest)
    if not d.parent.is_dir():
        return [], []
    prefix = f".{d.name}."
    names = sorted(
        n for n in os.listdir(d.parent) if n.startswith(prefix) and n.endswith(PART_SUFFIX)
    )
    return _sweep(d.parent, names)


def clean_folder(folder: PathLike) -> tuple[list[Path], list[Path]]:
    """:func:`clean_orphans` for every partial file in ``folder`` (a results folder)."""
    f = Path(folder)
    if not f.is_dir():
        return [], []
    names = sorted(n for n in os.listdir(f) if n.startswith(".") and n.endswith(PART_SUFFIX))
    return _sweep(f, names)


def _report_orphans(found: tuple[list[Path], list[Path]], target: Path) -> None:
    removed, kept = found
    for p in removed:
        logger.info("removed %s, a partial file left by an interrupted run", p)
    for p in kept:
        logger.warning(
            "%s is a partial file of another or an interrupted run; remove it if no ppdp is "
            "writing %s",
            p,
            target,
        )


def check_output_folder(folder: PathLike, *, param: str = "--output") -> Path:
    """Check a results folder before a long run: a folder (or creatable), writable.

    Partial files that a killed run left in it are removed (or named in a warning).
    """
    f = Path(folder)
    if f.exists() and not f.is_dir():
        raise ParameterError(f"{param} ({str(f)!r}) is a file, not a folder")
    base = f
    while not base.exists():
        if base.parent == base:
            break
        base = base.parent
    if not base.is_dir():
        raise ParameterError(f"{param} ({str(f)!r}): {str(base)!r} is not a folder")
    try:
        fd, probe = tempfile.mkstemp(prefix=f".probe.{os.getpid()}-", suffix=PART_SUFFIX, dir=base)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ParameterError(
            f"{param} ({str(f)!r}): cannot write in {str(base)!r} ({reason})"
        ) from None
    os.close(fd)
    os.unlink(probe)
    _report_orphans(clean_folder(f), f)
    return f


def ledger_files(ledger: PathLike | None) -> list[tuple[str, Path]]:
    """A ledger and the files beside it that an output must never replace."""
    if ledger is None:
        return []
    p = Path(ledger)
    return [
        ("ledger", p),
        ("ledger's key", p.with_name(p.name + ".key")),
        ("ledger's checkpoint", p.with_name(p.name + ".checkpoint")),
        ("ledger's write-ahead log", p.with_name(p.name + "-wal")),
        ("ledger's shared memory", p.with_name(p.name + "-shm")),
        ("ledger's journal", p.with_name(p.name + "-journal")),
    ]


def _same_file(a: Path, b: Path) -> bool:
    with contextlib.suppress(OSError):
        if os.path.lexists(a) and os.path.lexists(b) and os.path.samefile(a, b):
            return True
    with contextlib.suppress(OSError, RuntimeError):
        return os.path.normcase(a.resolve()) == os.path.normcase(b.resolve())
    return False  # pragma: no cover - resolve failed (a symlink loop)


def _suffix_ok(name: str, suffixes: Sequence[str]) -> bool:
    low = name.lower()
    return any(low.endswith(s) for s in suffixes)


def check_output(
    path: PathLike,
    *,
    param: str = "--output",
    suffixes: Sequence[str] | None = None,
    sidecars: Iterable[PathLike | tuple[str, PathLike]] = (),
    inputs: Iterable[tuple[str, PathLike | None]] = (),
    force: bool = False,
    min_free: int = MIN_FREE_BYTES,
) -> Path:
    """Check an output path before anything is spent; return it as a :class:`Path`.

    Parameters
    ----------
    path : path
        Where the release goes.
    param : str
        How the user named it (``--output``, ``output``), for the messages.
    suffixes : sequence of str, optional
        The accepted endings (``.csv``, ``.csv.gz``, ``.parquet``, ``.json``); ``.parquet``
        also checks that pyarrow is importable.
    sidecars : paths, or (what, path) pairs
        Files written beside the output in the same release (``OUT.guarantee.json``);
        checked like the output.
    inputs : (what, path) pairs
        Every file the command reads; the output and its sidecars must be none of them
        (same resolved path or same file, hard links included).
    force : bool
        Replace an existing output (and sidecars); without it an existing file is refused.
    min_free : int
        Refuse when the output's file system has fewer free bytes.

    Raises
    ------
    ParameterError
        One line naming ``param`` and the path, and what to do.
    OptionalDependencyError
        Parquet output without pyarrow.
    """
    out = Path(path)
    shown = repr(str(out))
    if suffixes is not None and not _suffix_ok(out.name, suffixes):
        *head, last = suffixes
        ends = f"{', '.join(head)} or {last}" if head else last
        raise ParameterError(f"{param} ({shown}) must end in {ends}")
    if out.name.lower().endswith(".parquet"):
        try:
            import pyarrow  # noqa: F401
        except ImportError as exc:
            raise OptionalDependencyError(
                f"{param} ({shown}): writing Parquet needs pyarrow (pip install 'ppdp[dask]'), "
                "or write .csv"
            ) from exc
    targets = [(param, out)]
    for side in sidecars:
        label, spath = side if isinstance(side, tuple) else (f"{param}'s sidecar", side)
        targets.append((label, Path(spath)))
    folder = out.parent
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise ParameterError(f"{param} ({shown}): folder {str(folder)!r} {what}")
    read = [(what, Path(p)) for what, p in inputs if p is not None]
    for label, target in targets:
        if target.is_dir():
            raise ParameterError(
                f"{label} ({str(target)!r}) is a folder; give a file name inside it"
            )
        for what, source in read:
            if _same_file(target, source):
                raise ParameterError(
                    f"{label} ({str(target)!r}) is the {what} ({str(source)!r}): writing it "
                    "would destroy the input; choose another output path"
                )
        if os.path.lexists(target) and not force:
            raise ParameterError(
                f"{label} ({str(target)!r}) already exists; pass --force to replace it"
            )
    for _, target in targets:
        _report_orphans(clean_orphans(target), target)
    try:
        fd, probe = tempfile.mkstemp(prefix=_part_prefix(out), suffix=PART_SUFFIX, dir=folder)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ParameterError(
            f"{param} ({shown}): cannot write in folder {str(folder)!r} ({reason})"
        ) from None
    os.close(fd)
    os.unlink(probe)
    with contextlib.suppress(OSError):
        free = shutil.disk_usage(folder).free
        if free < min_free:
            raise ParameterError(
                f"{param} ({shown}): the file system of {str(folder)!r} has {free:,} bytes free; "
                "free some space first"
            )
    return out


def check_csv_format(output: PathLike | None, sep: str, decimal: str) -> tuple[str, str]:
    """The separator and decimal mark a CSV output is written with, checked before anything
    is read or spent.

    ``sep``: one character, not a quote, a newline or a digit; ``decimal``: ``"."`` or ``","``,
    not the separator. Anything but the default (``","`` and ``"."``) needs a CSV output
    (``output`` ending in .csv, .csv.gz, .tsv or .txt): a Parquet file or a folder has no
    separator. ``"\\t"`` and ``"tab"`` mean a tab.
    """
    if sep in ("\\t", "tab", "TAB"):
        sep = "\t"
    if not isinstance(sep, str) or len(sep) != 1 or sep in '"\r\n' or sep.isdigit():
        raise ParameterError(
            f"output_sep ({sep!r}) must be one character that is not a quote, a newline or a "
            "digit (e.g. ';' or '\\t')"
        )
    if decimal not in (".", ","):
        raise ParameterError(f"output_decimal ({decimal!r}) must be '.' or ','")
    if decimal == sep:
        raise ParameterError(
            f"output_decimal ({decimal!r}) cannot also be the separator output_sep: use "
            "output_sep ';' with output_decimal ','"
        )
    if (sep, decimal) != (",", ".") and output is not None:
        name = Path(output).name.lower()
        if not name.endswith((".csv", ".csv.gz", ".tsv", ".txt")):
            raise ParameterError(
                f"output_sep ({sep!r}) and output_decimal ({decimal!r}) apply to a CSV output, "
                f"not {os.fspath(output)!r} (Parquet and folders have no separator)"
            )
    return sep, decimal


def write_error(exc: OSError, path: PathLike, *, charged: str) -> OutputWriteError:
    """One line for a release that failed after the spend: what failed, and that it stands.

    Only a full device gets the advice to free space: a file that vanished or could not be
    read after the spend (``exc.filename`` other than the output) is named as such.
    """
    reason = exc.strerror or str(exc) or type(exc).__name__
    full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
    if full:
        reason = "no space left on the device"
    what = f"writing {str(path)!r}"
    culprit = exc.filename
    if culprit is not None and not Path(str(culprit)).resolve().is_relative_to(
        Path(path).resolve().parent
    ):
        what = f"the release (at {str(culprit)!r})"
    advice = "free space, then run again" if full else "fix the cause, then run again"
    return OutputWriteError(
        f"{what} failed after the spend: {reason}. The spend stands ({charged}): ε was "
        f"charged and nothing was released; {advice} (a new release, a new spend)"
    )
