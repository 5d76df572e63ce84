"""Every registered mechanism names its privacy argument, and that file exists (issue 31).

A mechanism's proof is named in its class or module docstring as ``docs/proofs/NAME.md``;
the registry (:mod:`ppdp.registry`: publishers, learners, local randomizers) and the basic
and correlated mechanisms are checked, and every named file must exist and be listed in the
index ``docs/proofs/README.md``.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import ppdp.correlated
import ppdp.mechanisms
from ppdp.registry import LEARNERS, PUBLISHERS, RANDOMIZERS

PROOFS = Path(__file__).resolve().parents[1] / "docs" / "proofs"
NAMED = re.compile(r"docs/proofs/([\w.-]+\.md)")


def _registered() -> list[type]:
    return [e.load() for reg in (PUBLISHERS, LEARNERS, RANDOMIZERS) for e in reg.entries()]


def _mechanisms() -> list[type]:
    out = []
    for pkg in (ppdp.mechanisms, ppdp.correlated):
        for name in pkg.__all__:
            obj = getattr(pkg, name)
            if isinstance(obj, type) and name.endswith("Mechanism") and name != "Mechanism":
                out.append(obj)
    return out


def proof_files(cls: type) -> list[str]:
    """The proof files a class names in its docstring or its module's (without ``noise.md``,
    the samplers' argument, which many name beside their own)."""
    text = (cls.__doc__ or "") + (importlib.import_module(cls.__module__).__doc__ or "")
    return sorted(set(NAMED.findall(text)) - {"noise.md"})


def missing(cls: type, proofs: Path = PROOFS) -> list[str]:
    """What is wrong with ``cls``'s proof files (empty: nothing)."""
    named = proof_files(cls)
    if not named:
        return [f"{cls.__name__} names no docs/proofs/*.md"]
    index = (proofs / "README.md").read_text(encoding="utf-8")
    problems = [f"{cls.__name__}: {n} does not exist" for n in named if not (proofs / n).is_file()]
    return problems + [f"{cls.__name__}: {n} is not in the index" for n in named if n not in index]


@pytest.mark.parametrize("cls", _registered() + _mechanisms(), ids=lambda c: c.__name__)
def test_every_mechanism_names_an_existing_indexed_proof_file(cls):
    assert missing(cls) == []


def test_every_registered_name_is_checked():
    names = {c.__name__ for c in _registered()}
    assert len(names) == sum(len(r.names()) for r in (PUBLISHERS, LEARNERS, RANDOMIZERS))


def test_the_check_fails_on_a_missing_or_unnamed_proof():
    class Unnamed:
        """No proof named here."""

    class Renamed:
        """See ``docs/proofs/table-synth-v2.md``."""

    Unnamed.__module__ = Renamed.__module__ = "ppdp.noise"  # a module naming none
    assert missing(Unnamed) == ["Unnamed names no docs/proofs/*.md"]
    assert missing(Renamed) == ["Renamed: table-synth-v2.md does not exist",
                                "Renamed: table-synth-v2.md is not in the index"]  # fmt: skip
