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


SUBPACKAGES = ["ppdp.publish", "ppdp.federated", "ppdp.learn", "ppdp.local", "ppdp.local.collector"]


@pytest.mark.parametrize("module", SUBPACKAGES)
def test_every_subpackage_name_resolves(module):
    import importlib

    mod = importlib.import_module(module)
    assert mod.__all__ and len(set(mod.__all__)) == len(mod.__all__)
    for name in mod.__all__:
        assert getattr(mod, name) is not None, name


def test_new_entry_points_are_exported():
    from ppdp import federated, learn, local, publish

    assert {"LDAProjectionPublisher"} <= set(publish.__all__)
    assert {"simulate_round", "DataOwner", "FederatedPublisher", "NoiseDealer"} <= set(
        federated.__all__
    )
    assert {
        "PrivateLogisticRegression",
        "PrivateLinearSVM",
        "RandomFourierFeatures",
        "PrivateRBFSVM",
        "HybridRBFSVM",
    } <= set(learn.__all__)
    assert {
        "AdditiveRandomizer",
        "CharacteristicVectorRandomizer",
        "reconstruct_bayes",
        "reconstruct_em",
        "reconstruct_fourier",
    } <= set(local.__all__)
