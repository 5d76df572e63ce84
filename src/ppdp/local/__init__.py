"""Local perturbation: respondents randomise their own values; the collector reconstructs.

Randomizers (each with ``randomise`` and the formal local-DP ``guarantee``):

* :class:`AdditiveRandomizer` — ``w = x + y`` with uniform, Gaussian or Laplace noise
  (Agrawal & Srikant 2000; Wu);
* :class:`CharacteristicVectorRandomizer` — Wu's one-hot vector plus integer lattice noise.

Reconstruction is pure post-processing of the reports and returns a :class:`Reconstruction`
(:func:`reconstruct_bayes`, :func:`reconstruct_em`, :func:`reconstruct_fourier`, and
:meth:`CharacteristicVectorRandomizer.estimate_from_totals`). The legacy metrics are
:func:`map_success_probability`, :func:`mutual_information`, :func:`information_loss` and
:func:`wu_information_loss`.
See ``docs/local.md`` (guide) and ``docs/proofs/local-randomizers.md`` (privacy).
"""

from ppdp.local._protocol import Randomizer, randomizer_from_dict
from ppdp.local.additive import ADDITIVE_NOISES, AdditiveRandomizer
from ppdp.local.characteristic import CV_NOISES, CharacteristicVectorRandomizer
from ppdp.local.metrics import (
    aa_privacy_loss,
    information_loss,
    map_success_probability,
    mutual_information,
    wu_information_loss,
)
from ppdp.local.reconstruction import (
    FourierMoments,
    Reconstruction,
    ReportHistogram,
    bin_reports,
    fourier_moments,
    project_to_simplex,
    reconstruct_bayes,
    reconstruct_em,
    reconstruct_fourier,
)

__all__ = [
    "ADDITIVE_NOISES",
    "CV_NOISES",
    "AdditiveRandomizer",
    "CharacteristicVectorRandomizer",
    "FourierMoments",
    "Randomizer",
    "Reconstruction",
    "ReportHistogram",
    "aa_privacy_loss",
    "bin_reports",
    "fourier_moments",
    "information_loss",
    "map_success_probability",
    "mutual_information",
    "project_to_simplex",
    "randomizer_from_dict",
    "reconstruct_bayes",
    "reconstruct_em",
    "reconstruct_fourier",
    "wu_information_loss",
]
