"""Basic mechanisms: small frozen value objects that validate on construction.

Each knows its cost from its parameters alone (``budget``), states its ``guarantee``,
describes itself for the ledger (``ledger_details``) and releases with ``randomise``. The
continuous ones snap the value to a power-of-two grid and calibrate for Δ + Λ; the discrete
Laplace mechanism adds integer noise to integer queries and needs no grid. The privacy
argument of each is in ``docs/proofs/``.

Two public modules hold what other packages share with the mechanisms:
:mod:`ppdp.mechanisms.grid` (snap to the grid, effective sensitivity, scale checks and the
one snap-and-add-noise step, :func:`~ppdp.mechanisms.grid.snap_and_add_noise`) and
:mod:`ppdp.mechanisms.calibration` (the Gaussian calibrations and δ(σ, ε)).

Examples
--------
>>> from ppdp.mechanisms import LaplaceMechanism, GaussianMechanism, ExponentialMechanism
>>> LaplaceMechanism(epsilon=0.5, sensitivity=1.0).budget
PrivacyBudget(epsilon=0.5, delta=0.0)
"""

from ppdp.mechanisms._base import Mechanism
from ppdp.mechanisms.calibration import (
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
    gaussian_delta,
)
from ppdp.mechanisms.discrete_laplace import DiscreteLaplaceMechanism
from ppdp.mechanisms.exponential import ExponentialMechanism
from ppdp.mechanisms.gaussian import GaussianMechanism
from ppdp.mechanisms.laplace import LaplaceMechanism

__all__ = [
    "DiscreteLaplaceMechanism",
    "ExponentialMechanism",
    "GaussianMechanism",
    "LaplaceMechanism",
    "Mechanism",
    "analytic_gaussian_sigma",
    "classic_gaussian_sigma",
    "gaussian_delta",
]
