"""Propose a schema from data, loudly.

A drafted schema reads bounds and categories from the data it is given. If that data is the
private data, the draft *leaks*: the minimum and maximum of a column are the values of two
individuals, and a rare category reveals that someone holds it. Use a draft only as a
starting point, and replace every bound and domain by public knowledge (a questionnaire's
answer range, a code list, a regulation) before any release. :func:`draft_schema` always
issues a :class:`~ppdp.exceptions.PrivacyLeakWarning` saying so, and marks the schema
``draft=True`` (``draft: true`` in its file), which every release refuses until it is
reviewed.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime
import io
import logging
import math
import os
import re
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ppdp import _progress
from ppdp._validation import check_int
from ppdp.data.names import near_names
from ppdp.data.schema import (
    CategoricalColumn,
    Category,
    LabelSpec,
    NumericColumn,
    OpenCategoricalColumn,
    PrivacyUnit,
    Schema,
)
from ppdp.exceptions import (
    DataValidationError,
    MissingColumnsError,
    OptionalDependencyError,
    ParameterError,
    PPDPWarning,
    PrivacyLeakWarning,
    user_stacklevel,
)

__all__ = [
    "LEAK_MESSAGE",
    "SEPARATORS",
    "decimal_mark",
    "detect_separator",
    "draft_schema",
    "draft_schema_from_file",
    "draft_schema_with_dropped",
    "read_table",
]

_logger = logging.getLogger("ppdp.data")

#: The warning every draft issues (one line).
LEAK_MESSAGE = (
    "schema drafted from the data: its bounds and categories leak the data they were read "
    "from unless they are public knowledge; replace them by public bounds and full domains "
    "before any release"
)

_CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zip", ".tsv", ".tsv.gz", ".txt")
_PARQUET_SUFFIXES = (".parquet", ".pq")


def _suffix(path: Path) -> str:
    name = path.name.lower()
    for s in (*_CSV_SUFFIXES, *_PARQUET_SUFFIXES):
        if name.endswith(s):
            return s
    return path.suffix.lower()


def _text_opener(p: Path):  # type: ignore[no-untyped-def]
    import bz2
    import gzip
    import lzma

    name = p.name.lower()
    if name.endswith(".zip"):
        return None  # pandas reads the archive's single member; let it
    return (
        gzip.open
        if name.endswith(".gz")
        else bz2.open
        if name.endswith(".bz2")
        else lzma.open
        if name.endswith(".xz")
        else open
    )


def _csv_header(p: Path, sep: str, encoding: str = "utf-8") -> list[str] | None:
    """The header line of a CSV file, read alone (None if it cannot be read that way)."""
    import csv

    line = _header_line(p, encoding)
    if line is None:
        return None
    try:
        return next(csv.reader([line], delimiter=sep))
    except (StopIteration, csv.Error):
        return None


#: Separators :func:`detect_separator` chooses among.
SEPARATORS = (",", ";", "\t", "|")


def _separator_counts(line: str) -> dict[str, int]:
    """How often each of :data:`SEPARATORS` occurs in ``line``, outside double quotes."""
    counts = dict.fromkeys(SEPARATORS, 0)
    quoted = False
    for ch in line:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in counts:
            counts[ch] += 1
    return counts


def detect_separator(path: str | os.PathLike[str], *, encoding: str = "utf-8") -> str | None:
    """The column separator of a delimited text file, from its header line alone.

    The candidate among ``,`` ``;`` tab ``|`` that occurs most often in the first line,
    outside double quotes; ``None`` when none occurs (one column) or the line cannot be
    read. Only the header is read: column names are public, the rows are not looked at.
    """
    try:
        line = _header_line(Path(path), encoding)
    except (DataValidationError, LookupError):
        return None
    if line is None:
        return None
    counts = _separator_counts(line)
    best = max(SEPARATORS, key=lambda c: counts[c])
    return best if counts[best] > 0 else None


def _sep_name(sep: str) -> str:
    return "tab" if sep == "\t" else repr(sep)


def _ascii_compatible(encoding: str) -> bool:
    """Whether a newline is the byte ``\\n`` in ``encoding`` (not UTF-16 or UTF-32)."""
    try:
        return "\n".encode(encoding) == b"\n"
    except (LookupError, UnicodeError):
        return False


def _utf8(encoding: str) -> bool:
    return encoding.lower().replace("_", "-") in ("utf-8", "utf8", "utf-8-sig")


def _header_line(p: Path, encoding: str) -> str | None:
    """The first line of a text file, decoded; None when it cannot be read this way.

    Only the line's own bytes are decoded (a bad byte further down is not its concern).

    Raises
    ------
    DataValidationError
        The first line is not valid in ``encoding``.
    LookupError
        ``encoding`` is unknown.
    """
    import codecs

    codecs.lookup(encoding)
    opener = _text_opener(p)
    if opener is None:
        return None
    enc = "utf-8-sig" if _utf8(encoding) else encoding
    try:
        if not _ascii_compatible(encoding):
            with opener(p, "rt", encoding=enc, newline="") as fh:
                return str(fh.readline(1 << 24))
        with opener(p, "rb") as fh:
            raw = fh.readline(1 << 24)
    except UnicodeDecodeError as exc:
        raise _decode_error(p, encoding, exc) from None
    except (OSError, EOFError, ValueError):
        return None
    try:
        text = raw.decode(enc)
    except UnicodeDecodeError as exc:
        raise _not_valid(p, encoding, raw[exc.start], 1) from None
    if "\x00" in text:  # valid UTF-8, but no header of a text table holds NUL characters
        raise DataValidationError(
            f"data ({str(p)!r}): its header line holds NUL characters: it is written in "
            "UTF-16 without a byte-order mark (pass --encoding utf-16-le, or utf-16-be) or "
            "is not a text table"
        )
    return text


#: Spreadsheet workbooks, which ppdp does not read, and what to do instead.
_WORKBOOK_SUFFIXES = (".xlsx", ".xlsm", ".xls", ".ods", ".numbers")
_WORKBOOK_ADVICE = (
    ": it looks like a spreadsheet workbook; save the sheet as CSV (UTF-8) and give that file"
)
#: The first bytes of files that are not text tables, and what each one is.
_MAGIC = (
    (b"PK\x03\x04", "a ZIP archive (an .xlsx or .ods workbook?)"),
    (b"\xd0\xcf\x11\xe0", "an old Excel (.xls) workbook"),
    (b"PAR1", "a Parquet file (give it a .parquet name)"),
)


def _not_valid(p: Path, encoding: str, byte: int | None, line: int | None) -> DataValidationError:
    """``IN is not valid UTF-8 (byte 0x.. at line N); pass --encoding (e.g. latin-1)``, or
    what the file is when its first bytes say it (UTF-16 text, a workbook)."""
    name = "UTF-8" if _utf8(encoding) else encoding
    where = []
    if byte is not None:
        where.append(f"byte 0x{byte:02x}")
    if line is not None:
        where.append(f"at line {line:,}")
    detail = f" ({' '.join(where)})" if where else ""
    hint = (
        "--encoding (e.g. latin-1)" if _utf8(encoding) else "--encoding (the one it was written in)"
    )
    head = _first_bytes(p)
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or head[:64].count(0) >= len(head[:64]) // 4 > 0:
        hint = "--encoding utf-16: it is written in UTF-16 (as some spreadsheet exports are)"
    for magic, what in _MAGIC:
        if head.startswith(magic):
            hint = f"a CSV: it is {what}; save the sheet as CSV (UTF-8) and give that file"
    return DataValidationError(f"data ({str(p)!r}) is not valid {name}{detail}; pass {hint}")


def _first_bytes(p: Path) -> bytes:
    """The first bytes of ``p`` as stored (b"" when it cannot be read)."""
    try:
        with open(p, "rb") as fh:
            return fh.read(64)
    except OSError:
        return b""


def _decode_error(p: Path, encoding: str, exc: UnicodeDecodeError) -> DataValidationError:
    """Where the first byte that ``encoding`` cannot decode is: its value and line."""
    opener = _text_opener(p)
    if opener is None or not _ascii_compatible(encoding):
        bad = exc.object[exc.start] if exc.start < len(exc.object) else None
        return _not_valid(p, encoding, bad, None)
    enc = "utf-8-sig" if _utf8(encoding) else encoding
    try:
        with opener(p, "rb") as fh:
            for number, raw in enumerate(fh, start=1):
                try:
                    raw.decode(enc if number == 1 else encoding)
                except UnicodeDecodeError as e:
                    return _not_valid(p, encoding, raw[e.start], number)
    except (OSError, EOFError, ValueError):
        pass
    return _not_valid(p, encoding, None, None)


def _parquet_columns(p: Path) -> list[str] | None:
    try:
        import pyarrow.dataset as pads

        return list(pads.dataset(str(p), format="parquet").schema.names)
    except Exception:  # unreadable here: pandas reads (and reports) it below
        return None


def _check_header(p: Path, header: list[str], columns: Sequence[str]) -> list[str]:
    """The wanted columns in file order; missing or repeated ones raise before the body is read."""
    wanted = set(columns)
    missing = [c for c in columns if c not in set(header)]
    if missing:
        names = ", ".join(repr(m) for m in missing[:10])
        more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        raise MissingColumnsError(
            f"data ({str(p)!r}): missing column(s) {names}{more} declared in the schema "
            f"(read from the header; no row was read){near_names(missing, header)}",
            tuple(missing),
        )
    found = [h for h in header if h in wanted]
    if len(found) != len(wanted):
        dup = next(h for h in found if found.count(h) > 1)
        raise DataValidationError(f"data ({str(p)!r}): column {dup!r} appears more than once")
    return found


def _say_unread(p: Path, header: Sequence[str], used: Sequence[str]) -> None:
    """Name the columns of ``header`` that are not read (a WARNING; names only)."""
    kept = set(used)
    unread = [str(h) for h in header if h not in kept]
    if not unread:
        return
    shown = ", ".join(repr(n) for n in unread[:10])
    more = f" and {len(unread) - 10} more" if len(unread) > 10 else ""
    _logger.warning(
        "%s: column(s) %s%s are not in the schema and are left out (declare them in the "
        "schema to release them)",
        p.name,
        shown,
        more,
    )


#: The decimal mark :func:`read_table` uses when it is given none (None: detect it); the
#: command line sets it from ``--decimal`` for everything one command reads
#: (:func:`decimal_mark`).
_DECIMAL: contextvars.ContextVar[str | None] = contextvars.ContextVar("decimal", default=None)
_DECIMAL_COMMA = re.compile(r"[+-]?(?:\d+(?:,\d*)?|,\d+)")


@contextlib.contextmanager
def decimal_mark(decimal: str | None) -> Iterator[None]:
    """Within the block, :func:`read_table` reads text tables with this decimal mark
    (``","`` or ``"."``) when its caller gives none; ``None`` keeps the detection."""
    token = _DECIMAL.set(_check_decimal(decimal))
    try:
        yield
    finally:
        _DECIMAL.reset(token)


def _check_decimal(decimal: str | None) -> str | None:
    if decimal is not None and decimal not in (",", "."):
        raise ParameterError(f"--decimal ({decimal!r}) must be ',' or '.'")
    return decimal


def _one_column_header(p: Path, sep: str, header: list[str] | None, encoding: str) -> None:
    """A header read as one column although another separator splits it: say which works."""
    if header is None or len(header) != 1:
        return
    line = _header_line(p, encoding) or ""
    counts = _separator_counts(line)
    best = max(SEPARATORS, key=lambda c: counts[c])
    if best == sep or counts[best] == 0:
        return
    shown = header[0] if len(header[0]) <= 60 else header[0][:57] + "..."
    raise DataValidationError(
        f"data ({str(p)!r}): with --sep {_sep_name(sep)} the header is one column "
        f"({shown!r}); it has {counts[best] + 1} columns with --sep {_sep_name(best)}: pass "
        "that, or leave --sep out to detect it"
    )


def _decimal_comma_columns(df: pd.DataFrame) -> list[str]:
    """Text columns whose every value is a number written with a decimal comma ('12,5'),
    at least one of them with the comma."""
    found: list[str] = []
    for name in df.columns:
        s = df[name]
        if pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
            continue
        values = s.dropna()
        if values.empty or not all(isinstance(v, str) for v in values.head(100)):
            continue
        text = values.astype(str).str.strip()
        if not text.head(100).str.fullmatch(_DECIMAL_COMMA).all():
            continue  # cheap: most text columns fail on their first rows
        if text.str.fullmatch(_DECIMAL_COMMA).all() and text.str.contains(",").any():
            found.append(str(name))
    return found


def _read_decimal_commas(
    p: Path, df: pd.DataFrame, decimal: str | None, *, say: bool = True
) -> pd.DataFrame:
    """Columns of numbers with decimal commas read as numbers (said, if ``say``, in a
    warning that names the columns, never a value), unless the caller gave the decimal
    mark."""
    if decimal is not None:
        return df
    found = _decimal_comma_columns(df)
    if not found:
        return df
    out = df.copy()
    for name in found:
        out[name] = pd.to_numeric(
            out[name].astype(str).str.strip().str.replace(",", ".", regex=False)
        )
    if not say:
        return out
    _logger.warning(
        "read %s with ',' as the decimal mark: every value of column(s) %s is a number "
        "written like '12,5' (--decimal , to say so; --decimal . to read them as text)",
        p.name,
        ", ".join(repr(n) for n in found),
    )
    return out


def read_table(
    path: str | os.PathLike[str],
    *,
    columns: Sequence[str] | None = None,
    sep: str | None = None,
    encoding: str = "utf-8",
    decimal: str | None = None,
    say_decimal: bool = True,
    say_unread: bool = False,
) -> pd.DataFrame:
    """Read a CSV (optionally compressed) or Parquet file into a DataFrame.

    Parameters
    ----------
    path : path
        The file (a Parquet dataset may be a folder).
    columns : sequence of str, optional
        Read only these columns. The header is read first, alone: a missing (or repeated)
        column is reported before any row is read, and the other columns of a wide file
        are never materialised.
    sep : str, optional
        The column separator of a text file. ``None`` detects it from the header line
        among ``,`` ``;`` tab ``|`` (:func:`detect_separator`). A separator other than the
        extension's default (``,`` for .csv, tab for .tsv) is said on the ``ppdp.data``
        logger: at INFO (``ppdp -v``) when it is the only candidate in the header, at
        WARNING (always shown) when the header holds several candidates. A given ``sep``
        that reads the header as one column, where another candidate splits it, is
        refused in one line naming the separator that works.
    encoding : str, default "utf-8"
        The text encoding (a byte-order mark is skipped for UTF-8). A file that is not
        valid in it is refused in one line naming the first bad byte and its line.
    decimal : {None, ",", "."}
        The decimal mark of a text file's numbers. ``None`` (default; the command line's
        ``--decimal`` when :func:`decimal_mark` is in effect) reads ``.``, except in a file
        not separated by ``,``: there a text column whose every value is a number written
        with a comma (``12,5``) is read as numbers, with a WARNING on the ``ppdp.data``
        logger naming the columns. ``","``: pandas reads with ``decimal=","``. ``"."``:
        no detection.
    say_decimal : bool, default True
        Whether a detected decimal comma is said (False: a file that is expected to have
        one, such as a release written with ``--output-decimal ,``).
    say_unread : bool, default False
        With ``columns``: name the file's other columns in a WARNING on the ``ppdp.data``
        logger (names only, never a value), for a release that leaves them out because the
        schema does not declare them.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    DataValidationError
        The suffix is not a supported format, a wanted column is missing, the text is not
        valid in ``encoding``, or the file cannot be parsed (one line).
    ParameterError
        ``sep``, ``encoding`` or ``decimal`` is not a valid value.
    OptionalDependencyError
        Parquet without ``pyarrow`` installed.
    """
    p = Path(path)
    suffix = _suffix(p)
    decimal = _check_decimal(decimal) if decimal is not None else _DECIMAL.get()
    if suffix not in _CSV_SUFFIXES + _PARQUET_SUFFIXES:
        workbook = _WORKBOOK_ADVICE if suffix in _WORKBOOK_SUFFIXES else ""
        raise DataValidationError(
            f"data ({str(p)!r}) must be a .csv (optionally compressed), .tsv, .txt or .parquet "
            f"file{workbook}"
        )
    if p.is_dir() and suffix not in _PARQUET_SUFFIXES:
        raise DataValidationError(f"data ({str(p)!r}) is a folder, not a file")
    if not p.exists():
        raise FileNotFoundError(f"data ({str(p)!r}) does not exist")
    read_sep = None  # the separator the CSV is read with, once known
    try:
        if suffix in _PARQUET_SUFFIXES:
            try:
                import pyarrow  # noqa: F401
            except ImportError as exc:
                raise OptionalDependencyError(
                    "reading Parquet needs pyarrow: pip install 'ppdp[dask]'"
                ) from exc
            if columns is None:
                return pd.read_parquet(p)
            names = _parquet_columns(p)
            use = list(columns) if names is None else _check_header(p, names, columns)
            if say_unread and names is not None:
                _say_unread(p, names, use)
            return pd.read_parquet(p, columns=use)
        sep = read_sep = _separator(p, suffix, sep, encoding)
        if decimal == sep:
            raise ParameterError(f"--decimal ({decimal!r}) cannot also be the separator --sep")
        options: dict[str, Any] = {"sep": sep, "encoding": encoding}
        if decimal is not None:
            options["decimal"] = decimal
        header = _csv_header(p, sep, encoding)
        _one_column_header(p, sep, header, encoding)
        if header is not None:
            _refuse_fields_beyond_header(p, sep, encoding, len(header))
        if header is None:  # let pandas read (and report) it whole
            df = _read_csv(p, suffix, **options)
        elif columns is None:
            with warnings.catch_warnings():  # only empty fields past the header are left
                warnings.simplefilter("ignore", pd.errors.ParserWarning)
                # never the first column as row labels when rows end in a separator
                df = _read_csv(p, suffix, index_col=False, **options)
        else:
            use = _check_header(p, header, columns)
            if say_unread:
                _say_unread(p, header, use)
            df = _read_csv(p, suffix, usecols=use, **options)[use]
        return df if sep == "," else _read_decimal_commas(p, df, decimal, say=say_decimal)
    except (OptionalDependencyError, FileNotFoundError, DataValidationError, ParameterError):
        raise
    except LookupError:
        raise ParameterError(f"encoding ({encoding!r}) is not a known text encoding") from None
    except UnicodeDecodeError as exc:
        raise _decode_error(p, encoding, exc) from None
    except (ValueError, OSError) as exc:
        lines = str(exc).strip().splitlines()
        first = lines[0] if lines else type(exc).__name__
        kind = "Parquet" if suffix in _PARQUET_SUFFIXES else "CSV"
        ragged = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", first)
        if kind == "CSV" and ragged and read_sep is not None:
            want, line, saw = (int(g) for g in ragged.groups())
            first = (
                f"line {line:,} has {saw} fields where the header has {want} (separator "
                f"{_sep_name(read_sep)}): a value holding the separator must be in double "
                "quotes, or the file needs another --sep"
            )
        raise DataValidationError(
            f"data ({str(p)!r}) could not be read as {kind}: {first}"
        ) from exc


def _separator(p: Path, suffix: str, sep: str | None, encoding: str) -> str:
    """``sep`` checked, or detected from the header (said on the ``ppdp.data`` logger)."""
    if sep is not None:
        if not isinstance(sep, str) or len(sep) != 1:
            raise ParameterError(f"sep ({sep!r}) must be a single character, e.g. ';'")
        return sep
    default = "\t" if suffix.startswith(".tsv") else ","
    line = _header_line(p, encoding)
    counts = _separator_counts(line or "")
    best = max(SEPARATORS, key=lambda c: counts[c])
    if counts[best] == 0:
        return default
    others = [c for c in SEPARATORS if c != best and counts[c] > 0]
    if others:
        also = ", ".join(f"{counts[c]} {_sep_name(c)}" for c in others)
        _logger.warning(
            "read %s as %s-separated: its header holds %d %s but also %s (--sep to choose another)",
            p.name,
            _sep_name(best),
            counts[best],
            _sep_name(best),
            also,
        )
    elif best != default:
        _logger.info(
            "read %s as %s-separated (detected from its header; --sep to override)",
            p.name,
            _sep_name(best),
        )
    return best


#: Files at least this large are read with a progress bar (when bars are on).
_PROGRESS_BYTES = 8 << 20
_COMPRESSION = {
    ".csv.gz": "gzip",
    ".csv.bz2": "bz2",
    ".csv.xz": "xz",
    ".csv.zip": "zip",
    ".tsv.gz": "gzip",
}


class _CountingFile(io.RawIOBase):
    """A binary file that moves a progress bar to its position after each read."""

    def __init__(self, raw: io.BufferedReader, progress: _progress._Bar) -> None:
        super().__init__()
        self._raw = raw
        self._progress = progress

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self._raw.seekable()

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._raw.seek(offset, whence)

    def tell(self) -> int:
        return self._raw.tell()

    def readinto(self, buffer: Any) -> int:
        n = self._raw.readinto(buffer)
        if n:
            self._progress(self._raw.tell())
        return n


#: Bytes of a CSV file scanned at a time for rows longer than the header.
_SCAN_BYTES = 16 << 20


def _refuse_fields_beyond_header(p: Path, sep: str, encoding: str, width: int) -> None:
    """Refuse a CSV file with a row holding a value past the header's ``width`` columns.

    pandas drops such values without a word when it reads chosen columns (and takes the
    first column for row labels when the first row is the long one), though they mean a
    value holding an unquoted separator, which shifts the rest of its row. Separators
    are counted per line at C speed; a file where a line may be long, with quotes in its
    body, or in an encoding where a newline is not one byte, is parsed with the ``csv``
    module, which finds the line. A row whose extra fields are all empty (a trailing
    separator) is fine.
    """
    opener = _text_opener(p)
    if opener is None or len(sep) != 1:
        return
    found = None
    if _ascii_compatible(encoding) and ord(sep) < 128:
        found = _long_row_by_counting(p, opener, ord(sep), width)
    if found == "parse" or not _ascii_compatible(encoding) or ord(sep) >= 128:
        found = _long_row_by_parsing(p, opener, sep, encoding, width)
    if isinstance(found, tuple):
        line, fields = found
        raise DataValidationError(
            f"data ({str(p)!r}) could not be read as CSV: line {line:,} has {fields} fields "
            f"where the header has {width} (separator {_sep_name(sep)}): a value holding the "
            "separator must be in double quotes, or the file needs another --sep"
        )


def _long_row_by_counting(p: Path, opener: Any, sep: int, width: int) -> str | None:
    """None when no row has more than ``width`` fields; ``"parse"`` when one may (or the
    body has a double quote), for :func:`_long_row_by_parsing` to tell exactly.

    Every byte but newlines, separators and quotes is dropped (``bytes.translate``, at C
    speed); the gaps between the newlines left are the separators of each line.
    """
    drop = bytes(b for b in range(256) if b not in (10, 34, sep))
    carry = b""  # the kept bytes of the unfinished last line of the previous chunk
    with opener(p, "rb") as fh:
        fh.readline(1 << 24)  # the header (read alone; quotes there do not matter)
        while True:
            chunk = fh.read(_SCAN_BYTES)
            kept = carry + chunk.translate(None, drop)
            if b'"' in kept:
                return "parse"
            codes = np.frombuffer(kept, dtype=np.uint8)
            breaks = np.flatnonzero(codes == 10)
            ends = breaks if chunk else np.append(breaks, codes.size)
            if np.any(np.diff(ends, prepend=-1) - 1 >= width):
                return "parse"
            if not chunk:
                return None
            carry = kept[int(breaks[-1]) + 1 :] if breaks.size else kept


def _long_row_by_parsing(
    p: Path, opener: Any, sep: str, encoding: str, width: int
) -> tuple[int, int] | None:
    """(line, fields) of the first row with a value past ``width`` fields, or None."""
    import csv

    enc = "utf-8-sig" if _utf8(encoding) else encoding
    with opener(p, "rt", encoding=enc, newline="") as fh:
        reader = csv.reader(fh, delimiter=sep)
        next(reader, None)
        for row in reader:
            if len(row) > width and any(v.strip() for v in row[width:]):
                return reader.line_num, len(row)
    return None


def _read_csv(p: Path, suffix: str, **kwargs: Any) -> pd.DataFrame:
    """``pd.read_csv``, with a bar over the file's bytes when it is large and bars are on."""
    size = p.stat().st_size
    if size < _PROGRESS_BYTES or not _progress.is_active():
        return pd.read_csv(p, **kwargs)
    with (
        _progress.bar(f"reading {p.name}", total=size, unit="B", unit_scale=True) as bar,
        open(p, "rb") as raw,
    ):
        handle = io.BufferedReader(_CountingFile(raw, bar))
        return pd.read_csv(handle, compression=_COMPRESSION.get(suffix), **kwargs)


def _sorted_values(values: Sequence[object]) -> list[Category]:
    out: list[Category] = []
    for v in values:
        if isinstance(v, np.bool_ | bool):
            out.append(bool(v))
        elif isinstance(v, np.integer | int) or (
            isinstance(v, float | np.floating) and float(v).is_integer()
        ):
            out.append(int(v))
        else:
            out.append(str(v))
    return sorted(set(out), key=lambda c: (1, c) if isinstance(c, str) else (0, c))


_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


def _natural_order(values: Sequence[object]) -> list[Category] | None:
    """Calendar order for month or weekday names (full or 3-letter, any case), else None."""
    if not values or not all(isinstance(v, str) for v in values):
        return None
    for names in (_MONTHS, _WEEKDAYS):
        rank = {}
        for i, full in enumerate(names):
            rank[full] = i
            rank[full[:3]] = i
        keys = [str(v).strip().lower() for v in values]
        if all(k in rank for k in keys):
            return [v for _, v in sorted(zip((rank[k] for k in keys), values, strict=True))]  # type: ignore[misc]
    return None


def _category_order(values: Sequence[object]) -> tuple[Category, ...]:
    """Numbers ascending, months and weekdays in calendar order, texts sorted with their
    numbers read as numbers (``c2`` before ``c10``), so a reviewer finds a code where
    expected and the order says nothing of the data's row order."""
    natural = _natural_order(list(values))
    if natural is not None:
        return tuple(natural)
    cleaned = _sorted_values(values)
    if all(not isinstance(c, str) for c in cleaned):
        return tuple(cleaned)
    seen: dict[Category, None] = {}
    for v in values:
        seen.setdefault(_sorted_values([v])[0], None)
    return tuple(sorted(seen, key=_text_key))


def _text_key(value: Category) -> tuple[Any, ...]:
    """Case-folded text with each run of digits compared as a number."""
    parts = re.split(r"(\d+)", str(value))
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p.casefold()) for p in parts if p)


#: Most decimals a draft proposes; values finer than this get no ``decimals``.
_MAX_DRAFT_DECIMALS = 6


def _decimals(vals: np.ndarray, dtype: Any) -> int | None:
    """The fewest decimals ``d`` in 0..6 that every value is a multiple of ``10**-d`` at.

    "A multiple" within a few units of the values' floating precision (``30007.09`` is not
    exactly a multiple of 0.01 in binary); ``None`` when no ``d`` up to 6 fits.
    """
    eps = np.finfo(np.float32 if str(dtype).lower() == "float32" else np.float64).eps
    tol = 4.0 * float(eps) * np.maximum(np.abs(vals), 1.0)
    for d in range(_MAX_DRAFT_DECIMALS + 1):
        if np.all(np.abs(np.round(vals, d) - vals) <= tol):
            return d
    return None


#: Below this many rows (values) a column's being all distinct or all equal says nothing.
_FEW_ROWS = 20


def draft_schema(
    df: pd.DataFrame,
    *,
    label: str | None = None,
    max_categories: int = 50,
    missing_values: Sequence[Category] = (),
    exclude: Sequence[str] = (),
    max_integer_codes: int = 12,
) -> Schema:
    """Propose a schema from ``df``. ALWAYS warns :class:`~ppdp.exceptions.PrivacyLeakWarning`.

    Numeric columns get their observed minimum and maximum as bounds (integer columns are
    marked ``integer``, other numeric columns get ``decimals``: the fewest decimals, up to 6,
    their values are written with; a constant column gets ``upper = lower + 1``); boolean
    columns become integer columns on ``[0, 1]``; other columns become categorical with
    their observed values: numbers ascending, month and weekday names in calendar order,
    anything else sorted with its numbers read as numbers. Integer columns with at most
    ``max_integer_codes`` distinct values, each seen five times on average (codes such as
    SEX 1/2 or EDUCATION 1–6), are drafted as categorical, with a warning naming them. A
    column with a distinct value in every row (an identifier) is left out, with a warning.
    The label's classes are its observed values.

    Parameters
    ----------
    df : DataFrame
        The data. If it is private, the draft leaks it (see the module docstring).
    label : str, optional
        Column to declare as the label.
    max_categories : int, default 50
        Non-numeric columns with more distinct values are drafted as *open* columns
        (:class:`~ppdp.data.OpenCategoricalColumn`: ``open: true``, no category list), with a
        :class:`~ppdp.exceptions.PPDPWarning`: only a release that selects group keys
        privately reads them (``GroupByPublisher(keys="private")``). A label with more
        classes is an error.
    missing_values : sequence of str or int
        Tokens meaning "missing" (e.g. ``["?"]``): excluded from categories and bounds and
        written into the schema.
    exclude : sequence of str
        Columns to leave out (an ID, free text, anything that is not a feature).
    max_integer_codes : int, default 12
        Integer columns with at most this many distinct values are drafted as categorical
        (0 drafts every integer column as numeric).

    Returns
    -------
    Schema
        A draft, with ``nan_policy="error"`` and ``draft=True``: every release refuses it
        until it is reviewed (:meth:`~ppdp.data.Schema.reviewed`, or deleting
        ``draft: true`` from the file it is written to).
    """
    schema, _ = draft_schema_with_dropped(
        df,
        label=label,
        max_categories=max_categories,
        missing_values=missing_values,
        exclude=exclude,
        max_integer_codes=max_integer_codes,
    )
    return schema


def draft_schema_with_dropped(
    df: pd.DataFrame,
    *,
    label: str | None = None,
    max_categories: int = 50,
    missing_values: Sequence[Category] = (),
    exclude: Sequence[str] = (),
    max_integer_codes: int = 12,
) -> tuple[Schema, dict[str, str]]:
    """:func:`draft_schema`, and the columns it left out (an identifier, a column with no
    values, dates it cannot declare), each with why: ``{name: "has no values"}``, the reason
    a phrase that follows the column's name. Columns the caller excluded, the label and the
    proposed privacy unit's column are not among them (they are not left out by the draft).
    The warnings are :func:`draft_schema`'s.
    """
    if not isinstance(df, pd.DataFrame):
        raise DataValidationError(f"df must be a pandas DataFrame, not {type(df).__name__}")
    max_categories = check_int("max_categories", max_categories, minimum=1)
    tokens = tuple(missing_values)
    max_integer_codes = check_int("max_integer_codes", max_integer_codes, minimum=0)
    if label is not None and label not in df.columns:
        near = near_names([label], [str(c) for c in df.columns])
        raise DataValidationError(f"label ({label!r}) is not a column of the data{near}")
    unknown = [c for c in exclude if c not in df.columns]
    if unknown:
        near = near_names(unknown[:1], [str(c) for c in df.columns])
        raise DataValidationError(f"exclude ({unknown[0]!r}) is not a column of the data{near}")
    if label is not None and label in exclude:
        raise ParameterError(f"exclude ({label!r}) is the label; a label cannot be excluded")
    warnings.warn(PrivacyLeakWarning(LEAK_MESSAGE), stacklevel=user_stacklevel())
    columns: list[NumericColumn | CategoricalColumn] = []
    opened: list[OpenCategoricalColumn] = []
    distinct: dict[str, int] = {}  # the open columns' numbers of distinct values
    coded: list[str] = []
    skewed_low: list[str] = []  # crowded near the lower bound: a log scale spreads them
    skewed_high: list[str] = []
    constant: list[str] = []
    dropped: dict[str, str] = {}
    n_rows = len(df)
    unit = _proposed_unit(df, label, exclude, tokens, max(max_integer_codes, max_categories))
    for name in df.columns:
        if name == label or name in exclude or (unit is not None and name == unit.column):
            continue
        if not isinstance(name, str):
            raise DataValidationError(f"column names must be strings; got {name!r}")
        s = df[name]
        if tokens:
            s = s.mask(s.isin(list(tokens)))
        s = s.dropna()
        if s.empty:
            unnamed = re.fullmatch(r"Unnamed: (\d+)", name)
            why = (
                "has no name and no values (a separator at the end of every line)"
                if unnamed
                else "has no values"
            )
            dropped[name] = why
            what = (
                f"column {int(unnamed[1]) + 1} of the header {why}"
                if unnamed
                else f"column {name!r} {why}"
            )
            warnings.warn(
                PPDPWarning(f"{what}: left out of the draft"), stacklevel=user_stacklevel()
            )
            continue
        if pd.api.types.is_datetime64_any_dtype(s.dtype) or not (
            pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype)
        ):
            dated = _date_column(name, s)
            if dated is not None:
                if isinstance(dated, NumericColumn):
                    columns.append(dated)
                else:
                    dropped[name] = dated.reason
                    warnings.warn(PPDPWarning(dated.warning), stacklevel=user_stacklevel())
                continue
        looks_like_id = not pd.api.types.is_float_dtype(s.dtype) and not (
            pd.api.types.is_bool_dtype(s.dtype)
        )
        if looks_like_id and n_rows >= _FEW_ROWS and len(s) == n_rows and s.nunique() == n_rows:
            dropped[name] = "has a different value in every row (it looks like an identifier)"
            warnings.warn(
                PPDPWarning(
                    f"column {name!r} has a different value in every row: it looks like an "
                    "identifier and was left out of the draft (exclude it to say so: --exclude, or "
                    "exclude=[...] in Python; "
                    "declare it by hand if it is a real feature)"
                ),
                stacklevel=user_stacklevel(),
            )
            continue
        if pd.api.types.is_bool_dtype(s.dtype):
            columns.append(NumericColumn(name, 0, 1, integer=True))
            continue
        if not pd.api.types.is_numeric_dtype(s.dtype):
            converted = pd.to_numeric(s, errors="coerce")
            if len(s) and converted.notna().all():
                s = converted
        if pd.api.types.is_numeric_dtype(s.dtype):
            vals = s.to_numpy(dtype=np.float64)
            vals = vals[np.isfinite(vals)]
            if vals.size == 0:
                dropped[name] = "has no finite values"
                warnings.warn(
                    PPDPWarning(
                        f"column {name!r} has no finite values and was left out of the draft"
                    ),
                    stacklevel=user_stacklevel(),
                )
                continue
            lo, hi = float(vals.min()), float(vals.max())
            integer = bool(pd.api.types.is_integer_dtype(s.dtype)) or bool(
                np.all(vals == np.round(vals))
            )
            codes = np.unique(vals)
            if codes.size == 1 and vals.size >= _FEW_ROWS:
                constant.append(name)
            # Codes: few distinct integers, each seen on average at least 5 times.
            if integer and 2 <= codes.size <= max_integer_codes and vals.size >= 5 * codes.size:
                columns.append(CategoricalColumn(name, tuple(int(v) for v in codes)))
                coded.append(name)
                continue
            if integer:
                lo, hi = math.floor(lo), math.ceil(hi)
            if not lo < hi:
                hi = lo + 1
            crowded = _crowded(vals, lo, hi)
            if crowded is not None:
                (skewed_low if crowded == "low" else skewed_high).append(name)
            columns.append(
                NumericColumn(
                    name,
                    int(lo) if integer else lo,
                    int(hi) if integer else hi,
                    integer=integer,
                    decimals=None if integer else _decimals(vals, s.dtype),
                )
            )
            continue
        values = pd.unique(s)
        if len(values) == 1 and len(s) >= _FEW_ROWS:
            constant.append(name)
        if len(values) > max_categories:
            opened.append(OpenCategoricalColumn(name))
            distinct[name] = len(values)
            continue
        if len(values) == 0:
            dropped[name] = "has no values"
            warnings.warn(
                PPDPWarning(f"column {name!r} has no values and was left out of the draft"),
                stacklevel=user_stacklevel(),
            )
            continue
        columns.append(CategoricalColumn(name, _category_order(list(values))))
    _warn_columns(
        constant,
        "column(s) {names} hold one value in every row: a release learns nothing from them; "
        "exclude them (--exclude, or exclude=[...] in Python) unless the data to release "
        "will vary there",
    )
    if opened:
        counted = ", ".join(f"{c.name!r} ({distinct[c.name]:,})" for c in opened)
        warnings.warn(
            PPDPWarning(
                f"column(s) {counted} have more distinct values than "
                f"max_categories={max_categories} (--max-categories on the command line): "
                "drafted as open (open: true, no category list), usable only as privately "
                "selected group keys (ppdp publish groupby --keys private); raise "
                "--max-categories to draft their categories, declare them by hand, or delete them"
            ),
            stacklevel=user_stacklevel(),
        )
    _warn_columns(
        coded,
        f"integer column(s) {{names}} have at most {max_integer_codes} distinct values and "
        "were drafted as categorical (codes); declare a column numeric if its codes are "
        "ordered quantities",
    )
    _warn_columns(
        skewed_low,
        "numeric column(s) {names} have most values in the lowest sixteenth of their range "
        "(skewed): equal-width bins would lose their distribution in a synthetic table, and "
        "learners see them crowded near 0; declare 'scale: log' for them (values then spread "
        "over orders of magnitude above one unit; docs/schema.md), declare public cut points "
        "('cuts', e.g. brackets), or let the synthesizer place them (--binning "
        "private-quantiles)",
    )
    _warn_columns(
        skewed_high,
        "numeric column(s) {names} have most values in the highest sixteenth of their range "
        "(skewed): equal-width bins would lose their distribution in a synthetic table; "
        "declare public cut points for them ('cuts', e.g. brackets: docs/schema.md), or let "
        "the synthesizer place them (--binning private-quantiles)",
    )
    if not columns and not opened:
        raise DataValidationError("the data has no column that could be drafted")
    label_spec = None
    if label is not None:
        s = df[label]
        if tokens:
            s = s.mask(s.isin(list(tokens)))
        classes = _sorted_values(pd.unique(s.dropna()))
        if len(classes) < 2 or len(classes) > max_categories:
            raise DataValidationError(
                f"label ({label!r}) has {len(classes)} distinct values; a label needs between "
                f"2 and max_categories={max_categories}"
            )
        label_spec = LabelSpec(label, tuple(classes))
    schema = Schema(
        columns=tuple(columns),
        label=label_spec,
        missing_values=tokens,
        privacy_unit=unit,
        per_person=_proposed_per_person(df, unit, [c.name for c in columns]),
        open_columns=tuple(opened),
        draft=True,
    )
    return schema, dropped


#: Names of columns that may identify a person (``idcode``, ``patient_id``, ``nr``...).
_ID_NAME = re.compile(
    r"(^|[_\W])(id|ids|idcode|pid|nr|num|key)($|[_\W])|^id|id$|patient|person|subject|member"
    r"|customer|client|household|respondent|individual",
    re.IGNORECASE,
)


def _proposed_unit(
    df: pd.DataFrame,
    label: str | None,
    exclude: Sequence[str],
    tokens: tuple[Category, ...],
    max_codes: int,
) -> PrivacyUnit | None:
    """A privacy unit for the first column that looks like a person's identifier and
    repeats (several rows per person) with more values than ``max_codes`` (fewer would be
    a code or a category), with ``max_rows`` the 90th percentile of rows per
    person in ``df`` (read from the data, like every drafted value: a proposal to review).
    Warns, naming the column and the proposal."""
    n_rows = len(df)
    if n_rows < _FEW_ROWS:
        return None
    for name in df.columns:
        if name == label or name in exclude or not isinstance(name, str):
            continue
        if not _ID_NAME.search(name):
            continue
        s = df[name]
        if tokens:
            s = s.mask(s.isin(list(tokens)))
        if pd.api.types.is_float_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
            continue
        per_person = s.dropna().value_counts()
        if per_person.size <= max(max_codes, 1) or per_person.size >= n_rows:
            # a code or a category (Adult's education-num: 16 values), or one row each
            # (an identifier left out as before)
            continue
        if per_person.max() < 2:
            continue
        max_rows = max(1, math.ceil(float(np.quantile(per_person.to_numpy(), 0.9))))
        warnings.warn(
            PPDPWarning(
                f"column {name!r} repeats across rows ({per_person.size:,} values, up to "
                f"{int(per_person.max())} rows each): it looks like a person's identifier, so "
                f"the draft proposes privacy_unit: {{column: {name}, max_rows: {max_rows}}} "
                "(90th percentile of rows per person, read from the data: review it, write "
                "max_rows: auto to have each release choose it under DP, or delete "
                "privacy_unit if each row is a different person)"
            ),
            stacklevel=user_stacklevel(),
        )
        return PrivacyUnit(name, max_rows)
    return None


def _proposed_per_person(
    df: pd.DataFrame, unit: PrivacyUnit | None, names: Sequence[str]
) -> tuple[str, ...]:
    """The drafted columns that hold one value within every person (and more than one
    across persons): a proposal, read from the data like every drafted value; warns once,
    naming them."""
    if unit is None or not names:
        return ()
    per = df.groupby(df[unit.column].astype(str), sort=False)[list(names)]
    within = per.nunique(dropna=False).max()
    overall = df[list(names)].nunique(dropna=False)
    found = tuple(n for n in names if within[n] <= 1 and overall[n] > 1)
    if found:
        warnings.warn(
            PPDPWarning(
                f"column(s) {', '.join(found)} hold one value within every {unit.column}: the "
                "draft marks them per_person: true (a synthetic table then draws them once per "
                "person); review it, and delete per_person where a value may change"
            ),
            stacklevel=user_stacklevel(),
        )
    return found


#: Dates as a draft recognises them: year first (2025-03-14, 2025/03/14, 2025.03.14) or
#: last (14/03/2025, 03-14-2025, 14.3.25), each optionally followed by a time of day.
_YEAR_FIRST = re.compile(r"(\d{4})([-/.])(\d{1,2})\2(\d{1,2})")
_YEAR_LAST = re.compile(r"(\d{1,2})([-/.])(\d{1,2})\2(\d{2}|\d{4})")
_TIME = re.compile(r"[ T]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?")


def _shape(text: str) -> str:
    """A value's shape with no digit of the data: ``'dd/dd/dddd'``."""
    return re.sub(r"\d", "d", text)


def _date_format(texts: list[str]) -> tuple[str | None, str]:
    """``(format, "")`` when every text is a date of one shape that names its day (the
    strptime format), ``(None, why)`` when they are dates but not of such a shape, and
    ``(None, "")`` when some text is no date."""
    first, last = (
        [_YEAR_FIRST.fullmatch(v) for v in texts],
        [_YEAR_LAST.fullmatch(v) for v in texts],
    )
    if all(first) and len({m[2] for m in first if m}) == 1:
        sep = first[0][2] if first[0] else "-"
        return f"%Y{sep}%m{sep}%d", ""
    if not all(last) or len({m[2] for m in last if m}) != 1:
        return None, ""
    found = [m for m in last if m]
    sep = found[0][2]
    shape = _shape(texts[0])
    if any(len(m[4]) == 2 for m in found):
        return None, (
            f"written like {shape!r}, with two-digit years (which century?): declare it by "
            f"hand with date: true and a date_format such as '%d{sep}%m{sep}%Y' once the "
            "years are written in full"
        )
    a = [int(m[1]) for m in found]
    b = [int(m[3]) for m in found]
    if max(a) > 12 >= max(b):
        return f"%d{sep}%m{sep}%Y", ""
    if max(b) > 12 >= max(a):
        return f"%m{sep}%d{sep}%Y", ""
    if max(a) <= 12 and max(b) <= 12:
        return None, (
            f"written like {shape!r}, where no day is above 12, so the day and the month "
            f"cannot be told apart: declare it by hand with date: true and date_format "
            f"'%d{sep}%m{sep}%Y' or '%m{sep}%d{sep}%Y'"
        )
    return None, ""


@dataclass(frozen=True)
class _LeftOut:
    """A column the draft leaves out: the ``warning`` it gives, and the ``reason`` alone
    (a phrase that follows the column's name)."""

    warning: str
    reason: str


def _date_column(name: str, s: pd.Series) -> NumericColumn | _LeftOut | None:
    """A date column drafted from ``s`` (no missing value), the column left out instead
    (dates of an ambiguous shape, or with a time of day), or None: not dates.

    Its bounds are the first and the last date observed (they leak, as every drafted
    bound); ``date_format`` is declared when the texts are not ISO ``YYYY-MM-DD``.
    """
    from ppdp.data.dates import ISO_FORMAT, parse_dates

    times = ""
    fmt: str | None = None
    if pd.api.types.is_datetime64_any_dtype(s.dtype):
        days, _ = parse_dates(s)
        stamps = s.dt.tz_localize(None) if getattr(s.dtype, "tz", None) is not None else s
        if (stamps != stamps.dt.floor("D")).any():
            times = "its times of day are left out (dates only: times are out of scope)"
    else:
        raw = pd.unique(s)
        if not all(isinstance(v, str | datetime.date) for v in raw):
            return None
        texts = [v.strip() for v in raw if isinstance(v, str)]
        if texts:
            plain = [_TIME.sub("", v, count=1) if _TIME.search(v) else v for v in texts]
            fmt, why = _date_format(plain)
            if fmt is None and not why:
                return None
            shape = _shape(texts[0])
            if any(p != v for p, v in zip(plain, texts, strict=True)):
                return _LeftOut(
                    f"column {name!r} holds dates with a time of day (written like "
                    f"{shape!r}), which a schema cannot declare (times are out of scope): "
                    "left out of the draft; write the dates alone (YYYY-MM-DD) to declare "
                    "it a date column",
                    f"holds dates with a time of day (written like {shape!r}): a schema "
                    "declares dates only",
                )
            if fmt is None:
                return _LeftOut(
                    f"column {name!r} holds dates {why}; left out of the draft",
                    f"holds dates {why}",
                )
        days, not_dates = parse_dates(s, fmt)
        if not_dates.any():  # an impossible date (2025-02-30): no date column
            return None
        if any(isinstance(v, datetime.datetime) for v in raw) and any(
            isinstance(v, datetime.datetime) and v.time() != datetime.time(0) for v in raw
        ):
            times = "its times of day are left out (dates only: times are out of scope)"
    days = days[np.isfinite(days)]
    if days.size == 0:
        return None
    if times:
        warnings.warn(
            PPDPWarning(
                f"column {name!r} holds dates and times: drafted as a date column; {times}"
            ),
            stacklevel=user_stacklevel(),
        )
    lo, hi = int(days.min()), int(days.max())
    return NumericColumn(
        name,
        lo,
        hi if hi > lo else lo + 1,
        date=True,
        date_format=None if fmt in (None, ISO_FORMAT) else fmt,
    )


def _warn_columns(columns: list[str], message: str) -> None:
    """One draft warning naming ``columns`` (``{names}`` in ``message``); none when empty."""
    if columns:
        names = ", ".join(repr(c) for c in columns)
        warnings.warn(PPDPWarning(message.format(names=names)), stacklevel=user_stacklevel())


def _crowded(values: NDArray[np.float64], lower: float, upper: float) -> str | None:
    """``"low"`` or ``"high"`` when at least half of 50 or more ``values`` lie strictly
    inside the first or the last sixteenth of ``[lower, upper]`` (TableSynthesizer's default
    bin), else None; values at a bound do not count (a zero-heavy column's zeros get a code
    of their own)."""
    if values.size < 50:  # too few values to tell a shape
        return None
    width = (upper - lower) / 16
    inside = values[(values > lower) & (values < upper)]  # the bounds are the extremes here
    first = np.count_nonzero(inside < lower + width) / values.size
    last = np.count_nonzero(inside >= upper - width) / values.size
    if max(first, last) < 0.5:
        return None
    return "low" if first >= last else "high"


def draft_schema_from_file(
    path: str | os.PathLike[str],
    *,
    label: str | None = None,
    max_categories: int = 50,
    missing_values: Sequence[Category] = (),
    exclude: Sequence[str] = (),
    max_integer_codes: int = 12,
    sep: str | None = None,
    encoding: str = "utf-8",
    decimal: str | None = None,
) -> Schema:
    """Read a CSV or Parquet file and :func:`draft_schema` it (same warning, same caveats).

    ``sep``, ``encoding`` and ``decimal`` as :func:`read_table` (the separator and a
    decimal comma are detected when not given).
    """
    df = read_table(path, sep=sep, encoding=encoding, decimal=decimal)
    return draft_schema(
        df,
        label=label,
        max_categories=max_categories,
        missing_values=missing_values,
        exclude=exclude,
        max_integer_codes=max_integer_codes,
    )
