"""Access to the data files shipped inside the package (works from an installed wheel)."""

from __future__ import annotations

import hashlib
import io
from importlib import resources

from ppdp.exceptions import DataValidationError

#: SHA-256 of each shipped file, as committed; checked on every load.
CHECKSUMS = {
    "adult/adult_train.csv.gz": "599a6be481509f8a937c2df964aa28edb6f30a8d4ac65910837830e7e7560b1a",
    "adult/adult_test.csv.gz": "eec31c7dc56c12c1e81137d172821e69b5aa1f50e5ce6804dc77d1ee2bc6d48c",
    "nltcs/nltcs.csv.gz": "649948d3cd63f02e794036dfc930d75ac045411a20cab2281b6dd344f97c37f7",
    "kddcup99/kddcup99_10pct_sample70k.csv.gz": (
        "350112eaa5af0edee3f29fbaa49540b0045e0597f10e55ad69b4f8f6e40423a2"
    ),
}


def read_bytes(relpath: str) -> bytes:
    """The bytes of ``ppdp/datasets/data/<relpath>``, verified against :data:`CHECKSUMS`."""
    node = resources.files("ppdp.datasets").joinpath("data")
    for part in relpath.split("/"):
        node = node.joinpath(part)
    data = node.read_bytes()
    expected = CHECKSUMS.get(relpath)
    if expected is not None and hashlib.sha256(data).hexdigest() != expected:
        raise DataValidationError(
            f"shipped file {relpath!r} does not match its SHA-256 checksum; reinstall ppdp"
        )
    return data


def open_bytes(relpath: str) -> io.BytesIO:
    """``ppdp/datasets/data/<relpath>``, checksum-verified, as an in-memory file for pandas."""
    return io.BytesIO(read_bytes(relpath))


def read_text(relpath: str) -> str:
    """A shipped text file (README), UTF-8."""
    return read_bytes(relpath).decode("utf-8")
