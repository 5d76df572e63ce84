"""The curated top-level API resolves, and the core imports without optional extras."""

from __future__ import annotations

import subprocess
import sys

import pytest

import ppdp


@pytest.mark.parametrize("name", ppdp.__all__)
def test_every_public_name_resolves(name):
    assert getattr(ppdp, name) is not None


def test_unknown_attribute():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        ppdp.nope  # noqa: B018


def test_import_is_light():
    heavy = ("dask", "sklearn", "matplotlib", "ppdp.accounting")
    code = f"import sys, ppdp; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
