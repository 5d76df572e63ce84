"""Datasets shipped inside the package, each with its declared schema, provenance and terms.

* :func:`load_adult` — UCI Adult (Census Income) with Jiang et al.'s (2013) preprocessing:
  45,222 rows, 35 encoded columns with the label's two dummies.
* :func:`load_nltcs` — NLTCS, 21,574 rows x 16 binary disability items.
* :func:`load_kddcup99` — a seeded 70,000-row sample of the KDD Cup 99 10% file, binary
  label (denial of service or not, or attack or not), 118 encoded feature columns.
* :func:`dataset_info` — the README of a dataset: source, checksums, terms, citation.

The files live in ``ppdp/datasets/data/`` and are read with :mod:`importlib.resources`, so
they load from an installed package; each file's SHA-256 is checked on every load.
"""

from __future__ import annotations

from ppdp._validation import check_option
from ppdp.datasets._adult import adult_schema, load_adult
from ppdp.datasets._files import open_bytes, read_text
from ppdp.datasets._kddcup99 import kddcup99_schema, load_kddcup99
from ppdp.datasets._nltcs import load_nltcs, nltcs_schema

__all__ = [
    "DATASETS",
    "adult_schema",
    "dataset_info",
    "kddcup99_schema",
    "load_adult",
    "load_kddcup99",
    "load_nltcs",
    "nltcs_schema",
    "open_bytes",
]

#: Names of the shipped datasets.
DATASETS = ("adult", "nltcs", "kddcup99")


def dataset_info(name: str) -> str:
    """The README of a shipped dataset (markdown): provenance, checksums, terms, citation."""
    name = check_option("name", name, DATASETS)
    return read_text(f"{name}/README.md")
