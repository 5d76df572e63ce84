"""Reporting on files: what ``ppdp report`` does, for a Python caller.

:func:`report_file` compares a released table (with its ``RELEASE.guarantee.json``) or a
model file with the private data it came from, and writes the HTML report (and, if asked,
its numbers as JSON) atomically. Every output is checked before anything is read. The
report reads the private data: it is for the custodian only and costs no budget.

Examples
--------
>>> from ppdp.evaluate.files import report_file
>>> done = report_file("adult.dp.csv", original="adult.csv",  # doctest: +SKIP
...                    schema="adult.schema.json", output="report.html")
>>> print(done.report.summary())  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ppdp.exceptions import DataValidationError, ParameterError

__all__ = ["ReportFileResult", "read_sidecar", "report_file"]

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class ReportFileResult:
    """What :func:`report_file` wrote.

    Attributes
    ----------
    report : QualityReport or ModelReport or LDAProjectionReport
        The report (``summary()``, ``to_html()``, ``to_json()``).
    paths : list of Path
        The files written: the HTML report, then the JSON numbers if asked for.
    note : str or None
        A line for the reader (a release reported without its guarantee file).
    """

    report: Any
    paths: list[Path]
    note: str | None = None


def read_sidecar(release: PathLike) -> tuple[Path, dict[str, Any] | None]:
    """A release's ``.guarantee.json`` path and content (None when there is none)."""
    release = Path(release)
    side = release.with_name(release.name + ".guarantee.json")
    if not side.exists():
        return side, None
    try:
        data = json.loads(side.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ParameterError(
            f"the release's guarantee file {str(side)!r} is corrupt ({exc}); restore it or "
            "move it away to report without a guarantee"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("guarantee"), dict):
        raise ParameterError(
            f"the release's guarantee file {str(side)!r} holds no guarantee; restore it or "
            "move it away to report without a guarantee"
        )
    return side, data


def _output_kind(sidecar: dict[str, Any] | None) -> str:
    """What a release file holds, from its guarantee file's method: that publisher's declared
    :attr:`~ppdp.publish.Publisher.output_kind` (``"rows"`` without a guarantee file or for a
    method ppdp does not register)."""
    from ppdp.registry import PUBLISHERS

    method = None if sidecar is None else sidecar.get("method")
    if method not in PUBLISHERS:
        return "rows"
    return str(PUBLISHERS.load(str(method)).output_kind)


def _check_outputs(
    output: PathLike, json_out: PathLike | None, inputs: list[tuple[str, Any]], force: bool
) -> list[Path]:
    from ppdp._io import check_output

    if json_out is not None and not str(json_out).lower().endswith(".json"):
        raise ParameterError(f"--json ({str(json_out)!r}) must end in .json")
    sidecars = [] if json_out is None else [("--json", Path(json_out))]
    check_output(output, suffixes=(".html", ".htm"), sidecars=sidecars, inputs=inputs, force=force)
    return [Path(output)] + ([] if json_out is None else [Path(json_out)])


def _write(report: Any, paths: list[Path]) -> None:
    """The HTML report (and the JSON numbers), written together atomically."""
    from ppdp._io import atomic_paths

    html = report.to_html()
    with atomic_paths(*reversed(paths)) as tmps:
        if len(paths) > 1:
            tmps[0].write_text(report.to_json(), encoding="utf-8")
        tmps[-1].write_text(html, encoding="utf-8")


def report_file(
    release: PathLike,
    *,
    output: PathLike,
    original: PathLike | None = None,
    schema: PathLike | None = None,
    holdout: PathLike | None = None,
    target: str | None = None,
    json_output: PathLike | None = None,
    force: bool = False,
    no_guarantee: bool = False,
    sep: str | None = None,
    encoding: str = "utf-8",
    scheduler: Any = None,
    progress: Any = None,
) -> ReportFileResult:
    """Report on ``release`` against the private data; write ``output`` (HTML).

    Parameters
    ----------
    release : path
        A released table (``.csv``, ``.parquet``; an LDA projection release is recognised by
        its guarantee file), a partitioned release (a folder ppdp wrote from a Parquet
        dataset, with its ``_SUCCESS`` marker and ``RELEASE.guarantee.json`` beside it), or
        a model file from ``ppdp train`` (``.json``: then ``holdout`` is required and
        ``original`` optional). A group-by release (its guarantee file names ``groupby``)
        is compared group by group (:func:`ppdp.evaluate.group_report.group_report`), on an
        original read into memory.
    output : path
        The HTML report (``.html`` or ``.htm``).
    original, schema : path, optional
        The private table and the declared schema (both required for a table).
    holdout : path, optional
        Original rows that took no part in the release, to test a classifier on (read like
        ``original``).
    target : str, optional
        A categorical column (or the label) to predict.
    json_output : path, optional
        Also write the report's numbers here (``.json``).
    no_guarantee : bool, default False
        Report a table that has no guarantee file (its guarantee is then unknown).
    sep, encoding : optional
        The original's (and the holdout's) separator and text encoding, as
        :func:`ppdp.data.draft.read_table`. A released table is always read as ppdp writes
        it (UTF-8, its separator and decimal mark detected), whatever these say.
    scheduler : optional
        Where tables larger than memory are read (``ppdp report --scheduler``): a release
        folder, or an original (or holdout) that is a Parquet dataset (a folder or a glob),
        is read partition by partition (:mod:`ppdp.evaluate.parquet_report`: marginals from
        every row, the rest from the report's seeded sample of at most 100,000 rows).
        ``None`` or ``"local"``: a ``LocalCluster``; ``"tcp://host:8786"``; a Dask local
        scheduler name. A single ``.parquet`` file is read into memory unless it is given.
    progress : callable, optional
        Called with a short line as each stage starts (reading, the measures, the page).

    Returns
    -------
    ReportFileResult
    """
    from ppdp.evaluate.report import import_matplotlib

    import_matplotlib()  # before anything is read: one line naming the extra
    say = progress or (lambda line: None)
    read = _reader(sep, encoding)
    read_release = _release_reader()
    if str(release).lower().endswith(".json"):
        if holdout is None:
            raise ParameterError(
                "a model is reported on held-out rows: give --holdout TEST (rows not used to train)"
            )
        inputs = [("model file", release), ("original", original), ("schema", schema)]
        paths = _check_outputs(output, json_output, [*inputs, ("holdout", holdout)], force)
        return _report_model(release, paths, original, holdout, target, read)
    for flag, value in (("--original", original), ("--schema", schema)):
        if value is None:
            raise ParameterError(f"{flag} is required to report a released table")
    side, sidecar = read_sidecar(release)
    kind = _output_kind(sidecar)
    if kind == "groups":
        inputs = [("release", release), ("release's guarantee file", side), ("original", original)]
        _check_groups(release, holdout, target, scheduler, original)
        paths = _check_outputs(output, json_output, [*inputs, ("schema", schema)], force)
        report = _report_groups(release, original, schema, sidecar, (read, read_release), say)
        say(f"writing {paths[0]}")
        _write(report, paths)
        return ReportFileResult(report, paths)
    if holdout is not None and target is None and kind != "projection":
        raise ParameterError("--holdout is only used with --target COL: give the column to predict")
    inputs = [("release", release), ("release's guarantee file", side), ("original", original)]
    paths = _check_outputs(
        output, json_output, [*inputs, ("schema", schema), ("holdout", holdout)], force
    )
    from ppdp.evaluate.parquet_report import uses_datasets

    if uses_datasets(release, original, holdout, scheduler):
        report = _report_dataset(
            release, original, schema, holdout, target, side, sidecar, no_guarantee,
            (read, read_release), scheduler,
        )  # fmt: skip
    else:
        report = _report_table(
            release, original, schema, holdout, target, side, sidecar, no_guarantee,
            (read, read_release), say,
        )  # fmt: skip
    say(f"writing {paths[0]}")
    _write(report, paths)
    note = f"note: no guarantee file ({side}); the report says so" if sidecar is None else None
    return ReportFileResult(report, paths, note)


def _check_groups(
    release: PathLike, holdout: Any, target: str | None, scheduler: Any, original: Any
) -> None:
    """What a group-by release's report refuses, before anything is read."""
    from ppdp.evaluate.parquet_report import is_dataset

    if holdout is not None or target is not None:
        flag = "--holdout" if holdout is not None else "--target"
        raise ParameterError(
            f"{flag} does not apply to a group-by release ({str(release)!r}): its report "
            "compares each group's statistics with the original's; leave it out"
        )
    if is_dataset(original, scheduler):
        raise ParameterError(
            f"original ({str(original)!r}): the report of a group-by release recomputes the "
            "release's bounding on an original read into memory (a CSV or a single Parquet "
            "file, without --scheduler); a Parquet dataset or Dask original is not supported yet"
        )


def _report_groups(
    release: PathLike,
    original: Any,
    schema: Any,
    sidecar: dict[str, Any] | None,
    readers: tuple[Any, Any],
    say: Any,
) -> Any:
    """A group-by release's report (:func:`ppdp.evaluate.group_report.group_report`)."""
    from ppdp.data import Schema
    from ppdp.evaluate.group_report import group_report

    read, read_release = readers
    schema = Schema.from_file(schema)
    say("reading the release and the original")
    released, orig = _group_table(release, read_release), read(original)
    say(f"comparing {len(released):,} group(s) with the original's")
    return group_report(orig, released, schema, sidecar or {})


def _group_table(release: PathLike, read_release: Any) -> Any:
    """A group-by release as one table: a file, or the folder ppdp wrote for a Parquet
    input (its groups fit in memory; its ``_SUCCESS`` marker must be there)."""
    import pandas as pd

    from ppdp.data.distributed import SUCCESS_MARKER

    folder = Path(os.fspath(release))
    if not folder.is_dir():
        return read_release(release)
    if not (folder / SUCCESS_MARKER).is_file():
        raise DataValidationError(
            f"release ({str(folder)!r}) has no {SUCCESS_MARKER} marker: it is not a complete "
            "ppdp release (an interrupted or foreign folder); publish it again"
        )
    return pd.read_parquet(folder)


def _reader(sep: str | None, encoding: str) -> Any:
    """Read a private table file (the original, a holdout; None stays None) with the given
    separator and encoding (``--sep``, ``--encoding``; ``--decimal`` when the CLI sets it)."""
    from ppdp.data.draft import read_table

    return lambda path: None if path is None else read_table(path, sep=sep, encoding=encoding)


def _release_reader() -> Any:
    """Read a released table as ppdp writes it, whatever the original's format: UTF-8, the
    separator detected from its header (``,`` by default, ``--output-sep`` otherwise), and
    the decimal mark detected too (``.`` by default; ``,`` for a release written with
    ``--output-decimal ,``, whose every value of a float column is then like ``12,5``)."""
    from ppdp.data.draft import decimal_mark, read_table

    def read(path: Any) -> Any:
        with decimal_mark(None):  # not the original's --decimal: detect the release's own
            return read_table(path, encoding="utf-8", say_decimal=False)

    return read


def _report_table(
    release: PathLike,
    original: Any,
    schema: Any,
    holdout: Any,
    target: str | None,
    side: Path,
    sidecar: dict[str, Any] | None,
    no_guarantee: bool,
    readers: tuple[Any, Any],
    say: Any,
) -> Any:
    from ppdp.data import Schema
    from ppdp.evaluate.report import lda_projection_report, quality_report

    read, read_release = readers
    schema = Schema.from_file(schema)
    say("reading the release and the original")
    released, orig, test = read_release(release), read(original), read(holdout)
    if _output_kind(sidecar) == "projection":
        return lda_projection_report(orig, released, schema, sidecar, holdout=test, target=target)
    head = [str(c) for c in released.columns][:2]
    if sidecar is None and (head[:1] == ["lda_1"] or head == ["feature", "lda_1"]):
        raise DataValidationError(
            f"{str(release)!r} looks like an LDA projection release but its guarantee file "
            f"({side}) is missing: it holds the direction; restore it"
        )
    columns = [str(c) for c in released.columns]
    if sidecar is None and "count" in columns and "count" not in schema.column_names:
        raise ParameterError(
            f"{str(release)!r} looks like a group-by release (a 'count' column the schema "
            f"does not declare) but its guarantee file ({side}) is missing: it states the "
            "groups and the caps the report needs; restore it"
        )
    if sidecar is None and not no_guarantee:
        raise ParameterError(
            f"the release's guarantee file {str(side)!r} is missing: the report states the "
            "release's guarantee from it; restore it, or add --no-guarantee to report a "
            "table without one"
        )
    return quality_report(
        orig, released, schema, holdout=test, target=target, guarantee=sidecar, progress=say
    )


def _report_dataset(
    release: PathLike,
    original: Any,
    schema: Any,
    holdout: Any,
    target: str | None,
    side: Path,
    sidecar: dict[str, Any] | None,
    no_guarantee: bool,
    readers: tuple[Any, Any],
    scheduler: Any,
) -> Any:
    """:func:`_report_table` when a table is a partitioned release or a Parquet dataset."""
    from ppdp.data import Schema
    from ppdp.data.distributed import SUCCESS_MARKER
    from ppdp.evaluate.parquet_report import dataset_report

    folder = Path(os.fspath(release))
    if folder.is_dir() and not (folder / SUCCESS_MARKER).is_file():
        raise DataValidationError(
            f"release ({str(folder)!r}) has no {SUCCESS_MARKER} marker: it is not a complete "
            "ppdp release (an interrupted or foreign folder); publish it again"
        )
    if _output_kind(sidecar) == "projection":
        raise ParameterError(
            f"release ({str(release)!r}): the report of an LDA projection reads its rows in "
            "memory; report it from a CSV release"
        )
    if sidecar is None and not no_guarantee:
        raise ParameterError(
            f"the release's guarantee file {str(side)!r} is missing: the report states the "
            "release's guarantee from it; restore it, or add --no-guarantee to report a "
            "table without one"
        )
    return dataset_report(
        original,
        release,
        Schema.from_file(schema),
        holdout=holdout,
        target=target,
        guarantee=sidecar,
        scheduler=scheduler,
        read=readers[0],
        read_release=readers[1],
    )


def _report_model(
    model: PathLike,
    paths: list[Path],
    original: PathLike | None,
    holdout: PathLike | None,
    target: str | None,
    read: Any,
) -> ReportFileResult:
    from ppdp.evaluate.report import model_report
    from ppdp.learn import read_model

    mf = read_model(model)
    label = None if mf.schema is None or mf.schema.label is None else mf.schema.label.name
    if target is not None and target != label:
        raise ParameterError(
            f"--target {target!r} is not the model's label ({label!r}); leave it out"
        )
    report = model_report(mf, read(holdout), original=read(original))
    _write(report, paths)
    return ReportFileResult(report, paths)
