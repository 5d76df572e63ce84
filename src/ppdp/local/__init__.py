"""Local perturbation: respondents randomise their own values; the collector reconstructs.

Randomizers (each with ``randomise`` and the formal local-DP ``guarantee``):

* :class:`AdditiveRandomizer` — ``w = x + y`` with uniform, Gaussian or Laplace noise
  (Agrawal & Srikant 2000; Wu);
* :class:`CharacteristicVectorRandomizer` — Wu's one-hot vector plus integer lattice noise.

Reconstruction is pure post-processing of the reports and returns a :class:`Reconstruction`.
See ``docs/local.md`` (guide) and ``docs/proofs/local-randomizers.md`` (privacy).
"""

from ppdp.local._reconstruction import Reconstruction, project_to_simplex
from ppdp.local.additive import ADDITIVE_NOISES, AdditiveRandomizer
from ppdp.local.characteristic import CV_NOISES, CharacteristicVectorRandomizer
from ppdp.local.reconstruction import (
    ReportHistogram,
    bin_reports,
    reconstruct_bayes,
    reconstruct_em,
    reconstruct_fourier,
)

__all__ = [
    "ADDITIVE_NOISES",
    "CV_NOISES",
    "AdditiveRandomizer",
    "CharacteristicVectorRandomizer",
    "Reconstruction",
    "ReportHistogram",
    "bin_reports",
    "project_to_simplex",
    "reconstruct_bayes",
    "reconstruct_em",
    "reconstruct_fourier",
]
