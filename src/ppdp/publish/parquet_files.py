"""The partitioned Parquet folder a release of a table larger than memory is written to.

The folder helpers of :func:`ppdp.publish.files.publish_dataset` (what
:func:`~ppdp.publish.files.publish_table_file` does when its input is a Dask DataFrame, a
folder of Parquet files, a glob, or with a ``scheduler`` a single Parquet file): which
input is distributed, the output folder's checks, its staging and its move into place.
They are also used by ``ppdp train``/``ppdp predict`` (:mod:`ppdp.learn.files`) and
``ppdp report``; this module imports nothing of :mod:`ppdp.publish.files`.

The release is a folder ``OUT/`` of ``part-00000.parquet``, ``part-00001.parquet``, ...
with a ``_SUCCESS`` marker, and its guarantee is ``OUT.guarantee.json`` *beside* the folder
(the same name rule as a file release: ``release/`` -> ``release.guarantee.json``). Both
appear together: the rows are written into a hidden folder beside ``OUT``; once it is
complete (``_SUCCESS`` inside), the guarantee file is written atomically, then the folder
is renamed into place. A failure at any step removes what it wrote: nothing partial is
ever visible.

Examples
--------
>>> from ppdp.publish.parquet_files import distributed_input
>>> distributed_input("adult.csv", None), distributed_input("adult-parquet/", None)
(False, True)
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ppdp.exceptions import ParameterError

__all__ = [
    "FOLDER_REFUSED_SUFFIXES",
    "check_folder_output",
    "distributed_input",
    "folder_rows",
    "move_into_place",
    "row_sampler",
    "staging_folder",
]

#: Output names that are files, never a partitioned folder.
FOLDER_REFUSED_SUFFIXES = (".csv", ".csv.gz", ".tsv", ".json", ".html", ".htm", ".gz")
#: Methods of a statistics-only publisher that write ``n`` synthetic rows to a Parquet
#: folder partition by partition, tried in this order: ``(n, path, *, scheduler) -> Path``.
SAMPLER_NAMES = ("sample_to_parquet", "sample_parquet", "write_sample")


def _is_dask_frame(data: Any) -> bool:
    from ppdp.data.distributed import is_distributed

    return not isinstance(data, str | os.PathLike) and is_distributed(data)


def distributed_input(data: Any, scheduler: Any, *, param: str = "data") -> bool:
    """Whether ``data`` is processed partition by partition (on Dask) rather than in memory.

    A Dask DataFrame, a folder or a glob is; a single ``.parquet`` file is read into memory
    (as before Dask support) unless a ``scheduler`` is given; a CSV file is read into
    memory, and a ``scheduler`` with it is refused in one line.
    """
    from ppdp.data.distributed import is_distributed

    if not is_distributed(data):
        if scheduler is not None:
            shown = data if isinstance(data, str | os.PathLike) else type(data).__name__
            raise ParameterError(
                f"scheduler ({scheduler!r}) is for a Parquet dataset (a folder or a glob) or a "
                f"Dask DataFrame; {param} ({str(shown)!r}) is read into memory: leave it out"
            )
        return False
    if _is_dask_frame(data):
        return True
    text = os.fspath(data)
    low = text.lower()
    single_file = low.endswith((".parquet", ".pq")) and os.path.isfile(text)
    return not single_file or scheduler is not None


def staging_folder(out: Path) -> Path:
    """A hidden, not yet existing folder beside ``out`` to write the release into.

    Named ``.OUT.staging.<host>.<pid>-<random>``: a run killed while writing leaves it, and
    the next run writing ``out`` removes it once that process is gone
    (:func:`ppdp.data.distributed.clean_staging`, called by :func:`check_folder_output`).
    """
    from ppdp.data.distributed import hidden_name

    return hidden_name(out, "staging")


def _is_ppdp_output(folder: Path) -> bool:
    from ppdp.data.distributed import SUCCESS_MARKER

    return (folder / SUCCESS_MARKER).is_file()


def _inside(child: Path, parent: Path) -> bool:
    with contextlib.suppress(OSError, RuntimeError, ValueError):
        child.resolve().relative_to(parent.resolve())
        return True
    return False


def check_folder_output(
    out: Path,
    *,
    param: str = "--output",
    sidecars: Sequence[tuple[str, Path]] = (),
    inputs: Sequence[tuple[str, Any]] = (),
    force: bool = False,
) -> Path:
    """Check a partitioned output folder (and its sidecar files) before anything is spent.

    The folder must not exist (with ``force``: it may be a complete ppdp output, which is
    replaced only once the new one is complete; any other folder or a file is refused), its
    parent must be a writable folder, and it must be neither an input nor inside an input
    folder. ``sidecars`` are checked as files (:func:`ppdp._io.check_output`).

    Raises
    ------
    ParameterError
        One line naming ``param`` and the path.
    """
    from ppdp._io import check_output

    shown = repr(str(out))
    if out.name.lower().endswith(FOLDER_REFUSED_SUFFIXES):
        raise ParameterError(
            f"{param} ({shown}): a Parquet dataset is released as a folder of Parquet files; "
            "give a folder name (such as 'release' or 'release.parquet'), not a file name"
        )
    for what, source in inputs:
        if source is None or not isinstance(source, str | os.PathLike):
            continue
        src = Path(os.fspath(source))
        if src.is_dir() and (_inside(out, src) or _inside(src, out)):
            raise ParameterError(
                f"{param} ({shown}) lies in or holds the {what} ({str(src)!r}): writing it "
                "would change the input; choose a folder elsewhere"
            )
    if out.exists() or out.is_symlink():
        if not force:
            raise ParameterError(f"{param} ({shown}) already exists; pass --force to replace it")
        if not out.is_dir() or out.is_symlink() or not _is_ppdp_output(out):
            raise ParameterError(
                f"{param} ({shown}) exists and is not a complete ppdp output folder (no "
                "_SUCCESS marker); --force replaces only those: remove it yourself or choose "
                "another name"
            )
    from ppdp.data.distributed import clean_staging

    clean_staging(out)  # what a killed run left beside it: removed, or named
    # The sidecars as files, and the folder's parent (writable, enough space).
    for label, side in sidecars:
        check_output(side, param=label, inputs=list(inputs), force=force)
    if not sidecars:
        probe = out.parent / f".{out.name}.probe-{secrets.token_hex(4)}"
        check_output(probe, param=param, inputs=list(inputs), force=True)
    return out


def move_into_place(staged: Path, out: Path, sidecars: Sequence[tuple[Path, str]] = ()) -> None:
    """Write ``sidecars`` atomically, then rename the complete folder ``staged`` to ``out``.

    An existing ``out`` (a ppdp output, checked before) is swapped out only after the new
    folder is in place. On failure the sidecars written here are removed (their previous
    content restored) and ``staged`` is deleted; ``out`` stays as it was.
    """
    from ppdp._io import atomic_paths
    from ppdp.data.distributed import hidden_name

    backups: list[tuple[Path, Path | None]] = []
    trash: Path | None = None
    try:
        for side, text in sidecars:
            keep = None
            if side.exists():
                keep = side.with_name(f".{side.name}.old-{secrets.token_hex(4)}")
                shutil.copy2(side, keep)
            backups.append((side, keep))
            with atomic_paths(side) as (tmp,):
                tmp.write_text(text, encoding="utf-8")
        if out.exists():
            trash = hidden_name(out, "old")
            os.replace(out, trash)
        os.replace(staged, out)
    except BaseException:
        if trash is not None and not out.exists():
            os.replace(trash, out)
            trash = None
        for side, keep in backups:
            if keep is not None:
                os.replace(keep, side)
            else:
                with contextlib.suppress(FileNotFoundError):
                    side.unlink()
        shutil.rmtree(staged, ignore_errors=True)
        raise
    finally:
        if trash is not None:
            shutil.rmtree(trash, ignore_errors=True)
        for _, keep in backups:
            if keep is not None:
                with contextlib.suppress(FileNotFoundError):
                    keep.unlink()


def folder_rows(folder: Path) -> int | None:
    """The number of rows a complete output folder holds (from its ``_SUCCESS`` marker)."""
    from ppdp.data.distributed import SUCCESS_MARKER

    try:
        marker = json.loads((folder / SUCCESS_MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    rows = marker.get("rows") if isinstance(marker, dict) else None
    return int(rows) if isinstance(rows, int) else None


def row_sampler(publisher: Any) -> Callable[..., Any] | None:
    """A statistics-only publisher's method that writes synthetic rows to a Parquet folder."""
    for name in SAMPLER_NAMES:
        method = getattr(publisher, name, None)
        if callable(method):
            return method  # type: ignore[no-any-return]
    return None


def readback(publisher: Any, out: Path) -> Any:
    """Point ``publisher.release_.data`` at the folder's final place; return that frame."""
    from ppdp.data.distributed import read_parquet_dataset

    frame = read_parquet_dataset(out)
    release = getattr(publisher, "release_", None)
    if release is not None:
        publisher.release_ = replace(release, data=frame)
    return frame


def _write_rows(publisher: Any, method: str, staged: Path, n_rows: int, *, scheduler: Any) -> None:
    """A statistics release's rows, written into ``staged`` (post-processing: no spend)."""
    import pandas as pd

    from ppdp.data.distributed import write_parquet_dataset

    if publisher.computes_table:
        write_parquet_dataset([publisher.output_table()], staged, scheduler=scheduler)
        return
    sampler = row_sampler(publisher)
    if sampler is not None:
        sampler(n_rows, staged, scheduler=scheduler)
        return
    data = publisher.release_.data
    if isinstance(data, pd.DataFrame):
        write_parquet_dataset([data], staged, scheduler=scheduler)
    elif data is not None and hasattr(data, "to_delayed"):
        write_parquet_dataset(data, staged, scheduler=scheduler)
    else:  # pragma: no cover - refused before the spend by the writer check
        raise RuntimeError(f"{method} released no rows to write")


def writes_rows(publisher: Any, method: str) -> str:
    """How a distributed release becomes rows: ``"fit"``, ``"table"`` or ``"sample"``.

    ``"fit"``: ``fit`` writes them to ``output`` (row-level publishers, and the synthesizers
    that take an ``output`` folder); ``"table"``: a small table computed from the release
    (the LDA directions); ``"sample"``: the publisher's ``sample_to_parquet`` afterwards.

    Raises
    ------
    ParameterError
        The method does not take a Parquet dataset (one line, before anything is spent).
    """
    if not getattr(publisher, "supports_distributed", False):
        raise ParameterError(
            f"method ({method!r}) does not take a Parquet dataset or a Dask DataFrame; give "
            "it a CSV file (read into memory)"
        )
    if publisher.fit_writes_output:
        return "fit"
    if publisher.computes_table:
        return "table"
    if row_sampler(publisher) is not None:
        return "sample"
    raise ParameterError(
        f"method ({method!r}) releases statistics only on a Parquet dataset and has no way "
        "to write rows from them; give it a CSV file (read into memory)"
    )
